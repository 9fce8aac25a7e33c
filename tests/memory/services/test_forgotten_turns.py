"""A turn a forgotten memory was taken from is no longer recalled as an earlier message
(R-STORE provable forgetting, R-CTX). A newcomer hard-forgot an allergy, and the next
conversation's block still quoted "记住，我最喜欢芒果冰淇淋，还有我对花生过敏。" under Earlier messages."""

import pytest

from memory.models import AuditEvent, Message
from memory.selectors.nodes import Owner
from memory.services.forgetting import ForgetSelector, memory_forget, node_restore
from memory.services.proposals import Proposal, proposal_apply
from tests.helpers import append
from tests.memory.selectors.test_context import build

OLD = {"workspace_id": "w1", "user_id": "u1", "session_id": "old"}
NEW = Owner(workspace_id="w1", user_id="u1", session_id="new")
QUESTION = "我对什么过敏？我喜欢吃什么冰淇淋？周末喜欢做什么？"


def remember(principal, message, title, type="preference"):
    return proposal_apply(principal=principal, proposal=Proposal(
        operation="create", explicit_user_intent=True, reason="r", **OLD,
        node={"scope": "user", "type": type, "title": title, "source_message_ids": [message.pk]})).node_id


@pytest.fixture
def said(principal):
    both, = append(principal, "记住，我最喜欢芒果冰淇淋，还有我对花生过敏。", **OLD)
    hiking, = append(principal, "我周末喜欢去爬山。", **OLD)  # no memory taken from it
    mango = remember(principal, both, "用户最喜欢芒果冰淇淋")
    allergy = remember(principal, both, "用户对花生过敏", type="constraint")
    return both, hiking, mango, allergy


def forget(principal, node_id, mode):
    return memory_forget(principal=principal, selector=ForgetSelector(owner=Owner(**OLD), node_id=node_id),
                         mode=mode, reason="the user asked", confirm=True)


def test_before_forgetting_the_turn_is_recalled(principal, said):
    assert "我对花生过敏" in build(principal, QUESTION, owner=NEW).block


@pytest.mark.parametrize("mode", ["soft", "hard"])
def test_forgetting_one_memory_of_a_turn_stops_the_turn_being_recalled(principal, said, mode):
    both, hiking, mango, allergy = said
    forget(principal, allergy, mode)
    block = build(principal, QUESTION, owner=NEW).block
    assert "花生" not in block  # the other memory of that turn is still injected, from itself
    assert "用户最喜欢芒果冰淇淋" in block and "我周末喜欢去爬山" in block
    assert Message.objects.get(pk=both.pk).memory_forgotten_at is not None
    assert Message.objects.get(pk=hiking.pk).memory_forgotten_at is None
    event = AuditEvent.objects.filter(event_type=f"memory.node.{'deleted' if mode == 'soft' else 'hard_deleted'}",
                                      node_id=allergy).get()
    assert event.payload["hidden_messages"] == 1


def test_restoring_the_memory_recalls_its_turn_again_unless_another_forgotten_memory_said_it(principal, said):
    both, hiking, mango, allergy = said
    forget(principal, allergy, "soft")
    forget(principal, mango, "soft")
    node_restore(principal=principal, node_id=mango, reason="by mistake", workspace_id="w1")
    assert Message.objects.get(pk=both.pk).memory_forgotten_at is not None  # the allergy is still forgotten
    node_restore(principal=principal, node_id=allergy, reason="by mistake", workspace_id="w1")
    assert Message.objects.get(pk=both.pk).memory_forgotten_at is None
    assert "我对花生过敏" in build(principal, QUESTION, owner=NEW).block


def test_an_agents_delete_through_a_proposal_hides_the_turn_too(principal, said):
    both, hiking, mango, allergy = said
    result = proposal_apply(principal=principal, proposal=Proposal(
        operation="delete", target_id=allergy, node={}, reason="r", explicit_user_intent=True, **OLD))
    assert result.accepted
    assert "花生" not in build(principal, QUESTION, owner=NEW).block


def test_a_hard_forget_redacts_the_reasons_that_quote_the_memory(principal):
    """Audit reasons are free text: an agent's "用户说自己对花生过敏" kept the forgotten words
    after a hard forget. Reasons that quote the memory's words go; the others stay."""
    said, = append(principal, "我对花生过敏，吃了会休克", **OLD)
    node_id = proposal_apply(principal=principal, proposal=Proposal(
        operation="create", explicit_user_intent=True, reason="用户说自己对花生过敏", **OLD,
        node={"scope": "user", "type": "constraint", "title": "用户对花生过敏", "entities": ["花生", "AI"],
              "source_message_ids": [said.pk]})).node_id
    proposal_apply(principal=principal, proposal=Proposal(
        operation="update", target_id=node_id, explicit_user_intent=True, reason="said it again", **OLD,
        node={"content": "吃了会休克"}))
    memory_forget(principal=principal, selector=ForgetSelector(owner=Owner(**OLD), node_id=node_id), mode="hard",
                  reason="the user asked to forget the 花生 allergy", confirm=True)
    reasons = {event.event_type: event.reason for event in AuditEvent.objects.filter(team=principal.team)}
    assert reasons["memory.node.created"] == "[forgotten]"
    assert reasons["memory.node.updated"] == "said it again"  # says nothing of it ("ai" is no word of "said")
    assert reasons["memory.forget"] == "[forgotten]" and reasons["memory.node.hard_deleted"] == "[forgotten]"
    assert not AuditEvent.objects.filter(team=principal.team, reason__contains="花生").exists()


def test_a_restore_does_not_recall_a_turn_an_earlier_hard_forget_hid(principal, said):
    """A review's case: hard-forget the allergy, soft-forget and restore the mango memory of the
    same turn; the hard forget left no link to tell, and the turn came back."""
    both, hiking, mango, allergy = said
    forget(principal, allergy, "hard")
    forget(principal, mango, "soft")
    node_restore(principal=principal, node_id=mango, reason="by mistake", workspace_id="w1")
    assert Message.objects.get(pk=both.pk).memory_forgotten_at is not None
    assert "花生" not in build(principal, QUESTION, owner=NEW).block


def test_the_assistants_answer_to_a_forgotten_turn_is_not_recalled_either(principal):
    said, = append(principal, "记住，我对花生过敏。", **OLD)
    echo, = append(principal, "好的，已经记下：你对花生过敏，以后推荐会避开花生。", role="assistant", **OLD)
    append(principal, "我周末喜欢去爬山。", **OLD)
    allergy = remember(principal, said, "用户对花生过敏", type="constraint")
    assert "已经记下" in build(principal, "花生 过敏 推荐", owner=NEW).block
    forget(principal, allergy, "soft")
    assert "花生" not in build(principal, "花生 过敏 推荐", owner=NEW).block
    node_restore(principal=principal, node_id=allergy, reason="by mistake", workspace_id="w1")
    assert Message.objects.get(pk=echo.pk).memory_forgotten_at is None


def test_a_reason_that_names_a_kind_of_thing_is_kept(principal):
    """Tags and an object's values name kinds ("health", "low"): a reason saying "low confidence"
    quotes nothing of the memory."""
    said, = append(principal, "今天少辣", **OLD)
    node_id = proposal_apply(principal=principal, proposal=Proposal(
        operation="create", explicit_user_intent=True, reason="r", **OLD,
        node={"scope": "user", "type": "preference", "title": "用户偏好少辣", "tags": ["health"],
              "key": "flavor_profile", "domain": "生活技能", "value_json": {"spicy": "low"},
              "source_message_ids": [said.pk]})).node_id
    memory_forget(principal=principal, selector=ForgetSelector(owner=Owner(**OLD), node_id=node_id), mode="hard",
                  reason="admin cleanup: low confidence, health tags", confirm=True)
    assert AuditEvent.objects.get(event_type="memory.forget").reason == "admin cleanup: low confidence, health tags"


def test_forgetting_a_user_memory_by_id_takes_its_session_copies_along(principal):
    """Tried with `make run`: "我对芒果过敏" said in passing (capture keeps it in the conversation),
    then "记住，我对芒果过敏" (a user memory). Hard-forgetting the user memory by its id, from
    another conversation, left the session copy — and the turn it came from was still recalled."""
    from memory.models import Node

    passing, = append(principal, "我叫小周。我对芒果过敏，吃了会起疹子。", **OLD)
    asked, = append(principal, "记住，我对芒果过敏", **OLD)
    node = {"type": "constraint", "domain": "生活技能", "key": "allergy", "value_json": "芒果", "title": "用户对芒果过敏"}
    copy = proposal_apply(principal=principal, proposal=Proposal(
        operation="create", reason="r", **OLD,
        node={"scope": "session", **node, "source_message_ids": [passing.pk]})).node_id
    mine = remember(principal, asked, "用户对芒果过敏", type="constraint")
    Node.objects.filter(pk=mine).update(domain="生活技能", key="allergy", value_json="芒果",
                                        value_hash=Node.objects.get(pk=copy).value_hash)
    other = Owner(workspace_id="w1", user_id="u1", session_id="new")
    asked_first = memory_forget(principal=principal, selector=ForgetSelector(owner=other, node_id=mine), mode="hard")
    assert asked_first.requires_confirmation and {node.pk for node in asked_first.candidates} == {mine, copy}
    done = memory_forget(principal=principal, selector=ForgetSelector(owner=other, node_id=mine), mode="hard",
                         confirm=True)
    assert set(done.deleted_ids) == {mine, copy} and not Node.objects.filter(pk__in=[mine, copy]).exists()
    assert "芒果" not in build(principal, "我对什么过敏？", owner=other).block


@pytest.mark.parametrize("mode", ["soft", "hard"])
def test_a_forgotten_answer_is_not_shown_beneath_the_question_before_it(principal, mode):
    """A review's find: the assistant's question was recalled with the user's forgotten answer
    indented beneath it (`↳ user: I am flying to Lisbon on June 3rd…`); the audit said the turn
    was hidden. The question may still be recalled, alone: no later turn takes the answer's place."""
    append(principal, "I finally booked the trip.", **OLD)
    append(principal, "Nice! Where are you going, and when?", role="assistant", **OLD)
    answer, = append(principal, "I am flying to Lisbon on June 3rd for my sister's wedding, keep it secret.", **OLD)
    append(principal, "Wonderful, congratulations to your sister!", role="assistant", **OLD)
    trip = remember(principal, answer, "Flying to Lisbon on June 3rd for the sister's wedding", type="fact")
    question = "Where are you going and when?"
    assert "↳ user: I am flying to Lisbon" in build(principal, question, owner=NEW).block
    forget(principal, trip, mode)
    block = build(principal, question, owner=NEW).block
    assert "Lisbon" not in block and "June 3rd" not in block
    assert "Where are you going, and when?" in block
    assert "Where are you going, and when?" in block.splitlines()[-1] and "↳" not in block


@pytest.mark.parametrize("title,reason", [
    ("Caroline is pregnant, due in March", "erase: she is pregnant (due March)"),
    ("用户对虾过敏", "hard erase 虾过敏 per parent"),
    ("User's daughter goes to Lincoln Elementary", "parent asked: remove the school, Lincoln"),
    ("Caroline is pregnant, due in March", "erase: pregnancy"),  # a breaker's: stems differ
    ("用户每天走 12000 步", "remove the 12,000-step goal"),
    ("用户对虾过敏", "删除虾的信息"),
])
def test_a_hard_forget_redacts_a_reason_that_says_part_of_the_memory(principal, title, reason):
    """A review's find: only a reason holding the memory's whole title or content was redacted;
    "erase: she is pregnant (due March)" stayed beside user caroline in the audit for good."""
    said, = append(principal, title, **OLD)
    node_id = remember(principal, said, title, type="fact")
    memory_forget(principal=principal, selector=ForgetSelector(owner=Owner(**OLD), node_id=node_id), mode="hard",
                  reason=reason, confirm=True)
    reasons = {event.event_type: event.reason for event in AuditEvent.objects.filter(team=principal.team)}
    assert reasons["memory.forget"] == "[forgotten]" and reasons["memory.node.hard_deleted"] == "[forgotten]"


@pytest.mark.parametrize("reason", ["the user asked to forget this", "用户要求删除这条记忆", "GDPR request #4411"])
def test_a_hard_forget_keeps_a_reason_that_says_nothing_of_the_memory(principal, reason):
    said, = append(principal, "记住，我对虾过敏", **OLD)
    node_id = remember(principal, said, "用户对虾过敏", type="constraint")
    memory_forget(principal=principal, selector=ForgetSelector(owner=Owner(**OLD), node_id=node_id), mode="hard",
                  reason=reason, confirm=True)
    assert AuditEvent.objects.get(team=principal.team, event_type="memory.node.hard_deleted").reason == reason
