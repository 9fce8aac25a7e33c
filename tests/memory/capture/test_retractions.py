"""What the user takes back is no memory (R-EXTRACT): 我不吃香菜，开玩笑的 and "I hate cilantro.
Just kidding" stored an avoided ingredient; only the rules about the user's home, work and
name read jokes before. Every rule now reads them (Language.retraction, reading.taken_back_before)."""

import time
from datetime import UTC, datetime

import pytest

from memory.capture.base import ExtractionContext, MessageView
from memory.capture.rules import RuleExtractor
from tests.memory.capture.test_rules import extract


def said(operations: list[dict]) -> list[tuple]:
    return [(operation["node"].get("key"), operation["node"]["value_json"]) for operation in operations]


@pytest.mark.parametrize(("text", "expected"), [
    # taken back in its own sentence: every rule, both languages
    ("我不吃香菜，开玩笑的", []),
    ("我对花生过敏，骗你的", []),
    ("我喜欢吃火锅，假的", []),
    ("我是素食者，开玩笑的", []),
    ("我不吃香菜，才怪", []),
    ("哈哈，我不吃辣，逗你玩呢", []),
    ("我不吃猪肉，我跟你开玩笑的", []),
    ("记住我不吃香菜，开玩笑的", []),
    ("I hate cilantro, just kidding", []),
    ("I'm allergic to peanuts, jk", []),
    ("I'm allergic to shellfish haha jk", []),
    ("I hate cilantro lol just kidding", []),
    ("Remember that I'm vegan, just kidding", []),
    # ...by the sentence after it, when that one opens with the taking back
    ("我不吃香菜。开玩笑的。", []),
    ("我对花生过敏。骗你的！", []),
    ("I don't eat pork. Kidding!", []),
    ("I'm vegan. Not really.", []),
    ("I'm allergic to peanuts. Haha, no, just kidding.", []),
    # what is said after the taking back stands
    ("我不吃辣，哈哈，开玩笑的，其实我超爱吃辣", [("flavor_profile", {"spicy": "high"})]),
    ("我住在杭州，开玩笑的，我住在成都", [("home", {"lives": "成都"})]),
    ("I hate cilantro. Just kidding, I love garlic", [("preferred_ingredient", "garlic")]),
    # only the sentence it ends or the one before it
    ("我对花生过敏。我不吃香菜，开玩笑的", [("allergy", "花生")]),
    # no taking back: an assurance, disbelief, a laugh, talk about jokes
    ("我对花生过敏，我不是开玩笑的", [("allergy", "花生")]),
    ("我不吃香菜，骗你是小狗", [("avoid_ingredient", "香菜")]),
    ("我不吃香菜，你别开玩笑了", [("avoid_ingredient", "香菜")]),
    ("我对花生过敏，开玩笑吧？", [("allergy", "花生")]),
    ("I'm allergic to peanuts, I'm not kidding", [("allergy", "peanuts")]),
    ("I'm not joking, I'm allergic to peanuts", [("allergy", "peanuts")]),
    ("I'm allergic to peanuts. No, I'm not kidding.", [("allergy", "peanuts")]),
    ("You're kidding! I'm vegan", [("dietary_restriction", "vegan")]),
    ("I'm vegan lol", [("dietary_restriction", "vegan")]),
    ("I hate cilantro. Kidding aside, I'm allergic to shellfish",
     [("avoid_ingredient", "cilantro"), ("allergy", "shellfish")]),
    ("Joking about it helps. I'm vegan", [("dietary_restriction", "vegan")]),
    ("I don't like spicy food. Not really a fan of sour either", [("flavor_profile", {"spicy": "none"})]),
])
def test_what_the_user_takes_back_is_no_memory(text, expected):
    assert said(extract(text)) == expected


def conversation(*turns: tuple[str, str]) -> list[dict]:
    now = datetime(2026, 12, 3, tzinfo=UTC)
    messages = tuple(MessageView(id=100 + index, role=role, content=text, created_at=now)
                     for index, (role, text) in enumerate(turns))
    return RuleExtractor().extract(ExtractionContext(messages=messages, existing=(), workspace_id="", user_id="u1",
                                                     session_id="s1", now=now)).operations


def test_the_users_next_message_takes_back_the_last_statement_when_no_one_spoke_between():
    assert conversation(("user", "我对花生过敏"), ("user", "开玩笑的")) == []
    assert said(conversation(("user", "I hate cilantro"), ("user", "Just kidding, I love garlic"))) == [
        ("preferred_ingredient", "garlic")]
    # the assistant spoke between: "No, not really" answers it, and takes back nothing
    assert said(conversation(("user", "I'm allergic to peanuts"), ("assistant", "Do you like spicy food?"),
                             ("user", "No, not really."))) == [("allergy", "peanuts")]
    # a statement held for the next sentence is kept when the window ends
    assert said(conversation(("user", "我对花生过敏"))) == [("allergy", "花生")]
    # ...and keeps its source message and explicit marker
    [operation] = conversation(("user", "记住，我对花生过敏"), ("user", "嗯"))
    assert operation["node"]["source_message_ids"] == [100] and operation["explicit_user_intent"] is True


# A newcomer's: a claim the user denies was kept as the user's allergy, a saying the user denies
# as their taste, and 我不吃素 ("I'm not vegetarian") as "avoid 素" — "avoid vegetables".
@pytest.mark.parametrize(("text", "expected"), [
    ("My boss said I'm allergic to shellfish, but that's wrong.", []),
    ("我同事说我对海鲜过敏，其实不是。", []),
    ("I'm allergic to peanuts. That's not true, I'm allergic to cashews.", [(None, "cashews")]),
    ("I never said I love sushi, my friend does.", []),
    ("I didn't say I hate cilantro", []),
    ("我从来没说过我爱吃寿司，是我朋友爱吃。", []),
    ("我不是说我不吃香菜，我是说少放点", []),
    # ...not a denial of something else before it, nor a saying told
    ("I never said it before but I'm allergic to peanuts", [("allergy", "peanuts")]),
    ("我之前没提过，但我对花生过敏", [("allergy", "花生")]),
    ("I told you I'm allergic to peanuts", [("allergy", "peanuts")]),
    ("我跟你说过我对花生过敏", [("allergy", "花生")]),
    ("My doctor said I'm allergic to penicillin", [(None, "penicillin")]),
    ("I love spicy food, it's true", [("flavor_profile", {"spicy": "high"})]),
    ("我住在杭州，不对，我住在成都", [("home", {"lives": "成都"})]),
    # no allergy at all is no allergy to "没有任何" (a constraint, injected first)
    ("我没有任何过敏", [("no_allergies", "none")]),
    ("I'm not allergic to anything", [("no_allergies", "none")]),
    ("I'm not allergic to anything except shellfish", [("allergy", "shellfish")]),
    ("I don't have any allergies except peanuts", [("allergy", "peanuts")]),
    ("I have no allergies, but I hate cilantro", [("no_allergies", "none"), ("avoid_ingredient", "cilantro")]),
    ("我没有什么过敏的", [("no_allergies", "none")]),
    ("我对任何坚果都过敏", [("allergy", "坚果")]),
    # 素 is no ingredient; not eating 荤 is a vegetarian
    ("我不吃素", []),
    ("记住我老婆吃素，我不吃素。", [(None, "我老婆吃素,我不吃素")]),
    ("我不吃荤", [("dietary_restriction", "素食")]),
    ("我不吃素和香菜", [("avoid_ingredient", "香菜")]),
    ("我不吃素菜", [("avoid_ingredient", "素菜")]),
])
def test_what_the_user_denies_is_no_memory(text, expected):
    assert said(extract(text)) == expected


# A review's: what only looks like taking back keeps the statement — an assurance, someone else's
# joke, talk about jokes, a joke asked about, a joke about something else.
@pytest.mark.parametrize(("text", "expected"), [
    ("我对花生过敏，我不是跟你开玩笑的", [("allergy", "花生")]),
    ("我对花生过敏，没跟你开玩笑呢", [("allergy", "花生")]),
    ("我对花生过敏，我怎么会骗你呢", [("allergy", "花生")]),
    ("我不吃香菜，他骗你的", [("avoid_ingredient", "香菜")]),
    ("我对花生过敏，你以为我在开玩笑呢", [("allergy", "花生")]),
    ("我喜欢吃辣，老公总拿这个开玩笑的", [("flavor_profile", {"spicy": "high"})]),
    ("I'm allergic to peanuts. Kidding? No.", [("allergy", "peanuts")]),
    ("I'm allergic to shrimp; I was joking earlier about the crab.", [("allergy", "shrimp")]),
    ("I'm allergic to peanuts, and I'm not just kidding", [("allergy", "peanuts")]),
    ("I'm allergic to peanuts, I'm kidding you not", [("allergy", "peanuts")]),
    # ...and more ways of taking back, after marks repeated too
    ("我对花生过敏！！！开玩笑的", []),
    ("I'm allergic to peanuts!!! Just kidding", []),
    ("我对花生过敏。好吧，开玩笑的", []),
    ("我对花生过敏，刚才是开玩笑的", []),
    ("我对花生过敏，唬你的", []),
    ("I'm allergic to peanuts. Scratch that.", []),
    ("I'm allergic to peanuts jk lol", []),
])
def test_what_only_looks_like_taking_back_keeps_the_statement(text, expected):
    assert said(extract(text)) == expected


@pytest.mark.parametrize("text", ["哈" * 28 + "我不吃香菜", "我不吃香菜，" + "哈" * 40, "啊" * 30 + "我对花生过敏",
                                  "haha " * 200 + "x", "lol " * 300 + "jk x"])
def test_a_run_of_laughter_is_read_in_linear_time(text):
    """A review's: 28 哈 before a statement took 80 s (a nested repeat in the taking-back pattern)."""
    started = time.process_time()
    extract(text)
    assert time.process_time() - started < 1.0


# A second review's: telling something not said before is no denial, and "it's wrong" of a taste
# takes nothing back.
@pytest.mark.parametrize(("text", "expected"), [
    ("我好像没提过我对花生过敏", [("allergy", "花生")]),
    ("我之前没提过我是素食者", [("dietary_restriction", "素食")]),
    ("医生不是说过我对青霉素过敏嘛", [(None, "青霉素")]),
    ("Oh I didn't tell you that I moved to Hamburg last month", [("home", {"lives": "Hamburg"})]),
    ("I never told you this: I'm allergic to peanuts", [("allergy", "peanuts")]),
    ("I love steak. It's wrong, I know.", [(None, "steak")]),
    ("我没说过我爱吃寿司", []),
    # 荤 on some days only is no vegetarian
    ("我初一十五不吃荤", [("avoid_ingredient", "荤")]),
    ("我从来不吃荤", [("dietary_restriction", "素食")]),
])
def test_telling_what_was_not_said_before_is_no_denial(text, expected):
    assert said(extract(text)) == expected
