"""The production stack on this machine for `make load` and `make faults` (docs/reliability/faults-load.md).

Its own PostgreSQL cluster (initdb into /tmp, owned by the postgres user, port 8432), its own
redis-server (port 8479, no persistence), gunicorn with config/gunicorn.conf.py and a Celery
worker with beat embedded: every piece can be stopped, killed and started again without
touching the shared servers. A fake OpenAI-compatible endpoint (port 8481) stands in for the
extraction model, with a delay the caller sets, so a capture job can be caught mid-task.

Environment: FAULTS_PG_PORT (8432), FAULTS_REDIS_PORT (8479), FAULTS_WEB_PORT (8400),
FAULTS_LLM_PORT (8481), FAULTS_PG_DIR (/tmp/mt-faults-pg), FAULTS_DB (mt_faults).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
PG_BIN = Path(os.environ.get("FAULTS_PG_BIN", "/usr/lib/postgresql/15/bin"))
PG_PORT = int(os.environ.get("FAULTS_PG_PORT", "8432"))
PG_DIR = Path(os.environ.get("FAULTS_PG_DIR", "/tmp/mt-faults-pg"))
REDIS_PORT = int(os.environ.get("FAULTS_REDIS_PORT", "8479"))
WEB_PORT = int(os.environ.get("FAULTS_WEB_PORT", "8400"))
LLM_PORT = int(os.environ.get("FAULTS_LLM_PORT", "8481"))
DB = os.environ.get("FAULTS_DB", "mt_faults")
URL = f"http://127.0.0.1:{WEB_PORT}"
WORK = ROOT / "var" / "faults"


def as_postgres(*args: str) -> subprocess.CompletedProcess:
    """Run a PostgreSQL binary as the postgres user (initdb refuses root)."""
    command = list(args) if os.geteuid() != 0 else ["runuser", "-u", "postgres", "--", *args]
    return subprocess.run(command, capture_output=True, text=True, check=True)


class Postgres:
    """A throw-away cluster: created anew by start(fresh=True), stopped and started at will."""

    socket_dir = Path("/tmp/mt-faults-sock")

    def start(self, *, fresh: bool = False) -> None:
        if fresh:
            self.stop()
            shutil.rmtree(PG_DIR, ignore_errors=True)
            self.socket_dir.mkdir(exist_ok=True)
            shutil.chown(self.socket_dir, "postgres") if os.geteuid() == 0 else None
            as_postgres(str(PG_BIN / "initdb"), "-D", str(PG_DIR), "-A", "trust", "-U", "postgres", "-E", "UTF8",
                        "--locale=C.UTF-8")
        as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(PG_DIR), "-w", "-l", str(PG_DIR / "server.log"),
                    "-o", f"-p {PG_PORT} -k {self.socket_dir} -c listen_addresses=127.0.0.1 -c max_connections=100",
                    "start")

    def stop(self) -> None:
        if (PG_DIR / "postmaster.pid").exists():
            as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(PG_DIR), "-w", "-m", "fast", "stop")

    def url(self, database: str = DB) -> str:
        return f"postgres://postgres@127.0.0.1:{PG_PORT}/{database}"

    def psql(self, sql: str, database: str = DB) -> str:
        result = subprocess.run(["psql", self.url(database), "-XAtqc", sql], capture_output=True, text=True, check=True)
        return result.stdout.strip()


class Redis:
    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(["redis-server", "--port", str(REDIS_PORT), "--bind", "127.0.0.1", "--save", "",
                                         "--appendonly", "no"], stdout=subprocess.DEVNULL, start_new_session=True)
        wait_for(lambda: subprocess.run(["redis-cli", "-p", str(REDIS_PORT), "ping"], capture_output=True).returncode == 0,
                 10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None


class FakeModel:
    """An OpenAI-compatible /chat/completions that waits `delay` seconds, then answers. For an
    extraction window it proposes one session-scope fact, key fault_note_<first message id>,
    citing the window's first user message; `extractions` counts the calls per window."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.extractions: dict[int, int] = {}
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server hook
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                answer = {"summary": "对话摘要", "operations": []}
                try:
                    prompt = json.loads(body["messages"][-1]["content"])
                except (ValueError, KeyError, IndexError, TypeError):
                    prompt = {}
                messages = prompt.get("messages") or [] if "active_memories" in prompt else []
                if messages:
                    window = messages[0]["id"]
                    model.extractions[window] = model.extractions.get(window, 0) + 1
                    said = [m["id"] for m in messages if m.get("role") == "user"]
                    if said:
                        answer["operations"] = [{"operation": "create", "node": {
                            "scope": "session", "type": "fact", "key": f"fault_note_{window}", "value_json": window,
                            "title": f"fault note {window}", "source_message_ids": [said[0]]}}]
                time.sleep(model.delay)
                data = json.dumps({"choices": [{"message": {"content": json.dumps(answer)}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except BrokenPipeError:  # the worker was killed while it waited: expected in scenario c
                    pass

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", LLM_PORT), Handler)
        self.url = f"http://127.0.0.1:{LLM_PORT}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


def environment(pg: Postgres, **overrides: str) -> dict[str, str]:
    env = {**os.environ, "DATABASE_URL": pg.url(), "CELERY_BROKER_URL": f"redis://127.0.0.1:{REDIS_PORT}/0",
           "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "false", "SECRET_KEY": "faults-" + "x" * 44,
           "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver", "GUNICORN_BIND": f"127.0.0.1:{WEB_PORT}",
           "MEMORY_LOG_FORMAT": "json", "LOG_LEVEL": "warning", "CONN_MAX_AGE": "60",
           # 50 agents share one key here; the throttle still runs on every call, it never refuses.
           "MEMORY_RATE_KEY": "100000/min", "MEMORY_HEARTBEAT_EVERY": "5"}
    env.update(overrides)
    return env


class App:
    """gunicorn and a Celery worker (beat embedded), as separate process groups."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.web: subprocess.Popen | None = None
        self.worker: subprocess.Popen | None = None
        WORK.mkdir(parents=True, exist_ok=True)

    def manage(self, *args: str) -> str:
        result = subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"manage.py {' '.join(args)} failed:\n{result.stderr[-3000:]}")
        return result.stdout

    def _spawn(self, name: str, *args: str) -> subprocess.Popen:
        log = (WORK / f"{name}.log").open("a")
        return subprocess.Popen(args, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def start_web(self) -> None:
        self.web = self._spawn("web", str(Path(PY).parent / "gunicorn"), "-c", "config/gunicorn.conf.py")
        if wait_for(up, 60) is None:
            raise SystemExit(f"gunicorn did not answer on {URL}; see {WORK / 'web.log'}")

    def start_worker(self) -> None:
        self.worker = self._spawn("worker", PY, "-m", "celery", "-A", "config", "worker", "-B", "-P", "solo",
                                  "--without-gossip", "--without-mingle", "-s", str(WORK / "celerybeat-schedule"))

    def kill_worker(self) -> None:
        """SIGKILL the worker's whole process group: no warm shutdown, no ack, no cleanup."""
        if self.worker is not None and self.worker.poll() is None:
            os.killpg(self.worker.pid, signal.SIGKILL)
            self.worker.wait()

    def stop(self) -> None:
        for process in (self.worker, self.web):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)


def seed(app: App, pg: Postgres) -> str:
    """A fresh database with the demo team; returns the agent key."""
    pg.psql(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)', "postgres")
    pg.psql(f'CREATE DATABASE "{DB}"', "postgres")
    app.manage("migrate", "--noinput", "-v0")
    return re.search(r"Agent key \(team demo\): (\S+)", app.manage("seed_demo")).group(1)


def up() -> bool:
    try:
        return httpx.get(f"{URL}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def wait_for(predicate, seconds: float, every: float = 0.25) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if predicate():
            return time.monotonic() - started
        time.sleep(every)
    return None
