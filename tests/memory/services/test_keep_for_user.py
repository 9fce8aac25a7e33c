"""Keeping what a user said in one conversation as the user's own memory: a person's
confirmation in place of the user's explicit words (seed 000 权限和确认策略; R-UI review)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.principal import AccessDenied, principal_for_key, principal_for_user_role
from accounts.services import agent_key_create, membership_set
from memory.errors import Conflict, NotFound
from memory.models import AuditEvent, Node, NodeStatus
from memory.selectors.context import ContextRequest, context_build
from memory.selectors.nodes import Owner
from memory.services.forgetting import ForgetSelector, memory_forget
from memory.services.keep import keep_for_user
from memory.services.nodes import node_supersede, supersede_input
from memory.services.proposals import Proposal, proposal_apply
from tests.helpers import append, make_node
from tests.memory.capture.test_rules_apply import OWNER, capture

ELSEWHERE = Owner(workspace_id="home", user_id="xiaoming", session_id="cook-2")


@pytest.fixture
def reviewer(team, editor):
    return principal_for_user_role(team, editor, "editor")


def said_in_passing(principal, text="我对虾过敏，上次吃了起了一身疹子。", key="allergy") -> Node:
    capture(principal, text)
    return Node.objects.get(key=key, status=NodeStatus.ACTIVE)


def block(principal, owner=ELSEWHERE, query="今晚吃什么好？推荐一个菜") -> str:
    return context_build(principal=principal, request=ContextRequest(owner=owner, query=query), record=False).block


def test_a_kept_allergy_reaches_the_users_other_conversations(principal, reviewer):
    said = said_in_passing(principal)
    assert (said.scope, said.explicit, said.value_json) == ("session", False, "虾")
    assert "虾" not in block(principal)  # another conversation of the same user does not see it yet

    result = keep_for_user(principal=reviewer, node_id=said.pk, reason="an allergy lasts")

    kept = result.node
    said.refresh_from_db()
    assert result.accepted and result.superseded_id == said.pk
    assert said.status == NodeStatus.SUPERSEDED and kept.supersedes_id == said.pk
    assert (kept.scope, kept.user_id, kept.session_id, kept.key, kept.value_json, kept.type) == (
        "user", "xiaoming", None, "allergy", "虾", said.type)
    assert kept.explicit is False  # the user still never asked to keep it: a reviewer confirmed it
    assert kept.source_message_ids == said.source_message_ids
    [event] = AuditEvent.objects.filter(node_id=said.pk, event_type="memory.node.superseded")
    assert (event.actor, event.reason, event.payload["superseded_by"]) == ("user:eddie", "an allergy lasts", kept.pk)
    assert "用户对虾过敏" in block(principal)


def test_a_kept_memory_forgotten_for_good_takes_the_conversations_copy_with_it(principal, reviewer):
    said = said_in_passing(principal)
    kept = keep_for_user(principal=reviewer, node_id=said.pk).node
    memory_forget(principal=reviewer, selector=ForgetSelector(node_id=kept.pk), mode="hard", confirm=True)
    assert not Node.objects.filter(pk__in=[said.pk, kept.pk]).exists()
    assert "虾" not in block(principal) and "虾" not in block(principal, owner=Owner(**OWNER))


def test_the_users_memory_of_the_same_slot_is_not_overwritten(principal, reviewer):
    said = said_in_passing(principal, "我在医院当护士。", key="occupation")
    capture(principal, "记住，我是老师。", owner={**OWNER, "session_id": "work-1"})
    teacher = Node.objects.get(key="occupation", scope="user")
    assert said.scope == "session"

    with pytest.raises(Conflict, match=f"node {teacher.pk} already holds this slot"):
        keep_for_user(principal=reviewer, node_id=said.pk)

    said.refresh_from_db()
    teacher.refresh_from_db()
    assert said.status == teacher.status == NodeStatus.ACTIVE and teacher.value_json == {"job": "老师"}
    assert not AuditEvent.objects.filter(node_id=said.pk, event_type="memory.node.superseded").exists()


@pytest.mark.parametrize("change", ["user", "superseded", "deleted", "no user"])
def test_only_an_active_memory_of_a_users_conversation_can_be_kept(principal, reviewer, change):
    if change == "user":
        capture(principal, "记住，我对虾过敏。")
        node = Node.objects.get(key="allergy")
    elif change == "no user":
        capture(principal, "我对虾过敏。", owner={**OWNER, "user_id": ""})
        node = Node.objects.get(key="allergy")
    else:
        node = said_in_passing(principal)
        if change == "superseded":
            keep_for_user(principal=reviewer, node_id=node.pk)
        else:
            memory_forget(principal=reviewer, selector=ForgetSelector(node_id=node.pk), mode="soft", confirm=True)
    before = Node.objects.count()
    with pytest.raises(Conflict):
        keep_for_user(principal=reviewer, node_id=node.pk)
    assert Node.objects.count() == before


def test_an_agent_asks_the_user_instead(principal):
    said = said_in_passing(principal)
    with pytest.raises(AccessDenied, match="an agent asks the user"):
        keep_for_user(principal=principal, node_id=said.pk)
    said.refresh_from_db()
    assert said.status == NodeStatus.ACTIVE
    # ...and proposes it with the user's answer as its source (README, "Keep for <user>")
    [answer] = append(principal, "对，以后都记住我对虾过敏", **OWNER)
    kept = proposal_apply(principal=principal, proposal=Proposal(
        operation="supersede", target_id=said.pk, node={"scope": "user", "source_message_ids": [answer.pk]},
        explicit_user_intent=True, **OWNER)).node
    assert (kept.scope, kept.user_id, kept.session_id, kept.explicit, kept.supersedes_id) == (
        "user", "xiaoming", None, True, said.pk)
    assert "用户对虾过敏" in block(principal)


def test_another_teams_node_is_not_found(principal, other_team, editor):
    said = said_in_passing(principal)
    membership_set(team=other_team, username=editor.username, role="editor")
    outsider = principal_for_user_role(other_team, editor, "editor")
    with pytest.raises(NotFound):
        keep_for_user(principal=outsider, node_id=said.pk)
    said.refresh_from_db()
    assert said.status == NodeStatus.ACTIVE


def test_what_the_schema_refuses_for_the_user_stays_in_the_conversation(principal, reviewer):
    """Session memory is free-form; the user's follows the controlled schema, confirmed or not."""
    [message] = append(principal, "我最近在追一部剧", **OWNER)
    said = make_node(principal, scope="session", type="fact", domain="生活技能", key="tv_show", title="在追一部剧",
                     source_message_ids=[message.pk], **OWNER)
    result = keep_for_user(principal=reviewer, node_id=said.pk)
    said.refresh_from_db()
    assert (result.accepted, result.reason, result.node) == (False, "key_not_in_schema", None)
    assert said.status == NodeStatus.ACTIVE and not Node.objects.filter(scope="user").exists()


def test_forgetting_the_conversations_version_by_its_id_takes_the_kept_copy(principal, reviewer):
    """The id the conversation knows is the session version's; after a keep it is superseded."""
    said = said_in_passing(principal)
    kept = keep_for_user(principal=reviewer, node_id=said.pk).node
    by_conversation = ForgetSelector(owner=Owner(**OWNER), node_id=said.pk)

    soft = memory_forget(principal=principal, selector=by_conversation, mode="soft", confirm=True)

    assert soft.deleted_ids == [kept.pk] and Node.objects.get(pk=kept.pk).status == NodeStatus.DELETED
    assert "虾" not in block(principal)
    hard = memory_forget(principal=principal, selector=by_conversation, mode="hard", confirm=True)
    assert sorted(hard.deleted_ids) == sorted([said.pk, kept.pk])
    assert not Node.objects.filter(pk__in=[said.pk, kept.pk]).exists()


def test_a_later_version_of_another_value_is_not_taken_along(principal, reviewer):
    said = said_in_passing(principal)
    kept = keep_for_user(principal=reviewer, node_id=said.pk).node
    corrected = node_supersede(principal=reviewer, old_node_id=kept.pk, reason="it was crab",
                               data=supersede_input(kept, {"value_json": "蟹", "title": "用户对蟹过敏"}, {}))
    result = memory_forget(principal=principal, selector=ForgetSelector(owner=Owner(**OWNER), node_id=said.pk),
                           mode="hard", confirm=True)
    assert sorted(result.deleted_ids) == sorted([said.pk, kept.pk])
    assert Node.objects.get(pk=corrected.pk).status == NodeStatus.ACTIVE


def test_a_passing_state_stays_in_its_conversation(principal, reviewer):
    capture(principal, "我今天有点发烧。")
    state = Node.objects.get(status=NodeStatus.ACTIVE)
    assert state.expires_at is not None
    with pytest.raises(Conflict, match="passing state"):
        keep_for_user(principal=reviewer, node_id=state.pk)
    Node.objects.filter(pk=state.pk).update(expires_at=timezone.now() - timedelta(hours=1))  # over, not yet swept
    with pytest.raises(Conflict, match="passing state"):
        keep_for_user(principal=reviewer, node_id=state.pk)
    assert not Node.objects.filter(scope="user").exists()


def test_a_memory_citing_no_message_of_the_user_is_not_kept(principal, reviewer):
    append(principal, "聊聊天", **OWNER)  # the conversation exists
    said = make_node(principal, scope="session", type="fact", title="用户住在上海浦东", **OWNER)
    with pytest.raises(Conflict, match="names no message"):
        keep_for_user(principal=reviewer, node_id=said.pk)
    assert Node.objects.get(pk=said.pk).status == NodeStatus.ACTIVE


def test_what_the_users_memory_already_says_is_not_kept_twice(principal, reviewer):
    said = said_in_passing(principal)
    capture(principal, "记住，我对虾过敏。", owner={**OWNER, "session_id": "cook-0"})  # cook-0 does not reach cook-1's
    held = Node.objects.get(scope="user")
    with pytest.raises(Conflict, match=f"memory {held.pk} already says this"):
        keep_for_user(principal=reviewer, node_id=said.pk)


def test_a_keep_that_would_lose_in_its_own_conversation_is_refused(principal, reviewer):
    """A workspace's value outranks the user's: kept, the conversation would show the other."""
    [stated] = append(principal, "我家现在用电磁炉", **OWNER)
    make_node(principal, scope="workspace", type="fact", domain="general", key="stove", value_json="gas",
              title="厨房用燃气灶", workspace_id="home", user_id="")
    said = make_node(principal, scope="session", type="fact", domain="general", key="stove", value_json="induction",
                     title="厨房用电磁炉", source_message_ids=[stated.pk], **OWNER)
    with pytest.raises(Conflict, match="workspace memory .* would still win"):
        keep_for_user(principal=reviewer, node_id=said.pk)
    assert Node.objects.get(pk=said.pk).status == NodeStatus.ACTIVE and not Node.objects.filter(scope="user").exists()
    assert "厨房用电磁炉" in block(principal, owner=Owner(**OWNER), query="厨房 灶 做饭")


def test_a_secret_needs_the_confirmation_before_it_leaves_the_conversation(principal, reviewer):
    [stated] = append(principal, "my password is hunter2", **OWNER)
    said = make_node(principal, scope="session", type="fact", title="User's password is hunter2",
                     source_message_ids=[stated.pk], **OWNER)
    refused = keep_for_user(principal=reviewer, node_id=said.pk)
    assert (refused.accepted, refused.reason) == (False, "sensitive_needs_confirmation")
    assert Node.objects.get(pk=said.pk).status == NodeStatus.ACTIVE
    assert keep_for_user(principal=reviewer, node_id=said.pk, confirm=True).node.scope == "user"


def _supersede(principal, old, context=None, **fields):
    return node_supersede(principal=principal, old_node_id=old.pk, data=supersede_input(old, fields, context or {}),
                          workspace_id=(context or {}).get("workspace_id", ""))


def test_a_forget_by_an_old_versions_id_leaves_the_later_versions_that_are_no_keep(principal, reviewer):
    """Only the copy that keeps a conversation's memory for its user goes along: not a later
    version of another value, nor one the user stated again after it, nor another owner's."""
    said = said_in_passing(principal)
    first = _supersede(principal, said, value_json="蟹", title="用户对蟹过敏")  # a correction in the conversation
    again = _supersede(principal, first, value_json="虾", title="用户对虾过敏")  # the user says shrimp again
    soft = memory_forget(principal=principal, selector=ForgetSelector(owner=Owner(**OWNER), node_id=said.pk),
                         mode="soft")
    assert soft.deleted_ids == [] and not soft.requires_confirmation
    hard = memory_forget(principal=principal, selector=ForgetSelector(owner=Owner(**OWNER), node_id=said.pk),
                         mode="hard", confirm=True)
    assert hard.deleted_ids == [said.pk]
    assert {node.pk: node.status for node in Node.objects.filter(pk__in=[first.pk, again.pk])} == {
        first.pk: NodeStatus.SUPERSEDED, again.pk: NodeStatus.ACTIVE}


def test_a_conversations_version_given_to_another_owner_is_not_its_kept_copy(principal, reviewer):
    said = said_in_passing(principal)
    workspace = _supersede(principal, said, {"workspace_id": "home"}, scope="workspace")
    result = memory_forget(principal=principal, selector=ForgetSelector(owner=Owner(**OWNER), node_id=said.pk),
                           mode="soft", confirm=True)
    assert result.deleted_ids == [] and Node.objects.get(pk=workspace.pk).status == NodeStatus.ACTIVE


def test_forgetting_the_kept_copy_along_asks_for_confirmation(principal, reviewer):
    said = said_in_passing(principal)
    kept = keep_for_user(principal=reviewer, node_id=said.pk).node
    asked = memory_forget(principal=principal, selector=ForgetSelector(owner=Owner(**OWNER), node_id=said.pk),
                          mode="soft")
    assert asked.requires_confirmation and [node.pk for node in asked.candidates] == [kept.pk]
    assert Node.objects.get(pk=kept.pk).status == NodeStatus.ACTIVE


def test_a_standing_preference_is_kept_beside_todays_passing_constraint(principal, reviewer):
    """The constraint outranked the preference in its conversation before the keep as after."""
    capture(principal, "我喜欢吃辣。")
    capture(principal, "今天胃不舒服，少辣")
    preference = Node.objects.get(status=NodeStatus.ACTIVE, type="preference")
    assert Node.objects.filter(status=NodeStatus.ACTIVE, expires_at__isnull=False).exists()
    result = keep_for_user(principal=reviewer, node_id=preference.pk)
    assert result.accepted and result.node.scope == "user"


def test_a_memory_citing_only_the_assistants_words_is_not_kept(principal, reviewer):
    [said_by_agent] = append(principal, "好的，我记住了：你对虾过敏。", role="assistant", **OWNER)
    said = make_node(principal, scope="session", type="constraint", domain="生活技能", key="allergy", value_json="虾",
                     title="用户对虾过敏", source_message_ids=[said_by_agent.pk], **OWNER)
    with pytest.raises(Conflict, match="names no message the user said it in"):
        keep_for_user(principal=reviewer, node_id=said.pk)


def test_a_users_memory_that_has_expired_does_not_count_as_saying_it(principal, reviewer):
    said = said_in_passing(principal)
    [stated] = append(principal, "这周我对虾过敏", **{**OWNER, "session_id": "cook-0"})
    week = proposal_apply(principal=principal, proposal=Proposal(operation="create", node={
        "scope": "user", "type": "constraint", "domain": "生活技能", "key": "allergy", "value_json": "虾",
        "title": "用户这周对虾过敏", "source_message_ids": [stated.pk], "expires_at": timezone.now() + timedelta(days=3)},
        explicit_user_intent=True, **{**OWNER, "session_id": "cook-0"})).node
    assert week.slot == Node.objects.get(pk=said.pk).slot  # the same slot, taken until the sweep says it is over
    Node.objects.filter(pk=week.pk).update(expires_at=timezone.now() - timedelta(minutes=1))  # over, not swept
    result = keep_for_user(principal=reviewer, node_id=said.pk)
    assert result.accepted and result.node.expires_at is None
    assert Node.objects.get(pk=week.pk).status == NodeStatus.EXPIRED


def test_a_key_that_cannot_write_user_memory_cannot_forget_half_of_a_kept_fact(principal, reviewer, team):
    said = said_in_passing(principal)
    kept = keep_for_user(principal=reviewer, node_id=said.pk).node
    session_only = principal_for_key(agent_key_create(team=team, name="notes", writable_scopes=["session"])[0])
    for mode in ("soft", "hard"):
        with pytest.raises(AccessDenied):
            memory_forget(principal=session_only, selector=ForgetSelector(owner=Owner(**OWNER), node_id=said.pk),
                          mode=mode, confirm=True)
    assert Node.objects.get(pk=kept.pk).status == NodeStatus.ACTIVE and Node.objects.filter(pk=said.pk).exists()


def test_a_kept_memory_is_no_correction_in_other_conversations(principal, reviewer):
    said = said_in_passing(principal, "我在医院当护士。", key="occupation")
    keep_for_user(principal=reviewer, node_id=said.pk)
    shown = block(principal, query="今天天气怎么样")
    assert "[Recent corrections]" not in shown
