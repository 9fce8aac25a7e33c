"""A slow extractor (a language model behind an endpoint) holds no lock that an agent's append
to the same conversation would wait for (R-EXTRACT). Real parallel connections: PostgreSQL."""

import threading

import pytest
from django.db import connection, connections
from django_scopes import scope

from accounts.principal import principal_for_key
from accounts.services import agent_key_create, team_create
from memory.capture import triggers
from memory.capture.base import Extraction, SummaryDraft
from memory.capture.jobs import job_run
from memory.capture_models import CaptureJob, JobStatus
from memory.models import Message, Node, Summary
from tests.helpers import append

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs parallel connections to one database"),
    pytest.mark.django_db(transaction=True),
]


class Blocking:
    """Proposes one user preference, but only after the test lets it finish."""

    name = "blocking"

    def __init__(self):
        self.entered, self.release = threading.Event(), threading.Event()

    def extract(self, context):
        self.entered.set()
        assert self.release.wait(20), "the test never released the extractor"
        first = context.messages[0]
        return Extraction(extractor=self.name, operations=[{
            "operation": "create", "explicit_user_intent": True, "reason": "said so",
            "node": {"scope": "user", "type": "preference", "key": "drink", "value_json": "tea", "title": "likes tea",
                     "source_message_ids": [first.id]}}])


class BlockingSummary:
    """Summarizes the window in one line, but only after the test lets it finish."""

    name = "blocking-summary"

    def __init__(self):
        self.entered, self.release = threading.Event(), threading.Event()

    def summarize(self, previous, messages, *, max_chars):
        self.entered.set()
        assert self.release.wait(20), "the test never released the summarizer"
        return SummaryDraft(summary=" / ".join(message.content for message in messages))


class Quick(Blocking):
    def __init__(self):
        super().__init__()
        self.release.set()


@pytest.mark.parametrize("slow", ["extractor", "summarizer"])
def test_an_append_does_not_wait_for_a_slow_model(monkeypatch, settings, slow):
    settings.MEMORY_CAPTURE_EVERY = 100
    monkeypatch.setattr(triggers, "enqueue", lambda job_id, background=False: True)  # the test runs the job itself
    team = team_create(slug="slow")
    agent = principal_for_key(agent_key_create(team=team, name="agent")[0])
    with scope(team=team):
        append(agent, "remember: I like tea", user_id="u1")  # explicit intent: a job is recorded at once
        job = CaptureJob.objects.get()
    extractor, summarizer = (Blocking(), BlockingSummary()) if slow == "extractor" else (Quick(), BlockingSummary())
    if slow == "extractor":
        summarizer.release.set()
    waiting = extractor if slow == "extractor" else summarizer
    outcome = {}

    def run():
        try:
            outcome["job"] = job_run(job.pk, extractor=extractor, summarizer=summarizer)
        except Exception as error:  # noqa: BLE001 - reported by the assertion below
            outcome["error"] = error
        finally:
            connections.close_all()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    assert waiting.entered.wait(20), outcome
    with scope(team=team), connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '2s'")  # a blocked append fails here instead of hanging
        try:
            append(agent, "and I am in Paris this week", user_id="u1")  # locks the session row
        finally:
            cursor.execute("SET lock_timeout = 0")
    waiting.release.set()
    worker.join(30)
    assert "error" not in outcome, outcome
    assert outcome["job"].status == JobStatus.DONE and outcome["job"].result["outcomes"] == {"accepted": 1}
    with scope(team=team):
        assert Message.objects.count() == 2 and Node.objects.filter(key="drink", status="active").count() == 1
        assert CaptureJob.objects.get(pk=job.pk).attempts == 1
        # the summary covers what was there when the summarizer read the window
        expected = {"extractor": "remember: I like tea / and I am in Paris this week", "summarizer": "remember: I like tea"}
        assert Summary.objects.get().summary == expected[slow]
