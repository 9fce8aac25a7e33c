"""L0 pinned instructions: admins pin text for the team or a workspace; every context call
injects it first (issue 5; R-CTX)."""

import pytest

from accounts.services import agent_key_create
from memory.models import AuditEvent
from tests.conftest import key_client

URL = "/api/v1/instructions"


@pytest.fixture
def admin_client(team):
    return key_client(agent_key_create(team=team, name="admin", kind="admin")[1])


def context(client, workspace_id):
    return client.post("/api/v1/context", {"workspace_id": workspace_id, "user_id": "u1", "session_id": "s1",
                                           "query": "hi"}, format="json").json()


def test_pinned_instructions_come_first_team_then_workspace(admin_client, agent_client):
    assert admin_client.put(URL, {"text": "Answer in the user's language."}, format="json").status_code == 200
    assert admin_client.put(URL + "?workspace_id=w1", {"text": "本项目用 PostgreSQL。"}, format="json").status_code == 200
    block = context(agent_client, "w1")["block"]
    assert block.startswith("[Instructions]\nAnswer in the user's language.\n本项目用 PostgreSQL。")
    other = context(agent_client, "w2")["block"]
    assert other.startswith("[Instructions]\nAnswer in the user's language.") and "PostgreSQL" not in other
    body = context(agent_client, "w1")
    assert body["diagnostics"]["chars_by_layer"]["L0"] == len("Answer in the user's language.") + len("本项目用 PostgreSQL。")
    assert agent_client.get(URL, {"workspace_id": "w1"}).json()["text"] == "本项目用 PostgreSQL。"
    event = AuditEvent.objects.filter(event_type="memory.instructions.updated").last()
    assert event.payload == {"chars_before": 0, "chars_after": len("本项目用 PostgreSQL。")}


def test_a_policy_can_switch_l0_off_and_an_empty_text_removes_the_pin(admin_client, agent_client):
    admin_client.put(URL, {"text": "Be brief."}, format="json")
    admin_client.patch("/api/v1/policies", {"l0_enabled": False}, format="json")
    assert "Be brief." not in context(agent_client, "w1")["block"]
    admin_client.patch("/api/v1/policies", {"l0_enabled": None}, format="json")
    admin_client.put(URL, {"text": ""}, format="json")
    assert agent_client.get(URL).json()["text"] == "" and "[Instructions]" not in context(agent_client, "w1")["block"]


def test_only_admins_pin_and_bad_text_is_400(admin_client, agent_client, other_agent_client):
    assert agent_client.put(URL, {"text": "x"}, format="json").status_code == 403
    assert admin_client.put(URL, {"text": "x" * 2001}, format="json").status_code == 400
    assert admin_client.put(URL, {"text": "a\u0000"}, format="json").status_code == 400
    admin_client.put(URL, {"text": "secret team rule"}, format="json")
    assert other_agent_client.get(URL).json()["text"] == ""


def test_instructions_longer_than_the_budget_are_named_in_the_warnings(admin_client, agent_client):
    admin_client.put(URL + "?workspace_id=w1", {"text": "规" * 400}, format="json")
    body = agent_client.post("/api/v1/context", {"workspace_id": "w1", "user_id": "u1", "session_id": "s1",
                                                 "query": "hi", "budget": {"max_chars": 300}}, format="json").json()
    assert "规" not in body["block"]
    assert any("pinned instructions of workspace 'w1' (400 characters) left out" in text
               for text in body["diagnostics"]["warnings"])
