"""The MCP server in-process, driven by the official SDK's own Client (issue 8; R-TOOLS, R-API):
the same tools, arguments, answers and errors as the API, with the key as the audit actor.

The client's event loop runs under async_to_sync, so the server's thread-sensitive database
calls run in the test's thread, inside its transaction, like the API test client's requests.
"""

import json

import pytest
from asgiref.sync import async_to_sync
from mcp import Client
from mcp.shared.exceptions import MCPError

from accounts.services import agent_key_create, agent_key_revoke
from memory.api.mcp_server import CONTEXT_URI_TEMPLATE, build_server, context_arguments, context_uri
from memory.models import AuditEvent, Node, NodeStatus, Retrieval
from tests.helpers import append, make_node


def over_mcp(raw_key: str, scenario, *, mode: str = "auto"):
    """Run `scenario(client)` (a coroutine function) against a server for `raw_key`; its result."""

    async def main():
        async with Client(build_server(raw_key=raw_key), mode=mode) as client:
            try:
                return await scenario(client)
            except MCPError as error:  # raised here, not from inside the client's task groups
                failure = error
        raise failure

    return async_to_sync(main)()


def call(raw_key: str, name: str, arguments: dict):
    """(is_error, body) of one tool call; the text content must be the same JSON as the structured one."""

    async def scenario(client):
        return await client.call_tool(name, arguments)

    result = over_mcp(raw_key, scenario)
    assert json.loads(result.content[0].text) == result.structured_content
    return result.is_error, result.structured_content


API = {
    "memory_search": "/api/v1/memory/search",
    "memory_get": "/api/v1/memory/get",
    "memory_propose_update": "/api/v1/memory/propose",
    "memory_forget": "/api/v1/memory/forget",
    "memory_context": "/api/v1/context",
}


def api(client, name: str, arguments: dict):
    return client.post(API[name], arguments, format="json")


@pytest.fixture
def key(agent_key):
    return agent_key[1]


@pytest.fixture
def cilantro(principal):
    said = append(principal, "记住，我以后做饭不要香菜", session_id="s1", user_id="u1")[0]
    return make_node(principal, scope="user", type="preference", domain="生活技能", key="avoid_ingredient",
                     cardinality="many", value_json="香菜", title="用户不吃香菜", source_message_ids=[said.pk], explicit=True)


def test_list_tools_gives_the_api_tools_with_the_same_input_schemas(key, agent_client):
    listed = over_mcp(key, lambda client: client.list_tools()).tools
    api_tools = agent_client.get("/api/v1/tools?provider=anthropic").json()["tools"]
    assert [tool.name for tool in listed] == [*(tool["name"] for tool in api_tools), "memory_context"]
    assert [tool.name for tool in listed[:4]] == ["memory_search", "memory_get", "memory_propose_update", "memory_forget"]
    for tool, expected in zip(listed, api_tools, strict=False):
        assert (tool.description, tool.input_schema) == (expected["description"], expected["input_schema"])
    context = listed[4].input_schema
    assert context["required"] == ["session_id"] and {"query", "budget", "user_id"} <= set(context["properties"])


def test_search_and_get_give_the_api_answers(key, agent_client, cilantro):
    for name, arguments in [
        ("memory_search", {"user_id": "u1", "query_text": "香菜"}),
        ("memory_search", {"user_id": "u1", "key": "avoid_ingredient", "value_json": "香菜"}),
        ("memory_get", {"id": cilantro.pk}),
        ("memory_get", {"user_id": "u1", "scope": "user", "key": "avoid_ingredient", "value_json": "香菜"}),
    ]:
        is_error, body = call(key, name, arguments)
        assert not is_error and body == api(agent_client, name, arguments).json()
    assert call(key, "memory_search", {"user_id": "u1", "query_text": "香菜"})[1]["relevant"][0]["id"] == cilantro.pk


def test_propose_writes_the_node_audited_with_the_key_as_actor(key, agent_key, agent_client, principal):
    said = append(principal, "remember: I prefer green tea", session_id="s1", user_id="u1")[0]
    is_error, body = call(key, "memory_propose_update", {
        "operation": "create", "user_id": "u1", "session_id": "s1", "explicit_user_intent": True,
        "node": {"scope": "user", "type": "preference", "key": "drink", "value_json": "green tea",
                 "title": "prefers green tea", "source_message_ids": [said.pk]}})
    assert not is_error and (body["accepted"], body["created"]) == (True, True)
    node = Node.objects.get(pk=body["node_id"])
    assert (node.title, node.status, node.scope) == ("prefers green tea", NodeStatus.ACTIVE, "user")
    assert body["node"] == agent_client.get(f"/api/v1/nodes/{node.pk}").json()
    event = AuditEvent.objects.get(node_id=node.pk, event_type="memory.node.created")
    assert event.actor == f"key:{agent_key[0].prefix}"


def test_a_refused_proposal_is_an_answer_not_an_error(key):
    is_error, body = call(key, "memory_propose_update", {
        "operation": "create", "user_id": "u1", "node": {"scope": "user", "type": "preference", "title": "x"}})
    assert not is_error and (body["accepted"], body["reason"]) == (False, "explicit_intent_required")
    assert not Node.objects.exists()


@pytest.mark.parametrize("name,arguments,field", [
    ("memory_get", {"id": "seven"}, "id"),
    ("memory_search", {"user_id": "u1", "limits": 3}, "limits"),
    ("memory_forget", {"user_id": "u1", "key": "k", "mode": "shred"}, "mode"),
    ("memory_propose_update", {"operation": "create", "node": {"scope": "planet", "type": "fact", "title": "x"}},
     "node.scope"),
])
def test_bad_arguments_give_the_api_validation_error(key, agent_client, name, arguments, field):
    is_error, body = call(key, name, arguments)
    response = api(agent_client, name, arguments)
    assert response.status_code == 400 and is_error and body == response.json()
    assert body["error"]["code"] == "invalid" and field in body["error"]["fields"]


def test_text_the_database_cannot_store_is_refused_as_the_api_parser_does(key, agent_client):
    is_error, body = call(key, "memory_search", {"user_id": "u1", "query_text": "tea\x00"})
    response = api(agent_client, "memory_search", {"user_id": "u1", "query_text": "tea\x00"})
    assert response.status_code == 400 and is_error and body == response.json()
    assert body["error"]["code"] == "parse_error" and body["error"]["message"].startswith("query_text")


def test_another_teams_node_is_not_found(key, agent_client, other_principal):
    theirs = make_node(other_principal, title="globex secret")
    is_error, body = call(key, "memory_get", {"id": theirs.pk})
    assert is_error and body["error"]["code"] == "not_found"
    assert body == api(agent_client, "memory_get", {"id": theirs.pk}).json()
    is_error, body = call(key, "memory_forget", {"id": theirs.pk, "confirm": True})
    assert is_error and body["error"]["code"] == "not_found"
    assert Node.objects.get(pk=theirs.pk).status == NodeStatus.ACTIVE


def test_forget_asks_for_confirmation_then_forgets(key, principal):
    nodes = [make_node(principal, key="avoid", cardinality="many", value_json=value, title=value) for value in "ab"]
    is_error, ask = call(key, "memory_forget", {"user_id": "u1", "key": "avoid", "reason": "user asked"})
    assert not is_error and (ask["requires_confirmation"], ask["deleted_ids"], ask["candidate_count"]) == (True, [], 2)
    assert Node.objects.filter(status=NodeStatus.ACTIVE).count() == 2
    is_error, done = call(key, "memory_forget", {"user_id": "u1", "key": "avoid", "reason": "user asked", "confirm": True})
    assert not is_error and sorted(done["deleted_ids"]) == sorted(node.pk for node in nodes)
    assert Node.objects.filter(status=NodeStatus.ACTIVE).count() == 0
    assert AuditEvent.objects.get(event_type="memory.forget").actor.startswith("key:")


def test_a_read_only_key_may_search_but_not_write(team, principal):
    reader = agent_key_create(team=team, name="reader", writable_scopes=[])[1]
    make_node(principal, title="tea")
    assert call(reader, "memory_search", {"user_id": "u1", "query_text": "tea"})[1]["relevant"][0]["title"] == "tea"
    is_error, body = call(reader, "memory_forget", {"user_id": "u1", "key": "k", "confirm": True})
    assert is_error and body == {"error": {"code": "forbidden", "message": "this principal is read-only"}}


def test_a_revoked_key_stops_working_at_once(key, agent_key):
    agent_key_revoke(key=agent_key[0])
    is_error, body = call(key, "memory_search", {"user_id": "u1"})
    assert is_error and body == {"error": {"code": "unauthenticated", "message": "this API key was revoked"}}
    with pytest.raises(MCPError, match="revoked"):
        over_mcp(key, lambda client: client.list_tools())


def test_an_unknown_tool_is_a_protocol_error(key):
    with pytest.raises(MCPError, match="unknown tool 'memory_delete_everything'"):
        over_mcp(key, lambda client: client.call_tool("memory_delete_everything", {}))


def test_the_context_tool_answers_as_the_api_and_records_a_retrieval(key, agent_key, agent_client, cilantro):
    arguments = {"session_id": "s1", "user_id": "u1", "query": "做饭"}
    is_error, body = call(key, "memory_context", arguments)
    expected = api(agent_client, "memory_context", arguments).json()
    assert not is_error and "用户不吃香菜" in body["block"]
    assert (body["block"], body["used_memory_ids"], body["items"]) == (expected["block"], expected["used_memory_ids"],
                                                                       expected["items"])
    retrieval = Retrieval.objects.get(pk=body["retrieval_id"])
    assert (retrieval.actor, retrieval.query) == (f"key:{agent_key[0].prefix}", "做饭")


def test_the_context_resource_lists_sessions_and_reads_their_context(key, cilantro, principal, other_principal):
    append(principal, "hello", session_id="team/chat 2", user_id="u2", workspace_id="w1")
    append(other_principal, "theirs", session_id="globex-session", user_id="u1")

    async def scenario(client):
        templates = await client.list_resource_templates()
        listed = await client.list_resources()
        read = await client.read_resource(context_uri("s1", user_id="u1", query="做饭"))
        return templates.resource_templates, listed.resources, read.contents

    templates, listed, contents = over_mcp(key, scenario)
    assert [template.uri_template for template in templates] == [CONTEXT_URI_TEMPLATE]
    assert [resource.uri for resource in listed] == [
        "memory://context/team%2Fchat%202?user_id=u2&workspace_id=w1", "memory://context/s1?user_id=u1"]
    assert context_arguments(listed[0].uri) == {"session_id": "team/chat 2", "user_id": "u2", "workspace_id": "w1"}
    block, whole = contents
    assert (block.mime_type, whole.mime_type) == ("text/plain", "application/json")
    assert "用户不吃香菜" in block.text and json.loads(whole.text)["block"] == block.text
    assert Retrieval.objects.get(pk=json.loads(whole.text)["retrieval_id"]).query == "做饭"


@pytest.mark.parametrize("uri,message", [
    ("memory://nodes/1", "unknown resource"),
    ("memory://context/s1?user_id=u1&colour=red", "colour: unknown field"),
    ("memory://context/s1?user_id=" + "u" * 200, "user_id"),
    ("memory://context/s1?user_id=u1&timezone=Mars%2FOlympus", "IANA time zone"),
])
def test_a_bad_context_uri_is_an_error_naming_the_problem(key, uri, message):
    with pytest.raises(MCPError, match=message):
        over_mcp(key, lambda client: client.read_resource(uri))


def test_the_legacy_handshake_serves_the_same_tools(key, cilantro):
    async def scenario(client):
        tools = await client.list_tools()
        return [tool.name for tool in tools.tools], await client.call_tool("memory_get", {"id": cilantro.pk})

    names, result = over_mcp(key, scenario, mode="legacy")
    assert names[:4] == ["memory_search", "memory_get", "memory_propose_update", "memory_forget"]
    assert not result.is_error and result.structured_content["title"] == "用户不吃香菜"


@pytest.mark.parametrize("uri,message", [
    ("memory://context/s1?user_id=%ED%A0%80", "a percent-encoded value is not UTF-8"),
    ("memory://context/s1?user_id=%FF", "a percent-encoded value is not UTF-8"),
    ("memory://context/s%FF1?user_id=u1", "a percent-encoded value is not UTF-8"),
    ("memory://context/s1?user_id=u1&user_id=u2", "user_id is given twice"),
    ("memory://context/s1?user_id=u1&session_id=s2", "session_id is the path of the URI"),
])
def test_a_context_uri_with_bad_encoding_or_a_repeated_parameter_is_refused(key, cilantro, uri, message):
    with pytest.raises(MCPError, match=message):
        over_mcp(key, lambda client: client.read_resource(uri))
    assert not Retrieval.objects.exists()
