"""Policy simulation: recorded context calls rebuilt under the policy in force and under a
draft, before an admin saves it (issue 5 item 6; R-CTX)."""

import pytest

from accounts.services import agent_key_create
from memory.models import AuditEvent, Retrieval
from tests.conftest import key_client
from tests.helpers import append, make_node

CTX = {"workspace_id": "w1", "user_id": "u1", "session_id": "s1"}
URL = "/api/v1/policies/simulate"


@pytest.fixture
def admin_client(team):
    return key_client(agent_key_create(team=team, name="admin", kind="admin")[1])


@pytest.fixture
def traffic(agent_client, principal):
    append(principal, "planning the launch", **CTX)
    for index in range(4):
        make_node(principal, user_id="u1", type="fact", key=f"launch{index}", title=f"launch fact {index}",
                  content="the launch is on Friday " * 3)  # user facts: found by the query (L5), not standing
    make_node(principal, user_id="u1", type="preference", title="likes short answers")
    calls = [agent_client.post("/api/v1/context", {**CTX, "query": query}, format="json").json()
             for query in ("launch", "friday launch", "")]
    return calls


def test_an_unchanged_policy_reproduces_the_recorded_calls(admin_client, traffic):
    ledger = {row.pk: row for row in Retrieval.objects.all()}
    body = admin_client.post(URL, {"workspace_id": "w1", "changes": {}}, format="json").json()
    assert body["calls"] == 3 and body["before"] == body["after"]
    for call in body["per_call"]:
        row = ledger[call["retrieval_id"]]
        assert call["before"] == call["after"]
        assert call["before"]["chars"] == row.total_chars and call["before"]["memories"] == len(row.used_node_ids)
        assert call["added_ids"] == call["removed_ids"] == []


def test_a_draft_shows_what_it_would_change_and_writes_nothing(admin_client, traffic):
    retrievals, events = Retrieval.objects.count(), AuditEvent.objects.count()
    body = admin_client.post(URL, {"workspace_id": "w1", "changes": {"top_n": 0, "max_chars": 200}},
                             format="json").json()
    assert body["level"] == "workspace" and body["draft"]["top_n"] == 0 and body["draft"]["max_chars"] == 200
    assert body["before"]["hit_rate"] == 1.0 and body["after"]["hit_rate"] == 0.0
    assert body["after"]["injected_chars_mean"] <= 200 < body["before"]["injected_chars_mean"]
    assert all(call["after"]["chars"] <= 200 for call in body["per_call"])
    assert any(call["removed_ids"] for call in body["per_call"])
    assert Retrieval.objects.count() == retrievals and AuditEvent.objects.count() == events
    # saving the draft makes the next calls follow it, as simulated
    admin_client.patch("/api/v1/policies/workspaces/w1", {"top_n": 0, "max_chars": 200}, format="json")
    again = admin_client.post(URL, {"workspace_id": "w1", "changes": {}, "last": 3}, format="json").json()
    assert again["before"] == body["after"]


@pytest.mark.parametrize("body,field", [
    ({"changes": {"top_n": 999}}, "top_n"), ({"changes": {"colour": 1}}, "colour"),
    ({"changes": {}, "last": 0}, "last"), ({"changes": {}, "last": 501}, "last"), ({}, "changes"),
])
def test_bad_drafts_are_400(admin_client, body, field):
    response = admin_client.post(URL, body, format="json")
    assert response.status_code == 400 and field in str(response.json())


def test_only_team_admins_may_simulate(agent_client, other_agent_client, traffic):
    assert agent_client.post(URL, {"changes": {}}, format="json").status_code == 403
    assert other_agent_client.post(URL, {"changes": {}}, format="json").status_code == 403


def test_a_requests_own_wish_is_replayed_even_where_the_policy_held_it_back(admin_client, agent_client, principal):
    append(principal, "planning the launch", **CTX)
    for index in range(8):
        make_node(principal, user_id="u1", type="fact", key=f"l{index}", title=f"launch note {index}")
    admin_client.patch("/api/v1/policies/workspaces/w1", {"top_n": 2}, format="json")
    agent_client.post("/api/v1/context", {**CTX, "query": "launch", "budget": {"top_n": 5}}, format="json")
    simulated = admin_client.post(URL, {"workspace_id": "w1", "changes": {"top_n": 10}, "last": 1},
                                  format="json").json()
    admin_client.patch("/api/v1/policies/workspaces/w1", {"top_n": 10}, format="json")
    live = agent_client.post("/api/v1/context", {**CTX, "query": "launch", "budget": {"top_n": 5}},
                             format="json").json()
    assert simulated["per_call"][0]["after"]["memories"] == len(live["used_memory_ids"])
    assert simulated["per_call"][0]["after"]["chars"] == len(live["block"])


def test_lowering_the_teams_minimum_confidence_is_simulated(admin_client, agent_client, principal):
    append(principal, "hello", **CTX)
    make_node(principal, user_id="u1", type="fact", key="weak", title="launch weak guess", confidence=0.2)
    admin_client.patch("/api/v1/policies", {"min_confidence": 0.5}, format="json")
    agent_client.post("/api/v1/context", {**CTX, "query": "launch"}, format="json")
    body = admin_client.post(URL, {"changes": {"min_confidence": None}, "last": 1}, format="json").json()
    assert body["before"]["omitted_by_reason"].get("low_confidence") == 1
    assert body["after"]["omitted_by_reason"].get("low_confidence") is None
    assert body["per_call"][0]["after"]["memories"] == body["per_call"][0]["before"]["memories"] + 1


def test_a_draft_that_drops_earlier_messages_shows_in_the_l5_hit_rate(admin_client, agent_client, principal):
    """A review's find on LoCoMo, where recall is earlier messages, not memories: a draft of
    max_chars 0 wiped every call's recall and the simulation said "Hit rate 0.0% → 0.0%"."""
    append(principal, "we planted roses by the fence last spring", session_id="old", workspace_id="w1", user_id="u1")
    append(principal, "what should we plant this year?", **CTX)
    assert agent_client.post("/api/v1/context", {**CTX, "query": "roses fence"}, format="json").status_code == 200
    body = admin_client.post(URL, {"workspace_id": "w1", "changes": {"top_n": 0}}, format="json").json()
    assert (body["before"]["hit_rate"], body["after"]["hit_rate"]) == (0.0, 0.0)
    assert (body["before"]["l5_hit_rate"], body["after"]["l5_hit_rate"]) == (1.0, 0.0)
    [call] = body["per_call"]
    assert (call["before"]["l5_hit"], call["after"]["l5_hit"]) == (True, False)
