"""A repeated write links its new source messages to the node it repeats (R-STORE; seed
sourceMessageIds): the same fact said again in another conversation is evidence of it too."""

from unittest import mock

import pytest

from accounts.principal import principal_for_key
from accounts.services import agent_key_create
from memory import limits
from memory.errors import Conflict, InvalidInput
from memory.models import AuditEvent, Node, NodeSource
from memory.services.forget import session_forget
from memory.services.forgetting import ForgetSelector, memory_forget, node_restore
from memory.services.node_input import NodeInput
from memory.services.proposals import Proposal, proposal_apply
from memory.services.sessions import SessionRef
from memory.services.upsert import node_cite, node_upsert
from tests.helpers import append


def note(*sources: int, title: str = "用户对芒果过敏") -> NodeInput:
    return NodeInput(scope="user", user_id="u1", workspace_id="w1", type="constraint", title=title,
                     importance=0.9, source_message_ids=sources)  # as a proposal without one gets it


def cited(node: Node) -> list[int]:
    return list(NodeSource.objects.filter(node=node).order_by("position").values_list("message_id", flat=True))


def test_a_repeated_write_from_another_conversation_cites_its_message_too(principal):
    first_turn, = append(principal, "我对芒果过敏", session_id="s-a", workspace_id="w1")
    second_turn, = append(principal, "再说一次，我对芒果过敏。", session_id="s-b", workspace_id="w1")
    node = node_upsert(principal=principal, data=note(first_turn.pk)).node
    again = node_upsert(principal=principal, data=note(second_turn.pk, first_turn.pk, title="用户对芒果过敏。"))
    assert (again.node.pk, again.created, again.changed, again.cited) == (node.pk, False, False, (second_turn.pk,))
    assert cited(node) == [first_turn.pk, second_turn.pk]
    event = AuditEvent.objects.get(node_id=node.pk, event_type="memory.node.cited")
    assert event.payload == {"source_message_ids": [second_turn.pk]}
    assert node_upsert(principal=principal, data=note(second_turn.pk)).cited == ()  # nothing new: no event
    assert AuditEvent.objects.filter(node_id=node.pk, event_type="memory.node.cited").count() == 1
    # Forgetting the first conversation keeps what the second one said too; forgetting both does not.
    session_forget(principal=principal, ref=SessionRef("s-a", "w1", "u1"), mode="hard")
    assert Node.objects.filter(pk=node.pk, status="active").exists() and cited(node) == [second_turn.pk]
    session_forget(principal=principal, ref=SessionRef("s-b", "w1", "u1"), mode="hard")
    assert not Node.objects.filter(pk=node.pk).exists()


def test_a_repeated_write_citing_a_message_it_may_not_cite_is_refused_and_links_nothing(principal):
    turn, = append(principal, "我对芒果过敏", session_id="s-a", workspace_id="w1")
    node = node_upsert(principal=principal, data=note(turn.pk)).node
    with pytest.raises(InvalidInput, match="does not exist"):
        node_upsert(principal=principal, data=note(turn.pk, 10**9))
    assert cited(node) == [turn.pk]
    assert not AuditEvent.objects.filter(event_type="memory.node.cited").exists()


def test_a_node_cites_at_most_node_sources_max_messages(principal):
    turns = append(principal, *[f"我对芒果过敏 {number}" for number in range(5)], session_id="s-a", workspace_id="w1")
    node = node_upsert(principal=principal, data=note(turns[0].pk, turns[1].pk)).node
    with mock.patch.object(limits, "NODE_SOURCES_MAX", 3):
        assert node_upsert(principal=principal, data=note(turns[2].pk, turns[3].pk, turns[4].pk)).cited == (turns[2].pk,)
    assert cited(node) == [turns[0].pk, turns[1].pk, turns[2].pk]


@pytest.mark.parametrize("last", ["soft", "hard"])
def test_forgetting_every_conversation_that_cites_a_node_softly_or_not_takes_it_along(principal, last):
    """Found by a newcomer: a conversation soft-deleted first still counted as another source."""
    first_turn, = append(principal, "我对芒果过敏", session_id="s-a", workspace_id="w1")
    second_turn, = append(principal, "我对芒果过敏！", session_id="s-b", workspace_id="w1")
    node = node_upsert(principal=principal, data=note(first_turn.pk)).node
    node_upsert(principal=principal, data=note(second_turn.pk))
    kept = session_forget(principal=principal, ref=SessionRef("s-a", "w1", "u1"), mode="soft")
    assert kept.kept_node_ids == [node.pk] and Node.objects.get(pk=node.pk).status == "active"
    gone = session_forget(principal=principal, ref=SessionRef("s-b", "w1", "u1"), mode=last)
    assert gone.node_ids == [node.pk] and gone.kept_node_ids == []
    assert not Node.objects.filter(pk=node.pk, status="active").exists()


def test_node_cite_links_only_to_an_active_node_of_the_team(principal, other_principal):
    first, second = append(principal, "我对芒果过敏", "我对芒果过敏！", session_id="s-a", workspace_id="w1")
    node = node_upsert(principal=principal, data=note(first.pk)).node
    assert node_cite(principal=other_principal, node_id=node.pk, message_ids=[second.pk]) == ()
    assert node_cite(principal=principal, node_id=node.pk, message_ids=[second.pk]) == (second.pk,)
    assert node_cite(principal=principal, node_id=node.pk, message_ids=[second.pk]) == ()
    Node.objects.filter(pk=node.pk).update(status="deleted")
    third, = append(principal, "我真的对芒果过敏", session_id="s-a", workspace_id="w1")
    assert node_cite(principal=principal, node_id=node.pk, message_ids=[third.pk]) == ()
    assert cited(node) == [first.pk, second.pk]


def test_a_proposal_says_when_the_cap_left_its_sources_unlinked(principal):
    turns = append(principal, *[f"我对芒果过敏 {number}" for number in range(3)], session_id="s-a", workspace_id="w1")
    node = node_upsert(principal=principal, data=note(turns[0].pk)).node

    def propose(*sources):
        return proposal_apply(principal=principal, proposal=Proposal(
            operation="create", explicit_user_intent=True, workspace_id="w1", user_id="u1",
            node={"scope": "user", "type": "constraint", "title": "用户对芒果过敏", "source_message_ids": list(sources)}))

    assert propose(turns[1].pk).message == f"already remembered; now also cites message {turns[1].pk}"
    with mock.patch.object(limits, "NODE_SOURCES_MAX", 2):
        result = propose(turns[2].pk)
    assert (result.reason, result.node.pk) == ("duplicate", node.pk)
    assert result.message == "already remembered; it cites 2 messages, the most a memory keeps: the others were not linked"
    with mock.patch.object(limits, "NODE_SOURCES_MAX", 2):  # a repeat that also changes a descriptive field
        result = proposal_apply(principal=principal, proposal=Proposal(
            operation="create", explicit_user_intent=True, workspace_id="w1", user_id="u1",
            node={"scope": "user", "type": "constraint", "title": "用户对芒果过敏", "tags": ["health"],
                  "source_message_ids": [turns[2].pk]}))
    assert result.message == "updated; it cites 2 messages, the most a memory keeps: the others were not linked"


def test_restoring_a_superseded_memory_leaves_out_sources_forgotten_since(principal):
    """Found by a newcomer: the copy cited a message of a soft-deleted conversation, and the
    restore answered 400."""
    home, = append(principal, "I love green tea", session_id="a-s1", user_id="alice", workspace_id="w1")
    work, = append(principal, "I love green tea", session_id="a-s2", user_id="alice", workspace_id="w2")

    def tea(*sources, value="green tea"):
        return NodeInput(scope="user", user_id="alice", type="preference", key="drink", value_json=value,
                         title=f"likes {value}", source_message_ids=sources)

    node = node_upsert(principal=principal, data=tea(home.pk)).node
    node_upsert(principal=principal, data=tea(work.pk))
    node_upsert(principal=principal, data=tea(home.pk, value="black tea"))  # supersedes it
    session_forget(principal=principal, ref=SessionRef("a-s2", "w2", "alice"), mode="soft")
    restored = node_restore(principal=principal, node_id=node.pk, reason="undo")
    assert (restored.value_json, restored.status, cited(restored)) == ("green tea", "active", [home.pk])


def test_a_key_limited_to_a_workspace_restores_a_superseded_user_memory_naming_it(team, principal):
    """Found by a newcomer: the restore ignored the workspace the key named (403)."""
    limited = principal_for_key(agent_key_create(team=team, name="w1 only", workspace_ids=["w1"])[0])
    turn, = append(principal, "I drink tea", session_id="d-1", user_id="dan", workspace_id="w1")
    old = node_upsert(principal=limited, data=NodeInput(scope="user", user_id="dan", workspace_id="w1",
                                                        type="preference", key="drink", value_json="tea",
                                                        title="drinks tea", source_message_ids=[turn.pk])).node
    node_upsert(principal=limited, data=NodeInput(scope="user", user_id="dan", workspace_id="w1", type="preference",
                                                  key="drink", value_json="coffee", title="drinks coffee"))
    restored = node_restore(principal=limited, node_id=old.pk, reason="undo", workspace_id="w1")
    assert (restored.value_json, restored.workspace_id, cited(restored)) == ("tea", "", [turn.pk])


def test_a_memory_whose_every_conversation_was_forgotten_cannot_be_restored(principal):
    """Found by a newcomer: forgetting a conversation deleted the user memory taken from it, and
    a restore brought it back into the block. A memory that another live conversation also
    cites, or that cites none, still comes back."""
    first, = append(principal, "我对芒果过敏", session_id="s-a", workspace_id="w1")
    second, = append(principal, "我对芒果过敏。", session_id="s-b", workspace_id="w1")
    only_first = node_upsert(principal=principal, data=note(first.pk)).node
    both = node_upsert(principal=principal, data=note(first.pk, second.pk, title="用户对花生过敏")).node
    sourceless = node_upsert(principal=principal, data=note(title="用户喜欢绿茶")).node
    session_forget(principal=principal, ref=SessionRef("s-a", "w1", "u1"), mode="soft")
    assert Node.objects.get(pk=only_first.pk).status == "deleted"
    with pytest.raises(Conflict, match=f"every conversation node {only_first.pk} was taken from has been forgotten"):
        node_restore(principal=principal, node_id=only_first.pk, reason="undo")
    assert Node.objects.get(pk=only_first.pk).status == "deleted"
    assert not AuditEvent.objects.filter(event_type="memory.node.restored").exists()
    for node in (both, sourceless):  # deleted by hand, they come back
        memory_forget(principal=principal, selector=ForgetSelector(node_id=node.pk), mode="soft")
        assert node_restore(principal=principal, node_id=node.pk, reason="undo").status == "active"
    session_forget(principal=principal, ref=SessionRef("s-b", "w1", "u1"), mode="soft")
    assert Node.objects.get(pk=both.pk).status == "deleted"
    with pytest.raises(Conflict, match="has been forgotten"):
        node_restore(principal=principal, node_id=both.pk, reason="undo")


def test_a_superseded_memory_whose_every_conversation_was_forgotten_cannot_be_restored(principal):
    home, = append(principal, "I love green tea", session_id="a-s1", user_id="alice", workspace_id="w1")

    def tea(*sources, value="green tea"):
        return NodeInput(scope="user", user_id="alice", type="preference", key="drink", value_json=value,
                         title=f"likes {value}", source_message_ids=sources)

    old = node_upsert(principal=principal, data=tea(home.pk)).node
    new = node_upsert(principal=principal, data=tea(value="black tea")).node
    session_forget(principal=principal, ref=SessionRef("a-s1", "w1", "alice"), mode="soft")
    with pytest.raises(Conflict, match="has been forgotten"):
        node_restore(principal=principal, node_id=old.pk, reason="undo")
    assert list(Node.objects.filter(status="active", user_id="alice").values_list("pk", flat=True)) == [new.pk]


def test_a_deleted_memory_that_a_newer_version_replaced_comes_back_superseded(principal):
    """Found by a newcomer: such a node came back active beside its successor, and both were
    injected. Forgetting a conversation is what deletes a superseded node (and such a node is
    now refused above); a store imported from before holds some, made here by hand."""
    def home(value):
        return NodeInput(scope="user", user_id="bob", type="fact", key="home_city", value_json=value,
                         title=f"lives in {value}")

    berlin = node_upsert(principal=principal, data=home("Berlin")).node
    lisbon = node_upsert(principal=principal, data=home("Lisbon")).node
    Node.objects.filter(pk=berlin.pk).update(status="deleted")
    restored = node_restore(principal=principal, node_id=berlin.pk, reason="undo")
    assert (restored.pk, restored.status) == (berlin.pk, "superseded")
    assert list(Node.objects.filter(user_id="bob", status="active").values_list("pk", flat=True)) == [lisbon.pk]
    event = AuditEvent.objects.get(event_type="memory.node.restored", node_id=berlin.pk)
    assert event.payload == {"previous_status": "deleted", "status": "superseded", "recalled_messages": 0}
    again = node_restore(principal=principal, node_id=berlin.pk, reason="Berlin after all")  # now a plain restore
    assert again.value_json == "Berlin" and again.status == "active" and again.supersedes_id == lisbon.pk
