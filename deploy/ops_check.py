"""`make ops-check`: the production setup run for real on this machine (docs/reliability/deploy.md).

gunicorn with config/gunicorn.conf.py (2 workers, Prometheus multiprocess mode, JSON logs), a
Celery worker with beat embedded on Redis, PostgreSQL. It walks the health check through its
states (worker missing, ok, stale; broker and database unreachable), sends context calls,
scrapes /metrics and reads the log, and prints the figures. Exits 1 if any expectation fails.

Environment: PG_BASE (default postgres://postgres@127.0.0.1:5432), OPS_CHECK_DB (default
memory_ops_check; dropped and created again), OPS_CHECK_REDIS (default redis://127.0.0.1:6379/14;
flushed), OPS_CHECK_PORT (default 8391), OPS_CHECK_CALLS (default 100).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
BASE = os.environ.get("PG_BASE", "postgres://postgres@127.0.0.1:5432")
DB = os.environ.get("OPS_CHECK_DB", "memory_ops_check")
REDIS = os.environ.get("OPS_CHECK_REDIS", "redis://127.0.0.1:6379/14")
PORT = int(os.environ.get("OPS_CHECK_PORT", "8391"))
CALLS = int(os.environ.get("OPS_CHECK_CALLS", "100"))
WORK = ROOT / "var" / "ops-check"
URL = f"http://127.0.0.1:{PORT}"
ENV = {**os.environ, "DATABASE_URL": f"{BASE}/{DB}", "CELERY_BROKER_URL": REDIS, "DJANGO_SETTINGS_MODULE": "config.settings",
       "DEBUG": "false", "SECRET_KEY": "ops-check-" + "x" * 40, "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
       "MEMORY_LOG_FORMAT": "json", "GUNICORN_BIND": f"127.0.0.1:{PORT}",
       "WEB_CONCURRENCY": "2", "MEMORY_HEARTBEAT_EVERY": "2", "MEMORY_HEARTBEAT_MAX_AGE": "6", "DATABASE_POOL_MAX": "2"}
WEB_ENV = {**ENV, "PROMETHEUS_MULTIPROC_DIR": str(WORK / "prometheus")}  # the web processes only (docs/deploy.md)
failures: list[str] = []


def expect(condition: bool, what: str) -> None:
    print(("  ok   " if condition else "  FAIL ") + what)
    if not condition:
        failures.append(what)


def run(*args: str, env: dict | None = None) -> str:
    result = subprocess.run(args, cwd=ROOT, env=env or ENV, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result.stdout


def health(env_overrides: dict | None = None) -> tuple[int, dict]:
    if env_overrides is None:
        response = httpx.get(f"{URL}/healthz/full", timeout=10)
        return response.status_code, response.json()
    code = ("import django, json; django.setup(); from django.test import Client; r = Client().get('/healthz/full');"
            " print(r.status_code, json.dumps(r.json()))")
    status, body = run(PY, "-c", code, env={**ENV, **env_overrides}).split(" ", 1)
    return int(status), json.loads(body)


def wait_for(predicate, seconds: float) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.25)
    return None


def scrape() -> dict:
    text = httpx.get(f"{URL}/metrics", timeout=10).text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(text) for s in f.samples}


def start(name: str, *args: str, env: dict = ENV) -> subprocess.Popen:
    log = (WORK / f"{name}.log").open("w")
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def main() -> int:
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    for statement in (f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)', f'CREATE DATABASE "{DB}"'):
        run("psql", f"{BASE}/postgres", "-XAtqc", statement)
    run("redis-cli", "-u", REDIS, "FLUSHDB")
    run(PY, "manage.py", "migrate", "--noinput", "-v0")
    key = re.search(r"Agent key \(team demo\): (\S+)", run(PY, "manage.py", "seed_demo")).group(1)
    web = start("web", str(Path(PY).parent / "gunicorn"), "-c", "config/gunicorn.conf.py", env=WEB_ENV)
    worker = None
    try:
        expect(wait_for(lambda: _up(), 30) is not None, "gunicorn answers /healthz")
        print("== health check states")
        status, body = health()
        expect(status == 503 and body["components"]["worker"]["status"] == "missing"
               and body["components"]["broker"]["status"] == "ok", f"no worker yet: {status}, worker missing, broker ok")
        worker = start("worker", PY, "-m", "celery", "-A", "config", "worker", "-B", "-P", "solo", "--without-gossip",
                       "--without-mingle", "-s", str(WORK / "celerybeat-schedule"))
        waited = wait_for(lambda: health()[0] == 200, 60)
        expect(waited is not None, f"worker and beat started: 200 ok after {waited or 0:.1f} s")
        status, body = health()
        print("   ", json.dumps(body))
        print("== context calls and metrics")
        agent = httpx.Client(base_url=URL, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        started = time.perf_counter()
        for index in range(CALLS):
            response = agent.post("/api/v1/context", json={"workspace_id": "home", "user_id": "xiaoming",
                                                           "session_id": f"ops-{index % 5}", "query": "晚饭吃什么"})
            assert response.status_code == 200, response.text
        elapsed = time.perf_counter() - started
        samples = scrape()
        route = (("method", "POST"), ("route", "api/v1/context"), ("status", "200"))
        count = samples.get(("memory_http_request_duration_seconds_count", route), 0)
        total = samples.get(("memory_http_request_duration_seconds_sum", route), 0)
        built = samples.get(("memory_context_build_duration_seconds_count", (("store_status", "ok"),)), 0)
        built_sum = samples.get(("memory_context_build_duration_seconds_sum", (("store_status", "ok"),)), 0)
        files = len(list((WORK / "prometheus").glob("histogram_*.db")))
        expect(count == CALLS, f"{CALLS} context calls counted once across {files} gunicorn processes: {count:.0f}")
        expect(built == CALLS, f"context-build histogram: {built:.0f} builds")
        request_ms, build_ms = total / max(count, 1) * 1000, built_sum / max(built, 1) * 1000
        print(f"    client wall time {elapsed / CALLS * 1000:.1f} ms per call;"
              f" request mean {request_ms:.1f} ms; context build mean {build_ms:.1f} ms")
        names = sorted({name for name, _ in samples})
        print("    metric series:", ", ".join(n for n in names if n.startswith("memory_") and not n.endswith("_bucket")))
        expect(httpx.get(f"{URL}/metrics", headers={"X-Forwarded-For": "203.0.113.9"}).status_code == 403,
               "/metrics through a proxy without the token: 403")
        print("== queue depth with the worker stopped")
        stop(worker)
        for index in range(8):  # MEMORY_CAPTURE_EVERY messages queue one capture job
            agent.post("/api/v1/messages", json={"workspace_id": "home", "user_id": "xiaoming", "session_id": "queued",
                                                 "role": "user", "content": f"第{index}条：我不吃香菜。"})
        samples = scrape()
        pending = samples.get(("memory_capture_jobs_pending", (("kind", "capture"),)), 0)
        queued = samples.get(("memory_celery_queue_length", (("queue", "celery"),)), 0)
        expect(pending >= 1 and queued >= 1, f"capture jobs pending {pending:.0f}, Celery queue length {queued:.0f}")
        waited = wait_for(lambda: health()[1]["components"]["worker"]["status"] == "stale", 30)
        status, body = health()
        expect(status == 503 and waited is not None,
               f"worker stopped: 503, worker stale at {body['components']['worker'].get('age_seconds')} s (limit 6)")
        status, body = health({"CELERY_BROKER_URL": "redis://127.0.0.1:1/0"})
        expect(status == 503 and body["components"]["broker"]["status"] == "error", f"broker unreachable: {status}, broker error")
        status, body = health({"DATABASE_URL": f"{BASE.rsplit(':', 1)[0]}:1/{DB}", "DATABASE_POOL_MAX": "0"})
        expect(status == 503 and body["components"]["database"]["status"] == "error",
               f"database unreachable: {status}, database error")
        print("== logs")
        lines = [json.loads(line) for line in (WORK / "web.log").read_text().splitlines() if line.startswith("{")]
        requests = [line for line in lines if line.get("logger") == "memory.request" and line.get("route") == "api/v1/context"]
        complete = all(line["team"] == "demo" and line["principal"] == "agent" and line["request_id"] for line in requests)
        expect(len(requests) == CALLS and complete, f"{len(requests)} JSON request lines with team and principal")
        expect(key not in (WORK / "web.log").read_text() and key not in (WORK / "worker.log").read_text(),
               "the agent key is in no log")
    finally:
        if worker is not None:
            stop(worker)
        stop(web)
    print("all expectations met" if not failures else f"{len(failures)} expectation(s) failed")
    return 1 if failures else 0


def _up() -> bool:
    try:
        return httpx.get(f"{URL}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


if __name__ == "__main__":
    sys.exit(main())
