"""Rate limits of the MCP server (memory.api.mcp_limits; docs/limits.md): the API's per-key budget
for HTTP requests and stdio tool calls, and the per-address budget of refused keys.

HTTP is exercised in-process through memory.api.mcp_http.AgentKeyMiddleware in front of a stub
app that records what it admits (the SDK's app is driven end to end by
tests/mcp/test_mcp_transports.py); stdio through the SDK's own client, as test_mcp_tools.py.
"""

import httpx
import pytest
from asgiref.sync import async_to_sync
from mcp.shared.exceptions import MCPError

from accounts.services import agent_key_create
from memory.api.mcp_http import AgentKeyMiddleware
from memory.api.mcp_limits import THROTTLED
from memory.api.mcp_server import PRINCIPAL_SCOPE_KEY
from tests.helpers import throttled
from tests.mcp.test_mcp_tools import call, over_mcp

INIT = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


@pytest.fixture(autouse=True)
def _throttled():
    with throttled():
        yield


@pytest.fixture
def key(agent_key):
    return agent_key[1]


class Recorder:
    """An ASGI app standing in for the SDK's: answers 200 and keeps the principals it was given."""

    def __init__(self):
        self.principals = []

    async def __call__(self, scope, receive, send):
        self.principals.append(scope[PRINCIPAL_SCOPE_KEY])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b"{}"})


def post_all(app, requests: list[dict]) -> list[httpx.Response]:
    """POST each of `requests` ({"headers": …, "client": (host, port)}) to /mcp through `app`, in order."""

    async def main():
        answers = []
        for request in requests:
            transport = httpx.ASGITransport(app=app, client=request.get("client", ("198.51.100.7", 4000)))
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
                answers.append(await http.post("/mcp", json=INIT, headers=request.get("headers", {})))
        return answers

    return async_to_sync(main)()


def bearer(raw_key: str) -> dict:
    return {"headers": {"Authorization": f"Bearer {raw_key}"}}


def assert_throttled(response: httpx.Response) -> None:
    assert response.status_code == 429
    assert 1 <= int(response.headers["retry-after"]) <= 60
    body = response.json()
    assert (body["jsonrpc"], body["id"], body["error"]["code"]) == ("2.0", None, THROTTLED)
    assert body["error"]["data"]["error"]["code"] == "throttled"
    assert body["error"]["message"] == body["error"]["data"]["error"]["message"]
    assert "Expected available in" in body["error"]["message"]


def test_http_requests_past_the_keys_rate_get_429_with_retry_after_and_never_reach_the_server(key, agent_key):
    app = Recorder()
    answers = post_all(AgentKeyMiddleware(app), [bearer(key)] * 4)
    assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
    assert_throttled(answers[3])
    assert [principal.agent_key.pk for principal in app.principals] == [agent_key[0].pk] * 3


def test_http_the_limit_is_per_key(team, key):
    second = agent_key_create(team=team, name="second")[1]
    answers = post_all(AgentKeyMiddleware(Recorder()), [bearer(key)] * 4 + [bearer(second)])
    assert [answer.status_code for answer in answers] == [200, 200, 200, 429, 200]


def test_http_and_the_api_spend_one_budget_per_key(key, agent_client):
    for _ in range(2):
        assert agent_client.post("/api/v1/memory/search", {"query_text": "tea"}, format="json").status_code == 200
    answers = post_all(AgentKeyMiddleware(Recorder()), [bearer(key)] * 2)
    assert [answer.status_code for answer in answers] == [200, 429]
    assert agent_client.post("/api/v1/memory/search", {"query_text": "tea"}, format="json").status_code == 429


def test_http_refused_keys_spend_the_addresss_budget_then_get_429_while_a_valid_key_still_works(key):
    app = Recorder()
    bad = {"headers": {"Authorization": "Bearer mk_nosuch_secret"}}
    answers = post_all(AgentKeyMiddleware(app), [bad, {"headers": {}}, bad, bearer(key)])
    assert [answer.status_code for answer in answers] == [401, 401, 429, 200]
    assert answers[0].json() == {"error": {"code": "unauthenticated", "message": "invalid API key"}}
    assert_throttled(answers[2])
    assert len(app.principals) == 1


def test_http_refusals_are_counted_per_address(key):
    bad = "Bearer mk_nosuch_secret"
    answers = post_all(AgentKeyMiddleware(Recorder()), [
        {"headers": {"Authorization": bad}, "client": ("198.51.100.7", 1)},
        {"headers": {"Authorization": bad}, "client": ("198.51.100.7", 2)},
        {"headers": {"Authorization": bad}, "client": ("198.51.100.7", 3)},
        {"headers": {"Authorization": bad}, "client": ("203.0.113.9", 4)},
    ])
    assert [answer.status_code for answer in answers] == [401, 401, 429, 401]


def test_http_with_rate_limits_off_nothing_is_throttled(key, settings):
    settings.MEMORY_THROTTLE = False
    answers = post_all(AgentKeyMiddleware(Recorder()), [bearer(key)] * 5 + [{"headers": {}}] * 4)
    assert [answer.status_code for answer in answers] == [200] * 5 + [401] * 4


def test_stdio_tool_calls_past_the_keys_rate_answer_the_apis_429_body(key):
    answers = [call(key, "memory_search", {"user_id": "u1", "query_text": "tea"}) for _ in range(4)]
    assert [is_error for is_error, _ in answers] == [False, False, False, True]
    body = answers[3][1]
    assert body["error"]["code"] == "throttled"
    assert body["error"]["message"].startswith("Request was throttled. Expected available in")


def test_stdio_tool_calls_and_the_api_spend_one_budget(key, agent_client):
    assert agent_client.post("/api/v1/memory/search", {"query_text": "tea"}, format="json").status_code == 200
    answers = [call(key, "memory_search", {"user_id": "u1", "query_text": "tea"})[0] for _ in range(3)]
    assert answers == [False, False, True]


def test_a_stdio_resource_read_past_the_rate_is_a_throttled_protocol_error(key):
    for _ in range(3):
        call(key, "memory_search", {"user_id": "u1", "query_text": "tea"})
    with pytest.raises(MCPError) as raised:
        over_mcp(key, lambda client: client.read_resource("memory://context/s1?user_id=u1"))
    assert raised.value.error.code == THROTTLED
    assert raised.value.error.data["error"]["code"] == "throttled"
