"""POST /api/v1/retrievals/{id}/feedback: the agent reports which injected memories its answer
used (issue 5 item 4; R-CTX hit ledger)."""

import pytest
from django.urls import reverse

from accounts.services import agent_key_create
from memory.kpi_models import RetrievalFeedback
from memory.models import AuditEvent
from tests.conftest import key_client
from tests.helpers import append, make_node

CTX = {"workspace_id": "w1", "user_id": "u1", "session_id": "s1"}


@pytest.fixture
def call(agent_client, principal):
    """A context call of session s1 that injected a workspace fact (L1) and a relevant user fact (L5)."""
    append(principal, "hello", **CTX)
    standing = make_node(principal, scope="workspace", workspace_id="w1", type="fact", title="厨房在二楼")
    relevant = make_node(principal, scope="user", user_id="u1", type="fact", title="喜欢香菜汤")
    body = agent_client.post(reverse("api-context"), {**CTX, "query": "香菜"}, format="json").json()
    assert body["used_memory_ids"] == [standing.pk, relevant.pk]
    return {"id": body["retrieval_id"], "standing": standing, "relevant": relevant}


def feedback(client, retrieval_id, **body):
    return client.post(reverse("api-retrieval-feedback", args=[retrieval_id]), body, format="json")


def test_feedback_is_stored_for_injected_memories(agent_client, call):
    response = feedback(agent_client, call["id"], used_node_ids=[call["relevant"].pk], helpful=True, note="used it")
    assert response.status_code == 201
    body = response.json()
    assert (body["retrieval_id"], body["used_node_ids"], body["helpful"], body["note"]) == (
        call["id"], [call["relevant"].pk], True, "used it")
    assert body["injected_node_ids"] == [call["standing"].pk, call["relevant"].pk]
    stored = RetrievalFeedback.objects.get()
    assert (stored.retrieval_id, stored.used_node_ids, stored.helpful) == (call["id"], [call["relevant"].pk], True)


def test_a_repeated_report_replaces_the_first(agent_client, call):
    feedback(agent_client, call["id"], used_node_ids=[call["relevant"].pk], helpful=True, note="first")
    response = feedback(agent_client, call["id"], used_node_ids=[])
    assert response.status_code == 200
    stored = RetrievalFeedback.objects.get()
    assert (stored.used_node_ids, stored.helpful, stored.note) == ([], None, "")


def test_feedback_is_audited_without_the_note(agent_client, call):
    feedback(agent_client, call["id"], used_node_ids=[call["relevant"].pk], note="private words")
    feedback(agent_client, call["id"], used_node_ids=[call["relevant"].pk, call["relevant"].pk])
    events = list(AuditEvent.objects.filter(event_type="memory.retrieval.feedback").order_by("pk"))
    assert [event.payload for event in events] == [
        {"retrieval_id": call["id"], "used_node_ids": [call["relevant"].pk], "helpful": None, "replaced": False},
        {"retrieval_id": call["id"], "used_node_ids": [call["relevant"].pk], "helpful": None, "replaced": True},
    ]
    assert (events[0].session_id, events[0].workspace_id, events[0].user_id) == ("s1", "w1", "u1")


def test_a_node_that_was_not_injected_is_refused_by_name(agent_client, principal, call):
    elsewhere = make_node(principal, scope="user", user_id="u1", type="fact", title="unrelated")
    response = feedback(agent_client, call["id"], used_node_ids=[call["relevant"].pk, elsewhere.pk, 999999])
    assert response.status_code == 400
    error = response.json()["error"]
    assert f"{elsewhere.pk}, 999999" in error["message"]
    assert error["fields"]["used_node_ids"] == [f"not injected by retrieval {call['id']}: {elsewhere.pk}, 999999"]
    assert RetrievalFeedback.objects.count() == 0


@pytest.mark.parametrize("body,field", [
    ({}, "used_node_ids"),
    ({"used_node_ids": "1"}, "used_node_ids"),
    ({"used_node_ids": ["1"]}, "used_node_ids[0]"),
    ({"used_node_ids": [], "helpful": "yes"}, "helpful"),
    ({"used_node_ids": [], "note": "x" * 1001}, "note"),
    ({"used_node_ids": [], "extra": 1}, "extra"),
])
def test_malformed_feedback_is_a_400(agent_client, call, body, field):
    response = agent_client.post(reverse("api-retrieval-feedback", args=[call["id"]]), body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]


def test_another_teams_retrieval_is_a_404(other_agent_client, call):
    response = feedback(other_agent_client, call["id"], used_node_ids=[])
    assert response.status_code == 404
    assert RetrievalFeedback.objects.count() == 0


def test_a_key_limited_to_another_workspace_gets_a_404(team, call):
    client = key_client(agent_key_create(team=team, name="w2 only", workspace_ids=["w2"])[1])
    assert feedback(client, call["id"], used_node_ids=[]).status_code == 404


def test_a_read_only_agent_may_report_what_it_used(readonly_agent_client, call):
    response = feedback(readonly_agent_client, call["id"], used_node_ids=[call["standing"].pk])
    assert response.status_code == 201


def test_the_retrieval_shows_its_feedback(agent_client, call):
    assert agent_client.get(reverse("api-retrieval", args=[call["id"]])).json()["feedback"] is None
    feedback(agent_client, call["id"], used_node_ids=[call["relevant"].pk], helpful=False)
    shown = agent_client.get(reverse("api-retrieval", args=[call["id"]])).json()["feedback"]
    assert (shown["used_node_ids"], shown["helpful"]) == ([call["relevant"].pk], False)


def test_forgetting_the_conversation_forgets_the_note(agent_client, call):
    feedback(agent_client, call["id"], used_node_ids=[call["relevant"].pk], note="the user said 香菜")
    response = agent_client.delete(reverse("api-session", args=["s1"]) + "?workspace_id=w1&user_id=u1&mode=hard")
    assert response.status_code == 200
    stored = RetrievalFeedback.objects.get()
    assert (stored.note, stored.used_node_ids) == ("[forgotten]", [call["relevant"].pk])
