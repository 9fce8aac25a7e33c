"""No N+1 on any dashboard page: each page takes the same number of queries with few rows and
with many (issue 6 quality bar). The pages' own modules test their behaviour; these only count.

Pages counted elsewhere: the memory list without a filter (test_memories), the session list
and a session's page (test_sessions), the members, keys and schema pages (test_admin_*).
"""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memory.models import Retrieval
from memory.services.nodes import node_supersede, supersede_input
from memory.services.policies import policy_set
from tests.dashboard.conftest import make_message, make_node
from tests.dashboard.test_admin_audit import record
from tests.helpers import append

CALL = {"workspace_id": "w1", "user_id": "u1", "session_id": "s1"}


def queries(client, url: str, params: dict | None = None, **headers) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, params or {}, **headers)
    assert response.status_code == 200, response.content[:500]
    return len(captured)


def cooking_notes(principal, start: int, count: int) -> None:
    """Memories the text 香菜 finds, each with a source message in its own session."""
    for number in range(start, start + count):
        message = make_message(principal, f"第{number}次：不要香菜", session_id=f"chat-{number}")
        make_node(principal, title=f"不吃香菜 {number}", scope="session", session_id=f"chat-{number}",
                  workspace_id="proj-b", user_id="u-2", tags=["忌口"], source_message_ids=[message.pk])


@pytest.mark.parametrize("params", [{"q": "香菜"}, {"status": "active"}, {"q": "香菜", "status": "superseded"}],
                         ids=["chinese-text", "status", "text-and-status"])
def test_the_filtered_memory_list_takes_the_same_queries_for_3_and_30_rows(viewer_client, principal, params):
    url = reverse("dashboard:memories")
    cooking_notes(principal, 0, 3)
    few = queries(viewer_client, url, params)
    cooking_notes(principal, 3, 27)
    assert queries(viewer_client, url, params) == few
    assert queries(viewer_client, url, params, HTTP_HX_REQUEST="true") <= few


def supersede(principal, node, number: int):
    return node_supersede(principal=principal, old_node_id=node.pk, reason=f"version {number}",
                          data=supersede_input(node, {"title": f"Coffee v{number}", "value_json": number}, {}))


def test_the_node_page_takes_the_same_queries_for_a_chain_of_2_and_of_8(editor_client, principal):
    first = make_node(principal, title="Coffee v0", key="drink.coffee", value_json=0)
    newest = supersede(principal, first, 1)
    short = [queries(editor_client, reverse("dashboard:node", args=[node.pk])) for node in (first, newest)]
    for number in range(2, 8):
        newest = supersede(principal, newest, number)
    long = [queries(editor_client, reverse("dashboard:node", args=[node.pk])) for node in (first, newest)]
    assert long == short


def test_the_preview_takes_the_same_queries_for_few_and_many_relevant_memories_and_turns(viewer_client, principal):
    url = reverse("dashboard:preview")
    params = {**CALL, "q": "launch", "draft-top_n": "2"}

    def facts_and_turns(start: int, count: int, turns: int) -> None:
        for number in range(start, start + count):
            make_node(principal, user_id="u1", type="fact", key=f"launch{number}", title=f"launch fact {number}",
                      content="the launch is on Friday")
        # Turns older than the recent window are relevant earlier messages (L5) too.
        append(principal, *[f"launch turn {start + number}" for number in range(turns)], **CALL)

    facts_and_turns(0, 3, 8)
    few = queries(viewer_client, url, params)
    facts_and_turns(3, 27, 40)
    assert queries(viewer_client, url, params) == few
    assert queries(viewer_client, url, params, HTTP_HX_REQUEST="true") < few


def test_the_budgets_page_takes_the_same_queries_for_1_and_12_workspaces(viewer_client, admin_principal):
    url = reverse("dashboard:budgets")

    def workspaces(start: int, count: int) -> None:
        for number in range(start, start + count):
            append(admin_principal, "hi", session_id=f"s{number}", workspace_id=f"w{number}", user_id=f"u{number}")
            policy_set(principal=admin_principal, workspace_id=f"w{number}", changes={"top_n": number % 5})

    workspaces(0, 1)
    few = (queries(viewer_client, url), queries(viewer_client, url, {"workspace_id": "w0"}))
    workspaces(1, 11)
    assert (queries(viewer_client, url), queries(viewer_client, url, {"workspace_id": "w0"})) == few


def test_the_kpi_page_takes_the_same_queries_for_14_and_140_recorded_calls(viewer_client, principal, agent_client):
    """Over the same days: kpis() reads latencies with one query per day that had calls
    (at most the range's days), never per call."""
    url = reverse("dashboard:kpis")
    append(principal, "planning the launch", **CALL)
    make_node(principal, user_id="u1", type="fact", title="launch fact", content="the launch is on Friday")

    def calls(count: int) -> None:
        for _ in range(count):
            agent_client.post("/api/v1/context", {**CALL, "query": "launch"}, format="json")
        for number, pk in enumerate(Retrieval.objects.order_by("pk").values_list("pk", flat=True)):
            Retrieval.objects.filter(pk=pk).update(created_at=timezone.now() - timedelta(days=number % 14))

    calls(14)
    few = (queries(viewer_client, url), queries(viewer_client, url, {"workspace_id": "w1"}))
    calls(126)
    assert (queries(viewer_client, url), queries(viewer_client, url, {"workspace_id": "w1"})) == few


def test_the_audit_log_takes_the_same_queries_for_5_and_50_events(editor_client, team, principal):
    url = reverse("dashboard:audit")

    def events(start: int, count: int) -> None:
        for number in range(start, start + count):
            node = make_node(principal, title=f"n{number}")
            make_message(principal, f"m{number}", session_id=f"s{number}")
            record(team, "memory.node.updated", node_id=node.pk)

    events(0, 5)
    few = queries(editor_client, url)
    events(5, 45)
    assert queries(editor_client, url) == few
