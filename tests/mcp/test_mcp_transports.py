"""`manage.py mcp` as a real process, over stdio and streamable HTTP, driven by the official SDK's
client (issue 8; R-TOOLS, R-OPS). The server process cannot see the test database (in memory,
or inside a test transaction), so these tests serve a file SQLite database of their own, made
by `migrate`, `create_team` and `create_agent_key` as a newcomer would."""

import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from django.core.management import CommandError, call_command
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from memory.api.mcp_http import is_loopback
from memory.api.mcp_limits import THROTTLED

REPO = Path(__file__).resolve().parents[2]
FACT = {"operation": "create", "workspace_id": "w1",
        "node": {"scope": "workspace", "type": "fact", "title": "no deploys on Fridays", "value_json": "no Friday deploys"}}


def manage(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120, check=check)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(environment with DATABASE_URL, raw agent key, database path) of a fresh file database."""
    path = tmp_path_factory.mktemp("mcp") / "memory.db"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{path}"}
    env.pop("MEMORY_API_KEY", None)
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "create_team", "mcp-team")
    key = manage(env, "create_agent_key", "mcp-team", "--name", "desktop").stdout.strip()
    return env, key, path


def audit_actors(path: Path, title: str) -> list[str]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT e.actor FROM memory_auditevent e JOIN memory_node n ON n.id = e.node_id "
                          "WHERE n.title = ? ORDER BY e.id", [title]).fetchall()
    return [row[0] for row in rows]


def test_stdio_serves_the_tools_and_its_writes_are_audited_with_the_key(served):
    env, key, path = served
    params = StdioServerParameters(command=sys.executable, args=["manage.py", "mcp"], cwd=str(REPO),
                                   env={**env, "MEMORY_API_KEY": key})

    async def scenario():
        async with Client(params) as client:
            tools = await client.list_tools()
            proposed = await client.call_tool("memory_propose_update", FACT)
            found = await client.call_tool("memory_search", {"workspace_id": "w1", "query_text": "Friday deploys"})
            return [tool.name for tool in tools.tools], proposed, found

    names, proposed, found = anyio.run(scenario)
    assert names == ["memory_search", "memory_get", "memory_propose_update", "memory_forget", "memory_context"]
    assert not proposed.is_error and proposed.structured_content["accepted"] is True
    assert [node["id"] for node in found.structured_content["relevant"]] == [proposed.structured_content["node_id"]]
    assert audit_actors(path, "no deploys on Fridays") == [f"key:{key.split('_')[1]}"]


@pytest.mark.parametrize("args,extra_env,message", [
    (["--key", "mk_nosuch_secret"], {}, "the agent key was refused: invalid API key"),
    ([], {"MEMORY_API_KEY": "not-a-key"}, "the agent key was refused: malformed API key"),
    ([], {}, "no agent key: pass --key or set MEMORY_API_KEY"),
])
def test_stdio_exits_with_a_clear_message_for_a_bad_key(served, args, extra_env, message):
    env, _, _ = served
    done = manage({**env, **extra_env}, "mcp", *args, check=False)
    assert done.returncode == 1 and message in done.stderr and done.stdout == ""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_http(env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """`manage.py mcp --http` with `env` on a free loopback port: (process, URL of /mcp)."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "manage.py", "mcp", "--http", "--port", str(port)], cwd=REPO, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise AssertionError(f"the HTTP server did not start: {process.stderr.read().decode()}") from None
            time.sleep(0.1)


@pytest.fixture(scope="module")
def http_server(served):
    """(url, key, database path) of `manage.py mcp --http` on a free loopback port."""
    env, key, path = served
    process, url = start_http(env)
    yield url, key, path
    process.terminate()
    process.wait(timeout=10)


def test_http_serves_the_tools_to_a_client_with_a_bearer_key(http_server):
    url, key, path = http_server

    async def scenario():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            tools = await client.list_tools()
            proposed = await client.call_tool("memory_propose_update", {**FACT, "node": {**FACT["node"], "title": "over http"}})
            bad = await client.call_tool("memory_get", {"id": 0})
            context = await client.read_resource("memory://context/s9?workspace_id=w1&query=http")
            return [tool.name for tool in tools.tools], proposed, bad, context

    names, proposed, bad, context = anyio.run(scenario)
    assert names[:4] == ["memory_search", "memory_get", "memory_propose_update", "memory_forget"]
    assert not proposed.is_error and proposed.structured_content["created"] is True
    assert bad.is_error and bad.structured_content["error"]["fields"] == {
        "id": ["Ensure this value is greater than or equal to 1."]}
    assert "over http" in context.contents[0].text
    assert audit_actors(path, "over http") == [f"key:{key.split('_')[1]}"]


@pytest.mark.parametrize("headers,message", [
    ({}, "send 'Authorization: Bearer <key>'"),
    ({"Authorization": "Bearer mk_nosuch_secret"}, "invalid API key"),
    ({"Authorization": "Basic abc"}, "send 'Authorization: Bearer <key>'"),
])
def test_http_refuses_a_request_without_a_valid_key(http_server, headers, message):
    url, _, _ = http_server
    response = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=10,
                          headers={**headers, "Accept": "application/json, text/event-stream"})
    assert (response.status_code, response.headers["www-authenticate"]) == (401, "Bearer")
    assert response.json() == {"error": {"code": "unauthenticated", "message": message}}


def test_http_refuses_a_non_loopback_host_unless_allowed():
    with pytest.raises(CommandError, match="non-loopback host '0.0.0.0' without --allow-remote"):
        call_command("mcp", "--http", "--host", "0.0.0.0")
    assert [is_loopback(host) for host in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "10.0.0.1", "example.com")] == [
        True, True, True, True, True, False, False]


def test_http_refuses_a_key_given_on_the_command_line(monkeypatch):
    def serve(**options):
        raise AssertionError("served HTTP and ignored --key")

    monkeypatch.setattr("memory.management.commands.mcp.serve_http", serve)
    with pytest.raises(CommandError, match="--key is for stdio only: over --http every request sends its own"):
        call_command("mcp", "--http", "--key", "mk_revoked_or_not")


def test_http_past_the_keys_rate_the_sdk_client_gets_the_throttled_error_and_raw_http_a_429(served):
    """The production settings (not the test ones, which switch rate limits off), a key allowed
    8 requests a minute and an address 2 refusals: the SDK client's session spends some of them
    on its handshake, then a tool call fails with the API's 429 message."""
    env, key, _ = served
    process, url = start_http({**env, "DJANGO_SETTINGS_MODULE": "config.settings", "MEMORY_THROTTLE": "true",
                               "MEMORY_RATE_KEY": "8/min", "MEMORY_RATE_ANON": "2/min"})

    async def scenario():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
        answers = []
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            for _ in range(10):
                try:
                    answers.append(await client.call_tool("memory_search", {"workspace_id": "w1", "query_text": "x"}))
                except MCPError as error:
                    return answers, error
        return answers, None

    try:
        answers, error = anyio.run(scenario)
        raw = httpx.post(url, json={"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, timeout=10,
                         headers={"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"})
        refused = [httpx.post(url, json={}, timeout=10, headers={"Authorization": "Bearer mk_nosuch_secret"}).status_code
                   for _ in range(3)]
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert 1 <= len(answers) < 8 and not any(answer.is_error for answer in answers)
    assert error is not None and error.error.code == THROTTLED
    assert error.error.message.startswith("Request was throttled. Expected available in")
    assert error.error.data["error"]["code"] == "throttled"
    assert raw.status_code == 429 and 1 <= int(raw.headers["retry-after"]) <= 60
    assert raw.json()["error"]["data"]["error"]["code"] == "throttled"
    assert refused == [401, 401, 429]
