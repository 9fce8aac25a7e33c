"""One real Celery worker process against the local Redis, extracting from messages appended
through the API (issue 4). PostgreSQL only: the worker is another process and needs the test
database on disk; skipped when MEMORY_TEST_REDIS_URL is not set (.ci/run sets it)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection
from django_scopes import scopes_disabled

from memory.capture_models import CaptureJob, JobStatus
from memory.models import Node, Summary
from tests.helpers import celery_broker

REDIS_URL = os.environ.get("MEMORY_TEST_REDIS_URL", "")
ROOT = Path(__file__).resolve().parents[3]

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the worker process needs the database on disk"),
    pytest.mark.skipif(not REDIS_URL, reason="MEMORY_TEST_REDIS_URL is not set"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def worker():
    """A worker sharing this test's database, on the test Redis database (MEMORY_TEST_REDIS_URL,
    no other worker listens there); the app here publishes to it."""
    db = connection.settings_dict
    env = {**os.environ, "CELERY_BROKER_URL": REDIS_URL, "DJANGO_SETTINGS_MODULE": "config.settings",
           "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-P", "solo", "--without-gossip",
         "--without-mingle", "--without-heartbeat", "-l", "WARNING"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    with celery_broker(REDIS_URL, eager=False):
        yield process
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


def test_a_real_worker_extracts_what_the_user_asked_to_remember(worker, agent_client):
    body = {"workspace_id": "home", "user_id": "xiaoming", "session_id": "cook-9", "role": "user",
            "content": "以后做饭别给我推荐香菜，我喜欢少油少辣。"}
    assert agent_client.post("/api/v1/messages", body, format="json").status_code == 201
    deadline = time.monotonic() + 60
    with scopes_disabled():
        while time.monotonic() < deadline and not CaptureJob.objects.filter(status=JobStatus.DONE).exists():
            assert worker.poll() is None, worker.stdout.read().decode()[-2000:]
            time.sleep(0.2)
        job = CaptureJob.objects.get()
        if job.status != JobStatus.DONE:
            worker.terminate()
            pytest.fail(f"job {job.status}: {job.last_error!r}\n{worker.stdout.read().decode()[-3000:]}")
        nodes = {n.key: n for n in Node.objects.filter(status="active", scope="user")}
        assert nodes["avoid_ingredient"].value_json == "香菜"
        assert nodes["flavor_profile"].value_json == {"oil": "low", "spicy": "low"}
        assert Summary.objects.filter(session__external_id="cook-9").count() == 1
