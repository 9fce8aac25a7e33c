#!/usr/bin/env python
"""Readable tables of benchmark figures.

    python benchmarks/report.py var/bench-results-sqlite.json var/bench-results-postgresql.json

prints one summary table over every database and size (run.py prints the per-size tables).
No Django needed.
"""

from __future__ import annotations

import json
import sys


def _fmt(value, digits: int = 1) -> str:
    if value is None or value != value:  # NaN
        return "—"
    return f"{value:,.{digits}f}"


def print_size_table(database: str, result: dict, out=print) -> None:
    counts = result.get("counts", {})
    out("")
    out(f"=== {database} · {result['size']:,} nodes · {counts.get('messages', 0):,} messages ===")
    if counts:
        status = ", ".join(f"{name} {count:,}" for name, count in sorted(counts["nodes_by_status"].items()))
        scopes = ", ".join(f"{name} {count:,}" for name, count in sorted(counts["nodes_by_scope"].items()))
        out(f"rows: nodes {counts['nodes']:,} ({status}); by scope: {scopes}; with key {counts['nodes_with_key']:,}")
        out(f"      messages {counts['messages']:,}, sessions {counts['sessions']:,}, summaries "
            f"{counts['summaries']:,}, node sources {counts['node_sources']:,}, retrievals "
            f"{counts['retrievals']:,}; database {counts['database_mb']:,} MB")
    out(f"seeding these nodes {result['seed_s']} s, maintenance {result['maintenance_s']} s")
    out(f"{'operation':34} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'mean':>8} {'max':>8}  notes")
    for row in result["series"]:
        notes = []
        if row["kind"] == "append":
            name = f"append b={row['batch']} · {row['via']}"
            notes.append(f"{_fmt(row.get('per_s'), 0)} msg/s ({_fmt(row.get('requests_per_s'), 0)} req/s)")
        elif row["kind"] == "page":
            name = f"page {row['page']}"
            notes.append(f"{row['queries']} queries")
        else:
            name = f"{row['kind'].replace('-noquery', ' (no query)')} · {row['via']}"
        if "server_p50" in row:
            notes.append(f"context_build p50/p95 {_fmt(row['server_p50'])}/{_fmt(row['server_p95'])}")
        if "found_mean" in row:
            notes.append(f"L5 hits found {row['found_mean']:.1f}/call")
        if "hits_mean" in row:
            label = "injected" if row["kind"].startswith("context") else "returned"
            notes.append(f"{label} {row['hits_mean']:.1f}/call, {row['zero_hit_share']:.0%} none")
        if "load1" in row:
            notes.append(f"load {row['load1']:.1f}")
        if row["errors"]:
            notes.append(f"ERRORS {row['errors']}")
        if row["degraded"]:
            notes.append(f"DEGRADED {row['degraded']}")
        out(f"{name:34} {row['n']:5d} {_fmt(row['p50']):>8} {_fmt(row['p95']):>8} {_fmt(row['p99']):>8} "
            f"{_fmt(row['mean']):>8} {_fmt(row['max']):>8}  {'; '.join(notes)}")


def _find(result: dict, kind: str, via_prefix: str, batch: int | None = None) -> dict | None:
    for row in result["series"]:
        if row["kind"] == kind and row["via"].startswith(via_prefix) and (batch is None or row.get("batch") == batch):
            return row
    return None


def print_summary(runs: list[dict], out=print) -> None:
    """One line per database and size: p50/p95/p99 (ms) and append throughput (msg/s)."""
    out("")
    out("p50/p95/p99 in ms; append in messages/second (client = Django test client, sequential; "
        "HTTP = gunicorn 2 workers; append over HTTP with 4 client threads)")
    head = (f"{'database':16} {'nodes':>8} | {'context client':>17} | {'context HTTP':>17} | {'ctx no query cl.':>17} | "
            f"{'search client':>17} | "
            f"{'search HTTP':>17} | {'b=1 cl':>7} {'b=1 HTTP':>8} | {'b=50 cl':>8} {'b=50 HTTP':>9}")
    out(head)
    out("-" * len(head))

    def triple(row):
        if row is None:
            return f"{'—':>17}"
        return f"{row['p50']:5.1f}/{row['p95']:5.1f}/{row['p99']:5.1f}"

    def rate(row):
        return _fmt(row.get("per_s"), 0) if row else "—"

    for run in runs:
        for result in run["sizes"]:
            out(f"{run['database_version'][:16]:16} {result['size']:>8,} | "
                f"{triple(_find(result, 'context', 'test'))} | {triple(_find(result, 'context', 'HTTP'))} | "
                f"{triple(_find(result, 'context-noquery', 'test'))} | "
                f"{triple(_find(result, 'search', 'test'))} | {triple(_find(result, 'search', 'HTTP'))} | "
                f"{rate(_find(result, 'append', 'test', 1)):>7} {rate(_find(result, 'append', 'HTTP', 1)):>8} | "
                f"{rate(_find(result, 'append', 'test', 50)):>8} {rate(_find(result, 'append', 'HTTP', 50)):>9}")
    print_pages(runs, out)
    for run in runs:
        out(f"{run['database_version']}: whole run {run.get('total_s', '—')} s, code {run.get('code', '?')}")


def print_pages(runs: list[dict], out=print) -> None:
    """Dashboard pages (test client, an admin login): a line per page, a column per database
    and size, p50/p95 in ms and the queries of one fetch."""
    columns = [(run["database_version"], result) for run in runs for result in run["sizes"]
               if any(row["kind"] == "page" for row in result["series"])]
    if not columns:
        return
    pages: list[str] = []
    for _, result in columns:
        pages += [row["page"] for row in result["series"] if row["kind"] == "page" and row["page"] not in pages]
    out("")
    out("dashboard pages (test client, admin login): p50/p95 ms (queries); the bar: well under 200 ms at 10k nodes")
    titles = [f"{database.split()[0][:10]} {result['size']:,}" for database, result in columns]
    head = f"{'page':24} | " + " | ".join(f"{title:>22}" for title in titles)
    out(head)
    out("-" * len(head))
    for page in pages:
        cells = []
        for _, result in columns:
            row = next((row for row in result["series"] if row["kind"] == "page" and row["page"] == page), None)
            cells.append(f"{row['p50']:.1f}/{row['p95']:.1f} ({row['queries']})" if row else "—")
        out(f"{page:24} | " + " | ".join(f"{cell:>22}" for cell in cells))


def main(paths: list[str]) -> int:
    runs = []
    for path in paths:
        try:
            with open(path) as handle:
                runs.append(json.load(handle))
        except FileNotFoundError:
            print(f"(no {path})")
    if runs:
        print_summary(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
