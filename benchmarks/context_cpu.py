#!/usr/bin/env python
"""Where a context call's time goes, as CPU: the Python process's and the PostgreSQL backend's.

    python benchmarks/context_cpu.py [--calls 200] [--kind context|search] [--database memory_bench]

Runs against a store seeded by `benchmarks/run.py --seed-only` (PostgreSQL, database
`memory_bench` by default; statements prepared on the server unless
DATABASE_PREPARED_STATEMENTS=false; it migrates the store to this code's schema and writes nothing else
but ledger rows and one agent key). Calls go
through the Django test client on one persistent connection, as deployed. It prints p50 / p95
wall time, statements per call, Python CPU per call (time.process_time), the PostgreSQL
backend's CPU per call (/proc/<pid>/stat of the connection's backend: the server runs on this
machine), then the CPU and wall milliseconds of each phase of the call, nested as caller >
callee (benchmarks/investigate.py's Phases and PHASES; inclusive: a phase includes the phases
it calls).

CPU figures hold up under other load far better than wall times, which is why they are here:
on a 2-core machine shared with other work, a wall-clock p95 mostly measures the neighbours.
It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

def backend_cpu_ms(connection) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--kind", choices=("context", "search"), default="context")
    parser.add_argument("--database", default="memory_bench", help="a PostgreSQL database seeded by run.py --seed-only")
    args = parser.parse_args(argv)
    os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{args.database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.update({"DEBUG": "false", "MEMORY_THROTTLE": "false", "LOG_LEVEL": "WARNING", "CONN_MAX_AGE": "60"})
    os.environ.setdefault("DATABASE_PREPARED_STATEMENTS", "true")  # as deployed (docs/deploy.md); false to compare
    os.environ.setdefault("SECRET_KEY", "benchmark-only-not-a-secret-" + "x" * 32)
    import django

    django.setup()
    import corpus
    import investigate
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor
    from django.test import Client
    from django_scopes import scopes_disabled

    import config.wsgi  # noqa: F401 - started as a web worker is (the application, then gc.freeze)
    from accounts.models import Team
    from accounts.services import agent_key_create
    from memory.models import Session

    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    call_command("migrate", verbosity=0)  # a store seeded by older code gets this code's schema
    if pending:
        # A data migration rewrites rows (0021 left 166,690 dead node rows at 100k nodes: PostgreSQL
        # CPU 25.1 ms a call before a vacuum, 14.5 after); measure the store as autovacuum leaves it.
        with connection.cursor() as cursor:
            for table in ("memory_node", "memory_message", "memory_session", "memory_nodesource"):
                cursor.execute(f"VACUUM ANALYZE {table}")
    with scopes_disabled():
        team = Team.objects.order_by("pk").first()
        if team is None:
            parser.error(f"{args.database} holds no team: seed it with benchmarks/run.py --seed-only")
        _, raw_key = agent_key_create(team=team, name="context_cpu")
        sessions = list(Session.objects.filter(team=team).values_list("workspace_id", "user_id", "external_id"))
    rng = random.Random(7)
    total = args.warmup + args.calls
    work = list(zip(rng.choices(sessions, k=total), corpus.queries(rng, corpus.load_real_text(), total), strict=True))
    url, text_field = ("/api/v1/context", "query") if args.kind == "context" else ("/api/v1/memory/search", "query_text")
    client = Client(headers={"Authorization": f"Bearer {raw_key}"})
    statements = [0]

    def counted(execute, sql, params, many, context):
        statements[0] += 1
        return execute(sql, params, many, context)

    walls, cpus = [], []
    phases = investigate.Phases()
    for index, ((workspace_id, user_id, session_id), text) in enumerate(work):
        if index == args.warmup:
            phases.__enter__()
            statements[0] = 0
            backend_before = backend_cpu_ms(connection)
        body = {"workspace_id": workspace_id, "user_id": user_id, "session_id": session_id, text_field: text}
        wall, cpu = time.perf_counter(), time.process_time()
        with connection.execute_wrapper(counted):
            response = client.post(url, data=json.dumps(body), content_type="application/json")
        if index >= args.warmup:
            walls.append((time.perf_counter() - wall) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"{url} answered {response.status_code}: {response.content[:300]!r}")
    phases.__exit__(None, None, None)
    backend = (backend_cpu_ms(connection) - backend_before) / args.calls
    walls.sort()
    print(f"{args.kind} on {args.database}: {args.calls} calls, wall p50 {statistics.median(walls):.1f} ms, "
          f"p95 {walls[int(0.95 * len(walls)) - 1]:.1f} ms; {statements[0] / args.calls:.1f} statements a call; "
          f"CPU a call: Python {statistics.mean(cpus):.1f} ms, PostgreSQL {backend:.1f} ms; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"  {'phase (inclusive; caller > callee)':52s} {'CPU ms':>7s} {'wall ms':>8s} {'runs':>5s}")
    for key in sorted(phases.totals):
        depth = key.count(" > ")
        label = "  " * depth + key.rsplit(" > ", 1)[-1]
        print(f"  {label:52s} {phases.cpu[key] * 1000 / args.calls:7.2f} "
              f"{phases.totals[key] * 1000 / args.calls:8.2f} {phases.counts[key] / args.calls:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
