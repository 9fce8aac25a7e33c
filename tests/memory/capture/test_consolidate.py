"""Consolidation (R-EXTRACT; seed 004 distiller): duplicates merge into one node, and the user
profile document is versioned at 8 notes, with a 10-minute cooldown, compaction at 0.8 of
8000 characters, rollback, and forgetting that reaches every version."""

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from memory.capture import consolidate
from memory.capture.base import ExtractorError
from memory.capture.consolidate import consolidation_run, nodes_merge_duplicates, profile_consolidate
from memory.models import AuditEvent, Node, NodeSource
from memory.profile_models import UserProfileVersion
from memory.selectors.profiles import profile_get, profile_versions
from memory.services.forget import session_forget
from memory.services.forgetting import ForgetSelector, memory_forget
from memory.services.node_input import NodeInput
from memory.services.nodes import node_delete
from memory.services.profiles import profile_rollback
from memory.services.sessions import SessionRef
from memory.services.upsert import node_upsert
from tests.helpers import append, make_node, stored_before

MARKER = "MARKER_芒果过敏"


def notes(principal, count, *, user_id="u1", start=0, **fields):
    return [make_node(principal, user_id=user_id, type="fact", title=f"note {start + i}",
                      content=f"remembered thing number {start + i}", **fields) for i in range(count)]


def versions_of(user_id="u1"):
    return list(UserProfileVersion.objects.filter(user_id=user_id).order_by("version"))


# Duplicate merge


def test_near_identical_keyless_notes_merge_into_the_oldest_with_united_sources(team, principal):
    first, second, third = append(principal, "我不吃香菜", "再说一遍，不吃香菜", "I never eat coriander")
    oldest = make_node(principal, title="用户不吃香菜", content="推荐菜谱时避免香菜。", tags=["忌口"],
                       entities=["香菜"], confidence=0.7, importance=0.6, source_message_ids=[first.pk])
    punctuated = stored_before(principal, title="「用户 不吃香菜」", content="推荐菜谱时避免香菜", tags=["菜谱推荐", "忌口"],
                           confidence=0.95, importance=0.5, source_message_ids=[second.pk, first.pk])
    wide = stored_before(principal, title="用户不吃香菜！", content="推荐菜谱时避免香菜", entities=["coriander"],
                     importance=0.9, source_message_ids=[third.pk])

    merges = nodes_merge_duplicates(team=team, user_id="u1")

    assert [(m.survivor_id, m.merged_ids, m.match) for m in merges] == [(oldest.pk, [punctuated.pk, wide.pk], "text")]
    oldest.refresh_from_db()
    assert oldest.status == "active"
    assert (oldest.title, oldest.content) == ("用户不吃香菜", "推荐菜谱时避免香菜。")  # never concatenated
    assert oldest.source_message_ids == [first.pk, second.pk, third.pk]
    assert NodeSource.objects.filter(node=oldest).count() == 3  # no repeated link
    assert oldest.tags == ["忌口", "菜谱推荐"] and oldest.entities == ["香菜", "coriander"]
    assert (oldest.confidence, oldest.importance, oldest.version) == (0.95, 0.9, 2)
    assert set(Node.objects.filter(pk__in=[punctuated.pk, wide.pk]).values_list("status", flat=True)) == {"deleted"}


def test_a_survivor_with_a_slot_of_its_own_takes_its_notes_slot_so_the_next_write_finds_it(team, principal):
    older = stored_before(principal, title="用户喜欢爬山。", type="fact")  # a twin an older store kept
    newer = make_node(principal, title="用户喜欢爬山", type="fact")  # holds the slot the text gives
    nodes_merge_duplicates(team=team, user_id="u1")
    older.refresh_from_db()
    assert older.status == "active" and not older.slot.startswith("legacy:")
    assert Node.objects.get(pk=newer.pk).status == "deleted"
    again = node_upsert(principal=principal, data=NodeInput(scope="user", user_id="u1", type="fact", title="用户喜欢爬山！"))
    assert (again.node.pk, again.created) == (older.pk, False)


def test_a_lone_twin_takes_its_notes_slot_once_the_holder_is_gone_and_the_next_write_finds_it(team, principal):
    holder = make_node(principal, title="用户不吃香菜", type="fact")
    twin = stored_before(principal, title="用户不吃香菜。", type="fact")  # kept apart by migration 0021
    node_delete(principal=principal, node_id=holder.pk, mode="soft")
    assert nodes_merge_duplicates(team=team, user_id="u1") == []  # nothing to merge: the twin is alone
    twin.refresh_from_db()
    assert not twin.slot.startswith("legacy:")
    event = AuditEvent.objects.get(node_id=twin.pk, event_type="memory.node.updated")
    assert (event.actor, event.payload["rule"]) == ("system:consolidation", "note_slot")
    again = node_upsert(principal=principal, data=NodeInput(scope="user", user_id="u1", type="fact", title="用户不吃香菜！"))
    assert (again.node.pk, again.created) == (twin.pk, False)


def test_a_merge_is_audited_on_every_node_by_the_consolidation_job(team, principal):
    kept = make_node(principal, title="Likes green tea.", type="fact")
    twin = stored_before(principal, title="ＬＩＫＥＳ　ＧＲＥＥＮ　ＴＥＡ", type="fact")  # full width, upper case
    nodes_merge_duplicates(team=team, user_id="u1")

    merged = AuditEvent.objects.get(node_id=twin.pk, event_type="memory.node.merged")
    assert merged.actor == "system:consolidation"
    assert merged.payload == {"merged_into": kept.pk, "previous_status": "active", "match": "text"}
    updated = AuditEvent.objects.get(node_id=kept.pk, event_type="memory.node.updated")
    assert updated.actor == "system:consolidation"
    assert updated.payload["absorbed"] == [twin.pk] and updated.payload["rule"] == "merge_duplicates"


def test_the_same_key_and_value_under_two_types_merge(team, principal):
    preference = make_node(principal, type="preference", domain="food", key="avoid_ingredient", value_json="香菜",
                           title="不吃香菜")
    constraint = make_node(principal, type="constraint", domain="food", key="avoid_ingredient", value_json="香菜",
                           title="avoid coriander")
    other_value = make_node(principal, type="constraint", domain="food", key="avoid_ingredient", value_json="葱",
                            title="no scallion", cardinality="many")

    merges = nodes_merge_duplicates(team=team, user_id="u1")

    assert [(m.survivor_id, m.merged_ids, m.match) for m in merges] == [(preference.pk, [constraint.pk], "value")]
    assert Node.objects.get(pk=other_value.pk).status == "active"


def test_different_notes_other_users_and_temporary_twins_are_left_alone(team, principal):
    make_node(principal, title="likes tea", type="fact")
    make_node(principal, title="likes coffee", type="fact")
    make_node(principal, title="likes tea!", type="fact", user_id="u2")  # another owner
    make_node(principal, title="likes tea.", type="preference")  # another type
    stored_before(principal, title="Likes tea?", type="fact", expires_at=timezone.now() + timedelta(days=1))  # expires

    assert nodes_merge_duplicates(team=team, user_id="u1") == []
    assert Node.objects.filter(status="active").count() == 5


def test_workspace_memory_merges_only_when_its_workspace_is_named(team, principal):
    kept = make_node(principal, scope="workspace", workspace_id="w1", user_id="", type="decision",
                     title="Deploy on Fridays: never")
    twin = stored_before(principal, scope="workspace", workspace_id="w1", user_id="", type="decision",
                     title="deploy on fridays: never!")
    assert nodes_merge_duplicates(team=team, user_id="u1") == []
    merges = nodes_merge_duplicates(team=team, workspace_id="w1")
    assert [(m.survivor_id, m.merged_ids) for m in merges] == [(kept.pk, [twin.pk])]


def test_session_memory_merges_only_when_its_session_is_named(team, principal):
    """Twins that migration 0021 left in a conversation's own memory are shown twice in its L4."""
    here = {"scope": "session", "session_id": "s1", "workspace_id": "w1", "user_id": "u1", "type": "task"}
    kept = make_node(principal, **here, title="Book the dentist")
    twin = stored_before(principal, **here, title="book the dentist.")
    elsewhere = stored_before(principal, **{**here, "session_id": "s2"}, title="Book the dentist!")
    assert nodes_merge_duplicates(team=team, user_id="u1", workspace_id="w1") == []
    report = consolidation_run(team=team, user_id="u1", workspace_id="w1", session_id=kept.session_id)
    assert [(m.survivor_id, m.merged_ids) for m in report.merges] == [(kept.pk, [twin.pk])]
    assert list(Node.objects.filter(status="active").order_by("pk").values_list("pk", flat=True)) == [
        kept.pk, elsewhere.pk]
    assert nodes_merge_duplicates(team=team, session_id=elsewhere.session_id) == []  # alone in its session
    elsewhere.refresh_from_db()
    assert not elsewhere.slot.startswith("legacy:")  # it took its note's slot: the next write finds it


def test_hard_forgetting_the_survivor_removes_the_duplicates_merged_into_it(team, principal):
    kept = make_node(principal, title=f"{MARKER} noted", type="fact")
    twin = stored_before(principal, title=f"{MARKER} noted!", type="fact")
    nodes_merge_duplicates(team=team, user_id="u1")

    result = memory_forget(principal=principal, selector=ForgetSelector(node_id=kept.pk), mode="hard", confirm=True)

    assert sorted(result.deleted_ids) == sorted([kept.pk, twin.pk])
    assert not Node.objects.filter(title__contains="MARKER").exists()


def test_a_merged_duplicate_still_goes_with_its_conversation(team, principal):
    kept_source = append(principal, "I like tea", session_id="s1")[0]
    twin_source = append(principal, "I like tea!", session_id="s2")[0]
    kept = make_node(principal, title="likes tea", type="fact", source_message_ids=[kept_source.pk])
    twin = stored_before(principal, title="likes tea!", type="fact", source_message_ids=[twin_source.pk])
    nodes_merge_duplicates(team=team, user_id="u1")

    session_forget(principal=principal, ref=SessionRef("s2", "", "u1"), mode="hard")

    assert not Node.objects.filter(pk=twin.pk).exists()
    kept.refresh_from_db()
    assert kept.status == "active" and kept.source_message_ids == [kept_source.pk]


# The profile document


def test_no_profile_below_eight_notes(team, principal):
    notes(principal, 7)
    result = profile_consolidate(team=team, user_id="u1")
    assert (result.version, result.changed, result.skipped) == (None, 7, "below_threshold")
    assert profile_get(principal=principal, user_id="u1") is None


def test_the_eighth_note_builds_version_one(team, principal):
    notes(principal, 8)
    result = profile_consolidate(team=team, user_id="u1")
    assert result.version.version == 1 and result.version.reason == "consolidate"
    assert len(result.version.source_node_ids) == 8
    assert profile_get(principal=principal, user_id="u1").pk == result.version.pk
    event = AuditEvent.objects.get(event_type="memory.profile.versioned")
    assert (event.actor, event.user_id, event.payload["version"]) == ("system:consolidation", "u1", 1)


def test_the_cooldown_holds_the_next_version_for_ten_minutes(team, principal):
    notes(principal, 8)
    start = timezone.now()
    assert profile_consolidate(team=team, user_id="u1", now=start).version.version == 1
    notes(principal, 8, start=8)

    held = profile_consolidate(team=team, user_id="u1", now=start + timedelta(minutes=9, seconds=59))
    assert (held.version, held.skipped, held.changed) == (None, "cooldown", 8)
    assert profile_consolidate(team=team, user_id="u1", now=start + timedelta(minutes=10)).version.version == 2


def test_force_skips_threshold_and_cooldown(team, principal):
    notes(principal, 2)
    start = timezone.now()
    assert profile_consolidate(team=team, user_id="u1", force=True, now=start).version.version == 1
    notes(principal, 1, start=2)
    assert profile_consolidate(team=team, user_id="u1", force=True, now=start + timedelta(seconds=1)).version.version == 2


def test_nothing_new_writes_no_version(team, principal):
    notes(principal, 8)
    profile_consolidate(team=team, user_id="u1")
    again = profile_consolidate(team=team, user_id="u1", force=True)
    assert (again.version, again.skipped) == (None, "unchanged")
    assert len(versions_of()) == 1


def test_content_is_grouped_by_category_in_chinese_and_english(team, principal):
    make_node(principal, domain="生活技能", category_path=["生活技能", "做饭", "饮食偏好"], title="用户不吃香菜",
              content="推荐菜谱时避免香菜。", importance=0.9)
    make_node(principal, domain="生活技能", category_path=["生活技能", "做饭", "饮食偏好"], title="用户偏好少油少辣",
              content="推荐菜谱时优先少油少辣。", importance=0.85)
    make_node(principal, domain="work", type="fact", title="Works in Berlin", content="Works in Berlin",
              importance=0.5)
    version = profile_consolidate(team=team, user_id="u1", force=True).version

    assert version.content == (
        "## 生活技能 / 做饭 / 饮食偏好\n- 用户不吃香菜: 推荐菜谱时避免香菜。\n- 用户偏好少油少辣: 推荐菜谱时优先少油少辣。"
        "\n\n## work\n- Works in Berlin"
    )
    assert version.summary == "用户不吃香菜; 用户偏好少油少辣; Works in Berlin"


def test_inactive_and_other_users_memories_stay_out_of_the_profile(team, principal):
    make_node(principal, title="kept", type="fact")
    gone = make_node(principal, title="soft forgotten", type="fact")
    memory_forget(principal=principal, selector=ForgetSelector(node_id=gone.pk), mode="soft")
    make_node(principal, title="expired", type="fact", expires_at=timezone.now() + timedelta(seconds=1))
    make_node(principal, title="u2's", type="fact", user_id="u2")
    make_node(principal, scope="workspace", workspace_id="w1", user_id="", title="workspace's", type="fact")
    version = profile_consolidate(team=team, user_id="u1", force=True,
                                  now=timezone.now() + timedelta(minutes=1)).version
    assert version.content == "## general\n- kept"


def test_over_the_budget_the_content_is_compacted_to_6400_characters(team, principal):
    filler = "细节 details " * 25  # 275 characters
    for index in range(40):
        make_node(principal, type="fact", title=f"memory {index:02d}", content=f"{filler}{index}",
                  importance=round(0.2 + index / 100, 2))
    version = profile_consolidate(team=team, user_id="u1").version

    assert version.reason == "compact"
    assert 6000 < len(version.content) <= 6400
    assert "memory 39" in version.content and "memory 00" not in version.content  # the least important go first
    event = AuditEvent.objects.get(event_type="memory.profile.versioned")
    assert len(event.payload["dropped_node_ids"]) == 40 - len(version.source_node_ids)


def test_rollback_appends_a_copy_and_keeps_every_version(team, principal):
    notes(principal, 8)
    first = profile_consolidate(team=team, user_id="u1").version
    notes(principal, 1, start=8)
    profile_consolidate(team=team, user_id="u1", force=True)

    rolled = profile_rollback(principal=principal, user_id="u1", version=1)

    assert rolled.version == 3 and rolled.reason == "rollback" and rolled.rolled_back_from == 1
    assert (rolled.summary, rolled.content, rolled.lines) == (first.summary, first.content, first.lines)
    assert [v.version for v in versions_of()] == [1, 2, 3]
    assert profile_get(principal=principal, user_id="u1").version == 3
    event = AuditEvent.objects.filter(event_type="memory.profile.versioned").latest("pk")
    assert event.actor == principal.actor and event.payload["rolled_back_from"] == 1


def test_another_team_neither_sees_nor_feeds_the_profile(team, other_team, principal, other_principal):
    notes(principal, 8)
    notes(other_principal, 3, start=100)
    version = profile_consolidate(team=team, user_id="u1").version

    assert "note 100" not in version.content
    assert profile_get(principal=other_principal, user_id="u1") is None
    assert list(profile_versions(principal=other_principal, user_id="u1")) == []
    assert profile_consolidate(team=other_team, user_id="u1").skipped == "below_threshold"


def test_hard_forget_of_a_node_removes_its_line_from_every_version(team, principal, settings, monkeypatch):
    secret = make_node(principal, type="fact", title=f"allergy {MARKER}", content="过敏", importance=0.99)
    notes(principal, 7)
    profile_consolidate(team=team, user_id="u1")  # v1, rules
    settings.MEMORY_LLM_BASE_URL = "http://127.0.0.1:9/v1"
    monkeypatch.setattr(consolidate, "chat_json", lambda config, **kw: {"summary": f"has {MARKER}",
                                                                         "content": f"prose about {MARKER}"})
    notes(principal, 1, start=7)
    assert profile_consolidate(team=team, user_id="u1", force=True).version.generator == "llm"  # v2
    profile_rollback(principal=principal, user_id="u1", version=1)  # v3

    memory_forget(principal=principal, selector=ForgetSelector(node_id=secret.pk), mode="hard", confirm=True)

    versions = versions_of()
    assert [v.version for v in versions] == [1, 2, 3]
    for version in versions:
        text = f"{version.summary} {version.content} {version.lines}"
        assert MARKER not in text and secret.pk not in version.source_node_ids
        assert version.generator == "rules" and version.redacted_at is not None
    assert versions[1].content.startswith("## general\n- note 7: remembered thing number 7\n- note 6")
    assert MARKER not in str(list(AuditEvent.objects.values_list("payload", flat=True)))
    redacted = AuditEvent.objects.get(event_type="memory.profile.redacted")
    assert redacted.payload == {"versions": [1, 2, 3], "node_ids": [secret.pk]}


def test_hard_forget_of_a_conversation_removes_its_lines_from_the_profile(team, principal):
    source = append(principal, f"remember {MARKER}", session_id="s9")[0]
    make_node(principal, type="fact", title=MARKER, source_message_ids=[source.pk])
    notes(principal, 7)
    profile_consolidate(team=team, user_id="u1")

    session_forget(principal=principal, ref=SessionRef("s9", "", "u1"), mode="hard")

    (version,) = versions_of()
    assert MARKER not in version.content and len(version.source_node_ids) == 7


def test_soft_forget_keeps_history_and_counts_towards_the_next_version(team, principal):
    made = notes(principal, 8)
    start = timezone.now()
    profile_consolidate(team=team, user_id="u1", now=start)
    for node in made:
        memory_forget(principal=principal, selector=ForgetSelector(node_id=node.pk), mode="soft")
    latest = profile_consolidate(team=team, user_id="u1", now=start + timedelta(minutes=11)).version
    assert latest.version == 2 and latest.content == "" and latest.summary == ""
    assert "note 0" in versions_of()[0].content


@override_settings(MEMORY_LLM_BASE_URL="http://127.0.0.1:9/v1")
def test_a_failing_language_model_leaves_the_deterministic_text(team, principal, monkeypatch):
    def down(config, **kwargs):
        raise ExtractorError("endpoint down")

    monkeypatch.setattr(consolidate, "chat_json", down)
    notes(principal, 8)
    version = profile_consolidate(team=team, user_id="u1").version
    assert version.generator == "rules" and version.content.startswith("## general\n- note 7")


@pytest.mark.parametrize("answer", [{"summary": "s"}, {"summary": "s", "content": "x" * 6401},
                                    {"summary": 3, "content": "c"}])
@override_settings(MEMORY_LLM_BASE_URL="http://127.0.0.1:9/v1")
def test_a_language_model_answer_out_of_shape_is_not_used(team, principal, monkeypatch, answer):
    monkeypatch.setattr(consolidate, "chat_json", lambda config, **kwargs: answer)
    notes(principal, 8)
    assert profile_consolidate(team=team, user_id="u1").version.generator == "rules"


def test_a_merge_of_a_profiled_duplicate_lays_the_profile_out_again_at_once(team, principal):
    # The survivor may be a line compaction left out; the twin's line would then go with it.
    notes(principal, 2)
    twin = stored_before(principal, type="fact", title="note 0!", content="remembered thing number 0")
    first = profile_consolidate(team=team, user_id="u1", force=True).version
    assert twin.pk in first.source_node_ids
    report = consolidation_run(team=team, user_id="u1")  # 2 changed memories, inside the cooldown
    assert [merge.merged_ids for merge in report.merges] == [[twin.pk]]
    assert report.profile.version.version == 2 and twin.pk not in report.profile.version.source_node_ids
    assert consolidation_run(team=team, user_id="u1").profile.skipped == "below_threshold"  # nothing merged now


def test_consolidation_run_merges_then_builds_the_profile(team, principal):
    notes(principal, 7)
    stored_before(principal, type="fact", title="note 0!", content="remembered thing number 0")
    make_node(principal, type="fact", title="one more")
    report = consolidation_run(team=team, user_id="u1")
    assert [len(merge.merged_ids) for merge in report.merges] == [1]
    assert report.profile.version.version == 1 and len(report.profile.version.source_node_ids) == 8
