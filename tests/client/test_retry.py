"""Retries and backoff of both clients. The only client tests on httpx.MockTransport: a real
server cannot be made to fail on cue (a 503, a 429 with Retry-After, a refused connection)."""

import asyncio
import inspect
import json
import random

import httpx
import pytest

from memory_client import (
    AsyncMemoryClient,
    MemoryClient,
    MemoryConnectionError,
    RateLimited,
    RetryPolicy,
    ServerError,
    ValidationError,
)

APPENDED = {"ids": [7], "messages": [{"id": 7, "session_id": "s1", "workspace_id": "", "user_id": "u1", "role": "user",
                                      "content": "hi", "parent_id": None, "metadata": {}, "created_at": "2026-01-01T00:00:00Z",
                                      "occurred_at": None}]}
POLICY = RetryPolicy(max_attempts=4, backoff=0.5, max_backoff=8.0, jitter=0.0)


def error(status: int, code: str, headers: dict | None = None) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": code}}, headers=headers)


class Script:
    """Answers requests from a list, in order (an exception is raised instead of answered), and
    records each request's Idempotency-Key and body."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.seen: list[tuple[str | None, bytes]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append((request.headers.get("Idempotency-Key"), request.read()))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def sync_client(script: Script, sleeps: list, policy: RetryPolicy = POLICY) -> MemoryClient:
    return MemoryClient("http://memory.test", "mk_x", retry=policy, transport=httpx.MockTransport(script),
                        sleep=sleeps.append)


def test_a_503_is_retried_with_the_same_key_and_bytes():
    script, sleeps = Script(error(503, "server_error"), httpx.Response(201, json=APPENDED)), []
    result = sync_client(script, sleeps).append_message("s1", "user", "hi", user_id="u1")
    assert result.ids == (7,)
    assert len(script.seen) == 2 and script.seen[0] == script.seen[1]
    assert script.seen[0][0] and json.loads(script.seen[0][1]) == {"session_id": "s1", "role": "user", "content": "hi",
                                                                   "user_id": "u1"}
    assert sleeps == [0.5]


def test_each_write_gets_its_own_key():
    script = Script(httpx.Response(201, json=APPENDED), httpx.Response(201, json=APPENDED))
    client = sync_client(script, [])
    client.append_message("s1", "user", "hi")
    client.append_message("s1", "user", "hi")
    assert script.seen[0][0] != script.seen[1][0]


def test_a_429_waits_for_retry_after():
    script, sleeps = Script(error(429, "throttled", {"Retry-After": "3"}), httpx.Response(200, json={"tools": [],
                                                                                                     "endpoints": {}})), []
    assert sync_client(script, sleeps).tools().endpoints == {}
    assert sleeps == [3.0]


def test_backoff_doubles_up_to_its_cap_then_the_error_is_raised():
    script = Script(*[error(502, "bad_gateway")] * 4)
    sleeps: list = []
    with pytest.raises(ServerError) as raised:
        sync_client(script, sleeps, RetryPolicy(max_attempts=4, backoff=1.0, max_backoff=3.0, jitter=0.0)).tools()
    assert (raised.value.status, raised.value.code) == (502, "bad_gateway")
    assert sleeps == [1.0, 2.0, 3.0] and len(script.seen) == 4


def test_jitter_adds_at_most_its_share():
    policy = RetryPolicy(backoff=1.0, jitter=0.25)
    delays = [policy.delay(2, ServerError(status=503, code="x", message="x"), random.Random(seed)) for seed in range(50)]
    assert all(2.0 <= delay <= 2.5 for delay in delays) and len(set(delays)) > 1


def test_a_refused_connection_is_retried_then_raised_as_a_connection_error():
    script = Script(*[httpx.ConnectError("refused")] * 3)
    sleeps: list = []
    with pytest.raises(MemoryConnectionError):
        sync_client(script, sleeps, RetryPolicy(max_attempts=3, backoff=0.1, jitter=0.0)).tools()
    assert len(script.seen) == 3 and sleeps == [0.1, 0.2]


def test_other_client_errors_are_never_retried():
    script, sleeps = Script(error(400, "invalid"), httpx.Response(201, json=APPENDED)), []
    with pytest.raises(ValidationError):
        sync_client(script, sleeps).append_message("s1", "user", "hi")
    assert len(script.seen) == 1 and sleeps == []


def test_a_key_still_in_progress_is_retried():
    script, sleeps = Script(error(409, "idempotency_in_progress"), httpx.Response(201, json=APPENDED)), []
    assert sync_client(script, sleeps).append_message("s1", "user", "hi").ids == (7,)
    assert script.seen[0] == script.seen[1]


def test_one_attempt_means_no_retry():
    script = Script(error(429, "throttled", {"Retry-After": "1"}))
    with pytest.raises(RateLimited) as raised:
        sync_client(script, [], RetryPolicy(max_attempts=1)).tools()
    assert raised.value.retry_after == 1.0


def test_the_async_client_retries_alike():
    script, sleeps = Script(httpx.ReadTimeout("slow"), error(504, "gateway_timeout"), httpx.Response(201, json=APPENDED)), []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async def run():
        async with AsyncMemoryClient("http://memory.test", "mk_x", retry=POLICY, transport=httpx.MockTransport(script),
                                     sleep=sleep) as client:
            return await client.append_message("s1", "user", "hi")

    assert asyncio.run(run()).ids == (7,)
    assert sleeps == [0.5, 1.0] and script.seen[0] == script.seen[1] == script.seen[2]


def test_both_clients_have_the_same_methods_with_the_same_signatures():
    public = {name for name in dir(MemoryClient) if not name.startswith("_")} - {"close"}
    assert public == {name for name in dir(AsyncMemoryClient) if not name.startswith("_")} - {"aclose"}
    for name in public:
        sync_method, async_method = getattr(MemoryClient, name), getattr(AsyncMemoryClient, name)
        assert inspect.signature(sync_method) == inspect.signature(async_method), name
        assert inspect.iscoroutinefunction(async_method), name
