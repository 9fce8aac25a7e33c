"""A forgotten memory leaves the summaries of the conversations it was taken from (R-STORE
provable forgetting, R-CTX L3). After a forget, the conversation's summary still said
"用户: 记住，我最喜欢芒果冰淇淋，还有我对花生过敏。", and the block of that conversation injected it
under [Conversation summary]."""

import io

import pytest
from django.core.management import call_command

from memory.capture.summarize import RuleSummarizer
from memory.capture.summary_roll import summary_roll
from memory.models import HIDDEN_FOR_GOOD, AuditEvent, Message, Node, Session, Summary
from memory.selectors.nodes import Owner
from memory.services.forgetting import node_restore
from memory.services.proposals import Proposal, proposal_apply
from memory.services.sessions import SessionRef
from memory.services.summaries import SummaryInput, summary_append
from tests.helpers import append
from tests.memory.selectors.test_context import build
from tests.memory.services.test_forgotten_turns import OLD, forget, remember

SAME = Owner(**OLD)
OTHER = {**OLD, "session_id": "other"}


@pytest.fixture
def summarized(principal):
    both, = append(principal, "记住，我最喜欢芒果冰淇淋，还有我对花生过敏。", **OLD)
    append(principal, "好的，已经记下：你对花生过敏。", role="assistant", **OLD)
    append(principal, "我周末喜欢去爬山。", **OLD)
    mango = remember(principal, both, "用户最喜欢芒果冰淇淋")
    allergy = propose(principal, both, "用户对花生过敏", entities=["花生"])
    session = Session.objects.get(team=principal.team, external_id="old")
    summary = summary_roll(principal=principal, session=session, summarizer=RuleSummarizer(), max_chars=600)
    assert "花生" in summary.summary
    return summary, mango, allergy


def propose(principal, message, title, **node):
    """A user memory taken from `message`, as an agent proposes it (with the fields capture gives)."""
    return proposal_apply(principal=principal, proposal=Proposal(
        operation="create", explicit_user_intent=True, reason="r", **OLD,
        node={"scope": "user", "type": "constraint", "title": title, "source_message_ids": [message.pk], **node})).node_id


def avoid_onion(principal, message):
    return propose(principal, message, "用户不吃葱", type="preference", value_json="葱", domain="生活技能",
                   key="avoid_ingredient")


def latest(principal, session_id="old"):
    return Summary.objects.filter(team=principal.team, session__external_id=session_id).latest("pk")


@pytest.mark.parametrize("mode", ["soft", "hard"])
def test_the_conversations_summary_no_longer_says_it(principal, summarized, mode):
    summary, mango, allergy = summarized
    forget(principal, allergy, mode)
    stripped = latest(principal)
    assert "花生" not in stripped.summary and "我周末喜欢去爬山" in stripped.summary
    block = build(principal, "", owner=SAME).block  # neither in the summary nor in the recent window
    assert "花生" not in block and "user: 我周末喜欢去爬山" in block
    event = AuditEvent.objects.get(event_type=f"memory.node.{'deleted' if mode == 'soft' else 'hard_deleted'}")
    assert event.payload["stripped_summaries"] == 1


def test_list_items_and_a_goal_that_say_it_go_and_the_others_stay(principal, summarized):
    """What quotes the forgotten turn goes as the turn does, whole: the turn also said the mango
    ice cream, so its item goes too (the mango memory itself stays)."""
    summary, mango, allergy = summarized
    ref = SessionRef(session_id="old", user_id="u1", workspace_id="w1")
    append(principal, "帮我找个菜谱。", **OLD)
    summary_append(principal=principal, data=SummaryInput(
        session=ref, summary="用户想做一道不含花生的菜。", current_goal="找一个不含花生的菜谱",
        lists={"constraints": ["对花生过敏", "少油"], "preferences": ["喜欢芒果冰淇淋", "喜欢爬山"]}))
    forget(principal, allergy, "hard")
    stripped = latest(principal)
    assert (stripped.summary, stripped.current_goal, stripped.constraints, stripped.preferences) == (
        "[forgotten]", "", ["少油"], ["喜欢爬山"])


def test_another_conversations_summary_is_left_alone_unless_it_says_the_memory_again(principal, summarized):
    summary, mango, allergy = summarized
    append(principal, "花生酱太甜了，我不想吃。", **OTHER)  # a word of it, not the memory
    theirs = summary_roll(principal=principal, session=Session.objects.get(team=principal.team, external_id="other"),
                          summarizer=RuleSummarizer(), max_chars=600)
    append(principal, "我对花生过敏，吃了会起疹子。", **{**OTHER, "session_id": "third"})  # said again
    summary_roll(principal=principal, session=Session.objects.get(team=principal.team, external_id="third"),
                 summarizer=RuleSummarizer(), max_chars=600)
    forget(principal, allergy, "soft")
    assert latest(principal, "other").summary == theirs.summary
    assert "花生" not in latest(principal, "third").summary  # memory.services.forgotten_repeats


def test_a_restore_brings_the_memory_back_but_not_the_summarys_words(principal, summarized):
    summary, mango, allergy = summarized
    forget(principal, allergy, "soft")
    node_restore(principal=principal, node_id=allergy, reason="by mistake", workspace_id="w1")
    assert "花生" not in latest(principal).summary
    assert "用户对花生过敏" in build(principal, "花生", owner=SAME).block  # the memory itself is back


def test_forgetting_a_memory_that_quotes_nothing_changes_no_summary(principal, summarized):
    said, = append(principal, "我喜欢下雨天。", **OLD)
    rain = remember(principal, said, "用户喜欢下雨天")
    before = list(Summary.objects.values_list("pk", "summary"))
    forget(principal, rain, "hard")
    assert list(Summary.objects.values_list("pk", "summary")) == before
    assert AuditEvent.objects.get(event_type="memory.node.hard_deleted").payload["stripped_summaries"] == 0


def test_the_next_summary_and_the_next_capture_do_not_bring_it_back(principal, settings):
    """A review's find: the agent's memory of an uncaptured, unsummarised turn was hard-forgotten;
    seven small-talk turns later the summary roll and capture read the turn again, and the block
    injected "用户对花生过敏" twice."""
    settings.MEMORY_CAPTURE_THREADS = False
    said, = append(principal, "我对花生过敏，吃了会休克。", **OLD)
    append(principal, "好的，我记下了。", role="assistant", **OLD)
    allergy = propose(principal, said, "用户对花生过敏", entities=["花生"])
    forget(principal, allergy, "hard")
    for turn in range(4):
        append(principal, f"今天天气不错，我们聊点别的吧，第{turn}次。", **OLD)
        append(principal, "好呀。", role="assistant", **OLD)
    call_command("capture_run", stdout=io.StringIO())
    session = Session.objects.get(team=principal.team, external_id="old")
    summary_roll(principal=principal, session=session, summarizer=RuleSummarizer(), max_chars=600)
    assert not Node.objects.filter(team=principal.team, title__contains="花生").exists()
    assert not any("花生" in summary.summary or "花生" in str(summary.constraints)
                   for summary in Summary.objects.filter(team=principal.team))
    assert "花生" not in build(principal, "花生能吃吗", owner=SAME).block


def test_labelled_items_headings_and_one_character_foods_go_too(principal):
    said, = append(principal, "记住，我不吃葱。Alice: I am allergic to peanuts, they make me sick.", **OLD)
    onion = avoid_onion(principal, said)
    summary_append(principal=principal, data=SummaryInput(
        session=SessionRef(session_id="old", user_id="u1", workspace_id="w1"),
        summary="用户忌口：葱。\n葱的做法：不放。\n用户: 周末去爬山。",
        current_goal="做饭不放葱",
        lists={"constraints": ["不吃葱", "Alice: I am allergic to peanuts, they make me sick", "少油"],
               "preferences": ["Sure thing."]}))
    forget(principal, onion, "soft")
    stripped = latest(principal)
    assert (stripped.summary, stripped.current_goal, stripped.constraints, stripped.preferences) == (
        "用户: 周末去爬山。", "", ["少油"], ["Sure thing."])


def test_a_summary_left_with_nothing_is_not_injected_nor_counted(principal):
    said, = append(principal, "我对花生过敏。", **OLD)
    append(principal, "我周末喜欢去爬山。", "爬山很好。", **OLD)
    allergy = remember(principal, said, "用户对花生过敏", type="constraint")
    summary_append(principal=principal, data=SummaryInput(
        session=SessionRef(session_id="old", user_id="u1", workspace_id="w1"), summary="用户：我对花生过敏。"))
    forget(principal, allergy, "soft")
    block = build(principal, "", owner=SAME).block
    assert "[forgotten]" not in block and "Conversation summary" not in block
    assert "我周末喜欢去爬山" in block


def test_a_short_conversations_stripped_summary_does_not_repeat_its_turns(principal):
    """A review's find: after the forget, the summary of a four-turn conversation ("用户：我周末
    喜欢去爬山。 助手：爬山很好。") was shown beside the same two turns under Recent messages:
    the summary's count of the turns it covers still held the forgotten two."""
    said, = append(principal, "记住，我对花生过敏。", **OLD)
    append(principal, "好的，记下了。", role="assistant", **OLD)
    append(principal, "我周末喜欢去爬山。", **OLD)
    append(principal, "爬山很好。", role="assistant", **OLD)
    allergy = remember(principal, said, "用户对花生过敏", type="constraint")
    session = Session.objects.get(team=principal.team, external_id="old")
    summary_roll(principal=principal, session=session, summarizer=RuleSummarizer(), max_chars=600)
    forget(principal, allergy, "soft")
    block = build(principal, "", owner=SAME).block
    assert "花生" not in block and block.count("我周末喜欢去爬山") == 1


def test_a_restore_never_recalls_a_turn_a_hard_forget_hid(principal):
    """A second review's find: soft-forget the mango memory, hard-forget the allergy of the same
    turn, restore the mango memory: the restore cleared the mark the hard forget relied on."""
    both, = append(principal, "记住，我最喜欢芒果冰淇淋，还有我对花生过敏。", **OLD)
    mango = remember(principal, both, "用户最喜欢芒果冰淇淋")
    allergy = remember(principal, both, "用户对花生过敏", type="constraint")
    forget(principal, mango, "soft")
    forget(principal, allergy, "hard")
    node_restore(principal=principal, node_id=mango, reason="by mistake", workspace_id="w1")
    assert Message.objects.get(pk=both.pk).memory_forgotten_at == HIDDEN_FOR_GOOD
    assert "花生" not in build(principal, "花生", owner=SAME).block


def test_a_restore_keeps_hidden_what_another_forgotten_memory_still_hides(principal):
    """A third review's find: soft-forget the mango memory and the allergy of one turn, restore the
    mango memory: the assistant's answer "好的，已经记下：你对花生过敏…" was recalled again."""
    both, = append(principal, "记住，我最喜欢芒果冰淇淋，还有我对花生过敏。", **OLD)
    answer, = append(principal, "好的，已经记下：你对花生过敏，喜欢芒果冰淇淋。", role="assistant", **OLD)
    mango = remember(principal, both, "用户最喜欢芒果冰淇淋")
    allergy = remember(principal, both, "用户对花生过敏", type="constraint")
    forget(principal, mango, "soft")
    forget(principal, allergy, "soft")
    node_restore(principal=principal, node_id=mango, reason="by mistake", workspace_id="w1")
    assert Message.objects.filter(pk__in=[both.pk, answer.pk], memory_forgotten_at__isnull=True).count() == 0
    assert "花生" not in build(principal, "花生", owner=SAME).block
    node_restore(principal=principal, node_id=allergy, reason="by mistake", workspace_id="w1")
    assert Message.objects.filter(pk__in=[both.pk, answer.pk], memory_forgotten_at__isnull=True).count() == 2


def test_other_turns_that_name_the_same_thing_are_left_alone(principal, settings):
    """What a forget hides is the turns its memory was taken from, not every turn that names the
    same place: forgetting the home in 上海 had hidden "提醒我周五去上海前带护照" for good, and its
    task was never captured (a third review)."""
    settings.MEMORY_CAPTURE_THREADS = False
    said, = append(principal, "记住，我住在上海。", **OLD)
    home = propose(principal, said, "用户住在上海", entities=["上海"], type="fact")
    trip, = append(principal, "提醒我周五去上海前带护照。", **OLD)
    forget(principal, home, "hard")
    assert Message.objects.get(pk=said.pk).forgotten_for_good
    assert Message.objects.get(pk=trip.pk).memory_forgotten_at is None
    call_command("capture_run", stdout=io.StringIO())
    assert Node.objects.filter(team=principal.team, type="task", title__contains="护照").exists()


def test_the_forgotten_marker_is_not_carried_into_the_next_summary(principal):
    said, = append(principal, "我对花生过敏。", **OLD)
    allergy = remember(principal, said, "用户对花生过敏", type="constraint")
    session = Session.objects.get(team=principal.team, external_id="old")
    summary_roll(principal=principal, session=session, summarizer=RuleSummarizer(), max_chars=600)
    forget(principal, allergy, "soft")
    assert latest(principal).summary == "[forgotten]"
    append(principal, "我周末喜欢去爬山。", **OLD)
    following = summary_roll(principal=principal, session=session, summarizer=RuleSummarizer(), max_chars=600)
    assert "[forgotten]" not in following.summary and "爬山" in following.summary


def test_a_one_character_food_is_stripped_only_as_a_word_of_its_own(principal):
    said, = append(principal, "记住，我不吃葱。", **OLD)
    onion = avoid_onion(principal, said)
    summary_append(principal=principal, data=SummaryInput(
        session=SessionRef(session_id="old", user_id="u1", workspace_id="w1"),
        summary="用户很喜欢吃洋葱圈。做饭不放葱。", lists={"preferences": ["喜欢葱油饼", "葱和蒜都不要"]}))
    forget(principal, onion, "soft")
    stripped = latest(principal)
    assert (stripped.summary, stripped.preferences) == ("用户很喜欢吃洋葱圈。", ["喜欢葱油饼"])
