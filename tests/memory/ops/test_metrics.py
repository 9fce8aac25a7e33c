"""/metrics: who may scrape it, and the values after real requests (R-OPS)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from memory.capture_models import CaptureJob, JobStatus
from tests.helpers import celery_broker

REDIS_URL = os.environ.get("MEMORY_TEST_REDIS_URL", "")
ROOT = Path(__file__).resolve().parents[3]
CONTEXT = {"workspace_id": "home", "user_id": "xiaoming", "session_id": "s1", "query": "dinner"}


def scrape(client, **extra) -> dict[tuple[str, tuple], float]:
    response = client.get(reverse("metrics"), **extra)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.content.decode()) for sample in family.samples}


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_another_machine_without_token_gets_403(client, db):
    response = client.get(reverse("metrics"), REMOTE_ADDR="10.1.2.3")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"


def test_loopback_behind_a_proxy_gets_403(client, db):
    response = client.get(reverse("metrics"), REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert response.status_code == 403


def test_the_metrics_token_opens_it_from_anywhere(client, db, settings):
    settings.MEMORY_METRICS_TOKEN = "scrape-me"
    assert client.get(reverse("metrics"), REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer scrape-me").status_code == 200
    assert client.get(reverse("metrics"), REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403


def test_loopback_can_be_switched_off(client, db, settings):
    settings.MEMORY_METRICS_LOOPBACK = False
    assert client.get(reverse("metrics"), REMOTE_ADDR="127.0.0.1").status_code == 403


def test_context_calls_are_counted_in_both_histograms(client, agent_client):
    before = scrape(client)
    for _ in range(3):
        assert agent_client.post("/api/v1/context", CONTEXT, format="json").status_code == 200
    after = scrape(client)
    route = {"route": "api/v1/context", "method": "POST", "status": "200"}
    assert value(after, "memory_http_request_duration_seconds_count", **route) - \
        value(before, "memory_http_request_duration_seconds_count", **route) == 3
    assert value(after, "memory_context_build_duration_seconds_count", store_status="ok") - \
        value(before, "memory_context_build_duration_seconds_count", store_status="ok") == 3
    assert value(after, "memory_context_build_duration_seconds_sum", store_status="ok") > \
        value(before, "memory_context_build_duration_seconds_sum", store_status="ok")


def test_unknown_paths_share_one_route_label(client, db):
    before = scrape(client)
    client.get("/no/such/page-1")
    client.get("/no/such/page-2")
    after = scrape(client)
    labels = {"route": "<unmatched>", "method": "GET", "status": "404"}
    assert value(after, "memory_http_request_duration_seconds_count", **labels) - \
        value(before, "memory_http_request_duration_seconds_count", **labels) == 2
    assert not any("page-1" in str(key) for key in after)


def test_pending_capture_jobs_are_the_queue_depth(client, team, other_team):
    for index, owner in enumerate([team, team, other_team]):
        CaptureJob.objects.create(team=owner, to_message_id=index + 1)
    CaptureJob.objects.create(team=team, to_message_id=9, status=JobStatus.DONE)
    assert value(scrape(client), "memory_capture_jobs_pending", kind="capture") == 3


@pytest.mark.skipif(not REDIS_URL, reason="MEMORY_TEST_REDIS_URL is not set")
def test_celery_queue_length_is_read_from_redis(client, db):
    import redis

    broker = redis.Redis.from_url(REDIS_URL)
    broker.delete("celery", "celery\x06\x163")
    broker.lpush("celery", "a", "b")
    broker.lpush("celery\x06\x163", "c")
    try:
        with celery_broker(REDIS_URL, eager=False):
            samples = scrape(client)
    finally:
        broker.delete("celery", "celery\x06\x163")
    assert value(samples, "memory_celery_queue_length", queue="celery") == 3


def test_eager_mode_reports_no_celery_queue(client, db):
    assert not any(name == "memory_celery_queue_length" for name, _ in scrape(client))


OBSERVE = """
import django, sys
django.setup()
from memory.ops import metrics
if sys.argv[1] == "observe":
    metrics.request_observe(route="api/v1/context", method="POST", status=200, seconds=0.02)
else:
    print(metrics.exposition().decode())
"""


def test_multiprocess_mode_sums_every_process(tmp_path, db):
    """What gunicorn's workers do: each writes its own file; a scrape from any one sums them."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings_test",
           "DATABASE_URL": os.environ.get("DATABASE_URL", f"sqlite:///{tmp_path / 'unused.sqlite3'}")}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", OBSERVE, "observe"], cwd=ROOT, env=env, check=True, timeout=60)
    out = subprocess.run([sys.executable, "-c", OBSERVE, "scrape"], cwd=ROOT, env=env, check=True, timeout=60,
                         capture_output=True, text=True).stdout
    assert len(list(tmp_path.glob("histogram_*.db"))) == 2
    line = 'memory_http_request_duration_seconds_count{method="POST",route="api/v1/context",status="200"} 2.0'
    assert line in out
