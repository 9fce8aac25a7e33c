"""Timing helpers: percentiles, the test-client and HTTP drivers, and the gunicorn server."""

from __future__ import annotations

import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Series:
    """Latencies of one measured operation (ms), with failures and extra per-call figures."""

    name: str
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    degraded: int = 0
    server_ms: list[float] = field(default_factory=list)  # context diagnostics.latency_ms
    hits: list[int] = field(default_factory=list)  # hits injected (context) or returned (search)
    found: list[int] = field(default_factory=list)  # context: L5 hits found before the budget cut
    items: int = 0  # messages appended
    wall_s: float = 0.0
    note: str = ""

    def summary(self) -> dict:
        out = {
            "name": self.name,
            "n": len(self.latencies),
            "p50": percentile(self.latencies, 50),
            "p95": percentile(self.latencies, 95),
            "p99": percentile(self.latencies, 99),
            "mean": sum(self.latencies) / len(self.latencies) if self.latencies else float("nan"),
            "max": max(self.latencies) if self.latencies else float("nan"),
            "errors": self.errors,
            "degraded": self.degraded,
            "note": self.note,
        }
        if self.server_ms:
            out["server_p50"] = percentile(self.server_ms, 50)
            out["server_p95"] = percentile(self.server_ms, 95)
        if self.hits:
            out["hits_mean"] = sum(self.hits) / len(self.hits)
            out["zero_hit_share"] = sum(1 for hit in self.hits if hit == 0) / len(self.hits)
        if self.found:
            out["found_mean"] = sum(self.found) / len(self.found)
        if self.items:
            out["items"] = self.items
            out["wall_s"] = self.wall_s
            out["per_s"] = self.items / self.wall_s if self.wall_s else float("nan")
            out["requests_per_s"] = len(self.latencies) / self.wall_s if self.wall_s else float("nan")
        return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """gunicorn config.wsgi with N sync workers on a free loopback port, same environment."""

    def __init__(self, env: dict[str, str], workers: int = 2):
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = ROOT / "var" / "bench-gunicorn.log"
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--workers", str(workers),
             "--bind", f"127.0.0.1:{self.port}", "--chdir", str(ROOT), "--timeout", "120", "--log-level", "warning"],
            env=env, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}; see {self.log_path}")
            try:
                if httpx.get(self.base_url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"gunicorn did not answer within 60 s; see {self.log_path}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # the master we started; it stops its workers
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def run_sequential(series: Series, calls, warmup: int, call) -> Series:
    """Time `call(arg)` for each arg in `calls` after `warmup` untimed calls; call returns (ok, extra)."""
    for arg in calls[:warmup]:
        call(arg)
    started = time.perf_counter()
    for arg in calls[warmup:]:
        t0 = time.perf_counter()
        ok, extra = call(arg)
        series.latencies.append((time.perf_counter() - t0) * 1000)
        _account(series, ok, extra)
    series.wall_s = time.perf_counter() - started
    return series


def run_concurrent(series: Series, calls, warmup: int, make_call, threads: int) -> Series:
    """As run_sequential, with `threads` workers each holding its own client (make_call() → call)."""
    lock = threading.Lock()
    local = threading.local()

    def one(arg):
        if not hasattr(local, "call"):
            local.call = make_call()
        t0 = time.perf_counter()
        ok, extra = local.call(arg)
        elapsed = (time.perf_counter() - t0) * 1000
        with lock:
            series.latencies.append(elapsed)
            _account(series, ok, extra)

    warm = make_call()
    for arg in calls[:warmup]:
        warm(arg)
    with ThreadPoolExecutor(threads) as pool:
        started = time.perf_counter()
        list(pool.map(one, calls[warmup:]))
        series.wall_s = time.perf_counter() - started
    return series


def _account(series: Series, ok: bool, extra: dict | None) -> None:
    if not ok:
        series.errors += 1
        return
    extra = extra or {}
    if extra.get("degraded"):
        series.degraded += 1
    if "server_ms" in extra:
        series.server_ms.append(extra["server_ms"])
    if "hits" in extra:
        series.hits.append(extra["hits"])
    if "found" in extra:
        series.found.append(extra["found"])
    series.items += extra.get("items", 0)


def environment_for_server() -> dict[str, str]:
    env = os.environ.copy()
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env
