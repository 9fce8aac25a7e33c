"""Typed errors with the API's codes, and idempotent retries, against the live server (R-API)."""

import httpx
import pytest

from accounts.services import agent_key_create
from memory.models import AuditEvent, IdempotencyRecord, Message
from memory_client import (
    AuthenticationError,
    MemoryAPIError,
    MemoryClient,
    NotFound,
    PermissionDenied,
    UnprocessableEntity,
    ValidationError,
)
from tests.client.conftest import NO_WAIT, WHO

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_bad_key_raises_authentication_error_with_the_code(live_server, team):
    with MemoryClient(live_server.url, "mk_not_a_real_key", retry=NO_WAIT) as client, \
            pytest.raises(AuthenticationError) as raised:
        client.list_nodes()
    assert (raised.value.status, raised.value.code) == (401, "unauthenticated")
    assert isinstance(raised.value, MemoryAPIError) and raised.value.message


def test_another_teams_node_is_not_found(memory, other_memory, coriander):
    assert memory.get_node(coriander.node_id).id == coriander.node_id
    with pytest.raises(NotFound) as raised:
        other_memory.get_node(coriander.node_id)
    assert (raised.value.status, raised.value.code) == (404, "not_found")
    with pytest.raises(NotFound):
        other_memory.get(id=coriander.node_id)


def test_bad_input_raises_validation_error_with_the_fields(memory):
    with pytest.raises(ValidationError) as raised:
        memory.propose("remember", node={"type": "fact"}, **WHO)
    assert (raised.value.status, raised.value.code) == (400, "invalid")
    assert list(raised.value.details) == ["operation"]
    assert raised.value.message.startswith("operation:")


def test_an_unknown_field_is_refused_not_ignored(memory):
    with pytest.raises(ValidationError) as raised:
        memory.request("POST", "memory/search", json={"query_txt": "typo"})
    assert raised.value.details == {"query_txt": ["unknown field; did you mean query_text?"]}


@pytest.mark.parametrize(("path", "body", "said"), [
    ("memory/search", {"query": "香菜"}, {"query": ["unknown field; did you mean query_text?"]}),
    ("context", {"query_text": "香菜", "session_id": "s1"}, {"query_text": ["unknown field; did you mean query?"]}),
    ("memory/search", {"Scopes": ["user"]}, {"Scopes": ["unknown field; did you mean scopes?"]}),
    ("memory/search", {"colour": "red"}, {"colour": ["unknown field"]}),
    ("memory/search", {"q" * 5000: 1}, {"q" * 5000: ["unknown field"]}),
])
def test_an_unknown_field_names_the_known_one_it_is_nearest(memory, path, body, said):
    with pytest.raises(ValidationError) as raised:
        memory.request("POST", path, json=body)
    assert raised.value.status == 400 and raised.value.details == said


def test_a_read_only_key_may_not_propose(live_server, team):
    raw = agent_key_create(team=team, name="reader", writable_scopes=[])[1]
    with MemoryClient(live_server.url, raw, retry=NO_WAIT) as reader, pytest.raises(PermissionDenied) as raised:
        reader.propose("create", session_id="s1", node={"scope": "session", "type": "fact", "title": "x"}, **WHO)
    assert (raised.value.status, raised.value.code) == (403, "forbidden")


def test_one_key_for_two_different_writes_is_refused(memory):
    memory.append_message("s1", "user", "first", idempotency_key="turn-1", **WHO)
    with pytest.raises(UnprocessableEntity) as raised:
        memory.append_message("s1", "user", "second", idempotency_key="turn-1", **WHO)
    assert (raised.value.status, raised.value.code) == (422, "idempotency_key_reused")
    assert list(Message.objects.values_list("content", flat=True)) == ["first"]


def test_the_same_key_twice_writes_once_and_returns_the_first_answer(memory):
    first = memory.append_message("s1", "user", "记住，我对花生过敏", idempotency_key="turn-2", **WHO)
    again = memory.append_message("s1", "user", "记住，我对花生过敏", idempotency_key="turn-2", **WHO)
    assert again.ids == first.ids == (Message.objects.get().pk,)
    assert AuditEvent.objects.filter(event_type="memory.messages.appended").count() == 1


class LoseFirstAnswer(httpx.BaseTransport):
    """A real HTTP transport whose first answer is lost on the way back: the server has written,
    the client sees a dropped connection — the case Idempotency-Key exists for."""

    def __init__(self):
        self.inner = httpx.HTTPTransport()
        self.sent: list[tuple[str | None, bytes]] = []
        self.replayed: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append((request.headers.get("Idempotency-Key"), request.read()))
        response = self.inner.handle_request(request)
        if len(self.sent) == 1:
            response.read()
            response.close()
            raise httpx.ReadError("the connection dropped after the server answered")
        self.replayed.append(response.headers.get("Idempotent-Replayed"))
        return response

    def close(self) -> None:
        self.inner.close()


def test_a_write_whose_answer_was_lost_is_retried_with_the_same_key_and_stored_once(live_server, agent_key):
    transport = LoseFirstAnswer()
    with MemoryClient(live_server.url, agent_key[1], retry=NO_WAIT, transport=transport) as client:
        result = client.propose("create", session_id="s1", **WHO,
                                node={"scope": "session", "type": "fact", "key": "stove", "title": "燃气灶"})
    assert len(transport.sent) == 2 and transport.sent[0] == transport.sent[1] and transport.sent[0][0]
    assert transport.replayed == ["true"]
    assert result.accepted and result.created
    assert AuditEvent.objects.filter(event_type="memory.node.created").count() == 1
    assert IdempotencyRecord.objects.get().key == transport.sent[0][0]
