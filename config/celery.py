"""The Celery app (R-EXTRACT, R-OPS): Redis as broker via CELERY_BROKER_URL, beat for the
periodic sweeps. Without a broker (the embedded default), CELERY_TASK_ALWAYS_EAGER runs tasks
in-process. Run a worker with `celery -A config worker -B` (beat embedded) or separately."""

import os

from celery import Celery
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("memory")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["memory.capture"])
app.conf.beat_schedule = {
    # Expires after one period: a heartbeat that waited longer than that proves nothing.
    "heartbeat": {"task": "memory.capture.tasks.heartbeat", "schedule": float(settings.MEMORY_HEARTBEAT_EVERY),
                  "options": {"expires": float(settings.MEMORY_HEARTBEAT_EVERY)}},
    "capture-sweep": {"task": "memory.capture.tasks.sweep_jobs", "schedule": float(settings.MEMORY_CAPTURE_SWEEP_EVERY)},
    "expiry-sweep": {"task": "memory.capture.tasks.sweep_expired", "schedule": 300.0},
    # Only where partition_retrievals --apply ran; daily, so a missed day still leaves months ahead.
    "partitions-ahead": {"task": "memory.capture.tasks.partitions_ahead", "schedule": 86400.0},
}
