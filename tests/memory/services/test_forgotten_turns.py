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
