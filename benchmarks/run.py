#!/usr/bin/env python
"""The spine benchmark: context, search and append latency on a seeded team.

    python benchmarks/run.py [--nodes 10000,100000] [--messages 100000] [--queries 200] [--quick]
                             [--sessions 400] [--investigate] [--json PATH]

The database comes from DATABASE_URL, but the developer database is never touched:
- PostgreSQL (postgres://…): the database `memory_bench` on that server is dropped and
  recreated, and everything runs there;
- anything else: SQLite at var/bench.sqlite3 (deleted first).
Migrations run into it, one team is seeded with bulk_create (real search_tokens), and for each
node count (nodes are topped up, messages stay) it measures after a warm-up:
- context: POST api-context via the Django test client and over HTTP (gunicorn, 2 workers);
- search: POST api-memory-search with query_text, client and HTTP;
- append: POST api-messages, batches of 1 and 50, client (sequential) and HTTP (4 threads).
It prints a table per size and writes the figures to var/bench-results-<vendor>.json.
With --investigate it also prints the SQL time per calling function, EXPLAIN of the slowest
statements, and a cProfile of context calls.
Connections persist between calls (CONN_MAX_AGE=60 unless set), as in a deployment.
It prints figures; it is not a test and asserts nothing about them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(HERE)]

BENCH_DB = "memory_bench"
SQLITE_PATH = ROOT / "var" / "bench.sqlite3"
T0 = time.perf_counter()


def log(message: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f}s] {message}", flush=True)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default=None, help="comma-separated node counts (default 10000,100000)")
    parser.add_argument("--messages", type=int, default=None, help="messages to seed (default 100000)")
    parser.add_argument("--queries", type=int, default=None, help="timed calls per measurement (default 200)")
    parser.add_argument("--sessions", type=int, default=None, help="sessions to seed (default 400)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls before each measurement")
    parser.add_argument("--quick", action="store_true", help="2k nodes, 2k messages, 50 queries: under a minute")
    parser.add_argument("--no-http", action="store_true", help="skip the gunicorn measurements")
    parser.add_argument("--investigate", action="store_true",
                        help="also print SQL per function, EXPLAIN of the slowest statements and a profile")
    parser.add_argument("--seed-only", action="store_true",
                        help="seed up to the largest --nodes and stop (leaves the database for experiments)")
    parser.add_argument("--debug", action="store_true", help="keep DEBUG on (default: DEBUG=false, as in production)")
    parser.add_argument("--json", default=None, help="where to write the figures (default var/bench-results-<vendor>.json)")
    args = parser.parse_args(argv)
    quick = args.quick
    args.nodes = [int(part) for part in (args.nodes or ("2000" if quick else "10000,100000")).split(",") if part]
    args.messages = args.messages if args.messages is not None else (2000 if quick else 100_000)
    args.queries = args.queries if args.queries is not None else (50 if quick else 200)
    args.sessions = args.sessions if args.sessions is not None else (40 if quick else 400)
    if quick:
        args.warmup = min(args.warmup, 10)
    if sorted(args.nodes) != args.nodes:
        parser.error("--nodes must be increasing (nodes are topped up between sizes)")
    return args


def prepare_database(url: str) -> tuple[str, str]:
    """(vendor, url of the benchmark database), after recreating it."""
    if url.startswith(("postgres://", "postgresql://", "pgsql://")):
        import psycopg

        parts = urlsplit(url)
        admin = psycopg.connect(
            host=parts.hostname or "127.0.0.1", port=parts.port or 5432, user=parts.username or "postgres",
            password=parts.password or None, dbname="postgres", autocommit=True,
        )
        with admin:
            admin.execute(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
            admin.execute(f"CREATE DATABASE {BENCH_DB}")
        return "postgresql", urlunsplit(parts._replace(path="/" + BENCH_DB))
    SQLITE_PATH.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(SQLITE_PATH) + suffix).unlink(missing_ok=True)
    return "sqlite", f"sqlite:///{SQLITE_PATH}"


def code_version() -> str:
    """The commit measured (the service code changes under the benchmark), '+dirty' if edited."""
    import subprocess

    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "memory", "accounts", "config"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        marker = ROOT / "COMMIT"  # a snapshot made with `git archive` (no .git) may name its commit here
        return marker.read_text().strip() + " (snapshot)" if marker.exists() else "unknown"
    return head + ("+dirty" if dirty else "")


def main(argv=None) -> int:
    args = parse_args(argv)
    vendor, bench_url = prepare_database(os.environ.get("DATABASE_URL", ""))
    os.environ["DATABASE_URL"] = bench_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if not args.debug:
        os.environ["DEBUG"] = "false"
        os.environ.setdefault("SECRET_KEY", "benchmark-only-not-a-secret-" + "x" * 32)
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("MEMORY_THROTTLE", "false")  # it measures the service, not its rate limits (gunicorn inherits it)
    # Persistent connections, as deployed (docs/deploy.md): with the default CONN_MAX_AGE=0 every
    # call would also pay for a new PostgreSQL connection (a backend process), 5–10 ms here.
    os.environ.setdefault("CONN_MAX_AGE", "60")
    # Statements prepared on the server, as deploy/env.example deploys (docs/deploy.md); set
    # DATABASE_PREPARED_STATEMENTS=false to measure without (behind pgbouncer before 1.21).
    os.environ.setdefault("DATABASE_PREPARED_STATEMENTS", "true")

    import warnings

    import django

    warnings.filterwarnings("ignore", message="No directory at", module="django.core.handlers.base")
    django.setup()
    from bench_steps import Bench
    from django.core.management import call_command
    from django.db import connection

    import config.wsgi  # noqa: F401 - started as a web worker is (the application, then gc.freeze)

    log(f"database: {vendor} ({bench_url}); DEBUG={'on' if args.debug else 'off'}; code {code_version()}")
    call_command("migrate", verbosity=0)
    log("migrated")
    bench = Bench(args, vendor, log)
    results = {
        "vendor": vendor,
        "database_version": bench.database_version(),
        "code": code_version(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "args": {name: getattr(args, name) for name in ("nodes", "messages", "queries", "sessions", "warmup", "quick")},
        "sizes": [],
    }
    try:
        bench.seed_messages()
        if args.seed_only:
            bench.seed_only(args.nodes[-1])
            return 0
        for size in args.nodes:
            results["sizes"].append(bench.run_size(size))
            bench.print_size(results["sizes"][-1])
    finally:
        bench.close()
        connection.close()
    results["total_s"] = round(time.perf_counter() - T0, 1)
    from report import print_pages

    print_pages([results])
    path = Path(args.json) if args.json else ROOT / "var" / f"bench-results-{vendor}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False, default=str))
    log(f"done in {results['total_s']:.1f} s; figures written to {path}")
    return 0


if __name__ == "__main__":
    random.seed(0)
    sys.exit(main())
