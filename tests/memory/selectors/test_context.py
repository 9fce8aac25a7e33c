from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from django.db import DatabaseError
from django.utils import timezone

from memory.models import Retrieval
from memory.selectors.context import ContextRequest, context_build
from memory.selectors.context_gather import UNSHOWN_COUNTED_MAX
from memory.selectors.nodes import Owner
from memory.services.nodes import node_supersede, supersede_input
from memory.services.sessions import SessionRef
from memory.services.summaries import SummaryInput, summary_append
from tests.helpers import append, make_node

OWNER = Owner(workspace_id="home", user_id="xiaoming", session_id="cook-1")
COOKING = dict(scope="user", user_id="xiaoming", workspace_id="home", domain="生活技能",
               category_path=["生活技能", "做饭", "饮食偏好"], type="preference", explicit=True)


def build(principal, query="", owner=OWNER, **kwargs):
    return context_build(principal=principal, request=ContextRequest(owner=owner, query=query, **kwargs))


@pytest.fixture
def cooking(principal):
    first = append(principal, "以后做饭别给我推荐香菜，我喜欢少油少辣", session_id="cook-1", user_id="xiaoming",
                   workspace_id="home")[0]
    avoid = make_node(principal, **COOKING, key="avoid_ingredient", value_json="香菜", title="用户不吃香菜",
                      content="推荐菜谱时避免香菜。", source_message_ids=[first.pk])
    flavor = make_node(principal, **COOKING, key="flavor_profile", value_json={"oil": "low", "spicy": "low"},
                       title="用户偏好少油少辣", content="推荐菜谱时优先少油少辣。", source_message_ids=[first.pk])
    return avoid, flavor


def test_dinner_question_gets_current_preferences_not_the_superseded_one(principal, cooking):
    avoid, flavor = cooking
    newer = node_supersede(principal=principal, old_node_id=avoid.pk, data=supersede_input(
        avoid, {"value_json": "少量香菜", "title": "用户可接受少量香菜", "content": "香菜可以接受一点，但不要太多。"}, {}))
    context = build(principal, "今晚吃什么")
    assert "少油少辣" in context.block
    assert "香菜可以接受一点，但不要太多。" in context.block
    assert "推荐菜谱时避免香菜。" not in context.block
    assert set(context.used_memory_ids) == {flavor.pk, newer.pk}


def test_expired_node_is_not_injected(principal, cooking):
    make_node(principal, **{**COOKING, "type": "constraint"}, title="今天胃不舒服", content="今天胃不舒服，少辣",
              expires_at=timezone.now() - timedelta(minutes=1))
    assert "胃不舒服" not in build(principal, "胃不舒服").block


def test_block_lists_sections_and_recent_messages_oldest_first(principal, cooking):
    append(principal, "今晚吃什么", session_id="cook-1", user_id="xiaoming", workspace_id="home")
    context = build(principal, "今晚吃什么")
    assert context.block.startswith("[User preferences]\n- ")
    recent = context.block.split("[Recent messages]\n")[1].splitlines()
    assert recent == ["user: 以后做饭别给我推荐香菜，我喜欢少油少辣", "user: 今晚吃什么"]


def test_query_relevant_node_and_earlier_message_are_injected(principal):
    append(principal, "Our release rule: run pytest before pushing to staging", session_id="old", user_id="u1")
    append(principal, "hello", "anything new?", session_id="s1", user_id="u1")
    node = make_node(principal, user_id="u1", type="fact", title="The CI runs on Jenkins")
    context = build(principal, "what about jenkins and pytest?", owner=Owner(user_id="u1", session_id="s1"))
    assert node.pk in context.used_memory_ids
    assert "run pytest before pushing to staging" in context.block
    assert context.counts["retrieval_hits"] == 2


def test_summary_and_everything_else_stay_within_the_budget(principal):
    for i in range(10):
        make_node(principal, user_id="u1", title=f"memory {i}", content=f"preference number {i} ".ljust(50, "x"))
    append(principal, "m" * 20, session_id="s1", user_id="u1")
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "", "u1"), summary="S" * 400))
    context = build(principal, "preference", owner=Owner(user_id="u1", session_id="s1"), budget={"max_chars": 300})
    assert len(context.block) <= 300
    assert context.truncated
    assert "S" * 400 not in context.block
    assert any(o.reason == "over_limit" for o in context.omitted)


@pytest.mark.parametrize("max_chars", [0, 10])
def test_a_budget_below_the_overhead_returns_an_empty_block(principal, cooking, max_chars):
    context = build(principal, "香菜", budget={"max_chars": max_chars})
    assert context.block == "" and context.truncated and context.used_memory_ids == []


def test_a_budget_above_the_policy_is_capped_with_a_warning(principal, cooking):
    context = build(principal, "香菜", budget={"max_chars": 10_000_000})
    assert context.budget.max_chars == 1200
    assert any("capped" in warning for warning in context.warnings)


def test_budget_reports_where_each_value_came_from(principal, settings, monkeypatch):
    monkeypatch.setenv("USER_MEMORY_PREINJECT_TOPN", "4")
    settings.USER_MEMORY_PREINJECT_TOPN = 4
    context = build(principal, "x", budget={"max_chars": 500})
    assert context.budget.as_dict()["top_n"] == {"value": 4, "source": "environment"}
    assert context.budget.as_dict()["max_chars"] == {"value": 500, "source": "request"}
    assert context.budget.as_dict()["enabled"] == {"value": True, "source": "default"}


def test_disabled_pre_injection_injects_nothing(principal, cooking, settings):
    settings.USER_MEMORY_PREINJECT_ENABLED = False
    context = build(principal, "香菜")
    assert context.block == "" and context.store_status == "disabled"


def test_top_n_limits_retrieval_hits(principal):
    for i in range(5):
        make_node(principal, user_id="u1", type="fact", title=f"jenkins fact {i}")
    context = build(principal, "jenkins", owner=Owner(user_id="u1"), budget={"top_n": 2})
    assert context.counts["retrieval_hits"] == 2
    assert sum(1 for o in context.omitted if o.reason == "over_limit") == 3


def test_a_failing_search_degrades_instead_of_failing(principal, cooking):
    with mock.patch("memory.selectors.context_gather.memory_query", side_effect=DatabaseError("boom")):
        context = build(principal, "香菜")
    assert context.store_status == "degraded"
    assert "推荐菜谱时避免香菜。" in context.block
    assert any("memory search unavailable" in warning for warning in context.warnings)


def test_every_call_is_recorded_without_the_injected_text(principal, cooking):
    context = build(principal, "香菜")
    retrieval = Retrieval.objects.get(pk=context.retrieval_id)
    assert retrieval.used_node_ids == context.used_memory_ids
    assert retrieval.total_chars == len(context.block)
    assert retrieval.chars_by_layer["L2"] > 0
    assert "推荐菜谱" not in str(retrieval.items)


def test_chinese_and_english_are_counted_alike_by_characters(principal):
    make_node(principal, user_id="u1", title="中文十个字的记忆内容", content="中文十个字的记忆内容")
    make_node(principal, user_id="u1", title="ten chars!", content="ten chars!")
    context = build(principal, owner=Owner(user_id="u1"))
    assert context.chars_by_layer["L2"] == (2 + 10) * 2
    # "- " + 10 Han characters: 10 + ceil(2 / 4); "- ten chars!": ceil(12 / 4)
    assert context.tokens_by_layer["L2"] == 11 + 3


def test_messages_name_their_speaker_when_metadata_does(principal):
    append(principal, "I went to a support group yesterday", session_id="s1", user_id="u1",
           metadata={"speaker": "Caroline"})
    append(principal, "hi", session_id="s1", user_id="u1", metadata={"name": ["not", "a", "name"]})
    block = build(principal, owner=Owner(user_id="u1", session_id="s1")).block
    assert "user (Caroline): I went to a support group yesterday" in block
    assert "\nuser: hi" in block


def test_relevant_memories_get_their_share_when_standing_memory_fills_the_budget(principal):
    append(principal, "hello", session_id="s1", user_id="u1")
    for i in range(40):
        make_node(principal, scope="session", session_id="s1", user_id="u1", type="task",
                  title=f"standing task number {i:02d} of this long session, with plenty of words")
        make_node(principal, user_id="u1", title=f"standing preference {i:02d}, also with plenty of words to fill")
    target = make_node(principal, user_id="u1", type="fact", title="The deploy key lives in the vault")
    context = build(principal, "where is the deploy key?", owner=Owner(user_id="u1", session_id="s1"))
    assert target.pk in context.used_memory_ids
    assert "[This session]" in context.block and "[User preferences]" in context.block
    assert len(context.block) <= 1200


def test_earlier_messages_stay_within_the_same_workspace_and_live_sessions(principal):
    from memory.models import Session

    append(principal, "the vault code is 1234", session_id="other-ws", user_id="u1", workspace_id="w2")
    append(principal, "the vault is in the basement", session_id="old", user_id="u1", workspace_id="w1")
    append(principal, "the vault was moved", session_id="forgotten", user_id="u1", workspace_id="w1")
    Session.objects.filter(external_id="forgotten").update(deleted_at=timezone.now())
    append(principal, "hi", session_id="s1", user_id="u1", workspace_id="w1")
    context = build(principal, "vault", owner=Owner(workspace_id="w1", user_id="u1", session_id="s1"))
    assert [m.content for m in context.section("earlier_messages")] == ["the vault is in the basement"]


def test_a_very_long_query_keeps_its_latest_turns_and_finds_the_memory(principal):
    """A long query is a conversation: its last tokens are kept (MADial recall@10 0.448 → 0.546)."""
    target = make_node(principal, user_id="u1", type="fact", title="用户喜欢在周末爬山")
    long_query = "，".join(f"这是一段很长的对话内容第{i}句" for i in range(200)) + "。周末去爬山吗"
    context = build(principal, long_query, owner=Owner(user_id="u1"))
    assert target.pk in context.used_memory_ids


def test_the_recent_window_never_skips_the_newest_turn(principal):
    append(principal, "m1 hi", session_id="s1", user_id="u1")
    append(principal, "m2 hello", session_id="s1", user_id="u1", role="assistant")
    append(principal, "m3 actually I am allergic to shellfish and peanuts, please remember it", session_id="s1",
           user_id="u1")
    fits_newest = build(principal, owner=Owner(user_id="u1", session_id="s1"), budget={"max_chars": 100})
    assert fits_newest.block.endswith("please remember it") and "m2 hello" not in fits_newest.block
    assert fits_newest.counts["dropped_by_section"] == {"recent_messages": 2}
    too_small = build(principal, owner=Owner(user_id="u1", session_id="s1"), budget={"max_chars": 60})
    assert too_small.block == "" and too_small.counts["dropped_by_section"] == {"recent_messages": 3}


def test_a_summary_of_400_characters_is_kept_at_the_default_budget(principal):
    for i in range(12):
        append(principal, f"we talked about the garden and the roses, part {i}", session_id="old", user_id="u1")
    append(principal, *(f"m{i}" for i in range(12)), session_id="s1", user_id="u1")  # more than the recent window
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "", "u1"), summary="S" * 400))
    append(principal, "and the roses?", session_id="s1", user_id="u1")
    context = build(principal, "garden roses", owner=Owner(user_id="u1", session_id="s1"))
    assert "S" * 400 in context.block
    assert context.section("earlier_messages")


def test_a_new_session_recalls_the_users_earlier_conversations(principal):
    append(principal, "I adopted a dog called Biscuit", session_id="old", user_id="u1", workspace_id="w1")
    context = build(principal, "what is my dog called?", owner=Owner(workspace_id="w1", user_id="u1", session_id="new"))
    assert [m.content for m in context.section("earlier_messages")] == ["I adopted a dog called Biscuit"]


def test_the_context_call_reads_yesterday_against_its_own_time(principal):
    june = append(principal, "We went camping at the lake.", session_id="s-june", user_id="u1",
                  occurred_at=datetime(2023, 6, 20, 18, tzinfo=UTC))[0]
    september = append(principal, "We went camping at the lake!", session_id="s-sept", user_id="u1",
                       occurred_at=datetime(2023, 9, 2, tzinfo=UTC))[0]
    owner = Owner(user_id="u1", session_id="new")
    # only the context call's clock: the message search must be handed its time, not read its own
    with mock.patch("memory.selectors.context_gather.timezone", **{"now.return_value": datetime(2023, 6, 21, tzinfo=UTC)}):
        context = build(principal, "Where did we go camping yesterday?", owner=owner)
    assert [m.pk for m in context.section("earlier_messages")] == [june.pk, september.pk]
    assert [m.pk for m in build(principal, "Where did we go camping yesterday?", owner=owner)
            .section("earlier_messages")] == [september.pk, june.pk]


def test_the_context_call_reads_dates_in_the_time_zone_it_is_given(principal):
    """At 10:00 on 4 March in Los Angeles, yesterday there is 3 March (memory.search.when)."""
    earlier = append(principal, "We talked about the hiking trip.", session_id="s-1", user_id="u1",
                     occurred_at=datetime(2024, 3, 2, 4, tzinfo=UTC))[0]
    later = append(principal, "We talked about the hiking trip!", session_id="s-2", user_id="u1",
                   occurred_at=datetime(2024, 3, 4, 1, tzinfo=UTC))[0]
    owner = Owner(user_id="u1", session_id="new")
    with mock.patch("memory.selectors.context_gather.timezone", **{"now.return_value": datetime(2024, 3, 4, 18, tzinfo=UTC)}):
        there = build(principal, "the hiking trip yesterday", owner=owner, timezone="America/Los_Angeles")
        here = build(principal, "the hiking trip yesterday", owner=owner)
    assert [m.pk for m in there.section("earlier_messages")] == [later.pk, earlier.pk]
    assert [m.pk for m in here.section("earlier_messages")] == [earlier.pk, later.pk]


def test_identical_earlier_messages_are_shown_once(principal):
    append(principal, "今晚吃什么？", session_id="a", user_id="u1")
    append(principal, "今晚吃什么？", session_id="b", user_id="u1")
    context = build(principal, "今晚吃什么", owner=Owner(user_id="u1", session_id="c"))
    assert context.block.count("今晚吃什么？") == 1


def test_a_node_line_keeps_the_title_when_the_content_does_not_say_it(principal):
    make_node(principal, user_id="u1", type="constraint", title="用户对花生过敏", content="推荐菜谱时不要用花生。")
    make_node(principal, user_id="u1", title="少油", content="推荐菜谱时优先少油。")
    block = build(principal, owner=Owner(user_id="u1")).block
    assert "- 用户对花生过敏: 推荐菜谱时不要用花生。" in block
    assert "- 推荐菜谱时优先少油。" in block


def test_a_session_value_of_a_key_wins_over_the_users_and_the_loser_is_omitted(principal, cooking):
    avoid, flavor = cooking
    append(principal, "今天想吃辣的", session_id="cook-1", user_id="xiaoming", workspace_id="home")
    today = make_node(principal, scope="session", session_id="cook-1", user_id="xiaoming", workspace_id="home",
                      domain="生活技能", type="preference", key="flavor_profile", value_json={"spicy": "high"},
                      title="今天想吃辣", content="这次做饭可以辣一点。")
    context = build(principal, "今晚吃什么")
    assert "这次做饭可以辣一点。" in context.block and "推荐菜谱时优先少油少辣。" not in context.block
    assert {(item.node_id, item.reason) for item in context.omitted} >= {(flavor.pk, "conflict_lost")}
    assert today.pk in context.used_memory_ids and flavor.pk not in context.used_memory_ids


def test_a_session_flavour_leaves_the_users_flavour_of_other_fields_in_the_block(principal):
    """A newcomer's conversation: "我不太能吃辣" (session, {"spicy": "low"}) had left the user's
    "以后做饭记得少放盐" ({"salt": "low"}) out of every block as conflict_lost."""
    append(principal, "我不太能吃辣", session_id="cook-1", user_id="xiaoming", workspace_id="home")
    spicy = make_node(principal, scope="session", session_id="cook-1", user_id="xiaoming", workspace_id="home",
                      domain="生活技能", type="preference", key="flavor_profile", value_json={"spicy": "low"},
                      title="用户偏好少吃辣", content="推荐菜谱时优先少吃辣。")
    salt = make_node(principal, user_id="xiaoming", domain="生活技能", type="preference", key="flavor_profile",
                     value_json={"salt": "low"}, title="用户偏好少放盐", content="推荐菜谱时优先少放盐。")
    context = build(principal, "今晚吃什么")
    assert "推荐菜谱时优先少吃辣。" in context.block and "推荐菜谱时优先少放盐。" in context.block
    assert {spicy.pk, salt.pk} <= set(context.used_memory_ids)
    assert not [item for item in context.omitted if item.reason == "conflict_lost"]


def test_the_seed_example_constraint_and_preference_both_come_back_constraint_first(principal):
    append(principal, "今天胃不舒服", session_id="cook-1", user_id="xiaoming", workspace_id="home")
    likes = make_node(principal, **COOKING, key="preferred_cuisine", value_json="川菜", title="喜欢川菜",
                      cardinality="many")
    today = make_node(principal, **{**COOKING, "type": "constraint"}, key="flavor_profile", value_json={"spicy": "low"},
                      title="今天胃不舒服，少辣", expires_at=timezone.now() + timedelta(hours=12))
    context = build(principal, "晚饭推荐")
    assert context.block.index("今天胃不舒服，少辣") < context.block.index("喜欢川菜")
    assert {likes.pk, today.pk} <= set(context.used_memory_ids)


def test_nodes_below_the_teams_minimum_confidence_are_left_out(principal, admin_principal, cooking):
    from memory.services.policies import policy_set

    avoid, flavor = cooking
    type(avoid).objects.filter(pk=avoid.pk).update(confidence=0.3)
    policy_set(principal=admin_principal, changes={"min_confidence": 0.5})
    context = build(principal, "香菜")
    assert avoid.pk not in context.used_memory_ids
    assert (avoid.pk, "low_confidence") in {(item.node_id, item.reason) for item in context.omitted}


def test_l2_shows_the_profile_summary_and_recent_corrections_without_the_old_value(principal):
    from memory.capture.consolidate import profile_consolidate
    from memory.services.nodes import node_supersede, supersede_input

    for index in range(8):
        make_node(principal, user_id="xiaoming", type="preference", key=f"likes{index}", title=f"喜欢第{index}道菜")
    profile_consolidate(team=principal.team, user_id="xiaoming", force=True)
    old = make_node(principal, user_id="xiaoming", type="fact", key="city", value_json="杭州", title="住在杭州")
    node_supersede(principal=principal, old_node_id=old.pk,
                   data=supersede_input(old, {"value_json": "成都", "title": "住在成都"}, {}))
    context = build(principal)
    assert "[User profile]" in context.block
    assert "- 住在成都 (replaces an earlier memory)" in context.block and "杭州" not in context.block
    assert {item.section for item in context.items} >= {"profile", "corrections"}
    assert context.chars_by_layer["L2"] == sum(len(item.text) for item in context.items if item.layer == "L2")


def _profiled_city(principal):
    """A profile laid out while 住在杭州 was active, beside three likes."""
    from memory.capture.consolidate import profile_consolidate

    for index in range(3):
        make_node(principal, user_id="xiaoming", type="preference", key=f"likes{index}", title=f"喜欢第{index}道菜")
    city = make_node(principal, user_id="xiaoming", type="fact", key="city", value_json="杭州", title="住在杭州")
    profile_consolidate(team=principal.team, user_id="xiaoming", force=True)
    assert "住在杭州" in build(principal).block
    return city


# The profile is laid out at consolidation (every 8 changed memories): until then it still said
# 住在杭州 beside the correction 住在成都 (S03: never both values), and what was forgotten softly.
def test_the_profile_is_injected_with_the_successor_of_a_memory_superseded_since_it_was_laid_out(principal):
    city = _profiled_city(principal)
    newer = node_supersede(principal=principal, old_node_id=city.pk,
                           data=supersede_input(city, {"value_json": "成都", "title": "住在成都"}, {}))
    context = build(principal)
    assert "杭州" not in context.block
    assert "\n\n[User profile]\n住在成都; 喜欢第2道菜; 喜欢第1道菜; 喜欢第0道菜\n\n" in context.block
    assert "- 住在成都 (replaces an earlier memory)" in context.block
    profile = next(item.obj for item in context.items if item.section == "profile")
    assert profile.changed_since_layout == {"replaced": [[city.pk, newer.pk]], "edited": [], "left_out": []}


def test_a_profiled_memory_corrected_more_often_than_the_corrections_shown_stays_in_the_block(principal):
    from memory.capture.consolidate import profile_consolidate

    facts = [make_node(principal, user_id="xiaoming", type="fact", key=f"fact{index}", value_json=f"旧{index}",
                       title=f"事实{index}旧") for index in range(9)]
    profile_consolidate(team=principal.team, user_id="xiaoming", force=True)
    for fact in facts:
        middle = node_supersede(principal=principal, old_node_id=fact.pk, data=supersede_input(
            fact, {"value_json": "中", "title": f"{fact.title[:-1]}中"}, {}))
        node_supersede(principal=principal, old_node_id=middle.pk, data=supersede_input(
            middle, {"value_json": "新", "title": f"{fact.title[:-1]}新"}, {}))
    block = build(principal).block
    assert all(f"事实{index}新" in block for index in range(9)), block  # 8 corrections shown, and the profile
    assert "旧" not in block and "中" not in block


def test_the_profile_is_injected_with_the_title_of_a_memory_edited_in_place(principal):
    from memory.services.nodes import node_update

    city = _profiled_city(principal)
    node_update(principal=principal, node_id=city.pk, changes={"title": "住在成都武侯区"})
    block = build(principal).block
    assert "杭州" not in block and "[User profile]\n住在成都武侯区; " in block


@pytest.mark.parametrize("mode", ["soft", "hard"])
def test_the_profile_is_injected_without_a_forgotten_memory(principal, mode):
    from memory.profile_models import UserProfileVersion
    from memory.services.nodes import node_delete

    city = _profiled_city(principal)
    node_delete(principal=principal, node_id=city.pk, mode=mode)
    assert "杭州" not in build(principal).block
    # the stored document is history: a soft forget leaves it as laid out (restore brings it back)
    stored = UserProfileVersion.objects.get(team=principal.team, user_id="xiaoming")
    assert ("住在杭州" in stored.summary) is (mode == "soft")


def test_the_profile_is_injected_without_a_memory_that_expired(principal):
    from memory.profile_models import UserProfileVersion

    city = _profiled_city(principal)
    laid_out = UserProfileVersion.objects.get(team=principal.team, user_id="xiaoming").created_at
    type(city).objects.filter(pk=city.pk).update(expires_at=laid_out + timedelta(microseconds=1))  # no write: time
    context = build(principal)
    assert "杭州" not in context.block and "喜欢第0道菜" in context.block


def test_a_profiled_memory_corrected_into_one_conversation_leaves_the_profile(principal):
    # Its successor is that conversation's memory: another workspace's context, or a key limited
    # to it, must not read it through the profile.
    city = _profiled_city(principal)
    node_supersede(principal=principal, old_node_id=city.pk, data=supersede_input(
        city, {"scope": "session", "title": "这周住在北京酒店"},
        {"workspace_id": "home", "user_id": "xiaoming", "session_id": "cook-1"}))
    assert "北京" in build(principal).block  # its own conversation has it
    other = Owner(workspace_id="work", user_id="xiaoming", session_id="elsewhere")
    block = build(principal, owner=other).block
    assert "北京" not in block and "杭州" not in block and "喜欢第0道菜" in block


def test_the_profile_is_injected_with_the_content_of_a_memory_edited_in_place(principal):
    from memory.selectors.profiles import profile_as_injected
    from memory.services.nodes import node_update

    city = _profiled_city(principal)
    node_update(principal=principal, node_id=city.pk, changes={"content": "住在杭州西湖区，离公司近"})
    shown = profile_as_injected(principal=principal, user_id="xiaoming", now=timezone.now())
    assert "- 住在杭州: 住在杭州西湖区，离公司近" in shown.content
    assert shown.changed_since_layout == {"replaced": [], "edited": [city.pk], "left_out": []}


@pytest.mark.parametrize("change", ["soft_forget", "supersede", "edit"])
def test_a_rolled_back_profile_is_injected_as_its_memories_hold_now(principal, change):
    # The rollback's copy is stamped now, but its lines were laid out before the change.
    from memory.services.nodes import node_delete, node_update
    from memory.services.profiles import profile_rollback

    city = _profiled_city(principal)
    if change == "soft_forget":
        node_delete(principal=principal, node_id=city.pk, mode="soft")
    elif change == "supersede":
        node_supersede(principal=principal, old_node_id=city.pk, data=supersede_input(
            city, {"value_json": "成都", "title": "住在成都", "content": "成都高新区"}, {}))
    else:
        node_update(principal=principal, node_id=city.pk, changes={"content": "住在杭州西湖区，离公司近"})
    profile_rollback(principal=principal, user_id="xiaoming", version=1)
    from memory.selectors.profiles import profile_as_injected

    shown = profile_as_injected(principal=principal, user_id="xiaoming", now=timezone.now())
    if change == "soft_forget":
        assert "杭州" not in build(principal).block and "杭州" not in shown.content
    elif change == "supersede":
        assert "杭州" not in build(principal).block and "- 住在成都: 成都高新区" in shown.content
    else:
        assert "- 住在杭州: 住在杭州西湖区，离公司近" in shown.content


def test_a_memory_forgotten_while_the_profile_was_laid_out_is_left_out(principal):
    # The forget stamped updated_at when its transaction began; the consolidation read the memory
    # before the forget committed and stamped the version after that.
    from memory.profile_models import UserProfileVersion

    city = _profiled_city(principal)
    laid_out = UserProfileVersion.objects.get(team=principal.team, user_id="xiaoming").created_at
    type(city).objects.filter(pk=city.pk).update(status="deleted", updated_at=laid_out - timedelta(seconds=2))
    assert "杭州" not in build(principal).block


def test_a_profiled_memory_folded_into_its_twin_is_shown_by_the_twin(principal):
    # A capture note an agent said again is deleted as the agent's note's twin (memory.services.twins).
    from django.db import transaction

    from memory.services.audit import MERGED_EVENT, audit_record

    city = _profiled_city(principal)
    twin = make_node(principal, user_id="xiaoming", type="fact", key="home", value_json="杭州", title="用户住在杭州")
    with transaction.atomic():
        type(city).objects.filter(pk=city.pk).update(status="deleted", updated_at=timezone.now())
        audit_record(principal=principal, event_type=MERGED_EVENT, node=city, reason=f"said by node {twin.pk}",
                     payload={"merged_into": twin.pk, "previous_status": "active", "match": "same_message"})
    assert "[User profile]\n用户住在杭州; 喜欢第2道菜" in build(principal).block


def test_a_profile_line_naming_no_node_is_kept_and_a_line_of_no_shape_skipped(principal):
    # An import writes node_id null for a line whose node the file lacked (remap_profile_lines);
    # it broke every context call of the user (int(None)) and a hard forget of another line.
    from memory.profile_models import UserProfileVersion
    from memory.services.nodes import node_delete

    city = _profiled_city(principal)
    stored = UserProfileVersion.objects.get(team=principal.team, user_id="xiaoming")
    stored.lines = [*stored.lines, {"node_id": None, "group": "导入", "title": "导入的一行", "text": "导入的一行", "rank": 9},
                    {"node_id": "abc", "title": "编号不对的一行", "rank": "x"}, "一行字", {"node_id": 1}]
    stored.save(update_fields=["lines"])
    summary = build(principal).block.split("[User profile]\n")[1].split("\n")[0]
    assert sorted(summary.split("; ")) == sorted(["住在杭州", "喜欢第2道菜", "喜欢第1道菜", "喜欢第0道菜", "编号不对的一行",
                                                   "导入的一行"])
    node_delete(principal=principal, node_id=city.pk, mode="hard")
    stored.refresh_from_db()
    assert [line["title"] for line in stored.lines if isinstance(line, dict)][-2:] == ["导入的一行", "编号不对的一行"]
    assert "杭州" not in build(principal).block


def test_a_profile_whose_memories_all_hold_is_injected_as_written(principal):
    from memory.profile_models import UserProfileVersion

    _profiled_city(principal)
    UserProfileVersion.objects.filter(team=principal.team, user_id="xiaoming").update(summary="小明住在杭州，爱做饭")
    assert build(principal).block.endswith("[User profile]\n小明住在杭州，爱做饭")


def test_l4_shows_the_sessions_working_memory_line_by_line(principal, cooking):
    from memory.services.sessions import SessionRef
    from memory.services.working_memory import working_memory_put

    ref = SessionRef(session_id="cook-1", workspace_id="home", user_id="xiaoming")
    working_memory_put(principal=principal, ref=ref, data={
        "current_goal": "今晚做一道不辣的菜", "references": {"它": "番茄炒蛋"}, "slots": {"people": 2, "cuisine": None},
        "scratchpad": "已经推荐过番茄炒蛋"})
    context = build(principal, "今晚吃什么")
    block = context.block
    assert "[Working memory]\n- goal: 今晚做一道不辣的菜\n- references: 它 = 番茄炒蛋\n- known: people = 2\n" \
           "- still to ask: cuisine\n- notes: 已经推荐过番茄炒蛋" in block
    assert block.index("[Working memory]") > block.index("[Recent messages]")  # displayed in layer order (L4)
    small = build(principal, "今晚吃什么", budget={"max_chars": 120})
    assert "- goal: 今晚做一道不辣的菜" in small.block  # filled first: the goal outlives the rest
    assert context.chars_by_layer["L4"] >= sum(len(item.text) for item in context.items if item.section == "working")


def test_a_workspace_may_lower_the_teams_minimum_confidence_and_the_reported_value_is_applied(
        principal, admin_principal, cooking):
    from memory.services.policies import policy_set

    avoid, flavor = cooking
    type(avoid).objects.filter(pk=avoid.pk).update(confidence=0.3)
    policy_set(principal=admin_principal, changes={"min_confidence": 0.5})
    policy_set(principal=admin_principal, workspace_id="home", changes={"min_confidence": 0.1})
    context = build(principal, "香菜")
    assert context.budget.min_confidence == 0.1 and context.budget.sources["min_confidence"] == "workspace"
    assert avoid.pk in context.used_memory_ids


def test_standing_nodes_past_the_fetch_limit_are_reported_not_lost(principal):
    append(principal, "let's get going", session_id="s2", user_id="lihua", workspace_id="ctx")
    tasks = [make_node(principal, scope="session", session_id="s2", user_id="lihua", workspace_id="ctx", type="task",
                       title=f"task number {index}") for index in range(23)]
    context = build(principal, owner=Owner(workspace_id="ctx", user_id="lihua", session_id="s2"))
    shown = set(context.used_memory_ids)
    over = {item.node_id for item in context.omitted if item.reason == "over_limit"}
    # 1200 characters fetch the 14 lines that could fit; the other 9 are reported, none lost
    assert len(shown) == 14 and shown | over == {task.pk for task in tasks} and not shown & over


@pytest.mark.parametrize("first,second", [
    ({"top_n": 8}, {"top_n": 2}),  # the larger read first: the second is cut from it
    ({"top_n": 2}, {"top_n": 8}),  # the smaller first: the larger reads again
    ({"top_n": 5, "max_chars": 4000}, {"top_n": 5, "max_chars": 2500, "l5_chars": 150}),  # only the fit differs
])
def test_budgets_that_share_reads_build_exactly_what_separate_calls_build(principal, first, second):
    """Policy simulation reuses one read for the policy in force and the draft (R-CTX)."""
    from memory.selectors.budget import budget_resolve

    append(principal, "我们周五发布 launch，先跑测试", **OWNER.__dict__)
    for index in range(12):
        make_node(principal, user_id="xiaoming", type="fact", key=f"launch{index}",
                  title=f"launch fact {index} 发布", content="the launch is on Friday 周五发布 " * (index % 3 + 1))
    for index in range(3):
        make_node(principal, scope="workspace", workspace_id="home", type="constraint", key=f"rule{index}",
                  title=f"launch rule {index}", content="run the tests before the launch")
    request = ContextRequest(owner=OWNER, query="friday launch 发布")
    reads: dict = {}
    for asked in (first, second):
        budget = budget_resolve(asked)
        shared = context_build(principal=principal, request=request, budget=budget, record=False, reads=reads)
        alone = context_build(principal=principal, request=request, budget=budget, record=False)
        assert shared.block == alone.block and shared.used_memory_ids == alone.used_memory_ids
        assert [item.ref for item in shared.items] == [item.ref for item in alone.items]
        assert sorted((item.node_id, item.reason) for item in shared.omitted) == sorted(
            (item.node_id, item.reason) for item in alone.omitted)
    assert len(reads) == 1 and any(item.section == "relevant" for item in shared.items)


def test_an_earlier_question_comes_with_the_turn_that_answered_it(principal):
    """Episodic recall shows a matching question with the next turn of its session beneath it
    (the answer); a matching statement comes alone; a message is never shown twice."""
    old = Owner(workspace_id="home", user_id="xiaoming", session_id="old")
    append(principal, "Which gym did you join?", **old.__dict__)
    append(principal, "The one on Elm street, it opens at six.", role="assistant", **old.__dict__)
    append(principal, "I also like the swimming pool there.", **old.__dict__)
    append(principal, "Great, the pool is heated.", role="assistant", **old.__dict__)
    context = build(principal, "gym pool", owner=Owner(workspace_id="home", user_id="xiaoming", session_id="new"))
    lines = context.block.split("\n")
    asked = next(index for index, line in enumerate(lines) if "Which gym did you join?" in line)
    assert lines[asked + 1] == "  ↳ assistant: The one on Elm street, it opens at six."
    assert sum("Elm street" in line for line in lines) == 1
    statement = next(line for line in lines if "swimming pool" in line)
    assert lines[lines.index(statement) + 1:lines.index(statement) + 2] != ["  ↳ assistant: Great, the pool is heated."]
    followup = next(item for item in context.items if item.why == "followup")
    assert followup.after == next(item.obj.pk for item in context.items if "Which gym" in item.text)


def test_a_followup_is_left_out_with_its_question_and_not_shown_alone(principal):
    old = Owner(workspace_id="home", user_id="xiaoming", session_id="old")
    append(principal, "Which gym did you join? " + "long " * 60, **old.__dict__)
    append(principal, "Elm street.", role="assistant", **old.__dict__)
    context = build(principal, "gym", owner=Owner(workspace_id="home", user_id="xiaoming", session_id="new"),
                    budget={"max_chars": 120})
    assert "Elm street" not in context.block


def test_a_summary_whose_messages_are_all_shown_word_for_word_is_left_out(principal):
    """The demo's case: a short conversation's summary repeats the recent window and the
    earlier messages beside it; it is left out and its room goes to the rest."""
    first, second = append(principal, "以后做饭别给我推荐香菜", "我喜欢少油少辣", session_id="s1", user_id="u1")
    rest = append(principal, *(f"turn {i}" for i in range(6)), session_id="s1", user_id="u1")
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "", "u1"),
                                                          summary="用户不吃香菜，喜欢少油少辣；turn 0 … turn 5"))
    context = build(principal, "香菜 少油", owner=Owner(user_id="u1", session_id="s1"), budget={"recent_messages": 6})
    # The two turns before the window join it (SUMMARY_GAP_MAX), so it shows all the summary says.
    assert sorted(m.pk for m in context.section("recent_messages")) == [first.pk, second.pk, *(m.pk for m in rest)]
    assert context.section("earlier_messages") == []
    assert context.section("summary") == [] and "用户不吃香菜，喜欢少油少辣" not in context.block
    assert context.counts["summary_redundant"] == 1


def test_a_summary_of_a_turn_or_two_before_the_window_gives_way_to_them(principal):
    """A newcomer's find in the demo: the summary of messages 2–8 stood beside the window 3–8,
    repeating six turns. Up to SUMMARY_GAP_MAX turns before the window join it instead; with
    more, the window keeps its size and the summary stays."""
    for before, joined in ((1, True), (2, True), (3, False)):
        session_id = f"s{before}"
        earlier = append(principal, *(f"earlier {i}" for i in range(before)), session_id=session_id, user_id="u1")
        window = append(principal, *(f"turn {i}" for i in range(6)), session_id=session_id, user_id="u1")
        summary_append(principal=principal, data=SummaryInput(session=SessionRef(session_id, "", "u1"),
                                                              summary="a summary of every turn"))
        context = build(principal, "", owner=Owner(user_id="u1", session_id=session_id),
                        budget={"recent_messages": 6})
        shown = [m.pk for m in context.section("recent_messages")]
        assert sorted(shown) == [m.pk for m in (earlier if joined else []) + window]
        assert ("a summary of every turn" in context.block) is not joined
        assert context.counts["summary_redundant"] == int(joined)


def test_a_summary_covering_a_message_the_block_does_not_show_stays(principal):
    append(principal, "以后做饭别给我推荐香菜", "我喜欢少油少辣", "我对花生过敏", session_id="s1", user_id="u1")
    append(principal, *(f"turn {i}" for i in range(6)), session_id="s1", user_id="u1")
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "", "u1"),
                                                          summary="用户不吃香菜，喜欢少油少辣"))
    # No question: the three first turns are not shown, so the summary is all that says them.
    context = build(principal, "", owner=Owner(user_id="u1", session_id="s1"), budget={"recent_messages": 6})
    assert [item.obj.summary for item in context.items if item.section == "summary"] == ["用户不吃香菜，喜欢少油少辣"]
    assert context.counts["summary_redundant"] == 0
    # Nor when a turn it covers did not fit the budget: the summary is what fits of it.
    tight = build(principal, "", owner=Owner(user_id="u1", session_id="s1"), budget={"recent_messages": 9,
                                                                                   "max_chars": 90})
    assert tight.counts["summary_redundant"] == 0


def test_turns_said_after_the_summary_do_not_count_as_covered(principal):
    append(principal, "hello", session_id="s1", user_id="u1")
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "", "u1"), summary="the user said hello"))
    append(principal, "what did I say?", "anything else?", session_id="s1", user_id="u1")
    context = build(principal, "", owner=Owner(user_id="u1", session_id="s1"))
    assert context.counts["summary_redundant"] == 1  # "hello" is in the window
    assert "the user said hello" not in context.block
    assert sorted(m.content for m in context.section("recent_messages")) == ["anything else?", "hello", "what did I say?"]


def test_a_summary_covering_a_system_message_is_still_redundant_when_every_other_turn_is_shown(principal):
    """A newcomer's finding: the count included the agent's system message, which the block never
    shows, so such a summary always came back beside the turns it repeats."""
    append(principal, "You are a cooking assistant.", session_id="s1", user_id="u1", role="system")
    append(principal, "hello", "I like noodles", session_id="s1", user_id="u1")
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "", "u1"),
                                                          summary="the user likes noodles"))
    context = build(principal, "", owner=Owner(user_id="u1", session_id="s1"))
    assert context.counts["summary_redundant"] == 1 and "the user likes noodles" not in context.block
    assert sorted(m.content for m in context.section("recent_messages")) == ["I like noodles", "hello"]
    # with a turn the block does not show, it stays (here the one turn before the window joins it)
    append(principal, "and dumplings", "and rice", session_id="s1", user_id="u1")
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "", "u1"),
                                                          summary="the user likes noodles, dumplings and rice"))
    narrow = build(principal, "", owner=Owner(user_id="u1", session_id="s1"), budget={"recent_messages": 1})
    assert narrow.counts["summary_redundant"] == 0 and "the user likes noodles, dumplings and rice" in narrow.block


def test_past_the_system_messages_it_sets_aside_a_summary_is_never_called_redundant(principal):
    append(principal, *["Be brief."] * (UNSHOWN_COUNTED_MAX + 1), session_id="s1", user_id="u1", role="system")
    append(principal, "hello", session_id="s1", user_id="u1")
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "", "u1"), summary="said hello"))
    assert build(principal, "", owner=Owner(user_id="u1", session_id="s1")).counts["summary_redundant"] == 0


LONG_TURN = "I am planning the trip. " * 8 + "My passport number is X1234567 and I am allergic to peanuts."


def test_a_summary_stays_when_a_covered_turn_is_shown_only_as_an_excerpt(principal):
    """A newcomer's finding: a recent turn longer than a line is cut with "…"; the summary may be
    all that still says its end."""
    append(principal, LONG_TURN, "ok", session_id="s1", user_id="u1")
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "", "u1"),
                                                          summary="The user plans a trip; allergic to peanuts."))
    context = build(principal, "", owner=Owner(user_id="u1", session_id="s1"))
    assert any(item.text.endswith("…") for item in context.items if item.section == "recent_messages")
    assert "allergic to peanuts." in context.block and context.counts["summary_redundant"] == 0


def test_a_summary_stays_when_an_earlier_hit_or_its_follow_up_is_cut(principal):
    append(principal, "Hello!", "Where should we go in June?", LONG_TURN, *(f"turn {i}" for i in range(6)),
           session_id="s1", user_id="u1")  # three turns before the window: none joins it
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "", "u1"),
                                                          summary="June trip; passport X1234567; peanuts."))
    context = build(principal, "June trip passport", owner=Owner(user_id="u1", session_id="s1"),
                    budget={"recent_messages": 6})
    assert context.section("earlier_messages")  # the question and its reply, the reply cut
    assert context.counts["summary_redundant"] == 0 and "passport X1234567; peanuts." in context.block


def test_a_turn_whose_memory_was_corrected_is_not_recalled_beside_the_correction(principal):
    # A newcomer's finding: after "不对，我现在完全不吃辣了" superseded the memory taken from
    # "我特别喜欢吃辣", a new conversation's block still recalled the old turn as an earlier message.
    from memory.services.proposals import Proposal, proposal_apply

    old_ctx = {"workspace_id": "w1", "user_id": "u1", "session_id": "old"}
    liked, = append(principal, "我特别喜欢吃辣，川菜湘菜都行。", **old_ctx)
    unrelated, = append(principal, "我周末喜欢去爬山。", **old_ctx)  # no memory taken from it: still recalled
    first = proposal_apply(principal=principal, proposal=Proposal(
        operation="create", explicit_user_intent=True, reason="r", **old_ctx,
        node={"scope": "user", "type": "preference", "title": "用户喜欢吃辣", "source_message_ids": [liked.pk]}))
    fixed, = append(principal, "不对，我现在完全不吃辣了。", **old_ctx)
    proposal_apply(principal=principal, proposal=Proposal(
        operation="supersede", target_id=first.node_id, explicit_user_intent=True, reason="r", **old_ctx,
        node={"title": "用户不吃辣", "source_message_ids": [fixed.pk]}))
    owner = Owner(workspace_id="w1", user_id="u1", session_id="new")
    block = build(principal, "我喜欢吃辣吗？周末喜欢做什么？", owner=owner).block
    assert "用户不吃辣" in block and "我周末喜欢去爬山" in block
    assert "我特别喜欢吃辣" not in block


def test_under_a_tight_budget_a_critical_constraint_goes_in_before_session_notes(principal):
    # A newcomer's block of 60 characters held "用户晚上七点下班" and left the anaphylaxis out.
    allergy = make_node(principal, scope="user", user_id="u1", type="constraint", title="用户对虾过敏",
                        content="吃了会休克，随身带肾上腺素笔", importance=1.0)
    for title in ("用户晚上七点下班", "用户今天想吃面", "用户在减肥", "用户明天出差"):
        make_node(principal, scope="session", user_id="u1", workspace_id="w1", session_id="s1", type="fact",
                  title=title)
    for max_chars in (60, 100):
        context = build(principal, "晚饭吃什么", owner=Owner(workspace_id="w1", user_id="u1", session_id="s1"),
                        budget={"max_chars": max_chars})
        assert "用户对虾过敏" in context.block and len(context.block) <= max_chars, (max_chars, context.block)
        assert allergy.pk in context.used_memory_ids
    mild = make_node(principal, scope="user", user_id="u1", type="constraint", title="用户不喝冰水", importance=0.5)
    context = build(principal, "晚饭吃什么", owner=Owner(workspace_id="w1", user_id="u1", session_id="s1"),
                    budget={"max_chars": 60})
    assert mild.pk not in context.used_memory_ids  # only a critical one goes first


def _three_earlier_turns(principal):
    for index in range(3):  # one turn per session: no follow-ups
        append(principal, f"we planted roses in the garden bed number {index} " + "x" * 60, session_id=f"old{index}",
               user_id="u1", workspace_id="w1")
    append(principal, "hello", session_id="s1", user_id="u1", workspace_id="w1")


def test_a_layer_cap_that_leaves_items_out_is_named_in_the_warning_not_max_chars(principal):
    _three_earlier_turns(principal)
    context = build(principal, "garden roses", owner=Owner(workspace_id="w1", user_id="u1", session_id="s1"),
                    budget={"max_chars": 400, "top_n": 3, "l5_chars": 200})
    assert len(context.section("earlier_messages")) == 1 and len(context.block) < 400
    assert "2 item(s) left out to stay within l5_chars=200" in context.warnings
    assert not any("max_chars" in warning for warning in context.warnings)
    assert [(left.item.section, left.limit) for left in context.dropped] == [("earlier_messages", "l5_chars")] * 2
    assert context.counts["dropped_by_limit"] == {"l5_chars": 2}


def test_items_left_out_by_the_total_keep_the_max_chars_warning(principal):
    _three_earlier_turns(principal)
    context = build(principal, "garden roses", owner=Owner(workspace_id="w1", user_id="u1", session_id="s1"),
                    budget={"max_chars": 200, "top_n": 3})
    assert "2 item(s) left out to stay within max_chars=200" in context.warnings
    assert context.counts["dropped_by_limit"] == {"max_chars": 2}


def test_each_limit_that_left_items_out_has_its_own_clause(principal):
    _three_earlier_turns(principal)
    node = make_node(principal, user_id="u1", workspace_id="w1", type="fact", title="garden roses " + "y" * 150)
    append(principal, "and the roses? " + "z" * 150, session_id="s1", user_id="u1", workspace_id="w1")
    context = build(principal, "garden roses", owner=Owner(workspace_id="w1", user_id="u1", session_id="s1"),
                    budget={"max_chars": 300, "top_n": 3, "l5_chars": 150})
    # the node is over the L5 cap; the conversation's two turns go in before the earlier turns
    # the L5 share held back (RECENT_FIRST), which then no longer fit the total
    assert node.pk not in context.used_memory_ids and len(context.section("recent_messages")) == 2
    assert [warning for warning in context.warnings if "left out to stay within" in warning] == [
        "2 item(s) left out to stay within max_chars=300", "1 item(s) left out to stay within l5_chars=150"]
    assert [(left.item.section, left.limit) for left in context.dropped] == [
        ("relevant", "l5_chars"), ("earlier_messages", "max_chars"), ("earlier_messages", "max_chars")]


def test_a_follow_up_waits_for_its_message_when_the_share_holds_the_message_back(principal):
    append(principal, "shall we plant roses in the garden bed by the fence " + "x" * 60 + "?", session_id="old",
           user_id="u1", workspace_id="w1")
    append(principal, "yes, red ones", session_id="old", user_id="u1", workspace_id="w1", role="assistant")
    make_node(principal, user_id="u1", workspace_id="w1", type="fact", title="garden roses need water " + "y" * 30)
    append(principal, "hello", session_id="s1", user_id="u1", workspace_id="w1")
    context = build(principal, "garden roses", owner=Owner(workspace_id="w1", user_id="u1", session_id="s1"),
                    budget={"max_chars": 400, "top_n": 3})
    earlier = context.block.split("[Earlier messages]\n")[1].splitlines()
    assert earlier[0].endswith("x?") and earlier[1].startswith("  ↳ ") and "yes, red ones" in earlier[1]
    assert context.counts["dropped_for_budget"] == 0
