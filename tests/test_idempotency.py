"""Idempotency-Key on every write (R-API): a retry returns the first answer and writes nothing twice."""

import json
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.services import agent_key_create
from memory.api import views
from memory.limits import IDEMPOTENCY_TTL_HOURS
from memory.models import AuditEvent, IdempotencyRecord, Message, Node
from memory.services.idempotency import IdempotentWrite, WriteRequest
from tests.conftest import key_client
from tests.helpers import run_parallel

MESSAGE = {"session_id": "s1", "user_id": "u1", "role": "user", "content": "记住，我对花生过敏"}
EXPIRED_AGE = timedelta(hours=IDEMPOTENCY_TTL_HOURS, minutes=1)


def post(client, body, key=None, url=None, **extra):
    if key is not None:
        extra["HTTP_IDEMPOTENCY_KEY"] = key
    return client.post(url or reverse("api-messages"), data=json.dumps(body), content_type="application/json", **extra)


def replayed(response) -> bool:
    return response.headers.get("Idempotent-Replayed") == "true"


def test_a_retried_append_returns_the_first_answer_and_writes_once(agent_client):
    first = post(agent_client, MESSAGE, key="append-1")
    again = post(agent_client, MESSAGE, key="append-1")
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.content == first.content and again.headers["Content-Type"] == first.headers["Content-Type"]
    assert again.json()["ids"] == [Message.objects.get().pk]
    assert AuditEvent.objects.filter(event_type="memory.messages.appended").count() == 1
    assert not replayed(first) and replayed(again)


def test_the_first_answer_is_stored_with_the_request_fingerprint(agent_client, agent_key):
    response = post(agent_client, MESSAGE, key="append-1")
    record = IdempotencyRecord.objects.get()
    expected = WriteRequest(method="POST", path=reverse("api-messages"), query="", body=json.dumps(MESSAGE).encode())
    assert (record.team_id, record.caller, record.key) == (agent_key[0].team_id, f"key:{agent_key[0].pk}", "append-1")
    assert (record.method, record.path, record.fingerprint) == ("POST", "/api/v1/messages", expected.fingerprint)
    assert (record.response_status, record.response_body) == (201, response.content.decode())


def test_a_replay_does_not_run_the_handler(agent_client, monkeypatch):
    post(agent_client, MESSAGE, key="append-1")
    calls = []
    monkeypatch.setattr(views, "messages_append", lambda **kwargs: calls.append(kwargs))
    assert replayed(post(agent_client, MESSAGE, key="append-1"))
    assert calls == []


def test_a_retried_proposal_creates_one_node_and_one_audit_event(agent_client):
    body = {"operation": "create", "session_id": "s1", "user_id": "u1",
            "node": {"scope": "session", "type": "fact", "domain": "生活技能", "key": "stove", "value_json": "gas",
                     "title": "燃气灶"}}
    url = reverse("api-memory-propose")
    first = post(agent_client, body, key="propose-1", url=url)
    again = post(agent_client, body, key="propose-1", url=url)
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json() == first.json() and again.json()["created"] is True
    assert Node.objects.get().pk == first.json()["node_id"]
    assert AuditEvent.objects.filter(event_type="memory.node.created").count() == 1


def test_posts_that_only_read_answer_afresh_so_a_forgotten_memory_never_comes_back(agent_client, principal):
    from tests.helpers import make_node

    node = make_node(principal, title="zebra crossing", key="k", value_json="v")
    body = {"session_id": "s1", "user_id": "u1", "query": "zebra"}
    url = reverse("api-context")
    first = post(agent_client, body, key="context-1", url=url)
    assert node.pk in first.json()["used_memory_ids"]
    agent_client.delete(f"/api/v1/nodes/{node.pk}")
    again = post(agent_client, body, key="context-1", url=url)
    assert not replayed(again) and again.json()["used_memory_ids"] == []
    assert again.json()["retrieval_id"] != first.json()["retrieval_id"]
    search = {"user_id": "u1", "query_text": "zebra"}
    assert post(agent_client, search, key="search-1", url=reverse("api-memory-search")).json()["relevant"] == []
    assert IdempotencyRecord.objects.filter(key__in=["context-1", "search-1"]).count() == 0


@pytest.mark.parametrize("second", [
    {"body": {**MESSAGE, "content": "another message"}},
    {"url": reverse("api-summaries")},
    {"url": reverse("api-messages") + "?dry=1"},
], ids=["body", "path", "query"])
def test_the_same_key_for_a_different_request_is_422(agent_client, second):
    post(agent_client, MESSAGE, key="append-1")
    response = post(agent_client, second.get("body", MESSAGE), key="append-1", url=second.get("url"))
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "idempotency_key_reused"
    assert "already used for a different request (POST /api/v1/messages)" in error["message"]
    assert Message.objects.count() == 1 and IdempotencyRecord.objects.count() == 1


@pytest.mark.parametrize("key,problem", [
    ("", "is empty"),
    ("k" * 256, "is 256 characters long"),
    ("clé", "has 'é' at position 2"),
    ("a\x01b", "has '\\x01' at position 1"),
    ("a\tb", "has '\\t' at position 1"),
    ("two words", "has ' ' at position 3"),
    ("del\x7f", "has '\\x7f' at position 3"),
])
def test_a_bad_key_is_400_and_nothing_is_written(agent_client, key, problem):
    response = post(agent_client, MESSAGE, key=key)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert error["message"] == (
        f"Idempotency-Key must be 1–255 printable ASCII characters without spaces; this one {problem}"
    )
    assert list(error["fields"]) == ["Idempotency-Key"]
    assert Message.objects.count() == 0 and IdempotencyRecord.objects.count() == 0


def test_the_longest_key_of_printable_ascii_is_accepted(agent_client):
    key = ("!~azAZ09-_.:/" * 20)[:255]
    assert post(agent_client, MESSAGE, key=key).status_code == 201
    assert replayed(post(agent_client, MESSAGE, key=key))
    assert IdempotencyRecord.objects.get().key == key


def test_reads_ignore_the_header(agent_client):
    post(agent_client, MESSAGE)
    for key in ("", "not valid", "read-1"):
        response = agent_client.get(reverse("api-messages"), {"session_id": "s1", "user_id": "u1"},
                                    HTTP_IDEMPOTENCY_KEY=key)
        assert response.status_code == 200 and len(response.json()["results"]) == 1
        assert not replayed(response)
    assert IdempotencyRecord.objects.count() == 0


def test_a_write_without_the_header_is_not_recorded(agent_client):
    post(agent_client, MESSAGE)
    post(agent_client, MESSAGE)
    assert Message.objects.count() == 2 and IdempotencyRecord.objects.count() == 0


def test_a_4xx_first_attempt_stores_nothing_and_a_corrected_retry_runs(agent_client):
    bad = post(agent_client, {**MESSAGE, "role": "robot"}, key="append-1")
    assert bad.status_code == 400 and IdempotencyRecord.objects.count() == 0
    fixed = post(agent_client, MESSAGE, key="append-1")
    assert fixed.status_code == 201 and not replayed(fixed)
    assert Message.objects.get().pk == fixed.json()["ids"][0]
    assert replayed(post(agent_client, MESSAGE, key="append-1"))


def test_a_refused_write_is_not_recorded(readonly_agent_client):
    response = post(readonly_agent_client, MESSAGE, key="append-1")
    assert response.status_code == 403
    assert IdempotencyRecord.objects.count() == 0 and Message.objects.count() == 0


def test_a_write_that_crashes_after_writing_leaves_neither_the_write_nor_its_record(agent_client, monkeypatch):
    real = views.messages_append

    def append_then_crash(**kwargs):
        real(**kwargs)
        raise RuntimeError("crash after the write")

    monkeypatch.setattr(views, "messages_append", append_then_crash)
    with pytest.raises(RuntimeError):
        post(agent_client, MESSAGE, key="append-1")
    assert Message.objects.count() == 0 and not AuditEvent.objects.filter(event_type="memory.messages.appended").exists()
    assert IdempotencyRecord.objects.count() == 0
    monkeypatch.setattr(views, "messages_append", real)
    assert post(agent_client, MESSAGE, key="append-1").status_code == 201
    assert Message.objects.count() == 1


def test_a_write_whose_record_cannot_be_stored_is_rolled_back(agent_client, monkeypatch):
    def fail(self, **kwargs):
        raise RuntimeError("crash while storing the answer")

    monkeypatch.setattr(IdempotentWrite, "store", fail)
    with pytest.raises(RuntimeError):
        post(agent_client, MESSAGE, key="append-1")
    assert Message.objects.count() == 0 and IdempotencyRecord.objects.count() == 0


def test_another_key_of_the_same_team_does_not_see_the_first_callers_answer(agent_client, team):
    second_client = key_client(agent_key_create(team=team, name="second agent")[1])
    first = post(agent_client, MESSAGE, key="shared-1")
    second = post(second_client, MESSAGE, key="shared-1")
    assert second.status_code == 201 and not replayed(second)
    assert second.json()["ids"] != first.json()["ids"]
    assert Message.objects.count() == 2 and IdempotencyRecord.objects.count() == 2
    assert replayed(post(agent_client, MESSAGE, key="shared-1"))


def test_another_team_never_sees_the_first_teams_answer(agent_client, other_agent_client, team, other_team):
    first = post(agent_client, MESSAGE, key="shared-1")
    other = post(other_agent_client, {**MESSAGE, "content": "different"}, key="shared-1")
    assert other.status_code == 201 and not replayed(other)
    assert other.json()["messages"][0]["content"] == "different"
    assert Message.objects.get(pk=first.json()["ids"][0]).team_id == team.pk
    assert Message.objects.get(pk=other.json()["ids"][0]).team_id == other_team.pk


def test_a_login_has_its_own_keys_and_its_session_body_is_fingerprinted(agent_client, editor):
    client = APIClient(enforce_csrf_checks=True)  # the CSRF check reads the body before the view does
    client.force_login(editor)
    client.cookies["csrftoken"] = "a" * 32
    post(agent_client, MESSAGE, key="shared-1")
    first = post(client, MESSAGE, key="shared-1", HTTP_X_CSRFTOKEN="a" * 32)
    again = post(client, MESSAGE, key="shared-1", HTTP_X_CSRFTOKEN="a" * 32)
    assert first.status_code == 201 and not replayed(first)
    assert again.content == first.content and replayed(again)
    assert IdempotencyRecord.objects.filter(caller=f"user:{editor.pk}").count() == 1
    assert Message.objects.count() == 2


def test_an_expired_record_is_replaced_by_the_next_request(agent_client):
    first = post(agent_client, MESSAGE, key="append-1")
    IdempotencyRecord.objects.update(created_at=timezone.now() - EXPIRED_AGE)
    again = post(agent_client, {**MESSAGE, "content": "a new request"}, key="append-1")
    assert again.status_code == 201 and not replayed(again)
    assert again.json()["ids"] != first.json()["ids"] and Message.objects.count() == 2
    record = IdempotencyRecord.objects.get()
    assert record.response_body == again.content.decode()
    assert timezone.now() - record.created_at < timedelta(minutes=1)


def test_a_record_just_inside_its_ttl_is_replayed(agent_client):
    post(agent_client, MESSAGE, key="append-1")
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=IDEMPOTENCY_TTL_HOURS, minutes=-1))
    assert replayed(post(agent_client, MESSAGE, key="append-1"))
    assert Message.objects.count() == 1


def test_a_stored_answer_purges_the_teams_expired_records(agent_client, other_agent_client, django_capture_on_commit_callbacks):
    for index in range(3):
        post(agent_client, {**MESSAGE, "content": f"m{index}"}, key=f"old-{index}")
    post(other_agent_client, MESSAGE, key="other-team-old")
    IdempotencyRecord.objects.update(created_at=timezone.now() - EXPIRED_AGE)
    with django_capture_on_commit_callbacks(execute=True):
        post(agent_client, MESSAGE, key="new-1")
    assert sorted(IdempotencyRecord.objects.values_list("key", flat=True)) == ["new-1", "other-team-old"]


# The POSTs that only read, and the import, ignore the header (`replays = False`).
NOT_REPLAYED = {("/api/v1/context", "post"), ("/api/v1/memory/search", "post"), ("/api/v1/memory/get", "post"),
                ("/api/v1/policies/simulate", "post"), ("/api/v1/import", "post")}


def test_the_header_is_documented_on_every_write_operation_that_honours_it(client, db):
    schema = json.loads(client.get(reverse("api-schema"), {"format": "json"}).content)
    writes = {(path, method): operation for path, operations in schema["paths"].items()
              for method, operation in operations.items() if method in ("post", "put", "patch", "delete")}
    assert ("/api/v1/messages", "post") in writes and ("/api/v1/memory/propose", "post") in writes
    assert NOT_REPLAYED <= set(writes)
    for (path, method), operation in writes.items():
        header = [item for item in operation.get("parameters", []) if item["name"] == "Idempotency-Key"]
        if (path, method) in NOT_REPLAYED:
            assert header == [] and "422" not in operation["responses"], (path, method)
            continue
        assert header and header[0]["in"] == "header" and header[0]["schema"]["maxLength"] == 255, (path, method)
        assert operation["responses"]["422"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
        success = [status for status in operation["responses"] if status.startswith("2")]
        assert success and all("Idempotent-Replayed" in operation["responses"][status]["headers"] for status in success)
    for operation in schema["paths"]["/api/v1/messages"]["get"], schema["paths"]["/api/v1/nodes"]["get"]:
        assert all(item["name"] != "Idempotency-Key" for item in operation.get("parameters", []))


def test_a_post_that_only_reads_ignores_even_a_malformed_key(agent_client):
    """As documented: the schema does not offer the header there, and the server does not read it."""
    response = agent_client.post(reverse("api-context"), {"session_id": "s1", "query": "x"}, format="json",
                                 HTTP_IDEMPOTENCY_KEY="has spaces")
    assert response.status_code == 200 and "Idempotent-Replayed" not in response.headers


# Races through real parallel connections (PostgreSQL: the in-memory SQLite test database is
# not shared between threads). Each thread is its own agent process with its own client; the
# view enters the team scope itself.

def postgres_only(test):
    test = pytest.mark.postgres_only(test)
    test = pytest.mark.skipif(connection.vendor != "postgresql", reason="needs parallel connections to one database")(test)
    return pytest.mark.django_db(transaction=True)(test)


def in_parallel(requests: list) -> list:
    return run_parallel(requests)


@pytest.fixture
def raw_key(agent_key):
    return agent_key[1]


def race(raw_key, bodies, key):
    """POST each body at once, each from its own client, all with the Idempotency-Key `key`."""
    return in_parallel([lambda body=body: post(key_client(raw_key), body, key=key) for body in bodies])


@postgres_only
@pytest.mark.parametrize("slow", [False, True], ids=["racing", "second-waits-on-a-slow-first"])
def test_two_concurrent_requests_with_one_key_write_once_and_answer_alike(raw_key, monkeypatch, slow):
    if slow:
        real = views.messages_append

        def slow_append(**kwargs):
            created = real(**kwargs)
            time.sleep(0.3)  # the other request arrives while this one holds the key
            return created

        monkeypatch.setattr(views, "messages_append", slow_append)
    for round_number in range(5):
        body = {**MESSAGE, "content": f"round {round_number}"}
        results = race(raw_key, [body, body], key=f"race-{round_number}")
        assert all(not isinstance(result, Exception) for result in results), results
        assert [result.status_code for result in results] == [201, 201]
        assert results[0].content == results[1].content
        assert sorted(replayed(result) for result in results) == [False, True]
        assert Message.objects.filter(content=f"round {round_number}").count() == 1
    assert Message.objects.count() == 5 and IdempotencyRecord.objects.count() == 5
    assert AuditEvent.objects.filter(event_type="memory.messages.appended").count() == 5


@postgres_only
def test_two_concurrent_different_requests_with_one_key_write_once_and_refuse_the_other(raw_key):
    for round_number in range(5):
        bodies = [{**MESSAGE, "content": f"round {round_number} a"}, {**MESSAGE, "content": f"round {round_number} b"}]
        results = race(raw_key, bodies, key=f"race-{round_number}")
        assert sorted(result.status_code for result in results) == [201, 422], results
        winner = next(result for result in results if result.status_code == 201)
        assert [message.pk for message in Message.objects.filter(content__startswith=f"round {round_number} ")] == \
            winner.json()["ids"]
    assert Message.objects.count() == 5 and IdempotencyRecord.objects.count() == 5

