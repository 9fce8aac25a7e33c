"""Dashboard page timings on the benchmark's seeded team (imported by bench_steps after django.setup()).

Issue 6's bar: a page renders in well under 200 ms with 10k nodes. An admin login of the
seeded team is logged in with the Django test client (the full request path: middleware,
session, team scope, templates) and each page is fetched PAGE_REQUESTS times after WARMUP
untimed fetches, with varied arguments where the page takes any:

- memories: the list without a filter, with a Chinese text filter (short Chinese queries in
  turn), with a status filter (active);
- node: the page of a node drawn at random (any status, chains included);
- sessions: the session list; session: the page of a session drawn by its traffic;
- preview: a workload query for a session (context_build twice: in force and a draft top_n);
- kpis: the default range (the last 14 days, the whole team).

Each page is also fetched once under CaptureQueriesContext to report its query count.
"""

from __future__ import annotations

import os
import random
import secrets

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django_scopes import scopes_disabled
from measure import Series, run_sequential

PAGE_REQUESTS = 30
WARMUP = 3
CHINESE_QUERIES = ["香菜", "咖啡", "部署", "出差", "过敏", "少辣", "数据库迁移", "回复语言"]
USERNAME = "bench-admin"


def _login(team) -> Client:
    from accounts.models import Role
    from accounts.services import membership_set

    with scopes_disabled():
        user, _ = membership_set(team=team, username=USERNAME, role=Role.ADMIN, password=secrets.token_urlsafe(12))
    client = Client()
    client.force_login(user)
    return client


def _plan(pop, rng: random.Random, workload, count: int) -> list[tuple[str, list[tuple[str, dict]]]]:
    """(page name, [(url, query parameters)] × count) for every measured page."""
    from memory.models import Node

    with scopes_disabled():
        node_ids = list(Node.objects.filter(team=pop.team).values_list("pk", flat=True))
    sessions = pop.sessions
    weights = [max(1, len(info.message_pks)) for info in sessions]
    memories = reverse("dashboard:memories")
    chinese = [CHINESE_QUERIES[index % len(CHINESE_QUERIES)] for index in range(count)]
    return [
        ("memories", [(memories, {})] * count),
        ("memories ?q=(Chinese)", [(memories, {"q": text}) for text in chinese]),
        ("memories ?status=active", [(memories, {"status": "active"})] * count),
        ("node", [(reverse("dashboard:node", args=[pk]), {}) for pk in rng.choices(node_ids, k=count)]),
        ("sessions", [(reverse("dashboard:sessions"), {})] * count),
        ("session", [(reverse("dashboard:session", args=[info.pk]), {})
                     for info in rng.choices(sessions, weights=weights, k=count)]),
        ("preview ?q=", [(reverse("dashboard:preview"), {"workspace_id": info.workspace_id, "user_id": info.user_id,
                                                         "session_id": info.external_id, "q": text, "draft-top_n": "3"})
                         for info, text in workload(count)]),
        ("kpis 14 days", [(reverse("dashboard:kpis"), {})] * count),
    ]


def measure_pages(pop, workload, *, log, requests: int = PAGE_REQUESTS, warmup: int = WARMUP) -> list[dict]:
    """Time every dashboard page: one result row per page (kind "page", p50/p95… in ms, the
    query count of one fetch, errors: answers other than 200)."""
    client = _login(pop.team)
    rng = random.Random(11)
    rows = []
    for name, calls in _plan(pop, rng, workload, requests + warmup):
        failures: list[str] = []

        def fetch(arg, failures=failures):
            url, params = arg
            response = client.get(url, params)
            if response.status_code != 200 and not failures:
                failures.append(f"{url} {params} answered {response.status_code}")
            return response.status_code == 200, None

        series = run_sequential(Series(f"page {name}"), calls, warmup, fetch)
        with CaptureQueriesContext(connection) as captured:
            fetch(calls[-1])
        row = {"kind": "page", "page": name, "via": "test client", **series.summary(), "queries": len(captured),
               "load1": os.getloadavg()[0]}
        rows.append(row)
        log(f"page {name}: p50 {row['p50']:.1f} ms, p95 {row['p95']:.1f} ms, {row['queries']} queries"
            + (f"; {failures[0]}" if failures else ""))
    return rows
