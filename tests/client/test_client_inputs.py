"""Path parameters are one escaped path segment each, so no id changes the endpoint; arguments
that cannot be sent and answers that lack a field raise typed client errors (R-API)."""

import asyncio
import json

import httpx
import pytest

from memory.models import Node, Session
from memory_client import (
    AsyncMemoryClient,
    InvalidRequest,
    MemoryClient,
    MemoryClientError,
    NotFound,
    UnexpectedResponse,
    ValidationError,
)
from memory_client._calls import SESSION_FORGET
from tests.client.conftest import NO_WAIT, WHO

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_session_id_with_dots_and_slashes_cannot_reach_another_endpoint(memory):
    victim = memory.propose("create", reason="t", node={"scope": "workspace", "type": "fact", "title": "victim"},
                            **WHO).node_id
    with pytest.raises(NotFound, match="no session"):
        memory.forget_session(f"../nodes/{victim}", mode="hard", **WHO)
    for dots in ("..", "."):  # sent raw, httpx would drop the segment and DELETE /api/v1 or /api/v1/sessions
        with pytest.raises(ValidationError, match="session_id may not be '.' or '..'"):
            memory.forget_session(dots, mode="hard", **WHO)
    assert Node.objects.get(pk=victim).status == "active"


@pytest.mark.parametrize("session_id", ["a/b", "a/../b", "../nodes/1", "x/..", "50%/x?y#z", "%2E%2E", "晚饭 2"])
def test_a_session_id_with_reserved_characters_round_trips(memory, session_id):
    memory.append_message(session_id, "user", "hello", **WHO)
    working = memory.put_working_memory(session_id, current_goal="cook", **WHO)
    assert working.current_goal == "cook"
    assert memory.get_working_memory(session_id, **WHO).current_goal == "cook"
    assert [m.content for m in memory.list_messages(session_id, **WHO).messages] == ["hello"]
    memory.forget_session(session_id, **WHO)
    assert Session.objects.get(external_id=session_id).deleted_at is not None


def test_every_path_parameter_is_one_segment():
    call = SESSION_FORGET.call({"session_id": "../nodes/82", "mode": "hard"})
    assert call.path == "sessions/%2E%2E%2Fnodes%2F82"
    assert SESSION_FORGET.call({"session_id": ".."}).path == "sessions/%2E%2E"


def _offline(handler=None) -> MemoryClient:
    def refuse(request):
        raise AssertionError(f"nothing should be sent: {request.method} {request.url}")

    return MemoryClient("http://memory.test", "mk_x", retry=NO_WAIT, transport=httpx.MockTransport(handler or refuse))


@pytest.mark.parametrize("send", [
    lambda m: m.append_message("s1", "user", "a\ud800b", **WHO),
    lambda m: m.append_message("s\udfff", "user", "hi", **WHO),
    lambda m: m.list_messages("s\udfff", **WHO),
    lambda m: m.get_working_memory("s\udfff", **WHO),
])
def test_a_lone_surrogate_raises_invalid_request(send):
    with _offline() as memory, pytest.raises(InvalidRequest, match="lone surrogate .U.D[89A-F][0-9A-F]{2}."):
        send(memory)


@pytest.mark.parametrize(("metadata", "problem"), [({"a": object()}, "object is not JSON serialisable"),
                                                   ({"a": float("nan")}, "Out of range float")])
def test_metadata_json_cannot_hold_raises_invalid_request(metadata, problem):
    with _offline() as memory, pytest.raises(InvalidRequest, match=problem):
        memory.append_message("s1", "user", "hi", metadata=metadata, **WHO)


@pytest.mark.parametrize("key", ["键", "line\nbreak"])
def test_an_idempotency_key_that_is_not_printable_ascii_raises_invalid_request(key):
    with _offline() as memory, pytest.raises(InvalidRequest, match="idempotency_key must be printable ASCII"):
        memory.append_message("s1", "user", "hi", idempotency_key=key, **WHO)


def test_a_raw_request_path_may_not_leave_the_api():
    with _offline() as memory, pytest.raises(InvalidRequest, match="dot segment"):
        memory.request("GET", "/../../admin")


def test_invalid_request_is_a_client_error_and_a_value_error():
    assert issubclass(InvalidRequest, MemoryClientError) and issubclass(InvalidRequest, ValueError)


@pytest.mark.parametrize(("answer", "problem"), [({"id": 1}, "lacks the field 'session_id'"),
                                                 ({"results": "x"}, "lacks the field"),
                                                 (["not", "an", "object"], "not what this endpoint returns")])
def test_an_answer_without_an_expected_field_raises_unexpected_response(answer, problem):
    def reply(request):
        return httpx.Response(200, content=json.dumps(answer).encode(), headers={"Content-Type": "application/json"})

    with _offline(reply) as memory, pytest.raises(UnexpectedResponse, match=problem) as raised:
        memory.get_working_memory("s1", **WHO)
    assert raised.value.status == 200 and raised.value.body == answer


def test_the_async_client_raises_the_same_client_errors():
    async def run():
        def reply(request):
            return httpx.Response(200, json={})

        async with AsyncMemoryClient("http://memory.test", "mk_x", retry=NO_WAIT,
                                     transport=httpx.MockTransport(reply)) as memory:
            with pytest.raises(InvalidRequest):
                await memory.forget_session("s\ud800", **WHO)
            with pytest.raises(UnexpectedResponse):
                await memory.get_working_memory("s1", **WHO)

    asyncio.run(run())


def test_a_bad_summaries_cursor_is_refused_not_read_as_the_first_page(memory):
    memory.append_message("s1", "user", "hello", **WHO)
    with pytest.raises(ValidationError, match="invalid cursor"):
        memory.list_summaries("s1", cursor="!!!", **WHO)
