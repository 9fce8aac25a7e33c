"""The rule-based extractor end to end: messages appended, the window and its active memories
read from the store, every operation validated as a propose body and applied by
memory.services.proposals, as the capture job does (R-EXTRACT, R-TOOLS)."""

import json
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memory.capture.base import ExtractionContext, MessageView, NodeView
from memory.capture.extractors import proposal_from_operation
from memory.capture.rules import RuleExtractor
from memory.errors import InvalidInput
from memory.models import Node, NodeStatus
from memory.selectors.nodes import Owner, owner_session, reach, unexpired
from memory.services.proposals import proposal_apply
from tests.helpers import append

OWNER = {"workspace_id": "home", "user_id": "xiaoming", "session_id": "cook-1"}
LOCOMO = Path(settings.SHARED_DATA_DIR) / "locomo" / "locomo5.json"


def window(principal, messages, owner=OWNER) -> ExtractionContext:
    """The context a capture job builds: the new messages, and the active memories they reach."""
    now = timezone.now()
    session = owner_session(principal=principal, owner=Owner(**owner))
    nodes = Node.objects.filter(team=principal.team, status=NodeStatus.ACTIVE).filter(unexpired(now)).filter(
        reach(owner=Owner(**owner), session=session)).order_by("-updated_at")
    return ExtractionContext(
        messages=tuple(MessageView(id=m.pk, role=m.role, content=m.content, created_at=m.created_at,
                                   speaker=str((m.metadata or {}).get("speaker", ""))) for m in messages),
        existing=tuple(NodeView(id=n.pk, scope=n.scope, type=n.type, domain=n.domain, key=n.key, value_json=n.value_json,
                                title=n.title, content=n.content, category_path=tuple(n.category_path)) for n in nodes),
        now=now, **owner)


def capture(principal, *contents, owner=OWNER, role="user"):
    """Append `contents`, extract from them, apply every operation; returns (operations, results)."""
    messages = append(principal, *contents, role=role, **owner)
    operations = RuleExtractor().extract(window(principal, messages, owner)).operations
    results = [proposal_apply(principal=principal, proposal=proposal_from_operation(operation, **owner))
               for operation in operations]
    return messages, results


def active_nodes(**filters):
    return Node.objects.filter(status=NodeStatus.ACTIVE, **filters)


def test_the_seed_conversation_end_to_end(principal):
    [first], results = capture(principal, "以后做饭别给我推荐香菜，我喜欢少油少辣。")
    assert [result.accepted for result in results] == [True, True]
    avoid = Node.objects.get(key="avoid_ingredient")
    flavor = Node.objects.get(key="flavor_profile")
    assert (avoid.scope, avoid.user_id, avoid.value_json, avoid.explicit) == ("user", "xiaoming", "香菜", True)
    assert (flavor.scope, flavor.value_json, flavor.category_path) == ("user", {"oil": "low", "spicy": "low"},
                                                                        ["生活技能", "做饭", "饮食偏好"])
    assert avoid.source_message_ids == flavor.source_message_ids == [first.pk]

    capture(principal, "今晚吃什么？")
    [second], results = capture(principal, "香菜现在可以接受一点，但不要太多。")
    assert [(result.accepted, result.operation, result.superseded_id) for result in results] == [
        (True, "supersede", avoid.pk)]
    avoid.refresh_from_db()
    limit = active_nodes(key="limit_ingredient").get()
    assert avoid.status == NodeStatus.SUPERSEDED and limit.supersedes_id == avoid.pk
    assert (limit.scope, limit.value_json, limit.source_message_ids) == ("user", {"ingredient": "香菜", "amount": "少量"},
                                                                         [second.pk])
    assert not active_nodes(key="avoid_ingredient").exists()

    [third], results = capture(principal, "今天有点胃不舒服")
    stomach = Node.objects.get(pk=results[0].node_id)
    assert (stomach.scope, stomach.session.external_id, stomach.type, stomach.key, stomach.value_json) == (
        "session", "cook-1", "constraint", "health_condition", "胃不舒服")
    assert timezone.now() + timedelta(hours=23) < stomach.expires_at <= timezone.now() + timedelta(hours=24)
    assert sorted(active_nodes(scope="user").values_list("key", flat=True)) == ["flavor_profile", "limit_ingredient"]


def test_the_english_conversation_end_to_end(principal):
    capture(principal, "From now on, don't recommend cilantro when I cook. I like low oil and not too spicy.")
    assert active_nodes(scope="user", key="flavor_profile").get().value_json == {"oil": "low", "spicy": "low"}
    avoid = active_nodes(scope="user", key="avoid_ingredient").get()
    assert avoid.value_json == "cilantro"
    _, results = capture(principal, "Actually a little cilantro is fine now, just not too much")
    assert results[0].accepted and results[0].superseded_id == avoid.pk
    assert active_nodes(key="limit_ingredient").get().value_json == {"ingredient": "cilantro", "amount": "少量"}
    assert not active_nodes(key="avoid_ingredient").exists()
    _, results = capture(principal, "I have an upset stomach today")
    stomach = Node.objects.get(pk=results[0].node_id)
    assert (stomach.scope, stomach.value_json, stomach.expires_at is not None) == ("session", "upset stomach", True)


def test_an_inferred_preference_is_accepted_as_session_memory_only(principal):
    _, results = capture(principal, "我不吃香菜")
    node = Node.objects.get(pk=results[0].node_id)
    assert results[0].accepted and (node.scope, node.explicit) == ("session", False)


def test_a_decision_and_a_task_land_in_the_workspace_and_the_task_closes(principal):
    capture(principal, "We decided to use PostgreSQL. TODO: write the migration plan")
    assert set(active_nodes(scope="workspace").values_list("type", flat=True)) == {"decision", "task"}
    _, results = capture(principal, "I'm done with the migration plan.")
    assert results[0].accepted and results[0].operation == "supersede"
    task = active_nodes(type="task").get()
    assert task.value_json == {"task": "write the migration plan", "status": "done"}


def test_every_operation_is_accepted_by_the_propose_endpoint(principal, agent_client):
    messages = append(principal, "以后做饭别给我推荐香菜，我喜欢少油少辣。", "今天有点胃不舒服", **OWNER)
    operations = RuleExtractor().extract(window(principal, messages)).operations
    for operation in operations:
        response = agent_client.post("/api/v1/memory/propose", {**operation, **OWNER}, format="json")
        assert response.status_code == 201 and response.json()["accepted"] is True, response.content


def test_a_malformed_operation_is_invalid_input():
    with pytest.raises(InvalidInput) as raised:
        proposal_from_operation({"operation": "create", "node": {"type": "fact", "title": "x", "expires_at": "soon"}},
                                **OWNER)
    assert "node.expires_at" in raised.value.fields


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo data is not present (set MEMORY_SHARED_DATA)")
@pytest.mark.parametrize("conversation", ["conv-26", "conv-42"])
def test_a_locomo_conversation_gives_no_malformed_operation(principal, conversation, capsys):
    """Windows of 8 messages per session, as the capture job takes them; each operation applied
    on its own. A refusal with a reason is an answer; a 400 (InvalidInput) would be a bug."""
    from memory.management.commands.replay import locomo_turns

    sample = next(item for item in json.loads(LOCOMO.read_text()) if item["sample_id"] == conversation)
    by_session: dict[str, list[dict]] = {}
    for turn in locomo_turns(sample):
        by_session.setdefault(turn["session_id"], []).append(turn)
    types, outcomes = Counter(), Counter()
    for session_id, turns in by_session.items():
        owner = {"workspace_id": "locomo", "user_id": conversation, "session_id": session_id}
        for start in range(0, len(turns), 8):
            part = turns[start:start + 8]
            messages = []
            for turn in part:
                messages += append(principal, turn["content"], role=turn["role"], metadata=turn["metadata"], **owner)
            for operation in RuleExtractor().extract(window(principal, messages, owner)).operations:
                types[(operation["operation"], operation["node"].get("type", "(kept)"))] += 1
                with transaction.atomic():
                    result = proposal_apply(principal=principal, proposal=proposal_from_operation(operation, **owner))
                outcomes["accepted" if result.accepted else result.reason] += 1
    with capsys.disabled():
        print(f"\n{conversation}: operations {dict(types)}; outcomes {dict(outcomes)}")
    assert sum(types.values()) == sum(outcomes.values()) > 0


@pytest.mark.parametrize(("said", "key", "value", "type_"), [
    ("我对花生过敏", "allergy", "花生", "constraint"),
    ("I'm allergic to penicillin", "", "penicillin", "constraint"),  # keyless: the successor drops the old key
])
def test_an_allergy_replaces_no_allergies_said_before(principal, said, key, value, type_):
    """A newcomer's "I'm not allergic to anything" and a later allergy stayed side by side, both
    injected (R-QUERY conflicts): the allergy now supersedes it, in its own kind."""
    _, [result] = capture(principal, "记住，我没有任何过敏")
    assert result.accepted and (result.node.key, result.node.type, result.node.scope) == ("no_allergies", "fact", "user")
    _, [replaced] = capture(principal, said, owner={**OWNER, "session_id": "cook-2"})
    assert replaced.accepted and replaced.superseded_id == result.node.pk
    node = replaced.node  # said without "remember": kept in its conversation, as any allergy would be
    assert (node.key, node.value_json, node.type, node.scope) == (key, value, type_, "session")
    assert not active_nodes(key="no_allergies").exists() and active_nodes(pk=node.pk).exists()


def test_every_allergy_after_no_allergies_is_kept_and_where_it_would_be(principal):
    """A review's: the second allergy of a message targeted the "no allergies" the first had
    already replaced, and was lost as a conflict; an explicit allergy took the session scope of
    the "no allergies" it replaced."""
    _, [none] = capture(principal, "我没有任何过敏")
    assert (none.node.key, none.node.scope) == ("no_allergies", "session")
    _, results = capture(principal, "记住，我对花生过敏，也对虾过敏")
    assert [result.accepted for result in results] == [True, True]
    allergies = active_nodes(key="allergy").order_by("pk")
    assert [(node.value_json, node.scope) for node in allergies] == [("花生", "user"), ("虾", "user")]
    assert not active_nodes(key="no_allergies").exists()
