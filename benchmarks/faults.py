"""`make faults`: faults injected into the running stack, with the load of `make load` on it
(docs/reliability/faults-load.md). Exits 1 if any expectation fails.

The stack is benchmarks/stack.py: its own PostgreSQL cluster and redis-server (so stopping
them disturbs nobody), gunicorn, a Celery worker with beat, and a fake extraction model whose
delay is set per scenario. The sweep runs every 5 s and a job's lease is 20 s
(MEMORY_CAPTURE_SWEEP_EVERY, MEMORY_CAPTURE_LEASE_SECONDS), so a lost job comes back within
a run instead of after the production 5 minutes.

a. PostgreSQL stopped (fast shutdown) for FAULTS_PG_DOWN seconds (4) during load, then started:
   every failure must be a 5xx with the API's JSON error shape (no hang, no dropped
   connection), and requests succeed again without restarting gunicorn or the worker.
b. Redis stopped for FAULTS_REDIS_DOWN seconds (20) during load: no agent call fails, latency
   stays level; the capture jobs recorded meanwhile run once Redis is back.
c. The Celery worker SIGKILLed while a capture job waits for the model: a new worker starts;
   the job runs again when its lease runs out and is done once.
Then every capture job must be done, none failed, and no extracted memory doubled.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stack  # noqa: E402
from load import USERS, jobs, machine, percentile, read_log, run_agents, summarize  # noqa: E402

PG_DOWN = float(os.environ.get("FAULTS_PG_DOWN", "4"))
REDIS_DOWN = float(os.environ.get("FAULTS_REDIS_DOWN", "20"))
LEASE = 20
failures: list[str] = []
figures: dict = {}


def expect(condition: bool, what: str) -> None:
    print(("  ok   " if condition else "  FAIL ") + what, flush=True)
    if not condition:
        failures.append(what)


def under_load(key: str, seconds: int, name: str, inject) -> list[dict]:
    """Run the agents for `seconds`, call inject() while they run, return their request records."""
    log = stack.WORK / f"faults-{name}.jsonl"
    log.unlink(missing_ok=True)
    agents = run_agents(key, seconds, log)
    inject()
    agents.wait()
    return read_log(log)


def figures_of(rows: list[dict]) -> dict:
    """Requests, errors and latencies of a phase (no rate: phases differ in length)."""
    return {key: value for key, value in summarize(rows, 1)["all"].items() if key != "per_second"}


def phase(records: list[dict], start: float, end: float) -> list[dict]:
    return [r for r in records if start <= r["t"] < end]


def latency(rows: list[dict]) -> str:
    times = [r["ms"] for r in rows]
    return (f"{len(rows)} requests, {sum(1 for r in rows if r['error'])} failed, p50 {percentile(times, .5):.0f} ms,"
            f" p95 {percentile(times, .95):.0f} ms, p99 {percentile(times, .99):.0f} ms, max {max(times, default=0):.0f} ms")


def postgres_restart(pg: stack.Postgres, key: str) -> None:
    print(f"== a. PostgreSQL stopped for {PG_DOWN:.0f} s during load ({USERS} agents)")
    marks = {}

    def inject() -> None:
        time.sleep(15)
        marks["down"] = time.time()
        pg.stop()
        time.sleep(PG_DOWN)
        pg.start()
        marks["up"] = time.time()

    records = under_load(key, 45, "postgres", inject)
    failed = [r for r in records if r["error"]]
    clean = [r for r in failed if r["status"] >= 500 and r["json_error"]]
    statuses = sorted({r["status"] for r in failed})
    last_failure = max((r["t"] + r["ms"] / 1000 for r in failed), default=marks["down"])
    recovered = max(0.0, last_failure - marks["up"])
    after = phase(records, marks["up"] + 5, float("inf"))
    print(f"   before: {latency(phase(records, 0, marks['down']))}")
    print(f"   outage ({marks['up'] - marks['down']:.1f} s, stop to accepting): "
          f"{latency(phase(records, marks['down'], marks['up']))}")
    print(f"   after: {latency(after)}")
    expect(len(failed) == len(clean), f"{len(failed)} of {len(records)} requests failed, all clean 5xx JSON errors"
           f" (statuses {statuses}); {len(failed) - len(clean)} unclean")
    expect(max((r["ms"] for r in records), default=0) < 15000, "no request hung (all answered within 15 s)")
    expect(not [r for r in after if r["error"]], f"recovered {recovered:.1f} s after PostgreSQL accepted connections,"
           " with no restart of gunicorn or the worker; 0 failures from 5 s after")
    figures["postgres"] = {"requests": len(records), "failed": len(failed), "unclean": len(failed) - len(clean),
                           "statuses": statuses, "outage_seconds": round(marks["up"] - marks["down"], 1),
                           "recovered_seconds": round(recovered, 1), "after": figures_of(after)}


def redis_outage(redis: stack.Redis, pg: stack.Postgres, key: str) -> None:
    print(f"== b. Redis stopped for {REDIS_DOWN:.0f} s during load ({USERS} agents)")
    marks = {}

    def inject() -> None:
        time.sleep(15)
        marks["down"] = time.time()
        redis.stop()
        time.sleep(REDIS_DOWN)
        redis.start()
        marks["up"] = time.time()

    before_jobs = int(pg.psql("SELECT count(*) FROM memory_capturejob"))
    records = under_load(key, 50, "redis", inject)
    rows = {name: phase(records, *bounds) for name, bounds in
            (("before", (0, marks["down"])), ("outage", (marks["down"], marks["up"])), ("after", (marks["up"], 1e12)))}
    for name, chosen in rows.items():
        print(f"   {name}: {latency(chosen)}")
    during = int(pg.psql(f"SELECT count(*) FROM memory_capturejob WHERE created_at >= to_timestamp({marks['down']:f})"
                         f" AND created_at < to_timestamp({marks['up']:f})"))
    p95 = {name: percentile([r["ms"] for r in chosen], .95) for name, chosen in rows.items()}
    expect(not [r for r in records if r["error"]], f"0 of {len(records)} agent calls failed")
    expect(p95["outage"] <= 2 * p95["before"] + 100,
           f"latency level: p95 {p95['before']:.0f} ms before, {p95['outage']:.0f} ms with Redis down")
    started = time.monotonic()
    drained = stack.wait_for(lambda: jobs(pg).get("pending", 0) == 0, 180, every=1)
    total = int(pg.psql("SELECT count(*) FROM memory_capturejob")) - before_jobs
    expect(drained is not None and during > 0, f"{during} capture jobs recorded while Redis was down; all {total} jobs"
           f" of the run done {time.monotonic() - started:.0f} s after the agents stopped")
    figures["redis"] = {"requests": len(records), "failed": sum(1 for r in records if r["error"]),
                        "phases": {name: figures_of(chosen) for name, chosen in rows.items()},
                        "jobs_during_outage": during, "jobs_in_run": total}


def worker_kill(app: stack.App, pg: stack.Postgres, model: stack.FakeModel, key: str) -> None:
    print("== c. Celery worker SIGKILLed while a capture job waits for the model")
    model.delay = 10.0
    agent = httpx.Client(base_url=stack.URL, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    answer = agent.post("/api/v1/messages", json={"workspace_id": "load", "user_id": "kill", "session_id": "kill-1",
                                                  "role": "user", "content": "记住，我周五下午不开会。"})
    assert answer.status_code == 201, answer.text
    window = answer.json()["ids"][0]
    stack.wait_for(lambda: model.extractions.get(window, 0) >= 1, 30, every=0.1)
    job = pg.psql("SELECT id, status, attempts FROM memory_capturejob WHERE session_id = (SELECT id FROM memory_session"
                  " WHERE external_id = 'kill-1')")
    time.sleep(1)
    killed = time.time()
    app.kill_worker()
    model.delay = 0.05
    print(f"   job (id, status, attempts) at the kill: {job}")
    app.start_worker()
    job_id = job.split("|")[0]
    done = stack.wait_for(lambda: pg.psql(f"SELECT status FROM memory_capturejob WHERE id = {job_id}") == "done",
                          LEASE + 60, every=0.5)
    status, attempts = pg.psql(f"SELECT status, attempts FROM memory_capturejob WHERE id = {job_id}").split("|")
    notes = int(pg.psql(f"SELECT count(*) FROM memory_node WHERE key = 'fault_note_{window}'"))
    expect(done is not None and status == "done" and attempts == "2" and notes == 1,
           f"job {job_id} {status} after {time.time() - killed:.1f} s (lease {LEASE} s), attempts {attempts},"
           f" model called {model.extractions.get(window)} times for its window, {notes} memory written")
    figures["worker_kill"] = {"job": int(job_id), "status": status, "attempts": int(attempts), "notes": notes,
                              "seconds_to_done": round(time.time() - killed, 1)}


def exactly_once(pg: stack.Postgres) -> None:
    print("== all capture jobs")
    counts = jobs(pg)
    doubled = int(pg.psql("SELECT count(*) FROM (SELECT key FROM memory_node WHERE key LIKE 'fault_note_%'"
                          " GROUP BY team_id, key HAVING count(*) > 1) doubled"))
    notes = int(pg.psql("SELECT count(*) FROM memory_node WHERE key LIKE 'fault_note_%'"))
    accepted = int(pg.psql("SELECT coalesce(sum((result->'outcomes'->>'accepted')::int), 0) FROM memory_capturejob"
                           " WHERE status = 'done'"))
    expect(counts.get("pending", 0) == 0 and counts.get("failed", 0) == 0,
           f"jobs by status {counts}: none lost (pending) or given up (failed)")
    expect(doubled == 0 and notes == accepted, f"{notes} extracted memories for {accepted} accepted proposals, {doubled} doubled")
    figures["jobs"] = {**counts, "extracted": notes, "doubled": doubled}


def main() -> int:
    pg, redis, model = stack.Postgres(), stack.Redis(), stack.FakeModel()
    app, host = None, machine()
    model.delay = 0.05  # a fast model: the worker keeps up with the agents' jobs
    try:
        pg.start(fresh=True)
        redis.start()
        app = stack.App(stack.environment(pg, MEMORY_LLM_BASE_URL=model.url, MEMORY_LLM_MODEL="fake",
                                          MEMORY_CAPTURE_SWEEP_EVERY="5", MEMORY_CAPTURE_LEASE_SECONDS=str(LEASE)))
        key = stack.seed(app, pg)
        app.start_web()
        app.start_worker()
        print(f"   machine: {host}; gunicorn {os.environ.get('WEB_CONCURRENCY', 'default')} workers, CONN_MAX_AGE=60")
        postgres_restart(pg, key)
        redis_outage(redis, pg, key)
        worker_kill(app, pg, model, key)
        stack.wait_for(lambda: jobs(pg).get("pending", 0) == 0, 120, every=1)
        exactly_once(pg)
    finally:
        if app is not None:
            app.stop()
        redis.stop()
        pg.stop()
        model.close()
    figures["machine"] = host
    (stack.WORK / "faults.json").write_text(json.dumps(figures, indent=2))
    print("all expectations met" if not failures else f"{len(failures)} expectation(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
