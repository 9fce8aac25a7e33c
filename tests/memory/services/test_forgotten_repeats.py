"""Turns that say a forgotten memory again go with it (R-STORE provable forgetting). A newcomer
said "我对花生过敏" in one conversation without 记住 and again after "记住，我对花生过敏" in another;
hard-forgetting the memory left both turns recalled as earlier messages, and the next capture
run learned the allergy back twice, as session memories."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from memory.models import HIDDEN_FOR_GOOD, AuditEvent, Message, Node, NodeSource, NodeStatus
from memory.selectors.nodes import Owner
from memory.services import forgotten_repeats
from memory.services.forgetting import ForgetSelector, memory_forget, node_restore
from memory.services.node_input import NodeInput
from memory.services.upsert import node_cite, node_upsert
from tests.helpers import append
from tests.memory.capture.test_rules_apply import capture
from tests.memory.selectors.test_context import build

FIRST = {"workspace_id": "w1", "user_id": "u1", "session_id": "first"}
SECOND = {"workspace_id": "w1", "user_id": "u1", "session_id": "second"}
LATER = Owner(workspace_id="w1", user_id="u1", session_id="later")


def forget(principal, node_id, mode):
    return memory_forget(principal=principal, selector=ForgetSelector(owner=Owner(**SECOND), node_id=node_id),
                         mode=mode, reason="the user asked", confirm=True)


def hidden(*messages):
    return [Message.objects.get(pk=message.pk).memory_forgotten_at for message in messages]


@pytest.fixture
def allergy(principal, settings):
    """The newcomer's conversations: the memory comes from the second's 记住; the first's turn and
    the second's later one were never captured (no 记住: they wait for the idle sweep)."""
    settings.MEMORY_CAPTURE_THREADS = False
    passing, = append(principal, "我对花生过敏，吃了会起疹子", **FIRST)
    reply, = append(principal, "好的，我会注意的", role="assistant", **FIRST)
    unrelated, = append(principal, "提醒我周五买点花生酱给同事", **FIRST)
    [asked], _ = capture(principal, "记住，我对花生过敏", owner=SECOND)
    again, = append(principal, "上次说过了，我对花生过敏，很严重", **SECOND)
    other_user, = append(principal, "我对花生过敏", workspace_id="w1", user_id="u2", session_id="theirs")
    node = Node.objects.get(team=principal.team, key="allergy", scope="user", user_id="u1")
    return node, asked, passing, reply, again, unrelated, other_user


def test_a_hard_forget_hides_the_turns_that_say_it_again_and_capture_does_not_learn_it_back(principal, allergy):
    node, asked, passing, reply, again, unrelated, other_user = allergy
    assert "上次说过了，我对花生过敏" in build(principal, "我能吃花生吗", owner=LATER).block
    forget(principal, node.pk, "hard")
    assert hidden(asked, passing, reply, again) == [HIDDEN_FOR_GOOD] * 4  # the answer to a repeat too
    assert hidden(unrelated, other_user) == [None, None]  # a word of it alone; another user's turn
    assert "过敏" not in build(principal, "我能吃花生吗", owner=LATER).block
    call_command("capture_run", stdout=io.StringIO())
    assert not Node.objects.filter(team=principal.team, user_id="u1", key="allergy", status=NodeStatus.ACTIVE).exists()
    event = AuditEvent.objects.get(event_type="memory.node.hard_deleted", node_id=node.pk)
    assert (event.payload["repeated_messages"], event.payload["hidden_messages"]) == (2, 4)



def test_a_repeat_after_a_word_with_dui_is_found_too(principal, settings):
    """对了我对花生过敏: the capture rules once read no allergy after 对了, so the forget did not
    find the turn and it stayed recalled."""
    settings.MEMORY_CAPTURE_THREADS = False
    capture(principal, "记住，我对花生过敏", owner=SECOND)
    again, = append(principal, "对了我对花生过敏，别忘了", **FIRST)
    node = Node.objects.get(team=principal.team, key="allergy", scope="user")
    forget(principal, node.pk, "hard")
    assert hidden(again) == [HIDDEN_FOR_GOOD]
    assert "过敏" not in build(principal, "我能吃花生吗", owner=LATER).block

def test_a_soft_forget_links_the_repeats_and_a_restore_recalls_them(principal, allergy):
    node, asked, passing, reply, again, unrelated, other_user = allergy
    forget(principal, node.pk, "soft")
    assert sorted(NodeSource.objects.filter(node=node).values_list("message_id", flat=True)) == sorted(
        [asked.pk, passing.pk, again.pk])
    assert None not in hidden(asked, passing, reply, again)
    node_restore(principal=principal, node_id=node.pk, reason="by mistake", workspace_id="w1")
    assert hidden(asked, passing, reply, again) == [None] * 4
    assert "我对花生过敏，吃了会起疹子" in build(principal, "我能吃花生吗", owner=LATER).block


def test_a_home_is_found_said_again_by_meaning_not_by_its_word(principal, settings):
    settings.MEMORY_CAPTURE_THREADS = False
    [said], _ = capture(principal, "记住，我住在杭州", owner=SECOND)
    again, trip, moved, elsewhere = append(principal, "对，我住在杭州", "提醒我周五去杭州前带护照", "我朋友住在杭州",
                                           "我和老公住在杭州", **FIRST)[:4]
    home = Node.objects.get(team=principal.team, key="home")
    forget(principal, home.pk, "hard")
    assert hidden(said, again, elsewhere) == [HIDDEN_FOR_GOOD] * 3
    assert hidden(trip, moved) == [None, None]  # a trip, and a friend's home


def test_an_agents_note_is_found_said_again_by_its_title(principal, settings):
    settings.MEMORY_CAPTURE_THREADS = False
    said, = append(principal, "今天聊点别的", **SECOND)
    again, = append(principal, "记住，我喜欢爬山", **FIRST)  # capture's note: the same title
    from memory.services.proposals import Proposal, proposal_apply
    node_id = proposal_apply(principal=principal, proposal=Proposal(
        operation="create", explicit_user_intent=True, reason="r", **SECOND,
        node={"scope": "user", "type": "preference", "title": "用户喜欢爬山", "source_message_ids": [said.pk]})).node_id
    forget(principal, node_id, "hard")
    assert hidden(again) == [HIDDEN_FOR_GOOD]


def test_at_most_so_many_turns_are_read(principal, settings, monkeypatch):
    settings.MEMORY_CAPTURE_THREADS = False
    [said], _ = capture(principal, "记住，我对花生过敏", owner=SECOND)
    older, newer = append(principal, "我对花生过敏", "我对花生过敏啊", **FIRST)
    monkeypatch.setattr(forgotten_repeats, "REPEATS_READ_MAX", 1)
    node = Node.objects.get(team=principal.team, key="allergy")
    assert forgotten_repeats.repeated_in(principal, [node]).turns == {node.pk: [newer.pk]}  # the newest first


def test_at_most_so_many_characters_are_read_and_of_a_long_turn_its_start(principal, settings, monkeypatch):
    settings.MEMORY_CAPTURE_THREADS = False
    capture(principal, "记住，我对花生过敏", owner=SECOND)
    older, newer = append(principal, "我对花生过敏", "我对花生过敏啊", **FIRST)
    node = Node.objects.get(team=principal.team, key="allergy")
    monkeypatch.setattr(forgotten_repeats, "REPEATS_CHARS_MAX", len("我对花生过敏啊") + 3)
    assert forgotten_repeats.repeated_in(principal, [node]).turns == {node.pk: [newer.pk]}
    monkeypatch.undo()
    long_turn, = append(principal, "今天天气不错。" * 700 + "我对花生过敏", **FIRST)  # past what capture reads
    assert forgotten_repeats.repeated_in(principal, [node]).turns == {node.pk: [older.pk, newer.pk]}


def test_a_forget_of_several_memories_reads_each_turn_once(principal, settings, monkeypatch):
    """A review's find: "forget everything of mine" over ~650 memories took 16–19 s instead of
    2.4 s when each memory read its turns on its own."""
    settings.MEMORY_CAPTURE_THREADS = False
    capture(principal, "记住，我对花生过敏", owner=SECOND)
    capture(principal, "记住，我住在杭州", owner=SECOND)
    allergy_again, home_again, neither = append(principal, "我对花生过敏", "我住在杭州", "我喜欢杭州的花生糖", **FIRST)
    read = []
    extract = forgotten_repeats.RuleExtractor.extract
    monkeypatch.setattr(forgotten_repeats.RuleExtractor, "extract",
                        lambda self, context: read.append(context.messages[0].id) or extract(self, context))
    result = memory_forget(principal=principal, selector=ForgetSelector(owner=Owner(**SECOND), scope="user"),
                           mode="hard", reason="forget everything of mine", confirm=True)
    assert len(result.deleted_ids) == 2
    assert len(read) == len(set(read)) == 5  # each turn holding a word of either once (the two sources too)
    assert hidden(allergy_again, home_again, neither) == [HIDDEN_FOR_GOOD, HIDDEN_FOR_GOOD, None]
    payloads = [event.payload["repeated_messages"] for event in AuditEvent.objects.filter(
        event_type="memory.node.hard_deleted").order_by("pk")]
    assert payloads == [1, 1]


def test_a_repeat_may_say_the_value_with_more_words(principal, settings):
    """A review's finds: "a peanut allergy" and 杭州市 were not peanuts and 杭州, and the next
    capture run learned the forgotten memory back from them."""
    settings.MEMORY_CAPTURE_THREADS = False
    passing, = append(principal, "I have a peanut allergy, so no satay please", **FIRST)
    capture(principal, "Remember that I'm allergic to peanuts", owner=SECOND)
    allergy = Node.objects.get(team=principal.team, key="allergy")
    home_said, = append(principal, "我住在杭州市，离西湖不远", **FIRST)
    capture(principal, "记住，我住在杭州", owner=SECOND)
    home = Node.objects.get(team=principal.team, key="home")
    for node in (allergy, home):
        forget(principal, node.pk, "hard")
    assert hidden(passing, home_said) == [HIDDEN_FOR_GOOD, HIDDEN_FOR_GOOD]
    call_command("capture_run", stdout=io.StringIO())
    assert not Node.objects.filter(team=principal.team, key__in=["allergy", "home"], status=NodeStatus.ACTIVE).exists()


def test_only_the_users_own_conversations_the_key_may_read_are_searched(principal, settings):
    """A review's finds: a key limited to one workspace hid the user's turn in another, and a
    memory citing a turn of another user's conversation hid that user's other turn."""
    from dataclasses import replace

    from memory.services.nodes import node_delete
    settings.MEMORY_CAPTURE_THREADS = False
    capture(principal, "记住，我对花生过敏", owner=SECOND)
    elsewhere, = append(principal, "我对花生过敏，很严重", workspace_id="w2", user_id="u1", session_id="w2-chat")
    theirs, their_again = append(principal, "你好", "我对花生过敏，真的", workspace_id="w1", user_id="u2",
                                 session_id="theirs")
    node = Node.objects.get(team=principal.team, key="allergy")
    NodeSource.objects.create(node=node, message=theirs, position=5)  # a source in another user's conversation
    limited = replace(principal, workspace_ids=frozenset({"w1"}))
    node_delete(principal=limited, node_id=node.pk, mode="soft", reason="the user asked", workspace_id="w1")
    assert hidden(elsewhere, their_again) == [None, None]


def test_a_value_that_holds_the_memorys_words_but_says_more_is_another_memory(principal, settings):
    """杭州湾 is not 杭州, nor 花生酱 花生: those turns stay recalled."""
    settings.MEMORY_CAPTURE_THREADS = False
    bay, butter, no, question, daughter = append(
        principal, "我住在杭州湾", "我对花生酱过敏", "我不对花生过敏了", "我对花生过敏吗", "我女儿对花生过敏", **FIRST)
    capture(principal, "记住，我住在杭州", owner=SECOND)
    capture(principal, "记住，我对花生过敏", owner=SECOND)
    for key in ("home", "allergy"):
        forget(principal, Node.objects.get(team=principal.team, key=key).pk, "hard")
    assert hidden(bay, butter, no, question, daughter) == [None] * 5


def test_a_turn_that_says_something_else_too_keeps_that_and_is_hidden(principal, settings):
    """A third review's find: 我对花生和虾过敏 was hidden for good with a forgotten peanut allergy,
    and the shrimp allergy it also said, never captured, was lost; left recalled instead, the next
    capture run learned the forgotten allergy back from it. The forget now captures what else the
    turn says, as capture would have, and hides it."""
    settings.MEMORY_CAPTURE_THREADS = False
    both, = append(principal, "我对花生和虾过敏，吃了会起疹子", **FIRST)
    capture(principal, "记住，我对花生过敏", owner=SECOND)
    peanut = Node.objects.get(team=principal.team, key="allergy")
    forget(principal, peanut.pk, "hard")
    assert hidden(both) == [HIDDEN_FOR_GOOD]
    shrimp = Node.objects.get(team=principal.team, key="allergy", status=NodeStatus.ACTIVE)
    assert (shrimp.value_json, list(shrimp.source_links.values_list("message_id", flat=True))) == ("虾", [both.pk])
    assert AuditEvent.objects.filter(event_type="memory.node.created", node_id=shrimp.pk).exists()
    call_command("capture_run", stdout=io.StringIO())
    allergies = Node.objects.filter(team=principal.team, key="allergy", status=NodeStatus.ACTIVE)
    assert list(allergies.values_list("value_json", flat=True)) == ["虾"]
    block = build(principal, "我能吃花生吗", owner=Owner(**FIRST)).block
    assert "花生" not in block and "虾" in block


def test_a_turn_capture_already_read_is_hidden_and_nothing_is_learned_again(principal, settings):
    """What capture took from a turn is already stored, or was refused or forgotten since: the
    forget hides the turn without reading it into memories again."""
    settings.MEMORY_CAPTURE_THREADS = False
    capture(principal, "记住，我对花生和虾过敏", owner=SECOND)
    allergies = Node.objects.filter(team=principal.team, key="allergy")
    shrimp = allergies.get(value_json="虾")
    forget(principal, shrimp.pk, "hard")
    [said] = Message.objects.filter(team=principal.team, content="记住，我对花生和虾过敏")
    assert hidden(said) == [HIDDEN_FOR_GOOD]
    forget(principal, allergies.get(value_json="花生").pk, "hard")
    assert not allergies.filter(status=NodeStatus.ACTIVE).exists()


def test_a_soft_forget_keeps_the_other_memory_and_a_restore_recalls_the_turn(principal, settings):
    settings.MEMORY_CAPTURE_THREADS = False
    both, = append(principal, "我对花生和虾过敏", **FIRST)
    capture(principal, "记住，我对花生过敏", owner=SECOND)
    peanut = Node.objects.get(team=principal.team, key="allergy")
    forget(principal, peanut.pk, "soft")
    assert hidden(both) != [None]
    assert Node.objects.filter(team=principal.team, key="allergy", value_json="虾", status=NodeStatus.ACTIVE).exists()
    node_restore(principal=principal, node_id=peanut.pk, reason="by mistake", workspace_id="w1")
    assert hidden(both) == [None]


def test_a_source_turn_that_says_something_else_too_keeps_that(principal, settings):
    """The memory's own source turn, not yet read by capture (an agent cited it), keeps the other
    memory it says when the forget hides it."""
    settings.MEMORY_CAPTURE_THREADS = False
    both, = append(principal, "我对花生和虾过敏", **FIRST)
    capture(principal, "记住，我对花生过敏", owner=SECOND)
    peanut = Node.objects.get(team=principal.team, key="allergy")
    node_cite(principal=principal, node_id=peanut.pk, message_ids=[both.pk], reason="the agent cites it")
    forget(principal, peanut.pk, "hard")
    assert hidden(both) == [HIDDEN_FOR_GOOD]
    kept = Node.objects.get(team=principal.team, key="allergy", status=NodeStatus.ACTIVE)
    assert kept.value_json == "虾"
    assert AuditEvent.objects.get(event_type="memory.node.created", node_id=kept.pk).reason == forgotten_repeats.KEPT_REASON


def test_a_forget_by_selector_keeps_nothing_it_would_forget(principal, settings):
    """A review's find: "forget all my allergies" (key allergy) kept the shrimp allergy that
    "I'm allergic to peanuts and shrimp" also said, so one allergy stayed after forgetting all."""
    settings.MEMORY_CAPTURE_THREADS = False
    both, = append(principal, "I'm allergic to peanuts and shrimp", **FIRST)
    capture(principal, "Remember, I'm allergic to peanuts", owner=SECOND)
    result = memory_forget(principal=principal, selector=ForgetSelector(owner=Owner(**SECOND), key="allergy"),
                           mode="hard", reason="forget all my allergies", confirm=True)
    assert (result.message, hidden(both)) == ("forgot 1 memory (hard)", [HIDDEN_FOR_GOOD])
    assert not Node.objects.filter(team=principal.team, key="allergy").exists()
    assert AuditEvent.objects.get(event_type="memory.forget").payload["kept_memories"] == 0


def test_a_forget_by_id_says_what_it_kept(principal, settings):
    settings.MEMORY_CAPTURE_THREADS = False
    append(principal, "I'm allergic to peanuts and shrimp", **FIRST)
    capture(principal, "Remember, I'm allergic to peanuts", owner=SECOND)
    result = forget(principal, Node.objects.get(team=principal.team, key="allergy").pk, "hard")
    assert result.message == "forgot 1 memory (hard); kept 1 other memory that the turns it hid also said"
    assert AuditEvent.objects.get(event_type="memory.forget").payload["kept_memories"] == 1
    assert list(Node.objects.filter(team=principal.team, key="allergy").values_list("value_json", flat=True)) == ["shrimp"]


def test_what_is_kept_is_read_as_capture_reads_it_in_its_conversation(principal, settings):
    """A review's find: read without the conversation's workspace and memories, a decision was
    kept as a session memory (capture makes it a workspace one) and "周报写完了" made a stray task
    instead of closing the open one."""
    settings.MEMORY_CAPTURE_THREADS = False
    capture(principal, "待办：写周报", owner=FIRST)
    task = Node.objects.get(team=principal.team, type="task")
    turn, = append(principal, "我对花生过敏。我们决定用 Redis 做队列。周报写完了", **FIRST)
    capture(principal, "记住，我对花生过敏", owner=SECOND)
    forget(principal, Node.objects.get(team=principal.team, key="allergy").pk, "hard")
    assert hidden(turn) == [HIDDEN_FOR_GOOD]
    decision = Node.objects.get(team=principal.team, type="decision", status=NodeStatus.ACTIVE)
    assert decision.scope == "workspace"
    task.refresh_from_db()
    assert task.status != NodeStatus.ACTIVE  # closed: superseded by the done version
    assert Node.objects.filter(team=principal.team, type="task", status=NodeStatus.ACTIVE).count() == 1


def test_a_turn_a_soft_forget_hid_keeps_what_else_it_says_when_a_hard_forget_hides_it_for_good(principal, settings):
    """A review's find: the turn, hidden by the soft forget of an agent's note (in words the rules
    do not read, so nothing was kept then) before capture read it, was hidden for good by a hard
    forget of the peanut allergy, and the shrimp allergy it also said was lost (the note's restore
    would have recalled it)."""
    settings.MEMORY_CAPTURE_THREADS = False
    both, = append(principal, "我对花生和虾过敏，吃了会起疹子", **FIRST)
    note = node_upsert(principal=principal, data=NodeInput(
        scope="user", user_id="u1", workspace_id="w1", type="fact", title="第一次聊天的要点",
        source_message_ids=(both.pk,))).node
    forget(principal, note.pk, "soft")
    assert hidden(both) != [None]
    assert not Node.objects.filter(team=principal.team, key="allergy").exists()  # the rules read no note in it
    call_command("capture_run", stdout=io.StringIO())  # capture skips the hidden turn
    capture(principal, "记住，我对花生过敏", owner=SECOND)
    forget(principal, Node.objects.get(team=principal.team, key="allergy").pk, "hard")
    assert hidden(both) == [HIDDEN_FOR_GOOD]
    active = Node.objects.filter(team=principal.team, key="allergy", status=NodeStatus.ACTIVE)
    assert list(active.values_list("value_json", flat=True)) == ["虾"]


def test_a_forget_by_selector_keeps_nothing_it_would_forget_by_a_synonym_of_its_key(principal, settings):
    """A review's find: forgetting by key disliked_ingredient (the schema's synonym of
    avoid_ingredient) kept 葱 from "我不吃香菜和葱"."""
    settings.MEMORY_CAPTURE_THREADS = False
    append(principal, "我不吃香菜和葱", **FIRST)
    capture(principal, "记住，我不吃香菜", owner=SECOND)
    result = memory_forget(principal=principal, selector=ForgetSelector(
        owner=Owner(**SECOND), domain="生活技能", key="disliked_ingredient"), mode="hard", reason="不记了", confirm=True)
    assert result.message == "forgot 1 memory (hard)"
    assert not Node.objects.filter(team=principal.team, key="avoid_ingredient").exists()


def test_a_kept_memory_does_not_replace_what_the_user_said_since(principal, settings):
    """A review's find: 我住在杭州, said before "记住，我搬到上海了" and read only by the forget of
    the peanut allergy it also said, moved the user back to 杭州."""
    settings.MEMORY_CAPTURE_THREADS = False
    append(principal, "我对花生过敏，我住在杭州", **FIRST)
    capture(principal, "记住，我住在杭州", owner=SECOND)
    capture(principal, "记住，我搬到上海了", owner=SECOND)
    capture(principal, "记住，我对花生过敏", owner=SECOND)
    forget(principal, Node.objects.get(team=principal.team, key="allergy").pk, "hard")
    homes = Node.objects.filter(team=principal.team, key="home", status=NodeStatus.ACTIVE)
    assert list(homes.values_list("value_json", flat=True)) == [{"lives": "上海"}]


def test_a_passing_state_said_long_ago_is_not_kept(principal, settings):
    """A review's find: "今天有点发烧" said a month ago was kept as today's fever, expiring tomorrow."""
    settings.MEMORY_CAPTURE_THREADS = False
    both, = append(principal, "我对花生和虾过敏，今天有点发烧", **FIRST)
    Message.objects.filter(pk=both.pk).update(created_at=timezone.now() - timedelta(days=30))
    capture(principal, "记住，我对花生过敏", owner=SECOND)
    forget(principal, Node.objects.get(team=principal.team, key="allergy").pk, "hard")
    active = Node.objects.filter(team=principal.team, status=NodeStatus.ACTIVE)
    assert not active.filter(title__contains="发烧").exists()
    assert "发烧" not in build(principal, "我今天怎么样", owner=Owner(**FIRST)).block
