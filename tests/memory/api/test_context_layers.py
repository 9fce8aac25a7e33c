"""The context follows the budget policy's layer switches, layer budgets, summary switch and
minimum confidence, from the team, the workspace and the request (issue 5; R-CTX)."""

import pytest

from accounts.services import agent_key_create
from memory.services.sessions import SessionRef
from memory.services.summaries import SummaryInput, summary_append
from tests.conftest import key_client
from tests.helpers import append, make_node

CTX = {"workspace_id": "w1", "user_id": "u1", "session_id": "s1"}


@pytest.fixture
def admin_client(team):
    return key_client(agent_key_create(team=team, name="admin", kind="admin")[1])


@pytest.fixture
def world(principal):
    append(principal, "we talked about the launch", "and the budget", **CTX)
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "w1", "u1"), summary="LAUNCH SUMMARY"))
    return {
        "workspace": make_node(principal, scope="workspace", workspace_id="w1", type="decision", title="WS decision"),
        "user": make_node(principal, user_id="u1", type="preference", title="USER likes tea", confidence=0.6),
        "weak": make_node(principal, user_id="u1", type="preference", key="k2", title="USER weak guess", confidence=0.3),
    }


def context(client, **budget):
    return client.post("/api/v1/context", {**CTX, "query": "launch", "budget": budget}, format="json").json()


def test_a_workspace_policy_switches_layers_off_and_the_omissions_say_so(admin_client, agent_client, world):
    assert "WS decision" in context(agent_client)["block"]
    response = admin_client.patch("/api/v1/policies/workspaces/w1", {"l1_enabled": False, "summary_enabled": False},
                                  format="json")
    assert response.status_code == 200, response.content
    body = context(agent_client)
    assert "WS decision" not in body["block"] and "LAUNCH SUMMARY" not in body["block"]
    assert "USER likes tea" in body["block"]
    assert {"node_id": world["workspace"].pk, "reason": "layer_disabled"} in body["omitted"]
    assert body["budget"]["l1_enabled"] == {"value": False, "source": "workspace"}
    assert body["diagnostics"]["chars_by_layer"]["L1"] == 0


def test_a_layer_budget_bounds_its_layer_only(admin_client, agent_client, principal, world):
    for index in range(6):
        make_node(principal, user_id="u1", type="preference", key=f"p{index}", title=f"USER preference number {index}")
    admin_client.patch("/api/v1/policies", {"l2_chars": 60}, format="json")
    body = context(agent_client)
    l2 = [item for item in body["items"] if item["layer"] == "L2"]
    assert sum(item["chars"] for item in l2) <= 60 and l2
    assert body["diagnostics"]["chars_by_layer"]["L2"] <= 60
    assert "WS decision" in body["block"]  # other layers unaffected
    assert any(item["reason"] == "over_limit" for item in body["omitted"])


def test_minimum_confidence_from_policy_and_request(admin_client, agent_client, world):
    assert "USER weak guess" in context(agent_client)["block"]
    admin_client.patch("/api/v1/policies/workspaces/w1", {"min_confidence": 0.5}, format="json")
    body = context(agent_client)
    assert "USER weak guess" not in body["block"] and "USER likes tea" in body["block"]
    assert {"node_id": world["weak"].pk, "reason": "low_confidence"} in body["omitted"]
    stricter = context(agent_client, min_confidence=0.7)  # a request may ask for more care, never less
    assert "USER likes tea" not in stricter["block"]
    looser = context(agent_client, min_confidence=0.1)
    assert "USER weak guess" not in looser["block"] and looser["budget"]["min_confidence"]["value"] == 0.5


def test_a_request_may_switch_a_layer_off_but_not_on(admin_client, agent_client, world):
    assert "LAUNCH SUMMARY" not in context(agent_client, summary_enabled=False)["block"]
    admin_client.patch("/api/v1/policies", {"l2_enabled": False}, format="json")
    body = context(agent_client, l2_enabled=True)
    assert "USER likes tea" not in body["block"]
    assert any("l2_enabled" in warning for warning in body["diagnostics"]["warnings"])
