"""Extraction batches (all or nothing) and the tool definitions; the issue's "done when" flow
driven only by what /api/v1/tools describes (issue 3; R-TOOLS, R-EXTRACT)."""

import json

import pytest

from memory.models import AuditEvent, Node
from tests.helpers import append

EXTRACT = "/api/v1/memory/extractions"
CTX = {"workspace_id": "home", "user_id": "xiaoming", "session_id": "cook-1"}


@pytest.fixture
def said(principal):
    return append(principal, "以后做饭别给我推荐香菜，我喜欢少油少辣。", **CTX)[0].pk


def op(said, **node):
    return {"operation": "create", "explicit_user_intent": True, "node": {
        "domain": "生活技能", "type": "preference", "source_message_ids": [said], **node}}


def test_a_batch_is_applied_in_one_go_with_a_result_per_operation(agent_client, said):
    body = {**CTX, "operations": [op(said, key="avoid_ingredient", value_json="香菜", title="不吃香菜"),
                                  op(said, key="flavor_profile", value_json="少油少辣", title="少油少辣")]}
    response = agent_client.post(EXTRACT, body, format="json")
    assert response.status_code == 201
    result = response.json()
    assert result["applied"] is True and [item["accepted"] for item in result["results"]] == [True, True]
    assert {n.key: n.value_json for n in Node.objects.all()} == {"avoid_ingredient": "香菜",
                                                                 "flavor_profile": {"oil": "low", "spicy": "low"}}
    assert AuditEvent.objects.filter(event_type="memory.node.created").count() == 2


def test_one_refusal_leaves_the_whole_batch_unwritten(agent_client, said):
    events = AuditEvent.objects.count()
    body = {**CTX, "operations": [op(said, key="avoid_ingredient", value_json="香菜", title="不吃香菜"),
                                  op(said, key="favourite_color", value_json="red", title="red")]}
    result = agent_client.post(EXTRACT, body, format="json").json()
    assert result["applied"] is False
    first, second = result["results"]
    assert first["accepted"] is True and first["node_id"] is None and first["message"].startswith("not applied")
    assert (second["accepted"], second["reason"]) == (False, "key_not_in_schema")
    assert Node.objects.count() == 0 and AuditEvent.objects.count() == events


@pytest.mark.parametrize("bad,path", [
    ({"node": {"type": "preference", "title": "a\u0000b"}}, "operations[1]"),
    ({"node": {"type": "preference", "title": "x" * 201}}, "operations[1]"),
    ({"node": {"type": "opinion", "title": "x"}}, "operations"),
    ({"target_id": 10**6, "operation": "supersede"}, "operations[1]"),
])
def test_a_malformed_or_unknown_operation_fails_the_batch_naming_it(agent_client, said, bad, path):
    body = {**CTX, "operations": [op(said, key="avoid_ingredient", value_json="香菜", title="不吃香菜"),
                                  {**op(said, title="y"), **bad}]}
    response = agent_client.post(EXTRACT, body, format="json")
    assert response.status_code in (400, 404), response.content
    assert path in json.dumps(response.json(), ensure_ascii=False)
    assert Node.objects.count() == 0


def test_batch_limits(agent_client, said):
    assert agent_client.post(EXTRACT, {**CTX, "operations": []}, format="json").status_code == 400
    many = [op(said, key="avoid_ingredient", value_json=f"v{i}", title=f"v{i}") for i in range(101)]
    assert agent_client.post(EXTRACT, {**CTX, "operations": many}, format="json").status_code == 400
    assert Node.objects.count() == 0


def test_tools_are_generated_from_the_endpoint_serializers(agent_client):
    served = agent_client.get("/api/v1/tools").json()
    tools = served["tools"]
    names = [tool["function"]["name"] for tool in tools]
    assert names == ["memory_search", "memory_get", "memory_propose_update", "memory_forget"]
    propose = tools[2]["function"]["parameters"]
    assert propose["properties"]["operation"]["enum"] == ["create", "update", "supersede", "expire", "delete"]
    assert propose["required"] == ["operation"] and propose["additionalProperties"] is False
    assert propose["properties"]["node"]["properties"]["title"]["maxLength"] == 200
    forget = tools[3]["function"]["parameters"]
    assert set(forget["properties"]) >= {"id", "scope", "domain", "category_path_prefix", "type", "key", "value_json",
                                         "source_message_ids", "mode", "reason", "confirm"}
    assert propose["properties"]["node"]["additionalProperties"] is False
    assert "$ref" not in json.dumps(tools) and "* `" not in json.dumps(tools)  # no enum noise
    assert set(tools[0]) == {"type", "function"}  # nothing a provider would refuse
    assert served["endpoints"] == {"memory_search": "POST /api/v1/memory/search", "memory_get": "POST /api/v1/memory/get",
                                   "memory_propose_update": "POST /api/v1/memory/propose",
                                   "memory_forget": "POST /api/v1/memory/forget"}
    # the team's controlled keys are in the propose tool's description
    assert "生活技能/preference: avoid_ingredient (string, many)" in tools[2]["function"]["description"]
    anthropic = agent_client.get("/api/v1/tools", {"provider": "anthropic"}).json()["tools"]
    assert anthropic[2]["input_schema"] == propose
    assert agent_client.get("/api/v1/tools", {"provider": "xml"}).status_code == 400


def _call(client, served, name, arguments):
    """What an agent runtime does with a tool call: check the arguments against the tool's
    schema (top-level names only, as a strict runtime would) and send them to its endpoint."""
    tool = next(tool for tool in served["tools"] if tool["function"]["name"] == name)
    assert set(arguments) <= set(tool["function"]["parameters"]["properties"]), set(arguments)
    _, path = served["endpoints"][name].split(" ")
    return client.post(path, arguments, format="json").json()


def test_done_when_an_agent_records_corrects_and_forgets_using_only_the_tools(agent_client, principal):
    tools = agent_client.get("/api/v1/tools").json()
    said = append(principal, "记住，我以后做饭不要香菜", **CTX)[0].pk
    remembered = _call(agent_client, tools, "memory_propose_update", {
        **CTX, "operation": "create", "explicit_user_intent": True, "reason": "用户明确要求记录长期饮食偏好",
        "node": {"domain": "生活技能", "type": "preference", "key": "disliked_ingredient", "value_json": "香菜",
                 "title": "用户不吃香菜", "source_message_ids": [said]}})
    assert remembered["accepted"] is True
    node = Node.objects.get(pk=remembered["node_id"])
    assert (node.scope, node.key, node.value_json, node.source_message_ids) == ("user", "avoid_ingredient", "香菜", [said])

    found = _call(agent_client, tools, "memory_get", {**CTX, "key": "avoid_ingredient", "domain": "生活技能"})
    assert found["id"] == node.pk
    later = append(principal, "香菜现在可以接受一点，但不要太多。", **CTX)[0].pk
    corrected = _call(agent_client, tools, "memory_propose_update", {
        **CTX, "operation": "supersede", "target_id": found["id"], "explicit_user_intent": True,
        "node": {"key": "limit_ingredient", "value_json": {"ingredient": "香菜", "amount": "少量"},
                 "title": "用户可接受少量香菜", "source_message_ids": [later]}})
    assert corrected["accepted"] is True and corrected["superseded_id"] == node.pk
    active = _call(agent_client, tools, "memory_search", {**CTX, "query_text": "香菜"})
    assert [item["id"] for item in active["exact"] + active["relevant"]] == [corrected["node_id"]]

    ask = _call(agent_client, tools, "memory_forget", {**CTX, "id": corrected["node_id"], "mode": "hard",
                                                        "reason": "用户要求彻底忘记"})
    assert ask["requires_confirmation"] is True
    gone = _call(agent_client, tools, "memory_forget", {**CTX, "id": corrected["node_id"], "mode": "hard",
                                                         "reason": "用户要求彻底忘记", "confirm": True})
    assert sorted(gone["deleted_ids"]) == sorted([node.pk, corrected["node_id"]])
    assert Node.objects.count() == 0
    after = _call(agent_client, tools, "memory_search", {**CTX, "query_text": "香菜"})
    assert after["exact"] == after["relevant"] == []
    context = agent_client.post("/api/v1/context", {**CTX, "query": "香菜"}, format="json").json()
    assert context["used_memory_ids"] == []
