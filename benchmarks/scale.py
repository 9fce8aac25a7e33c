#!/usr/bin/env python
"""The scale bench (issue 9 item 6): one team at 1M nodes and 1M messages, and 1,000 teams of 1k nodes.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/x python benchmarks/scale.py
        [--nodes 1000000] [--messages 1000000] [--teams 1000] [--team-nodes 1000] [--team-messages 200]
        [--calls 200] [--page-calls 60] [--quick] [--reuse] [--no-explain]

PostgreSQL only: it refuses anything else. On the server of DATABASE_URL it drops and recreates
the database `memory_scale` (never the developer database), migrates, and bulk-loads with COPY
(benchmarks/scale_load.py: real text, search_tokens from the product's own tokenizer):
1. one team in stages — nodes/100, nodes/10, nodes (with messages in proportion) — and after
   each stage VACUUM ANALYZE, then it measures through the Django test client, in process,
   after a warm-up: POST api-context (query, user and session, default budget), POST
   api-memory-search, and the dashboard memories list as a logged-in admin (first page,
   ?status=active, ?q=<Chinese>); it prints p50/p95 in ms and, between stages, the p95 ratio
   beside the size ratio and the n·log n ratio (log-linear growth);
2. `--teams` teams of `--team-nodes` nodes and `--team-messages` messages, then context and
   search calls each for a random team;
3. EXPLAIN (ANALYZE, BUFFERS) of the slowest statements of context and search calls on the large
   team, written into the generated section of docs/performance.md (scale_explain.py) — not
   with --quick, whose small store would replace the page's 1M plans.
Figures go to var/scale-results.json. A table `scale_marker` records what was loaded: with
--reuse and the same sizes, loading is skipped and only the final sizes are measured again.
It prints figures and asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(HERE)]

SCALE_DB = "memory_scale"
BIG_TEAM = "scale-big"
T0 = time.perf_counter()


def log(message: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f}s] {message} (load {os.getloadavg()[0]:.1f})", flush=True)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=None, help="nodes of the large team (default 1,000,000)")
    parser.add_argument("--messages", type=int, default=None, help="messages of the large team (default 1,000,000)")
    parser.add_argument("--teams", type=int, default=None, help="small teams (default 1,000)")
    parser.add_argument("--team-nodes", type=int, default=1000, help="nodes per small team (default 1,000)")
    parser.add_argument("--team-messages", type=int, default=200, help="messages per small team (default 200)")
    parser.add_argument("--calls", type=int, default=None, help="timed API calls per measurement (default 200)")
    parser.add_argument("--page-calls", type=int, default=60, help="timed dashboard fetches per page (default 60)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls before each measurement")
    parser.add_argument("--quick", action="store_true", help="20k nodes, 20k messages, 20 teams, 50 calls")
    parser.add_argument("--reuse", action="store_true", help="keep memory_scale when it holds these sizes")
    parser.add_argument("--no-explain", action="store_true", help="skip the EXPLAIN section of docs/performance.md")
    parser.add_argument("--json", default=str(ROOT / "var" / "scale-results.json"))
    args = parser.parse_args(argv)
    quick = args.quick
    args.nodes = args.nodes if args.nodes is not None else (20_000 if quick else 1_000_000)
    args.messages = args.messages if args.messages is not None else (20_000 if quick else 1_000_000)
    args.teams = args.teams if args.teams is not None else (20 if quick else 1000)
    args.calls = args.calls if args.calls is not None else (50 if quick else 200)
    if quick:
        args.page_calls, args.warmup = min(args.page_calls, 20), min(args.warmup, 10)
    args.stages = sorted({size for size in (args.nodes // 100, args.nodes // 10, args.nodes) if size >= 1000}) or [args.nodes]
    return args


def wanted(args) -> dict:
    return {"nodes": args.nodes, "messages": args.messages, "teams": args.teams, "team_nodes": args.team_nodes,
            "team_messages": args.team_messages}


def prepare_database(url: str, args) -> tuple[str, bool]:
    """(url of memory_scale, whether it already holds the wanted sizes); recreated unless reused."""
    import psycopg

    parts = urlsplit(url)
    server = {"host": parts.hostname or "127.0.0.1", "port": parts.port or 5432, "user": parts.username or "postgres",
              "password": parts.password or None, "autocommit": True}
    scale_url = urlunsplit(parts._replace(path="/" + SCALE_DB))
    if args.reuse:
        try:
            with psycopg.connect(dbname=SCALE_DB, **server) as db:
                row = db.execute("SELECT sizes FROM scale_marker ORDER BY id DESC LIMIT 1").fetchone()
            if row and row[0] == wanted(args):
                return scale_url, True
            log(f"--reuse: {SCALE_DB} holds {row[0] if row else 'nothing'}, not {wanted(args)}; reloading")
        except psycopg.Error as error:
            log(f"--reuse: {SCALE_DB} cannot be reused ({error.__class__.__name__}); loading")
    with psycopg.connect(dbname="postgres", **server) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {SCALE_DB} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {SCALE_DB}")
    return scale_url, False


def growth(rows: list[dict], name: str) -> list[str]:
    """p95 ratio between consecutive stages next to the size ratio and the n·log n ratio."""
    out = []
    series = [(row["nodes"], row[name]["p95"]) for row in rows if name in row]
    for (n1, p1), (n2, p2) in zip(series, series[1:], strict=False):
        loglinear = (n2 * math.log(n2)) / (n1 * math.log(n1))
        out.append(f"{name:28} {n1:>9,} → {n2:>9,} nodes: size ×{n2 / n1:.0f}, n·log n ×{loglinear:.1f}, "
                   f"p95 {p1:.1f} → {p2:.1f} ms (×{p2 / p1:.2f})")
    return out


def print_table(results: dict) -> None:
    print(f"\n=== scale bench · {results['database_version']} · code {results['code']} ===")
    print(f"{'store':44} {'operation':28} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}  notes")
    for row in results["stages"] + results["teams"]:
        store = row["store"]
        for name, figures in row.items():
            if not isinstance(figures, dict) or "p95" not in figures:
                continue
            notes = [f"load {figures['load1']:.1f}"]
            if "hits_mean" in figures:
                notes.append(f"hits {figures['hits_mean']:.1f}/call, {figures['zero_hit_share']:.0%} none")
            if "server_p95" in figures:
                notes.append(f"context_build p95 {figures['server_p95']:.1f}")
            if figures["errors"]:
                notes.append(f"ERRORS {figures['errors']}")
            print(f"{store:44} {name:28} {figures['n']:5d} {figures['p50']:8.1f} {figures['p95']:8.1f} "
                  f"{figures['p99']:8.1f}  {'; '.join(notes)}")
    print("\ngrowth (one team):")
    for name in ("context", "search", "page memories", "page memories ?status=active", "page memories ?q=(Chinese)"):
        for line in growth(results["stages"], name):
            print("  " + line)


def main(argv=None) -> int:
    args = parse_args(argv)
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://", "pgsql://")):
        print("benchmarks/scale.py needs PostgreSQL: set DATABASE_URL=postgres://user@host:5432/any — it creates "
              f"and uses the database {SCALE_DB} on that server (COPY, tsvector and EXPLAIN plans are PostgreSQL's; "
              "SQLite is not measured at this size).", file=sys.stderr)
        return 2
    scale_url, reused = prepare_database(url, args)
    os.environ["DATABASE_URL"] = scale_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DEBUG"] = "false"
    os.environ.setdefault("SECRET_KEY", "benchmark-only-not-a-secret-" + "x" * 32)
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("MEMORY_THROTTLE", "false")

    import warnings

    import django

    warnings.filterwarnings("ignore", message="No directory at", module="django.core.handlers.base")
    django.setup()

    import corpus
    import scale_load
    import scale_measure
    from django.core.management import call_command
    from run import code_version

    log(f"database {scale_url}; code {code_version()}; {'reusing the loaded store' if reused else 'loading'}")
    call_command("migrate", verbosity=0)
    results = {"database_version": scale_measure.database_version(), "code": code_version(), "cpus": os.cpu_count(),
               "args": {**wanted(args), "calls": args.calls, "page_calls": args.page_calls, "warmup": args.warmup,
                        "stages": args.stages, "reused": reused},
               "stages": [], "teams": [], "load_s": {}}
    real = corpus.load_real_text()
    big = scale_measure.ensure_team(BIG_TEAM)
    if not reused:
        ids = scale_load.Ids()
        big_load = scale_load.TeamLoad(big, scale_load.shape_for(args.nodes, args.messages), real, ids)
    previous = 0
    for size in ([] if reused else args.stages):
        started = time.perf_counter()
        messages = args.messages * size // args.nodes - big_load.messages
        log(f"loading the large team up to {size:,} nodes and {big_load.messages + messages:,} messages")
        ids.refresh()
        scale_load.load([(big_load, size - previous, messages, args.messages)], log=log)
        scale_load.vacuum_analyze(log=log)
        results["load_s"][f"big_{size}"] = round(time.perf_counter() - started, 1)
        log(f"loaded in {results['load_s'][f'big_{size}']} s")
        previous = size
        results["stages"].append(scale_measure.measure_team(big, args, log=log))
    if reused:
        results["stages"].append(scale_measure.measure_team(big, args, log=log))

    if args.teams:
        small = scale_measure.ensure_teams(args.teams, log=log)
        if not reused:
            started = time.perf_counter()
            ids.refresh()
            shape = scale_load.shape_for(args.team_nodes, args.team_messages)
            steps = [(scale_load.TeamLoad(team, shape, real, ids, seed=index), args.team_nodes, args.team_messages,
                      args.team_messages) for index, team in enumerate(small)]
            log(f"loading {len(steps):,} teams of {args.team_nodes:,} nodes and {args.team_messages:,} messages")
            scale_load.load(steps, log=log)
            scale_load.vacuum_analyze(log=log)
            results["load_s"]["teams"] = round(time.perf_counter() - started, 1)
            log(f"loaded in {results['load_s']['teams']} s")
        results["teams"].append(scale_measure.measure_teams(small, args, log=log))

    if not reused:
        scale_measure.write_marker(wanted(args))
    results["counts"] = scale_measure.counts()
    # A --quick run checks that the bench works; its plans are not the 1M figures the page documents.
    if not args.no_explain and not args.quick:
        import scale_explain

        results["explain"] = scale_explain.write_section(big, args, log=log, results=results)
    results["total_s"] = round(time.perf_counter() - T0, 1)
    print_table(results)
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False, default=str))
    log(f"done in {results['total_s']:.0f} s; figures in {path}; database {results['counts']['database_mb']:,} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
