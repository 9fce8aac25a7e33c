"""An agent names the end user, workspace and session it acts for; by a node's id it reads and
changes only what that owner reaches (R-TEN), as memory_forget always did. A newcomer found
memory_propose updating, expiring and deleting another user's memory, and memory_get reading
it, when the request named someone else."""

import pytest

from memory.models import Node
from tests.helpers import make_node

LIU = {"workspace_id": "home", "user_id": "liu", "session_id": "s-liu"}
MALLORY = {"workspace_id": "other", "user_id": "mallory", "session_id": "x"}


@pytest.fixture
def allergy(principal):
    return make_node(principal, scope="user", user_id="liu", type="constraint", title="用户对虾过敏", importance=1.0)


@pytest.mark.parametrize(("operation", "extra"), [
    ("update", {"node": {"title": "被改了"}}),
    ("supersede", {"node": {"title": "用户不再过敏"}}),
    ("expire", {}),
    ("delete", {}),
])
def test_a_proposal_naming_another_owner_cannot_touch_the_node(agent_client, allergy, operation, extra):
    response = agent_client.post("/api/v1/memory/propose", {**MALLORY, "operation": operation, "target_id": allergy.pk,
                                                            "reason": "r", "explicit_user_intent": True, **extra},
                                 format="json")
    assert response.status_code == 404, response.content
    assert "of this user, workspace or session" in response.json()["error"]["message"]
    node = Node.objects.get(pk=allergy.pk)
    assert (node.status, node.title, node.version) == ("active", "用户对虾过敏", allergy.version)


def test_the_owner_itself_and_a_team_wide_caller_still_can(agent_client, allergy):
    named = agent_client.post("/api/v1/memory/propose", {**LIU, "operation": "update", "target_id": allergy.pk,
                                                         "node": {"content": "会休克"}, "reason": "r",
                                                         "explicit_user_intent": True}, format="json")
    assert named.status_code == 200 and named.json()["accepted"] is True
    anonymous = agent_client.post("/api/v1/memory/propose", {"operation": "update", "target_id": allergy.pk,
                                                             "node": {"content": "会休克，带肾上腺素笔"}, "reason": "r",
                                                             "explicit_user_intent": True},
                                  format="json")
    assert anonymous.status_code == 200 and anonymous.json()["accepted"] is True


def test_memory_get_by_id_keeps_to_the_named_owner(agent_client, allergy):
    assert agent_client.post("/api/v1/memory/get", {**MALLORY, "id": allergy.pk}, format="json").status_code == 404
    mine = agent_client.post("/api/v1/memory/get", {**LIU, "id": allergy.pk}, format="json")
    assert mine.status_code == 200 and mine.json()["title"] == "用户对虾过敏"
    assert agent_client.post("/api/v1/memory/get", {"id": allergy.pk}, format="json").status_code == 200
