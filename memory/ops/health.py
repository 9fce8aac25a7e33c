"""Health of the parts a deployment needs (R-OPS): the database, the broker and the workers.

Each check answers a small dict with a `status`:
  database  ok | error
  broker    ok | eager (no broker: tasks run in-process) | error
  worker    ok | eager | stale (heartbeat older than MEMORY_HEARTBEAT_MAX_AGE) | missing
            (no heartbeat yet) | error (the database could not be read)
A check never raises; errors are reported by exception class name only, never with a
connection string or a message that could carry a password.
"""

import logging
import time
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memory.ops_models import Heartbeat

logger = logging.getLogger(__name__)

WORKER = "worker"
GOOD = {"ok", "eager"}
BROKER_TIMEOUT_SECONDS = 0.5
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def celery_conf() -> tuple[str, bool]:
    """(broker URL, eager) as the Celery app sees them now."""
    from config.celery import app

    return str(app.conf.broker_url or ""), bool(app.conf.task_always_eager)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def database_check() -> dict:
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as error:  # noqa: BLE001 - a probe reports, it does not crash
        logger.warning("health: database unreachable (%s)", type(error).__name__)
        return {"status": "error", "error": type(error).__name__}
    return {"status": "ok", "latency_ms": _ms(started)}


def redis_client(url: str):
    import redis

    return redis.Redis.from_url(url, socket_connect_timeout=BROKER_TIMEOUT_SECONDS, socket_timeout=BROKER_TIMEOUT_SECONDS)


def broker_check() -> dict:
    url, eager = celery_conf()
    if eager:
        return {"status": "eager"}
    started = time.perf_counter()
    try:
        if url.startswith(REDIS_SCHEMES):
            client = redis_client(url)
            try:
                client.ping()
            finally:
                client.close()
        else:
            from kombu import Connection

            with Connection(url, connect_timeout=BROKER_TIMEOUT_SECONDS) as broker:
                broker.ensure_connection(max_retries=1, timeout=BROKER_TIMEOUT_SECONDS)
    except Exception as error:  # noqa: BLE001
        logger.warning("health: broker unreachable (%s)", type(error).__name__)
        return {"status": "error", "error": type(error).__name__}
    return {"status": "ok", "latency_ms": _ms(started)}


def heartbeat_at(name: str = WORKER) -> datetime | None:
    return Heartbeat.objects.filter(name=name).values_list("beat_at", flat=True).first()


def heartbeat_stamp(name: str = WORKER) -> datetime:
    """Record that `name` is alive now; returns the time written."""
    now = timezone.now()
    Heartbeat.objects.update_or_create(name=name, defaults={"beat_at": now})
    return now


def worker_check() -> dict:
    if celery_conf()[1]:
        return {"status": "eager"}
    limit = settings.MEMORY_HEARTBEAT_MAX_AGE
    try:
        beat_at = heartbeat_at()
    except Exception as error:  # noqa: BLE001
        return {"status": "error", "error": type(error).__name__}
    if beat_at is None:
        return {"status": "missing", "max_age_seconds": limit}
    age = round(max(0.0, (timezone.now() - beat_at).total_seconds()), 1)
    return {"status": "ok" if age <= limit else "stale", "age_seconds": age, "max_age_seconds": limit}


def health_report() -> tuple[dict, int]:
    """Every component and the HTTP status for it: 200 when all are ok (or eager), else 503."""
    components = {"database": database_check(), "broker": broker_check(), "worker": worker_check()}
    healthy = all(part["status"] in GOOD for part in components.values())
    return {"status": "ok" if healthy else "degraded", "components": components}, 200 if healthy else 503
