"""An agent names the end user, workspace and session it acts for; by a node's id it reads and
changes only what that owner reaches (R-TEN), as memory_forget always did. A newcomer found
memory_propose updating, expiring and deleting another user's memory, and memory_get reading
it, when the request named someone else."""

import pytest

from memory.models import Node
from tests.helpers import append, make_node

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


def test_a_constraint_proposed_without_an_importance_is_critical_and_a_repeat_never_lowers_one(agent_client,
                                                                                                   principal):
    """A newcomer's allergy, proposed without an importance, was stored at 0.5 and injected third,
    behind two likes; proposing capture's 0.95 allergy again without one had lowered it to 0.5."""
    said, = append(principal, "记住，我对花生过敏，我喜欢芒果", **LIU)

    def propose(node):
        return agent_client.post("/api/v1/memory/propose", {
            **LIU, "operation": "create", "explicit_user_intent": True, "reason": "r",
            "node": {"scope": "user", "source_message_ids": [said.pk], **node}}, format="json").json()
    allergy = propose({"type": "constraint", "key": "allergy", "domain": "生活技能", "value_json": "花生",
                       "title": "用户对花生过敏"})
    assert allergy["accepted"] is True and Node.objects.get(pk=allergy["node"]["id"]).importance == 0.9
    liked = propose({"type": "preference", "title": "用户喜欢芒果"})
    assert Node.objects.get(pk=liked["node"]["id"]).importance == 0.5
    Node.objects.filter(pk=allergy["node"]["id"]).update(importance=0.95, confidence=0.98)
    again = propose({"type": "constraint", "key": "allergy", "domain": "生活技能", "value_json": "花生",
                     "title": "用户对花生过敏", "importance": 0.3, "confidence": 0.5})
    assert again["node"]["id"] == allergy["node"]["id"]
    node = Node.objects.get(pk=allergy["node"]["id"])
    assert (node.importance, node.confidence) == (0.95, 0.98)
