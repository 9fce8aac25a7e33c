"""The benchmark steps for one database (imported by run.py after django.setup())."""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter

import corpus
import httpx
import seed
from dashboard_pages import measure_pages
from django.db import DatabaseError, connection
from django.db.models import Count
from django.test import Client
from django.urls import reverse
from django_scopes import scopes_disabled
from measure import Series, Server, environment_for_server, run_concurrent, run_sequential
from report import print_size_table

APPEND_THREADS = 4


class Bench:
    def __init__(self, args, vendor: str, log):
        self.args, self.vendor, self.log = args, vendor, log
        self.real = corpus.load_real_text()
        self.rng = random.Random(7)
        self.server: Server | None = None
        self.pop: seed.Population | None = None
        self.seed_seconds: dict[str, float] = {}

    # --- setup ---------------------------------------------------------------------------------

    def database_version(self) -> str:
        with connection.cursor() as cursor:
            if self.vendor == "postgresql":
                cursor.execute("SHOW server_version")
                return "PostgreSQL " + cursor.fetchone()[0]
            cursor.execute("SELECT sqlite_version()")
            return "SQLite " + cursor.fetchone()[0]

    def seed_messages(self) -> None:
        started = time.perf_counter()
        self.pop = seed.create_population(self.real, sessions=self.args.sessions)
        self.log(f"seeding {self.args.sessions} sessions and {self.args.messages} messages")
        seed.seed_messages(self.pop, sessions=self.args.sessions, messages=self.args.messages,
                           log=lambda text: self.log(text.strip()))
        self.seed_seconds["messages"] = round(time.perf_counter() - started, 1)
        self.log(f"messages seeded in {self.seed_seconds['messages']} s")

    def maintenance(self) -> float:
        """Bring the store to a steady state, as a running database would be between bursts:
        PostgreSQL VACUUM ANALYZE (what autovacuum does; also flushes GIN pending lists) and a
        CHECKPOINT, so the bulk load's checkpoint does not run during the measurement; SQLite a
        WAL checkpoint and the planner statistics the product's sweeps refresh."""
        started = time.perf_counter()
        with connection.cursor() as cursor:
            if self.vendor == "postgresql":
                for table in ("memory_node", "memory_message", "memory_session", "memory_summary",
                              "memory_nodesource", "memory_retrieval", "accounts_agentkey"):
                    cursor.execute(f"VACUUM ANALYZE {table}")
                try:
                    cursor.execute("CHECKPOINT")
                except DatabaseError as error:  # needs superuser or pg_checkpoint; measure anyway
                    self.log(f"CHECKPOINT not allowed ({error.__class__.__name__}); the bulk load may still be flushing")
            else:
                cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        from memory.services.maintenance import statistics_refresh

        statistics_refresh()  # SQLite: what the product's expiry sweep and capture_run do
        return time.perf_counter() - started

    def counts(self) -> dict:
        from memory.models import Message, Node, NodeSource, Retrieval, Session, Summary

        with scopes_disabled():
            statuses = Counter({row["status"]: row["n"] for row in Node.objects.values("status").annotate(n=Count("pk"))})
            scopes = {row["scope"]: row["n"] for row in Node.objects.values("scope").annotate(n=Count("pk"))}
            out = {
                "nodes": sum(statuses.values()),
                "nodes_by_status": dict(statuses),
                "nodes_by_scope": scopes,
                "nodes_with_key": Node.objects.exclude(key="").count(),
                "messages": Message.objects.count(),
                "sessions": Session.objects.count(),
                "summaries": Summary.objects.count(),
                "node_sources": NodeSource.objects.count(),
                "retrievals": Retrieval.objects.count(),
            }
        with connection.cursor() as cursor:
            if self.vendor == "postgresql":
                cursor.execute("SELECT pg_database_size(current_database())")
                out["database_mb"] = round(cursor.fetchone()[0] / 2**20, 1)
            else:
                name = str(connection.settings_dict["NAME"])
                out["database_mb"] = round(sum(os.path.getsize(name + suffix) for suffix in ("", "-wal")
                                               if os.path.exists(name + suffix)) / 2**20, 1)
        return out

    # --- workloads ------------------------------------------------------------------------------

    def workload(self, count: int) -> list[tuple[seed.SessionInfo, str]]:
        """(session, query) pairs: sessions weighted by their traffic (messages), mixed queries."""
        sessions = self.pop.sessions
        weights = [max(1, len(info.message_pks)) for info in sessions]
        chosen = self.rng.choices(sessions, weights=weights, k=count)
        return list(zip(chosen, corpus.queries(self.rng, self.real, count), strict=True))

    @staticmethod
    def owner_fields(info: seed.SessionInfo) -> dict:
        return {"workspace_id": info.workspace_id, "user_id": info.user_id, "session_id": info.external_id}

    def append_payloads(self, requests: int, batch: int) -> list[dict]:
        payloads = []
        for _ in range(requests):
            info = self.rng.choice(self.pop.sessions)
            stream = corpus.ConversationStream(self.rng, self.real, info.profile)
            items = []
            for _ in range(batch):
                role, text = stream.next()
                items.append({**self.owner_fields(info), "role": role, "content": text})
            payloads.append(items[0] if batch == 1 else {"messages": items})
        return payloads

    # --- callers --------------------------------------------------------------------------------

    def _auth(self) -> dict:
        return {"Authorization": f"Bearer {self.pop.raw_key}"}

    def client_caller(self, url: str, kind: str):
        client = Client(headers=self._auth())

        def call(body):
            response = client.post(url, data=json.dumps(body), content_type="application/json")
            return _interpret(kind, response.status_code, response.content)

        return call

    def http_caller(self, url: str, kind: str):
        def make():
            http = httpx.Client(base_url=self.server.base_url, headers=self._auth(), timeout=120)

            def call(body):
                response = http.post(url, content=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
                return _interpret(kind, response.status_code, response.content)

            return call

        return make

    # --- one size -------------------------------------------------------------------------------

    def seed_only(self, size: int) -> None:
        seed.seed_nodes(self.pop, total=size, log=lambda text: self.log(text.strip()))
        self.log(f"maintenance {self.maintenance():.1f} s; counts {self.counts()}")

    def simulate(self, last: int = 500) -> dict:
        """Time a policy simulation over the last `last` recorded context calls (target: 500 in ≤ 10 s)."""
        from django_scopes import scope

        from accounts.principal import system_principal
        from memory.selectors.simulation import policy_simulate

        started = time.perf_counter()
        with scope(team=self.pop.team):
            report = policy_simulate(principal=system_principal(self.pop.team, "bench"), changes={"top_n": 3},
                                     last=last)
        return {"calls": report["calls"], "seconds": round(time.perf_counter() - started, 2),
                "hit_rate": [report["before"]["hit_rate"], report["after"]["hit_rate"]]}

    def run_size(self, size: int) -> dict:
        args = self.args
        started = time.perf_counter()
        self.log(f"seeding nodes up to {size}")
        seed.seed_nodes(self.pop, total=size, log=lambda text: self.log(text.strip()))
        self.seed_seconds[f"nodes_{size}"] = round(time.perf_counter() - started, 1)
        maintenance = self.maintenance()
        self.log(f"nodes seeded in {self.seed_seconds[f'nodes_{size}']} s; maintenance {maintenance:.1f} s")
        result = {"size": size, "seed_s": self.seed_seconds[f"nodes_{size}"], "maintenance_s": round(maintenance, 1),
                  "series": []}
        if self.server is None and not args.no_http:
            self.server = Server(environment_for_server())
            self.log(f"gunicorn (2 workers) on {self.server.base_url}")

        queries, warmup = args.queries, args.warmup
        context_url, search_url, messages_url = reverse("api-context"), reverse("api-memory-search"), reverse("api-messages")

        def bodies(kind: str) -> list[dict]:
            key = "query_text" if kind == "search" else "query"
            out = []
            for info, text in self.workload(queries + warmup):
                body = {**self.owner_fields(info), key: "" if kind == "context-noquery" else text}
                if kind == "search":
                    body["limit"] = 10
                out.append(body)
            return out

        plan = [
            ("context", "test client", context_url, None),
            ("context-noquery", "test client", context_url, None),
            ("context", "HTTP", context_url, 1),
            ("search", "test client", search_url, None),
            ("search", "HTTP", search_url, 1),
        ]
        for kind, via, url, _threads in plan:
            if via == "HTTP" and self.server is None:
                continue
            series = Series(f"{kind} · {via}")
            calls = bodies(kind)
            reader = "context" if kind.startswith("context") else kind
            if via == "HTTP":
                run_sequential(series, calls, warmup, self.http_caller(url, reader)())
            else:
                run_sequential(series, calls, warmup, self.client_caller(url, reader))
            result["series"].append({"kind": kind, "via": via, **series.summary(), "load1": os.getloadavg()[0]})
            self.log(f"{series.name}: p50 {result['series'][-1]['p50']:.1f} ms, p95 {result['series'][-1]['p95']:.1f} ms")

        batches = [(1, max(50, queries)), (50, max(10, queries // 5))]
        for batch, requests in batches:
            series = Series(f"append b={batch} · test client")
            payloads = self.append_payloads(requests + 5, batch)
            run_sequential(series, payloads, 5, self.client_caller(messages_url, "append"))
            result["series"].append({"kind": "append", "batch": batch, "via": "test client", **series.summary(),
                                     "load1": os.getloadavg()[0]})
            if self.server is not None:
                series = Series(f"append b={batch} · HTTP ×{APPEND_THREADS}")
                payloads = self.append_payloads(requests + 5, batch)
                run_concurrent(series, payloads, 5, self.http_caller(messages_url, "append"), APPEND_THREADS)
                result["series"].append({"kind": "append", "batch": batch, "via": f"HTTP ×{APPEND_THREADS}",
                                         **series.summary(), "load1": os.getloadavg()[0]})
        self.log("append measured")
        result["simulation"] = self.simulate()
        self.log(f"policy simulation of {result['simulation']['calls']} recorded calls: "
                 f"{result['simulation']['seconds']:.1f} s")
        result["series"] += measure_pages(self.pop, self.workload, log=self.log)
        result["counts"] = self.counts()
        if args.investigate:
            self.investigate(size)
        result["elapsed_s"] = round(time.perf_counter() - started, 1)
        return result

    def print_size(self, result: dict) -> None:
        print_size_table(self.database_version(), result)

    # --- investigation --------------------------------------------------------------------------

    def investigate(self, size: int) -> None:
        import investigate

        from accounts.models import AgentKey
        from accounts.principal import principal_for_key
        from memory.selectors.nodes import Owner

        with scopes_disabled():
            key = AgentKey.objects.select_related("team").get(prefix=self.pop.raw_key.split("_")[1])
        principal = principal_for_key(key)
        work = [(Owner(info.workspace_id, info.user_id, info.external_id), text)
                for info, text in self.workload(min(100, self.args.queries))]
        print(f"\n=== investigation at {size} nodes ({self.database_version()}) ===")
        statements = investigate.sql_breakdown("context", principal, work)
        investigate.explain_slowest(statements)
        search_statements = investigate.sql_breakdown("search", principal, work)
        investigate.explain_slowest(search_statements, labels=3)
        client = self.client_caller(reverse("api-context"), "context")
        bodies = [{**self.owner_fields(info), "query": text} for info, text in self.workload(min(100, self.args.queries))]
        investigate.phase_breakdown(client, bodies, title="context")
        search = self.client_caller(reverse("api-memory-search"), "search")
        investigate.phase_breakdown(search, [{**self.owner_fields(info), "query_text": text, "limit": 10}
                                             for info, text in self.workload(min(100, self.args.queries))],
                                    title="search")
        investigate.profile_calls(client, bodies)

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


def _interpret(kind: str, status: int, content: bytes) -> tuple[bool, dict | None]:
    expected = 201 if kind == "append" else 200
    if status != expected:
        if not getattr(_interpret, "reported", False):
            _interpret.reported = True
            print(f"  ! {kind} answered {status}: {content[:300]!r}", flush=True)
        return False, None
    data = json.loads(content)
    if kind == "context":
        diagnostics = data["diagnostics"]
        return True, {"server_ms": diagnostics["latency_ms"], "degraded": diagnostics["store_status"] != "ok",
                      "hits": len(data["relevant_nodes"]) + len(data["relevant_messages"]),
                      "found": diagnostics["counts"].get("retrieval_hits", 0)}
    if kind == "search":
        return True, {"hits": len(data["relevant"])}
    return True, {"items": len(data["ids"])}
