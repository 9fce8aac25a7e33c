"""Measurements of the scale bench (imported by scale.py after django.setup()).

Every call goes through the Django test client in process (middleware, authentication, team
scope, serialisers), timed with benchmarks/measure.py after untimed warm-up calls; figures are
milliseconds per call (p50/p95/p99 nearest rank) with the 1-minute load average at the end.
"""

from __future__ import annotations

import json
import os
import random

import corpus
from bench_steps import _interpret
from dashboard_pages import CHINESE_QUERIES, _login
from django.db import connection
from django.db.models import Count
from django.test import Client
from django.urls import reverse
from django_scopes import scopes_disabled
from measure import Series, run_sequential

from accounts.models import Team
from accounts.services import agent_key_create, team_create
from memory.models import Message, Node, Session

_REAL: corpus.RealText | None = None


def _real() -> corpus.RealText:
    global _REAL
    if _REAL is None:
        _REAL = corpus.load_real_text()
    return _REAL


def database_version() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        return "PostgreSQL " + cursor.fetchone()[0]


def ensure_team(slug: str) -> Team:
    with scopes_disabled():
        return Team.objects.filter(slug=slug).first() or team_create(slug=slug, name=slug)


def ensure_teams(count: int, *, log) -> list[Team]:
    """The small teams scale-t0001…, created through team_create when missing."""
    slugs = [f"scale-t{index:04d}" for index in range(1, count + 1)]
    with scopes_disabled():
        existing = {team.slug: team for team in Team.objects.filter(slug__in=slugs)}
        missing = [slug for slug in slugs if slug not in existing]
        if missing:
            log(f"creating {len(missing):,} teams")
        for slug in missing:
            existing[slug] = team_create(slug=slug, name=slug)
    return [existing[slug] for slug in slugs]


def write_marker(sizes: dict) -> None:
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS scale_marker (id serial PRIMARY KEY, sizes jsonb NOT NULL, "
                       "loaded_at timestamptz NOT NULL DEFAULT now())")
        cursor.execute("INSERT INTO scale_marker (sizes) VALUES (%s::jsonb)", [json.dumps(sizes)])


def counts() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database()), pg_total_relation_size('memory_node'), "
                       "pg_total_relation_size('memory_message')")
        database, node_table, message_table = cursor.fetchone()
    with scopes_disabled():
        return {"teams": Team.objects.count(), "nodes": Node.objects.count(), "messages": Message.objects.count(),
                "sessions": Session.objects.count(), "database_mb": round(database / 2**20),
                "memory_node_mb": round(node_table / 2**20), "memory_message_mb": round(message_table / 2**20)}


def _sessions(teams: list[Team]) -> list[dict]:
    """Sessions of `teams` with their message count (the traffic weight of a session)."""
    with scopes_disabled():
        traffic = dict(Message.objects.filter(team__in=teams).values("session_id").annotate(n=Count("id"))
                       .values_list("session_id", "n"))
        rows = list(Session.objects.filter(team__in=teams).values("pk", "team_id", "workspace_id", "user_id",
                                                                   "external_id"))
    for row in rows:
        row["messages"] = traffic.get(row["pk"], 0)
    return rows


def _bodies(rng: random.Random, sessions: list[dict], count: int, kind: str) -> list[tuple[int, dict]]:
    """(team id, request body) for `count` calls: sessions weighted by traffic, mixed real queries."""
    chosen = rng.choices(sessions, weights=[max(1, row["messages"]) for row in sessions], k=count)
    out = []
    for row, text in zip(chosen, corpus.queries(rng, _real(), count), strict=True):
        body = {"workspace_id": row["workspace_id"], "user_id": row["user_id"], "session_id": row["external_id"]}
        if kind == "search":
            body.update(query_text=text, limit=10)
        else:
            body["query"] = text
        out.append((row["team_id"], body))
    return out


def _api(kind: str, keys: dict[int, str], bodies: list[tuple[int, dict]], warmup: int) -> dict:
    client = Client()
    url = reverse("api-context" if kind == "context" else "api-memory-search")

    def call(arg):
        team_id, body = arg
        response = client.post(url, data=json.dumps(body), content_type="application/json",
                               headers={"Authorization": f"Bearer {keys[team_id]}"})
        return _interpret(kind, response.status_code, response.content)

    series = run_sequential(Series(kind), bodies, warmup, call)
    return {**series.summary(), "load1": os.getloadavg()[0]}


def _keys(teams: list[Team]) -> dict[int, str]:
    with scopes_disabled():
        return {team.pk: agent_key_create(team=team, name="scale agent")[1] for team in teams}


def measure_team(team: Team, args, *, log) -> dict:
    """Context, search and dashboard memories list on one team."""
    sessions = _sessions([team])
    with scopes_disabled():
        nodes, messages = Node.objects.filter(team=team).count(), sum(row["messages"] for row in sessions)
    keys = _keys([team])
    rng = random.Random(7)
    out = {"store": f"1 team · {nodes:,} nodes · {messages:,} msgs", "nodes": nodes, "messages": messages}
    for kind in ("context", "search"):
        out[kind] = _api(kind, keys, _bodies(rng, sessions, args.calls + args.warmup, kind), args.warmup)
        log(f"{out['store']}: {kind} p50 {out[kind]['p50']:.1f} ms, p95 {out[kind]['p95']:.1f} ms")
    client = _login(team)
    memories = reverse("dashboard:memories")
    count = args.page_calls + min(args.warmup, 5)
    pages = {
        "page memories": [{}] * count,
        "page memories ?status=active": [{"status": "active"}] * count,
        "page memories ?q=(Chinese)": [{"q": CHINESE_QUERIES[index % len(CHINESE_QUERIES)]} for index in range(count)],
    }
    for name, params in pages.items():
        def fetch(query):
            response = client.get(memories, query)
            return response.status_code == 200, None

        series = run_sequential(Series(name), params, min(args.warmup, 5), fetch)
        out[name] = {**series.summary(), "load1": os.getloadavg()[0]}
        log(f"{out['store']}: {name} p50 {out[name]['p50']:.1f} ms, p95 {out[name]['p95']:.1f} ms")
    return out


def measure_teams(teams: list[Team], args, *, log) -> dict:
    """Context and search, each call for a random team (and a session of it, by traffic)."""
    sessions = _sessions(teams)
    rng = random.Random(8)
    with scopes_disabled():
        nodes = Node.objects.filter(team__in=teams).count()
    keys = _keys(teams)
    out = {"store": f"{len(teams):,} teams · {nodes // max(1, len(teams)):,} nodes each", "nodes": nodes}
    for kind in ("context", "search"):
        by_team: dict[int, list[dict]] = {}
        for row in sessions:
            by_team.setdefault(row["team_id"], []).append(row)
        bodies = []
        for _ in range(args.calls + args.warmup):
            team_sessions = by_team[rng.choice(teams).pk]
            bodies += _bodies(rng, team_sessions, 1, kind)
        out[kind] = _api(kind, keys, bodies, args.warmup)
        log(f"{out['store']}: {kind} p50 {out[kind]['p50']:.1f} ms, p95 {out[kind]['p95']:.1f} ms")
    return out
