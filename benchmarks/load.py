"""`make load`: 50 concurrent agents for LOAD_SECONDS (default 60) against gunicorn + PostgreSQL
+ Redis + a Celery worker on this machine; prints throughput, p50/p95/p99 per operation and the
error count (docs/reliability/faults-load.md). Exits 1 if any request failed.

The stack is benchmarks/stack.py (its own PostgreSQL cluster and redis-server, started here
and stopped at the end); the agents are benchmarks/locustfile.py, run headless in a process of
their own. Environment: LOAD_USERS (50), LOAD_SECONDS (60), LOAD_WAIT ("0.5,1.5"),
WEB_CONCURRENCY (the gunicorn config's default: 2 × cores + 1).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stack  # noqa: E402

USERS = int(os.environ.get("LOAD_USERS", "50"))
SECONDS = int(os.environ.get("LOAD_SECONDS", "60"))
OPERATIONS = ("append", "context", "propose", "search")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))] if ordered else 0.0


def summarize(records: list[dict], seconds: float) -> dict:
    """Per operation and in total: requests, per second, p50/p95/p99/max ms, errors."""
    out = {}
    for name in (*OPERATIONS, "all"):
        rows = [r for r in records if name == "all" or r["op"] == name]
        times = [r["ms"] for r in rows]
        out[name] = {"requests": len(rows), "per_second": round(len(rows) / seconds, 1),
                     "p50": round(percentile(times, 0.50), 1), "p95": round(percentile(times, 0.95), 1),
                     "p99": round(percentile(times, 0.99), 1), "max": round(max(times, default=0), 1),
                     "errors": sum(1 for r in rows if r["error"])}
    return out


def table(summary: dict) -> str:
    lines = ["| operation | requests | per second | p50 ms | p95 ms | p99 ms | max ms | errors |",
             "|---|---|---|---|---|---|---|---|"]
    for name, row in summary.items():
        lines.append(f"| {name} | {row['requests']} | {row['per_second']} | {row['p50']} | {row['p95']} | {row['p99']}"
                     f" | {row['max']} | {row['errors']} |")
    return "\n".join(lines)


def run_agents(key: str, seconds: int, log: Path, users: int = USERS) -> subprocess.Popen:
    """Start the locust agents headless; they write one JSON line per request to `log` at the end."""
    env = {**os.environ, "LOAD_KEY": key, "LOAD_LOG": str(log)}
    locust = str(Path(sys.executable).parent / "locust")
    return subprocess.Popen([locust, "-f", str(Path(__file__).with_name("locustfile.py")), "--headless", "-u", str(users),
                             "-r", str(users), "-t", f"{seconds}s", "--host", stack.URL, "--only-summary",
                             "--loglevel", "WARNING"], env=env, stdout=(stack.WORK / "locust.log").open("a"),
                            stderr=subprocess.STDOUT, cwd=stack.ROOT)


def read_log(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line]


def jobs(pg: stack.Postgres) -> dict[str, int]:
    rows = pg.psql("SELECT status, count(*) FROM memory_capturejob GROUP BY status")
    return {line.split("|")[0]: int(line.split("|")[1]) for line in rows.splitlines() if line}


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return (f"{os.cpu_count()} cores ({cpu}), load average {os.getloadavg()[0]:.2f} before the run, "
            f"Python {platform.python_version()}")


def main() -> int:
    pg, redis = stack.Postgres(), stack.Redis()
    app, host = None, machine()
    try:
        print("== stack: own PostgreSQL cluster, own redis-server, gunicorn, Celery worker with beat")
        pg.start(fresh=True)
        redis.start()
        app = stack.App(stack.environment(pg))
        key = stack.seed(app, pg)
        app.start_web()
        app.start_worker()
        print(f"   machine: {host}")
        workers = os.environ.get("WEB_CONCURRENCY", str((os.cpu_count() or 1) * 2 + 1))
        print(f"   gunicorn: {workers} sync workers, CONN_MAX_AGE=60; MEMORY_RATE_KEY=100000/min (throttle on, never hit)")
        log = stack.WORK / "load-requests.jsonl"
        log.unlink(missing_ok=True)
        print(f"== {USERS} agents for {SECONDS} s (think time {os.environ.get('LOAD_WAIT', '0.5,1.5')} s)")
        started = time.monotonic()
        run_agents(key, SECONDS, log).wait()
        elapsed = time.monotonic() - started
        records = read_log(log)
        window = max(r["t"] for r in records) - min(r["t"] for r in records)
        summary = summarize(records, window)
        print(table(summary))
        errors = [r for r in records if r["error"]]
        for record in errors[:10]:
            print("   error:", record)
        drained = stack.wait_for(lambda: jobs(pg).get("pending", 0) == 0, 120, every=1)
        counts = jobs(pg)
        print(f"   capture jobs after the run: {counts} (pending drained in {drained or -1:.1f} s after the agents stopped)")
        result = {"machine": host, "users": USERS, "seconds": SECONDS, "wall_seconds": round(elapsed, 1),
                  "summary": summary, "capture_jobs": counts}
        (stack.WORK / "load.json").write_text(json.dumps(result, indent=2))
        return 1 if errors else 0
    finally:
        if app is not None:
            app.stop()
        redis.stop()
        pg.stop()


if __name__ == "__main__":
    sys.exit(main())
