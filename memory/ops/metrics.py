"""Prometheus metrics (R-OPS) served at /metrics.

Observed as they happen (histograms, in seconds):
  memory_http_request_duration_seconds{route, method, status}   every request (memory.ops.middleware)
  memory_context_build_duration_seconds{store_status}           every context build (R-CTX)
Read from the database and the broker at each scrape (gauges):
  memory_capture_jobs_pending{kind}          capture jobs waiting for a worker (all teams)
  memory_celery_queue_length{queue}          messages in the Celery queue (Redis broker only)
  memory_worker_heartbeat_age_seconds        age of the worker heartbeat (memory.ops.health)

Under gunicorn every worker process has its own counters: set PROMETHEUS_MULTIPROC_DIR, for the
web processes only, to a directory writable by the service (created if missing;
config/gunicorn.conf.py empties it at start and marks dead workers); a scrape then sums the
files of all processes (docs/deploy.md).

Access rules are in memory.ops.views.
"""

import logging
import os
from pathlib import Path

from django.db.models import Count
from django_scopes import scopes_disabled
from prometheus_client import REGISTRY, CollectorRegistry, Histogram, disable_created_metrics, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily

from memory.ops import health

logger = logging.getLogger(__name__)

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
UNMATCHED_ROUTE = "<unmatched>"  # every 404 outside the URL patterns: one label value, not one per path
PRIORITY_SEP = "\x06\x16"  # kombu's Redis transport: a queue's priority levels are keys <queue><sep><n>
PRIORITY_STEPS = (0, 3, 6, 9)

if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    # Each process writes its values to files there from its first observation: a missing
    # directory would fail that request, not the start-up.
    Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True, exist_ok=True)
disable_created_metrics()  # no *_created series: they double the output and no dashboard reads them

REQUEST_SECONDS = Histogram(
    "memory_http_request_duration_seconds", "Time to answer an HTTP request, by URL pattern, method and status.",
    ["route", "method", "status"], buckets=LATENCY_BUCKETS,
)
CONTEXT_SECONDS = Histogram(
    "memory_context_build_duration_seconds", "Time to build one memory context (R-CTX), by store status.",
    ["store_status"], buckets=LATENCY_BUCKETS,
)


def request_observe(*, route: str, method: str, status: int, seconds: float) -> None:
    REQUEST_SECONDS.labels(route=route, method=method, status=str(status)).observe(seconds)


def context_observe(*, store_status: str, milliseconds: float) -> None:
    CONTEXT_SECONDS.labels(store_status=store_status).observe(milliseconds / 1000)


def celery_queue_length(url: str, queue: str) -> int:
    client = health.redis_client(url)
    try:
        keys = [queue if step == 0 else f"{queue}{PRIORITY_SEP}{step}" for step in PRIORITY_STEPS]
        return sum(int(client.llen(key)) for key in keys)
    finally:
        client.close()


class StateCollector:
    """Gauges read at scrape time, so every process (and every machine) reports the same
    numbers: the database and the broker are the source of truth, not a process's memory."""

    def collect(self):
        from memory.capture_models import CaptureJob, JobKind, JobStatus

        try:
            with scopes_disabled():
                rows = CaptureJob.objects.filter(status=JobStatus.PENDING).order_by().values("kind").annotate(n=Count("id"))
                counts = {row["kind"]: row["n"] for row in rows}
            pending = GaugeMetricFamily("memory_capture_jobs_pending", "Capture jobs waiting for a worker.", labels=["kind"])
            for kind in JobKind.values:
                pending.add_metric([kind], counts.get(kind, 0))
            yield pending
        except Exception as error:  # noqa: BLE001 - a scrape reports what it can
            logger.warning("metrics: capture jobs not counted (%s)", type(error).__name__)
        url, eager = health.celery_conf()
        if not eager and url.startswith(health.REDIS_SCHEMES):
            from config.celery import app

            queue = str(app.conf.task_default_queue or "celery")
            try:
                length = celery_queue_length(url, queue)
            except Exception as error:  # noqa: BLE001
                logger.warning("metrics: broker queue not measured (%s)", type(error).__name__)
            else:
                gauge = GaugeMetricFamily("memory_celery_queue_length", "Tasks waiting in the broker queue.", labels=["queue"])
                gauge.add_metric([queue], length)
                yield gauge
        worker = health.worker_check()
        if "age_seconds" in worker:
            yield GaugeMetricFamily("memory_worker_heartbeat_age_seconds", "Seconds since a worker last ran the heartbeat task.",
                                    value=worker["age_seconds"])


def exposition() -> bytes:
    """The text exposition of every metric: this process's (or, in multiprocess mode, all
    processes') histograms, then the gauges read now."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        processes = CollectorRegistry()
        multiprocess.MultiProcessCollector(processes)
        observed = generate_latest(processes)
    else:
        observed = generate_latest(REGISTRY)
    state = CollectorRegistry()
    state.register(StateCollector())
    return observed + generate_latest(state)
