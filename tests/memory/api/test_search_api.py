import json

import pytest
from django.urls import reverse

from tests.helpers import make_node

SEARCH = "/api/v1/memory/search"


def search(client, **body):
    return client.post(SEARCH, {"user_id": "u1", "workspace_id": "w1", **body}, format="json")


def titles(response, section="relevant"):
    return [node["title"] for node in response.json()[section]]


@pytest.mark.parametrize("query", ["香菜", "少辣", "清淡", "不要香菜"])
def test_chinese_words_inside_a_clause_are_found(agent_client, principal, query):
    make_node(principal, title="饮食", key="food.taste", value_json={"text": "吃饭不要香菜，口味清淡少辣"})
    make_node(principal, title="no cilantro, mild spice", key="food.taste.en")
    response = search(agent_client, query_text=query)
    assert response.status_code == 200 and titles(response)[0] == "饮食"


@pytest.mark.parametrize("query", ["pytest", "staging", "Staging环境", "环境"])
def test_english_inside_chinese_is_found(agent_client, principal, query):
    make_node(principal, scope="workspace", workspace_id="w1", type="constraint", key="release.rule",
              title="发布规则", value_json={"text": "发布前先跑pytest再推到Staging环境"})
    assert titles(search(agent_client, query_text=query)) == ["发布规则"]


@pytest.mark.parametrize("query,title", [("50", "预算"), ("app", "预算"), ("ＡＰＰ", "预算"), ("７点", "电话")])
def test_full_and_half_width_forms_match(agent_client, principal, query, title):
    make_node(principal, type="constraint", key="order.budget", title="预算",
              value_json={"text": "预算５０元以内，在ＡＰＰ里下单"})
    make_node(principal, type="constraint", key="order.time", title="电话", value_json={"text": "晚上7点后别打电话"})
    response = search(agent_client, query_text=query)
    assert titles(response)[0] == title
    if title == "预算":
        assert response.json()["relevant"][0]["value_json"]["text"] == "预算５０元以内，在ＡＰＰ里下单"


def test_relevant_results_say_which_terms_matched(agent_client, principal):
    make_node(principal, title="用户不吃香菜")
    assert search(agent_client, query_text="香菜").json()["relevant"][0]["matched"] == ["香菜"]


def test_value_filters_through_the_api(agent_client, principal):
    make_node(principal, title="A", key="level", cardinality="many", value_json={"level": None})
    make_node(principal, title="B", key="level", cardinality="many", value_json={})
    make_node(principal, title="C", key="level", cardinality="many", value_json={"level": "mild"})
    for op, expected in (("is_null", ["A"]), ("missing", ["B"]), ("exists", ["A", "C"]), ("not_null", ["B", "C"])):
        response = search(agent_client, key="level", value_filters=[{"path": "level", "op": op}])
        assert sorted(titles(response, "exact")) == expected


def test_exact_value_json_null_is_distinct_from_absent(agent_client, principal):
    make_node(principal, title="no value", key="k", cardinality="many")
    make_node(principal, title="has value", key="k", cardinality="many", value_json="v")
    assert titles(search(agent_client, key="k", value_json=None), "exact") == ["no value"]
    assert sorted(titles(search(agent_client, key="k"), "exact")) == ["has value", "no value"]


@pytest.mark.parametrize("body", [
    {"query_text": "a\u0000"}, {"limit": 0}, {"limit": 101}, {"limit": "5"}, {"types": ["opinion"]},
    {"value_filters": [{"path": "a", "op": "like"}]}, {"value_filters": [{"path": "a__b", "op": "exists"}]},
    {"include_expired": "yes"}, {"min_confidence": 2}, {"unknown": True},
])
def test_bad_queries_are_400(agent_client, body):
    response = search(agent_client, **body)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] in {"invalid", "parse_error"}


def test_memory_get_by_id_and_by_key(agent_client, principal):
    node = make_node(principal, title="用户不吃香菜", key="avoid_ingredient", value_json="香菜", domain="生活技能")
    by_id = agent_client.post(reverse("api-memory-get"), {"id": node.pk}, format="json")
    by_key = agent_client.post(reverse("api-memory-get"), {"user_id": "u1", "type": "preference",
                                                           "key": "avoid_ingredient", "value_json": "香菜",
                                                           "domain": "生活技能"}, format="json")
    assert by_id.json()["id"] == node.pk == by_key.json()["id"]
    missing = agent_client.post(reverse("api-memory-get"), {"user_id": "u1", "key": "nope"}, format="json")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def test_nodes_list_filters_and_pages_with_a_cursor(agent_client, principal):
    for i in range(5):
        make_node(principal, title=f"香菜 {i}", type="fact")
    make_node(principal, title="other", type="preference")
    page = agent_client.get(reverse("api-nodes"), {"type": "fact", "limit": 2}).json()
    assert [n["title"] for n in page["results"]] == ["香菜 4", "香菜 3"]
    rest = agent_client.get(page["next"]).json()
    assert [n["title"] for n in rest["results"]] == ["香菜 2", "香菜 1"]
    assert [n["title"] for n in agent_client.get(reverse("api-nodes"), {"q": "香菜 0"}).json()["results"]] == ["香菜 0"]
    assert agent_client.get(reverse("api-nodes"), {"cursor": "garbage"}).status_code == 400
    assert agent_client.get(reverse("api-nodes"), {"status": "weird"}).status_code == 400


def test_node_history_shows_the_chain_and_audit(agent_client, principal):
    old = make_node(principal, title="周二开会", key="meeting", type="decision", scope="workspace", workspace_id="w1")
    proposal = {"operation": "supersede", "target_id": old.pk, "workspace_id": "w1",
                "node": {"title": "周四开会"}, "reason": "moved"}
    new_id = agent_client.post(reverse("api-memory-propose"), proposal, format="json").json()["node_id"]
    history = agent_client.get(reverse("api-node-history", args=[old.pk])).json()
    assert [n["id"] for n in history["chain"]] == [old.pk, new_id]
    assert history["chain"][0]["superseded_by_id"] == new_id
    assert [e["event_type"] for e in history["audit"]] == ["memory.node.created", "memory.node.superseded",
                                                           "memory.node.created"]


def test_the_openapi_schema_is_served_valid_and_describes_keys_and_errors(client, db, tmp_path):
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    response = client.get(reverse("api-schema"), {"format": "json"})
    assert response.status_code == 200
    schema = json.loads(response.content)
    assert schema["components"]["securitySchemes"]["agentKey"]["scheme"] == "bearer"
    context = schema["paths"]["/api/v1/context"]["post"]
    assert {"agentKey": []} in context["security"]
    assert context["responses"]["400"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}


def test_summaries_page_with_a_cursor(agent_client, principal):
    from memory.services.sessions import SessionRef
    from memory.services.summaries import SummaryInput, summary_append
    from tests.helpers import append

    for i in range(5):
        append(principal, f"m{i}", session_id="s1", user_id="u1")
        summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "", "u1"), summary=f"S{i}"))
    first = agent_client.get(reverse("api-summaries"), {"session_id": "s1", "user_id": "u1", "limit": 2}).json()
    assert [item["summary"] for item in first["results"]] == ["S0", "S1"]
    second = agent_client.get(first["next"]).json()
    assert [item["summary"] for item in second["results"]] == ["S2", "S3"]


def test_a_node_past_its_expiry_lists_and_reads_as_expired(agent_client, principal):
    from datetime import UTC, datetime

    make_node(principal, title="old news", type="fact", expires_at=datetime(2000, 1, 1, tzinfo=UTC))
    make_node(principal, title="current", type="fact")
    active = agent_client.get(reverse("api-nodes"), {"status": "active"}).json()["results"]
    expired = agent_client.get(reverse("api-nodes"), {"status": "expired"}).json()["results"]
    assert [n["title"] for n in active] == ["current"]
    assert [(n["title"], n["status"]) for n in expired] == [("old news", "expired")]


def test_node_history_reads_a_long_chain_in_a_fixed_number_of_queries(agent_client, principal):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memory.services.nodes import node_supersede, supersede_input

    def chain_of(length):
        node = make_node(principal, title="v0", key=f"chain{length}", type="fact")
        first = node
        for i in range(1, length):
            node = node_supersede(principal=principal, old_node_id=node.pk,
                                  data=supersede_input(node, {"title": f"v{i}", "value_json": i}, {}))
        return first

    agent_client.get(reverse("api-nodes"))  # the key's last_used_at is written once, not per request
    counts = []
    for length in (2, 6):
        first = chain_of(length)
        with CaptureQueriesContext(connection) as captured:
            assert agent_client.get(reverse("api-node-history", args=[first.pk])).status_code == 200
        counts.append(len(captured.captured_queries) - length)  # one lookup per link walked is expected
    assert counts[0] == counts[1]


@pytest.mark.parametrize("cursor", ["!!!", "", "cD1hYmM=", "bz14", "cD0x!"])  # p=abc, o=x, p=1 + junk
def test_a_cursor_the_server_did_not_write_gets_400_not_the_first_page(agent_client, principal, cursor):
    from tests.helpers import append

    append(principal, "hello", session_id="s1", user_id="u1")
    for name, params in (("api-summaries", {"session_id": "s1", "user_id": "u1"}), ("api-nodes", {})):
        response = agent_client.get(reverse(name), {**params, "cursor": cursor})
        assert response.status_code == 400, (name, cursor, response.content)
        assert response.json()["error"]["message"] in ("invalid cursor", "cursor: This field may not be blank.")
