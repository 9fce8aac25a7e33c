"""/healthz/full: database, broker and worker heartbeat, each state (R-OPS)."""

import os
from datetime import timedelta
from unittest import mock

import pytest
from django.db import OperationalError, connection
from django.urls import reverse
from django.utils import timezone

from memory.capture.tasks import heartbeat
from memory.ops_models import Heartbeat
from tests.helpers import celery_broker

REDIS_URL = os.environ.get("MEMORY_TEST_REDIS_URL", "")
DOWN_BROKER = "redis://127.0.0.1:1/0"  # nothing listens on port 1
needs_redis = pytest.mark.skipif(not REDIS_URL, reason="MEMORY_TEST_REDIS_URL is not set")


def full(client):
    response = client.get(reverse("healthz-full"))
    return response.status_code, response.json()


def test_embedded_default_is_ok_with_eager_broker_and_worker(client, db):
    status, body = full(client)
    assert status == 200
    assert body["status"] == "ok"
    assert body["components"]["database"]["status"] == "ok"
    assert body["components"]["broker"] == {"status": "eager"}
    assert body["components"]["worker"] == {"status": "eager"}


def test_unreachable_broker_is_an_error_and_503(client, db):
    with celery_broker(DOWN_BROKER, eager=False):
        status, body = full(client)
    assert status == 503
    assert body["status"] == "degraded"
    assert body["components"]["broker"] == {"status": "error", "error": "ConnectionError"}
    assert body["components"]["database"]["status"] == "ok"


def test_broker_error_does_not_leak_the_broker_url(client, db):
    with celery_broker("redis://:s3cret-pass@127.0.0.1:1/0", eager=False):
        response = client.get(reverse("healthz-full"))
    assert b"s3cret" not in response.content


def test_worker_without_any_heartbeat_is_missing(client, db):
    with celery_broker(DOWN_BROKER, eager=False):
        status, body = full(client)
    assert status == 503
    assert body["components"]["worker"] == {"status": "missing", "max_age_seconds": 180}


def test_worker_with_an_old_heartbeat_is_stale(client, db, settings):
    settings.MEMORY_HEARTBEAT_MAX_AGE = 60
    Heartbeat.objects.create(name="worker", beat_at=timezone.now() - timedelta(seconds=300))
    with celery_broker(DOWN_BROKER, eager=False):
        _, body = full(client)
    worker = body["components"]["worker"]
    assert worker["status"] == "stale"
    assert 299 <= worker["age_seconds"] <= 310
    assert worker["max_age_seconds"] == 60


def test_heartbeat_task_makes_the_worker_ok(client, db):
    Heartbeat.objects.create(name="worker", beat_at=timezone.now() - timedelta(days=1))
    heartbeat()
    assert Heartbeat.objects.count() == 1
    with celery_broker(DOWN_BROKER, eager=False):
        _, body = full(client)
    assert body["components"]["worker"]["status"] == "ok"
    assert body["components"]["worker"]["age_seconds"] < 5


def test_unreachable_database_is_an_error_and_503(client, db):
    with mock.patch.object(connection, "cursor", side_effect=OperationalError("connection refused")):
        status, body = full(client)
    assert status == 503
    assert body["components"]["database"] == {"status": "error", "error": "OperationalError"}


def test_health_refuses_writes_with_405(client, db):
    response = client.post(reverse("healthz-full"))
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"


@needs_redis
def test_reachable_redis_broker_and_fresh_heartbeat_is_ok(client, db):
    heartbeat()
    with celery_broker(REDIS_URL, eager=False):
        status, body = full(client)
    assert status == 200
    assert body["status"] == "ok"
    assert body["components"]["broker"]["status"] == "ok"
    assert body["components"]["worker"]["status"] == "ok"
