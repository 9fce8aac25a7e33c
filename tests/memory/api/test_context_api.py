import os
import subprocess
import sys
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from memory.models import Retrieval
from tests.helpers import append, make_node

URL = "/api/v1/context"


@pytest.fixture
def memories(principal):
    append(principal, "hello", session_id="s1", user_id="u1")
    for i in range(10):
        make_node(principal, user_id="u1", title=f"memory {i}", content=f"remembered preference number {i:02d} " + "x" * 20)


def context(client, **body):
    return client.post(URL, {"session_id": "s1", "user_id": "u1", **body}, format="json")


@pytest.mark.parametrize("budget", [0, 10])
def test_a_budget_smaller_than_the_overhead_returns_200_and_nothing(agent_client, memories, budget):
    response = context(agent_client, query="preference", budget={"max_chars": budget})
    assert response.status_code == 200
    body = response.json()
    assert body["block"] == "" and body["used_memory_ids"] == [] and body["diagnostics"]["truncated"] is True


@pytest.mark.parametrize("budget", [-5, "abc", 1.5, True, None])
def test_an_invalid_budget_is_a_400(agent_client, memories, budget):
    response = context(agent_client, query="x", budget={"max_chars": budget})
    assert response.status_code == 400
    assert "budget.max_chars" in response.json()["error"]["fields"]


def test_a_huge_budget_is_capped_at_the_policy(agent_client, memories):
    body = context(agent_client, query="preference", budget={"max_chars": 10_000_000}).json()
    assert body["budget"]["max_chars"] == {"value": 1200, "source": "default"}
    assert len(body["block"]) <= 1200
    assert any("capped" in w for w in body["diagnostics"]["warnings"])


def test_the_whole_block_including_headers_stays_within_max_chars(agent_client, memories):
    for limit in (50, 120, 300, 700):
        body = context(agent_client, query="preference", budget={"max_chars": limit}).json()
        assert len(body["block"]) <= limit
        assert body["diagnostics"]["total_chars"] == len(body["block"])


def test_context_returns_sections_ids_and_a_retrieval_that_explains_them(agent_client, principal):
    msg = append(principal, "以后做饭别给我推荐香菜", session_id="s1", user_id="u1")[0]
    node = make_node(principal, user_id="u1", title="用户不吃香菜", content="推荐菜谱时避免香菜。", explicit=True,
                     key="avoid_ingredient", value_json="香菜", source_message_ids=[msg.pk])
    body = context(agent_client, query="香菜").json()
    assert body["used_memory_ids"] == [node.pk]
    assert body["preferences"][0]["source_message_ids"] == [msg.pk]
    assert body["recent_messages"][0]["id"] == msg.pk
    explained = agent_client.get(reverse("api-retrieval", args=[body["retrieval_id"]])).json()
    assert explained["query"] == "香菜"
    used = {(entry["kind"], entry["id"]): entry for entry in explained["used"]}
    assert ("message", msg.pk) in used and used[("message", msg.pk)]["section"] == "recent_messages"
    assert used[("node", node.pk)]["title"] == "用户不吃香菜" and "preference" in used[("node", node.pk)]["why"]
    assert explained["total_chars"] == len(body["block"])


def test_a_retrieval_of_another_team_is_not_found(agent_client, other_agent_client, principal):
    retrieval_id = context(agent_client, query="x").json()["retrieval_id"]
    assert other_agent_client.get(reverse("api-retrieval", args=[retrieval_id])).status_code == 404


def test_context_requires_a_session_id(agent_client):
    response = agent_client.post(URL, {"query": "x"}, format="json")
    assert response.status_code == 400 and "session_id" in response.json()["error"]["fields"]


def test_unknown_budget_fields_are_refused(agent_client):
    response = context(agent_client, budget={"max_characters": 10})
    assert response.status_code == 400


def _queries_for(client, path, body):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        assert client.post(path, body, format="json").status_code == 200
    # Statements that read or write; the savepoints of the ledger write are the test's
    # transaction showing through (in a request they are a BEGIN and COMMIT).
    return sum(1 for query in captured.captured_queries if not query["sql"].startswith(("SAVEPOINT", "RELEASE")))


def test_context_and_search_use_a_fixed_number_of_queries(agent_client, principal):
    made = iter(range(1000))

    def grow(n):
        for _ in range(n):
            i = next(made)
            msg = append(principal, f"jenkins note {i}", session_id="s1", user_id="u1")[0]
            make_node(principal, user_id="u1", title=f"jenkins preference {i}", source_message_ids=[msg.pk])
            make_node(principal, scope="workspace", workspace_id="w1", type="fact", title=f"jenkins fact {i}")

    body = {"session_id": "s1", "user_id": "u1", "workspace_id": "w1", "query": "jenkins"}
    search = {"user_id": "u1", "workspace_id": "w1", "query_text": "jenkins"}
    grow(2)
    agent_client.post(URL, body, format="json")  # warm the key's last_used_at
    small = (_queries_for(agent_client, URL, body), _queries_for(agent_client, "/api/v1/memory/search", search))
    grow(10)
    large = (_queries_for(agent_client, URL, body), _queries_for(agent_client, "/api/v1/memory/search", search))
    assert small == large
    assert large[0] <= 16


def test_earlier_messages_are_dated_in_the_time_zone_the_call_gives(agent_client, principal):
    """07:30 in Shanghai on 1 March is 23:30 UTC on 29 February."""
    append(principal, "我们在香山爬山了", session_id="s-old", user_id="u1", occurred_at=datetime(
        2024, 3, 1, 7, 30, tzinfo=ZoneInfo("Asia/Shanghai")))
    append(principal, "hello", session_id="s1", user_id="u1")
    lines = {zone: [line for line in context(agent_client, query="香山爬山", timezone=zone).json()["block"].splitlines()
                    if "香山" in line] for zone in ("Asia/Shanghai", "", "America/Los_Angeles")}
    assert lines == {"Asia/Shanghai": ["- [2024-03-01] user: 我们在香山爬山了"],
                     "": ["- [2024-02-29] user: 我们在香山爬山了"],
                     "America/Los_Angeles": ["- [2024-02-29] user: 我们在香山爬山了"]}
    in_utc = context(agent_client, query="香山", timezone="UTC").json()["block"]
    assert in_utc == context(agent_client, query="香山").json()["block"]
    # A name in another case is the same zone (a newcomer wrote "asia/shanghai" and got a 400).
    for spelling in ("asia/shanghai", "ASIA/SHANGHAI", "Asia/ShangHai"):
        assert context(agent_client, query="香山", timezone=spelling).json()["block"] == \
            context(agent_client, query="香山", timezone="Asia/Shanghai").json()["block"]


def test_a_call_that_names_no_time_zone_takes_the_deployments(agent_client, principal, settings):
    """MEMORY_TIME_ZONE: an agent that sends no timezone still gets its users' days, not UTC's."""
    append(principal, "我们在香山爬山了", session_id="s-old", user_id="u1", occurred_at=datetime(
        2024, 3, 1, 7, 30, tzinfo=ZoneInfo("Asia/Shanghai")))
    append(principal, "hello", session_id="s1", user_id="u1")
    settings.MEMORY_TIME_ZONE = "Asia/Shanghai"
    dated = [line for line in context(agent_client, query="香山爬山").json()["block"].splitlines() if "香山" in line]
    assert dated == ["- [2024-03-01] user: 我们在香山爬山了"]
    # The call's own zone still wins.
    assert "- [2024-02-29] user: 我们在香山爬山了" in context(agent_client, query="香山爬山",
                                                         timezone="UTC").json()["block"]


def test_an_unknown_deployment_time_zone_stops_the_start():
    started = subprocess.run([sys.executable, "-c", "import django; django.setup()"], capture_output=True, text=True,
                             cwd=django_settings.BASE_DIR, timeout=120,
                             env={**os.environ, "MEMORY_TIME_ZONE": "Mars/Olympus",
                                  "DJANGO_SETTINGS_MODULE": "config.settings"})
    assert started.returncode != 0 and "MEMORY_TIME_ZONE must be an IANA time zone name" in started.stderr


@pytest.mark.parametrize("zone", ["Mars/Olympus", "+08:00", "Asia", "../../etc/passwd", "/etc/localtime",
                                  "Asia/../Asia/Shanghai", "zone.tab", "tzdata.zi", "x" * 65, 8, None, ["UTC"],
                                  # files of the host's zoneinfo folder that are not zones of the tzdata package
                                  "localtime", "posixrules", "right/UTC", "posix/UTC", "zones"])
def test_an_unknown_time_zone_is_a_400_that_records_nothing(agent_client, principal, zone):
    response = context(agent_client, query="x", timezone=zone)
    assert response.status_code == 400
    assert "timezone" in response.json()["error"]["fields"]
    assert Retrieval.objects.count() == 0


def test_an_unknown_time_zone_is_a_400_without_a_query_too(agent_client, principal):
    response = context(agent_client, query="", timezone="Mars/Olympus")
    assert response.status_code == 400 and "timezone" in response.json()["error"]["fields"]
    assert Retrieval.objects.count() == 0


@pytest.mark.parametrize("zone", [r"Asia/Shanghai\u0000", r"\ud800", r"Asia/Shanghai\udfff"])
def test_a_time_zone_with_nul_or_a_lone_surrogate_is_a_400(agent_client, zone):
    raw = '{"session_id": "s1", "user_id": "u1", "query": "x", "timezone": "' + zone + '"}'
    response = agent_client.post(URL, data=raw, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"]["code"]
    assert Retrieval.objects.count() == 0


def test_items_a_layer_cap_leaves_out_are_named_with_that_cap_and_listed(agent_client, principal, admin_principal):
    from memory.services.policies import policy_set

    policy_set(principal=admin_principal, workspace_id="w1", changes={"max_chars": 400, "top_n": 3, "l5_chars": 200})
    for index in range(3):  # one turn per session: no follow-ups
        append(principal, f"we planted roses in the garden bed number {index} " + "x" * 60, session_id=f"old{index}",
               user_id="u1", workspace_id="w1")
    append(principal, "hello", session_id="s1", user_id="u1", workspace_id="w1")
    body = context(agent_client, workspace_id="w1", query="garden roses").json()
    diagnostics = body["diagnostics"]
    assert diagnostics["total_chars"] < 400 and body["omitted"] == []
    assert "2 item(s) left out to stay within l5_chars=200" in diagnostics["warnings"]
    assert not any("max_chars" in warning for warning in diagnostics["warnings"])
    assert [(item["section"], item["kind"], item["limit"]) for item in diagnostics["dropped"]] == [
        ("earlier_messages", "message", "l5_chars")] * 2
    assert diagnostics["counts"]["dropped_by_limit"] == {"l5_chars": 2}
