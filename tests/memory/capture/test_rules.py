"""The rule-based extractor on hand-built windows: the seed's examples exactly, in Chinese and
English, explicit intent, scope, expiry, supersede, and silence on chit-chat (R-EXTRACT)."""

from datetime import UTC, datetime, timedelta

import pytest

from memory.capture.base import ExtractionContext, MessageView, NodeView
from memory.capture.rules import RuleExtractor

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
DIET = ["生活技能", "做饭", "饮食偏好"]


def context(*texts: str, existing=(), workspace_id: str = "", role: str = "user") -> ExtractionContext:
    messages = tuple(MessageView(id=100 + index, role=role, content=text, created_at=NOW)
                     for index, text in enumerate(texts))
    return ExtractionContext(messages=messages, existing=tuple(existing), workspace_id=workspace_id, user_id="u1",
                             session_id="s1", now=NOW)


def extract(*texts: str, **options) -> list[dict]:
    return RuleExtractor().extract(context(*texts, **options)).operations


def active(node_id: int, key: str, value, *, scope="user", type="preference", domain="生活技能", title="") -> NodeView:
    return NodeView(id=node_id, scope=scope, type=type, domain=domain, key=key, value_json=value, title=title, content="")


def brief(operation: dict) -> tuple:
    node = operation["node"]
    return (operation["operation"], node.get("scope"), node.get("type"), node.get("key"), node["value_json"],
            operation["explicit_user_intent"], node["source_message_ids"])


# ---- the seed's examples -------------------------------------------------------------------


def test_the_seed_sentence_gives_two_explicit_user_preferences_bound_to_it():
    operations = extract("以后做饭别给我推荐香菜，我喜欢少油少辣。")
    assert [operation["node"] for operation in operations] == [
        {"scope": "user", "type": "preference", "domain": "生活技能", "category_path": DIET, "key": "avoid_ingredient",
         "value_json": "香菜", "title": "用户不吃香菜", "content": "推荐菜谱时避免香菜。", "confidence": 0.98,
         "importance": 0.9, "tags": ["忌口", "菜谱推荐"], "entities": ["香菜"], "source_message_ids": [100]},
        {"scope": "user", "type": "preference", "domain": "生活技能", "category_path": DIET, "key": "flavor_profile",
         "value_json": {"oil": "low", "spicy": "low"}, "title": "用户偏好少油少辣", "content": "推荐菜谱时优先少油少辣。",
         "confidence": 0.95, "importance": 0.85, "tags": ["口味", "菜谱推荐"], "entities": ["少油", "少辣"],
         "source_message_ids": [100]},
    ]
    assert all(operation["operation"] == "create" and operation["explicit_user_intent"] for operation in operations)
    assert all("以后" in operation["reason"] for operation in operations)


def test_accepting_a_little_coriander_supersedes_the_avoided_ingredient():
    operations = extract("香菜现在可以接受一点，但不要太多。", existing=[active(7, "avoid_ingredient", "香菜")])
    assert operations == [{
        "operation": "supersede", "target_id": 7, "explicit_user_intent": True,
        "reason": "zh.limit: replaces node 7 (avoid_ingredient)",
        "node": {"key": "limit_ingredient", "value_json": {"ingredient": "香菜", "amount": "少量"},
                 "title": "用户可接受少量香菜", "content": "香菜可以放一点，但不要太多。", "confidence": 0.95,
                 "importance": 0.85, "tags": ["忌口", "菜谱推荐"], "entities": ["香菜"], "source_message_ids": [100]},
    }]


def test_an_upset_stomach_today_is_a_session_constraint_that_expires():
    [operation] = extract("今天有点胃不舒服")
    assert brief(operation) == ("create", "session", "constraint", "health_condition", "胃不舒服", False, [100])
    assert operation["node"]["domain"] == "生活技能"
    assert datetime.fromisoformat(operation["node"]["expires_at"]) == NOW + timedelta(hours=24)
    assert operation["node"]["expires_at"].endswith("+00:00")


def test_the_english_seed_sentences_give_the_same_values():
    first = extract("From now on, don't recommend cilantro when I cook. I like low oil and not too spicy.")
    assert [brief(operation) for operation in first] == [
        ("create", "user", "preference", "avoid_ingredient", "cilantro", True, [100]),
        ("create", "user", "preference", "flavor_profile", {"oil": "low", "spicy": "low"}, True, [100]),
    ]
    second = extract("Actually a little cilantro is fine now, just not too much",
                     existing=[active(8, "avoid_ingredient", "cilantro")])
    assert [(op["operation"], op["target_id"], op["node"]["key"], op["node"]["value_json"], op["explicit_user_intent"])
            for op in second] == [("supersede", 8, "limit_ingredient", {"ingredient": "cilantro", "amount": "少量"}, True)]
    [third] = extract("I have an upset stomach today")
    assert brief(third) == ("create", "session", "constraint", "health_condition", "upset stomach", False, [100])
    assert datetime.fromisoformat(third["node"]["expires_at"]) == NOW + timedelta(hours=24)


def test_traditional_and_full_width_text_gives_the_simplified_value():
    [operation] = extract("記住，我不吃香菜！")
    assert brief(operation) == ("create", "user", "preference", "avoid_ingredient", "香菜", True, [100])


# ---- explicit intent and scope -------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "记住，我不吃香菜", "以后都别给我推荐香菜", "别再给我推荐香菜了", "帮我记一下，我不吃香菜",
    "Remember that I don't eat cilantro", "From now on I don't eat cilantro", "Don't ever recommend cilantro to me",
    "Always remind me to drink water", "Please remember I'm allergic to sesame.", "Remember I don't eat cilantro",
])
def test_explicit_intent_words_make_user_memory(text):
    operations = extract(text)
    assert operations and all(operation["explicit_user_intent"] for operation in operations)
    assert {operation["node"]["scope"] for operation in operations} <= {"user", "session"}
    assert any(operation["node"]["scope"] == "user" or operation["node"]["type"] == "task" for operation in operations)


@pytest.mark.parametrize("text", [
    "Remember that I'm vegan, ok?", "记住，我不吃香菜，知道吗？", "Remember, I hate cilantro! Do you?",
    # (asked, but about the user: a reminder; a breaker's find)
    "Remember that I hate cilantro? Don't put it in anything.", "Remember I don't eat cilantro?", "记住了吗？我对花生过敏。",
    "你记住了吗？我不吃香菜",
])
def test_a_tag_question_after_the_request_keeps_it_explicit(text):
    operations = extract(text)
    assert operations and all(operation["explicit_user_intent"] for operation in operations)
    assert {operation["node"]["scope"] for operation in operations} == {"user"}


# LoCoMo: "Remember that epic block in Game 7…? … why I love basketball" asks the listener to recall;
# it made "likes basketball" the user's for every conversation.
@pytest.mark.parametrize("text", [
    "Remember that epic block in Game 7 of the '16 Finals? That kind of heart is why I love basketball.",
    "Remember that trip to Rome? Anyway, I love pasta.",
])
def test_asking_whether_the_listener_remembers_is_no_request_to_keep(text):
    operations = extract(text)
    assert operations and not any(operation["explicit_user_intent"] for operation in operations)
    assert {operation["node"]["scope"] for operation in operations} == {"session"}


def test_without_explicit_intent_a_preference_stays_in_the_session():
    [operation] = extract("我不吃香菜")
    assert brief(operation) == ("create", "session", "preference", "avoid_ingredient", "香菜", False, [100])
    assert "kept in the session" in operation["reason"]


def test_only_user_messages_are_sources():
    assert extract("以后做饭别给我推荐香菜，我喜欢少油少辣。", role="assistant") == []


@pytest.mark.parametrize("text,expected", [
    ("我喜欢画画", ("preference", "general", "", "画画", "用户喜欢画画")),
    ("I love hiking", ("preference", "general", "", "hiking", "User likes hiking")),
    ("I love experimenting in the kitchen, it's fun", ("preference", "general", "", "experimenting in the kitchen",
                                                      "User likes experimenting in the kitchen")),
    ("I hate cats", ("preference", "general", "", "cats", "User dislikes cats")),
    ("I don't eat pork", ("preference", "生活技能", "avoid_ingredient", "pork", "User avoids pork")),
    ("我对花生过敏", ("constraint", "生活技能", "allergy", "花生", "用户对花生过敏")),
    ("I'm allergic to peanuts", ("constraint", "生活技能", "allergy", "peanuts", "User is allergic to peanuts")),
    ("I'm allergic to cats", ("constraint", "general", "", "cats", "User is allergic to cats")),
    ("我喜欢川菜", ("preference", "生活技能", "preferred_cuisine", "川菜", "用户喜欢川菜")),
    ("I love Italian food", ("preference", "生活技能", "preferred_cuisine", "Italian", "User likes Italian food")),
    ("I'm vegetarian", ("preference", "生活技能", "dietary_restriction", "vegetarian", "User is vegetarian")),
    ("My dog is called Max", ("fact", "general", "", {"named": "Max", "who": "dog"}, "User's dog is named Max")),
    ("我住在上海", ("fact", "general", "home", {"lives": "上海"}, "用户住在上海")),
])
def test_likes_dislikes_allergies_and_facts(text, expected):
    [operation] = extract(text)
    node = operation["node"]
    assert (node["type"], node["domain"], node.get("key", ""), node["value_json"], node["title"]) == expected
    assert node["scope"] == "session" and node["source_message_ids"] == [100]


def test_a_decision_belongs_to_the_workspace_or_else_the_session():
    [in_workspace] = extract("We decided to use PostgreSQL for the store.", workspace_id="proj")
    assert brief(in_workspace) == ("create", "workspace", "decision", None, "use PostgreSQL for the store", False, [100])
    [zh] = extract("我们决定用 Redis 做队列", workspace_id="proj")
    assert (zh["node"]["scope"], zh["node"]["title"]) == ("workspace", "决定：用 Redis 做队列")
    [alone] = extract("Let's go with the blue design.")
    assert (alone["node"]["scope"], alone["node"]["type"]) == ("session", "decision")


# LoCoMo: a story of meeting neighbours ended "We decided to do doggy playdates", which became a
# decision of the workspace, told to every user of it.
@pytest.mark.parametrize("text,title,scope", [
    ("I ran into this super nice couple who had a dog. We decided to do doggy playdates. Our pets need friends.",
     "Decision: do doggy playdates", "session"),
    ("My wife and I talked. We decided to sell the car.", "Decision: sell the car", "session"),
    ("Remember, we decided to go to Hawaii for the honeymoon", "Decision: go to Hawaii for the honeymoon", "user"),
    ("我和老公商量了，我们决定下个月去三亚", "决定：下个月去三亚", "session"),
])
def test_a_decision_of_the_users_own_circle_is_theirs_not_the_workspaces(text, title, scope):
    [operation] = extract(text, workspace_id="proj")
    assert (operation["node"]["type"], operation["node"]["title"], operation["node"]["scope"]) == ("decision", title, scope)


@pytest.mark.parametrize("text,task", [
    ("TODO: write the report", "write the report"),
    ("待办：写周报", "写周报"),
])
def test_tasks_are_open_tasks_of_the_workspace(text, task):
    [operation] = extract(text, workspace_id="home")
    assert brief(operation) == ("create", "workspace", "task", None, {"task": task, "status": "open"}, False, [100])


# A newcomer's "Remember: I need to call my doctor about my test results" became a workspace task,
# injected into every other user's context of that workspace: the user's own tasks are theirs.
@pytest.mark.parametrize("text,task,scope,explicit", [
    ("I need to buy milk", "buy milk", "session", False),
    ("提醒我交电费", "交电费", "session", False),
    ("Remember: I need to call my doctor about my test results", "call my doctor about my test results", "user", True),
    ("记住，提醒我交电费", "交电费", "user", True),
])
def test_the_users_own_tasks_are_theirs_not_the_workspaces(text, task, scope, explicit):
    [operation] = extract(text, workspace_id="home")
    assert brief(operation) == ("create", scope, "task", None, {"task": task, "status": "open"}, explicit, [100])


@pytest.mark.parametrize("text", ["以后都别提醒我去健身房了", "不用提醒我交电费", "Don't remind me to go to the gym",
                                  "No need to remind me to call mom"])
def test_asking_not_to_be_reminded_is_no_task(text):
    assert [operation["node"]["type"] for operation in extract(text)] != ["task"]


def test_a_task_said_done_supersedes_the_open_task():
    task = active(9, "", {"task": "write the report", "status": "open"}, scope="workspace", type="task",
                  domain="general", title="To do: write the report")
    [operation] = extract("I'm done with the report.", existing=[task], workspace_id="home")
    assert (operation["operation"], operation["target_id"], operation["node"]["value_json"],
            operation["node"]["title"]) == ("supersede", 9, {"task": "write the report", "status": "done"},
                                            "Done: write the report")
    zh_task = active(10, "", {"task": "写周报", "status": "open"}, scope="workspace", type="task", domain="general")
    [zh] = extract("周报写完了", existing=[zh_task], workspace_id="home")
    assert (zh["operation"], zh["target_id"], zh["node"]["value_json"]["status"]) == ("supersede", 10, "done")


@pytest.mark.parametrize("text,task", [
    ("我完成了心理治疗的疗程，终于不再失眠了。", "心理治疗的疗程"),
    ("我们合作完成了项目", "项目"),
    ("Done: quarterly report", "quarterly report"),
])
def test_a_done_that_closes_no_open_task_stays_in_the_session(text, task):
    """A review's find: 我完成了心理治疗的疗程 with no open task became the workspace's done task
    (user_id empty), injected into another user's context in that workspace. Closing an open
    workspace task still supersedes it there (above)."""
    [operation] = extract(text, workspace_id="family")
    assert brief(operation)[:3] == ("create", "session", "task")
    assert operation["node"]["value_json"] == {"task": task, "status": "done"}
    assert not operation["explicit_user_intent"]


def test_a_vague_done_with_nothing_open_proposes_nothing():
    extraction = RuleExtractor().extract(context("I just finished this cute little bookmark!"))
    assert extraction.operations == [] and "names no active memory" in extraction.notes[0]


@pytest.mark.parametrize("text,old_value,new_value", [
    ("不是周三，是周四", "周三", "周四"),
    ("I meant Thursday, not Wednesday", "Wednesday", "Thursday"),
    ("Actually it's Thursday, not Wednesday", "Wednesday", "Thursday"),
])
def test_a_correction_supersedes_the_memory_holding_the_old_value(text, old_value, new_value):
    meeting = active(11, "meeting_day", old_value, scope="session", type="fact", domain="general",
                     title=f"Meeting on {old_value}")
    [operation] = extract(text, existing=[meeting])
    assert (operation["operation"], operation["target_id"], operation["node"]["value_json"],
            operation["node"]["title"]) == ("supersede", 11, new_value, f"Meeting on {new_value}")


def test_a_correction_matching_nothing_is_kept_as_a_correction_note():
    [operation] = extract("不是周三，是周四")
    assert brief(operation) == ("create", "session", "correction", None, {"from": "周三", "to": "周四"}, False, [100])


def test_a_flavor_correction_changes_only_the_corrected_part():
    flavor = active(12, "flavor_profile", {"oil": "low", "spicy": "low"}, title="用户偏好少油少辣")
    [operation] = extract("不是少辣，是不辣", existing=[flavor])
    assert (operation["target_id"], operation["node"]["value_json"], operation["node"]["title"]) == (
        12, {"oil": "low", "spicy": "none"}, "用户偏好少油不辣")


# ---- time, windows, duplicates ------------------------------------------------------------


def test_a_passing_state_never_supersedes_a_lasting_memory():
    [operation] = extract("今天可以吃一点香菜", existing=[active(7, "avoid_ingredient", "香菜")])
    assert brief(operation) == ("create", "session", "preference", "limit_ingredient",
                                {"ingredient": "香菜", "amount": "少量"}, False, [100])
    assert operation["node"]["title"].startswith("（暂时）") and "expires_at" in operation["node"]


def test_a_passing_taste_is_a_temporary_flavor_constraint():
    [operation] = extract("Tonight I want something not spicy please")
    assert brief(operation) == ("create", "session", "constraint", "flavor_profile", {"spicy": "none"}, False, [100])
    assert datetime.fromisoformat(operation["node"]["expires_at"]) == NOW + timedelta(hours=24)


def test_from_today_on_is_lasting_not_temporary():
    [operation] = extract("从今天开始我不吃香菜")
    assert operation["node"]["scope"] == "user" and "expires_at" not in operation["node"]


def test_a_later_message_of_the_window_replaces_the_earlier_proposal():
    operations = extract("以后做饭别给我推荐香菜，我喜欢少油少辣。", "今晚吃什么？", "香菜现在可以接受一点，但不要太多。")
    assert [brief(operation) for operation in operations] == [
        ("create", "user", "preference", "limit_ingredient", {"ingredient": "香菜", "amount": "少量"}, True, [100, 102]),
        ("create", "user", "preference", "flavor_profile", {"oil": "low", "spicy": "low"}, True, [100]),
    ]


def test_what_is_already_remembered_is_not_proposed_again():
    extraction = RuleExtractor().extract(context("以后做饭别给我推荐香菜", existing=[active(7, "avoid_ingredient", "香菜")]))
    assert extraction.operations == [] and extraction.notes == ["already remembered as node 7: 用户不吃香菜"]
    assert extraction.repeats == [(7, (100,))]  # said again: the job links the message to node 7


def test_the_same_statement_twice_in_a_window_is_one_proposal_with_both_sources():
    [operation] = extract("I'm lactose intolerant.", "Yeah, since I'm lactose intolerant I use oat milk.")
    assert operation["node"]["source_message_ids"] == [100, 101]


# ---- silence ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "你好", "What's the weather?", "ok thanks", "哈哈好的", "谢谢！", "I love that!", "I love your turtles so much!",
    "Thanks for always being there for me.", "They're the reason why I never give up.", "I remember when we met.",
    "I need to relax.", "我会记住的", "不要太多", "以后再说吧", "", "   ",
    "Connecting with the things I love makes writing even more fun.", "I love escaping to that world.",
])
def test_chit_chat_gives_no_operations(text):
    assert extract(text) == []


# A newcomer's conversation: a negated flavour read as a wish for it, and family members' tastes
# and allergies taken for the user's own.
@pytest.mark.parametrize(("text", "expected"), [
    ("医生让我别吃辣了", [("flavor_profile", {"spicy": "none"})]),
    ("不要吃辣了", [("flavor_profile", {"spicy": "none"})]),
    ("我不想吃辣", [("flavor_profile", {"spicy": "none"})]),
    ("以后别少放油", []),  # a negated wish for less says nothing certain
    ("记住，我喜欢吃辣", [("flavor_profile", {"spicy": "high"})]),
    ("我女儿不爱吃青菜", []),
    ("我女儿今天发烧了", []),
    ("我妈对花生过敏", []),
    ("我女儿花生过敏", []),
    ("我家狗不吃鸡肉", []),
    ("我对花生过敏", [("allergy", "花生")]),
    ("其他都行，我不吃香菜", [("avoid_ingredient", "香菜")]),
])
def test_negated_flavours_and_other_peoples_tastes(text, expected):
    assert [(operation["node"]["key"], operation["node"]["value_json"]) for operation in extract(text)] == expected


# A 对 before the one that governs the allergy: a discourse word (对了, 对呀) or a verb (我对我妈说)
# ran the match from the first 对, read "了我对虾" as the item and dropped the allergy, even one
# the user asked to keep (对了记住我对花生过敏), so a forget did not find it said again either.
@pytest.mark.parametrize(("text", "expected"), [
    ("对了我对虾过敏", [("allergy", "虾")]),
    ("哦对了我对虾过敏。", [("allergy", "虾")]),
    ("对呀我对芒果过敏", [("allergy", "芒果")]),
    ("对了记住我对花生过敏", [("allergy", "花生")]),
    ("我对我妈说我对花生过敏", [("allergy", "花生")]),
    ("我对对虾过敏", [("allergy", "虾")]),
    ("我妈对我说她对花生过敏", []),
    ("对了我妈对花生过敏", []),
    ("对了我女儿对花生过敏", []),
    ("对了我对花生不过敏", []),
    ("对了我也对虾过敏", [("allergy", "虾")]),
    ("对了我真的对虾过敏", [("allergy", "虾")]),
    ("对了我最近有点对芒果过敏", [("allergy", "芒果")]),
    # ...and 对 in another's name still says it is theirs (对方, 对面的人), as does a subject after 对了
    ("对方对虾过敏", []),
    ("对面的人对花生过敏", []),
    ("我对面的人对虾过敏", []),
    ("对门对虾过敏", []),
    ("我的对手对虾过敏", []),
    ("对了你对虾过敏", []),
    ("对呀您对虾过敏", []),
    ("对了小明对花生过敏", []),
    ("对了很多人对花生过敏", []),
    ("我对虾对蟹都过敏", []),  # not a note "对蟹都" either
    # ...while the user's own allergy said just before keeps the next one the user's
    ("我既对花生过敏又对芒果过敏", [("allergy", "花生"), ("allergy", "芒果")]),
    ("我对虾过敏还对蟹过敏", [("allergy", "虾"), ("allergy", "蟹")]),
    ("我对虾过敏、对蟹过敏", [("allergy", "虾"), ("allergy", "蟹")]),
    ("我对虾过敏对蟹过敏", [("allergy", "虾"), ("allergy", "蟹")]),
])
def test_an_earlier_dui_does_not_hide_the_allergy(text, expected):
    assert [(operation["node"]["key"], operation["node"]["value_json"]) for operation in extract(text)] == expected


# A supposition is no fact (Supposition), whatever rule would read it: 如果我对花生过敏怎么办 stored
# an allergy, 假如我是素食者 a diet, "Suppose I'm allergic to shellfish" an allergy, 如果我们决定用
# React a decision. What settles the supposition (its consequence, a request, another's condition
# giving way to the user) and a supposition in another clause leave the statement a fact.
@pytest.mark.parametrize(("text", "expected"), [
    ("如果我对花生过敏怎么办", []),
    ("我要是对花生过敏就麻烦了", []),
    ("假如我对虾过敏，还能吃什么", []),
    ("万一我对海鲜过敏呢", []),
    ("倘若我对海鲜过敏", []),
    ("如果我不吃辣，你推荐什么", []),
    ("我不吃辣的话，你推荐什么", []),
    ("要是我不吃香菜呢", []),
    ("如果我喜欢吃辣怎么办", []),
    ("假设我爱吃川菜", []),
    ("假如我是素食者，该吃什么", []),
    ("万一我感冒了怎么办", []),
    ("如果我需要加班", []),
    ("如果我们决定用React", []),
    ("如果你觉得我不吃辣", []),
    ("Suppose I'm allergic to shellfish.", []),
    ("Imagine I'm allergic to peanuts.", []),
    ("Let's say I'm vegetarian.", []),
    ("If I'm vegetarian, what should I cook?", []),
    ("Assuming I'm allergic to nuts, what can I eat?", []),
    ("If you think I'm vegetarian you're wrong", []),
    ("If it turns out I'm allergic to peanuts, what should I do?", []),
    ("If they tell me I'm allergic to peanuts", []),
    ("Suppose you discover I'm allergic to gluten", []),
    ("What if there was a chance I'm allergic to nuts", []),
    ("万一我本来就对花生过敏呢", []),
    ("如果到时候我对花生过敏怎么办", []),
    ("如果你发现我对花生过敏怎么办", []),
    ("要是你告诉我我对花生过敏呢", []),
    ("我要是过敏", []),
    ("要是我吃花生会过敏怎么办", []),
    ("如果我吃虾会过敏，还能吃什么", []),
    ("要是我海鲜过敏", []),
    ("我对花生过敏的话吃什么", []),
    ("我是素食者的话吃什么", []),
    ("如果明天我对花生过敏", []),
    ("如果检查结果显示我对花生过敏怎么办", []),
    ("如果我老了不能吃辣怎么办", []),
    ("设想一下我住在上海", []),
    ("If I find out I'm allergic to shellfish, what should I do?", []),
    ("If my doctor says I'm allergic to peanuts", []),
    ("If tomorrow I'm vegan, what then?", []),
    ("Hypothetically speaking, I'm allergic to shellfish", []),
    ("If so, I'm vegan", []),
    ("假如说，我是素食者", []),
    ("Hypothetically, I'm allergic to peanuts.", []),
    ("Unless I'm allergic to gluten, pasta is fine.", []),
    # the consequence of the user's own supposition, in the next clauses or after 就/then
    ("要是我怀孕了，我就不能吃生鱼片", []),
    ("要是我怀孕了我就不能吃生鱼片", []),
    ("如果我怀孕了，那我就不吃生鱼片了", []),
    ("如果我们搬去成都，我们就得吃辣", []),
    ("If I get pregnant, I can't eat sushi.", []),
    ("If I'm vegan then I can't eat honey", []),
    ("Say I'm vegan, what would you cook?", []),
    ("Say I am allergic to nuts.", []),
    ("OK, say I'm vegetarian, what then?", []),
    ("Say I'm allergic to tree nuts, then I can't have sushi.", []),
    ("Say that I'm vegan.", []),
    # ...not a hedge about the saying, not when the user eats, not a point of its own after it
    ("如果我没记错，我对花生过敏", [("allergy", "花生")]),
    ("如果我有空就去跑步，记住我对花生过敏", [("allergy", "花生")]),
    ("如果我有空，我就去跑步，对了我对花生过敏", [("allergy", "花生")]),
    ("如果你做饭，我就不吃香菜", [("avoid_ingredient", "香菜")]),
    ("If I remember right, I'm allergic to peanuts.", [("allergy", "peanuts")]),
    ("If I'm not mistaken, I'm allergic to peanuts.", [("allergy", "peanuts")]),
    ("If I get pregnant, I can't eat sushi. By the way I'm vegan.", [("dietary_restriction", "vegan")]),
    ("If I'm late, start without me, also I'm vegan", [("dietary_restriction", "vegan")]),
    ("I'd say I'm vegan mostly", [("dietary_restriction", "vegan")]),
    ("I eat mostly plants, say I'm vegetarian 90% of the time", [("dietary_restriction", "vegetarian")]),
    # ...nor a fact after a condition that is not said as its consequence, nor after a hedge
    ("If we go out for dinner, I'm allergic to shellfish", [("allergy", "shellfish")]),
    ("如果我们晚上出去吃，我对海鲜过敏", [("allergy", "海鲜")]),
    ("如果我点外卖，我都不要香菜", [("avoid_ingredient", "香菜")]),
    ("如果我让你推荐菜，别忘了我对花生过敏", [("allergy", "花生")]),
    ("如果我有空就去你家，我对花生过敏", [("allergy", "花生")]),
    ("要是我沾到虾，就浑身起疹子，我对虾过敏", [("allergy", "虾")]),
    ("如果我没看错，我对芒果过敏", [("allergy", "芒果")]),
    ("如果我没有记错，我对花生过敏", [("allergy", "花生")]),
    ("如果我之前没说过的话，我对花生过敏", [("allergy", "花生")]),
    ("如果我跟你说实话，我就不吃香菜", [("avoid_ingredient", "香菜")]),
    ("In case I didn't mention it, I'm allergic to peanuts", [("allergy", "peanuts")]),
    ("If I'm being honest, I can't eat pork", [("avoid_ingredient", "pork")]),
    ("If I'm not wrong, I'm allergic to peanuts", [("allergy", "peanuts")]),
    ("If I get pregnant, I can't eat sushi, and I'm allergic to peanuts", [("allergy", "peanuts")]),
    ("如果我怀孕了, by the way, I'm allergic to peanuts", [("allergy", "peanuts")]),
    # ...nor after a condition of what the user does rather than is (only a change or a state of
    # theirs has consequences: 怀孕, 是素食者, 搬去成都; "get pregnant", "I'm vegan", "move")
    ("如果我们点外卖，我就不要葱", [("avoid_ingredient", "葱")]),
    ("要是我们聚餐，我就不吃香菜", [("avoid_ingredient", "香菜")]),
    ("如果我没记混的话，我就是对芒果过敏", [("allergy", "芒果")]),  # 就是: stress, no consequence
    ("如果我之前没说，我就是对花生过敏", [("allergy", "花生")]),
    ("如果我吃素，我就不能吃鸡蛋", []),
    ("如果我是素食者，那我就不吃鸡蛋", []),
    ("If we order takeout, I can't have dairy", [("avoid_ingredient", "dairy")]),
    ("In case we order Thai, I can't eat peanuts", [("avoid_ingredient", "peanuts")]),
    ("If we go out, I'll tell them I'm allergic to shellfish", [("allergy", "shellfish")]),
    ("In case I wasn't clear, I can't eat gluten", [("avoid_ingredient", "gluten")]),
    ("If we're talking allergies then I'm allergic to peanuts", [("allergy", "peanuts")]),
    ("If I go vegan, I won't eat honey", []),
    ("If I'm pregnant, I can't eat sushi.", []),
    ("If I'm home tonight, I'll make pasta but I don't eat pork", [("avoid_ingredient", "pork")]),
    ("If I get pregnant, I can't drink but also I can't eat sushi", []),
    ("如果我是在家吃，我就不吃辣", [("flavor_profile", {"spicy": "none"})]),
    # words kept as said (a note) that ask or suppose with no consequence
    ("记住，如果我对花生过敏怎么办？", []),
    ("Remember, suppose I'm vegan.", []),
    ("记住，我明天几点开会呢", []),
    # settled, or in another clause: the user's
    ("如果你推荐菜的话记住我对花生过敏", [("allergy", "花生")]),
    ("要是做饭记得我对花生过敏", [("allergy", "花生")]),
    ("如果你推荐菜我对花生过敏", [("allergy", "花生")]),
    ("如果要做饭就别放辣", [("avoid_ingredient", "辣")]),
    ("我对花生过敏，万一误食要去医院", [("allergy", "花生")]),
    ("主要是我对花生过敏", [("allergy", "花生")]),
    ("我要是吃花生就会过敏", [("allergy", "花生")]),
    ("我对花生过敏的话题", [("allergy", "花生")]),
    ("If you cook tonight remember I'm allergic to peanuts", [("allergy", "peanuts")]),
    ("If you're cooking I don't eat cilantro.", [("avoid_ingredient", "cilantro")]),
    ("In case you forget, I'm allergic to peanuts.", [("allergy", "peanuts")]),
    ("If it matters, I'm vegetarian.", [("dietary_restriction", "vegetarian")]),
    ("I'm allergic to shellfish if that helps.", [("allergy", "shellfish")]),
    # ...an "if" about something else: the statement is said as a fact
    ("If anyone asks I'm allergic to peanuts", [("allergy", "peanuts")]),
    ("If that helps I'm allergic to shellfish", [("allergy", "shellfish")]),
    ("Not sure if this matters but I'm allergic to peanuts", [("allergy", "peanuts")]),
    ("If you must know I'm vegan", [("dietary_restriction", "vegan")]),
    ("If I'm honest I hate cilantro", [("avoid_ingredient", "cilantro")]),
    ("Also if relevant: I'm allergic to peanuts", [("allergy", "peanuts")]),
    ("如果没记错我对花生过敏", [("allergy", "花生")]),
    ("如果我吃花生就会过敏", [("allergy", "花生")]),
    ("如果吃花生我就会过敏", [("allergy", "花生")]),
    ("我如果吃花生就会过敏", [("allergy", "花生")]),
    # ...and words that only look like one: 最重要是, 一万一, 的话 as "when", 的话 inside a word
    ("最重要是我对花生过敏", [("allergy", "花生")]),
    ("我月薪一万一我对花生过敏", [("allergy", "花生")]),
    ("我吃海鲜的话会过敏", [("allergy", "海鲜")]),
    ("我对海鲜的话会过敏", [("allergy", "海鲜")]),
    ("我对花生过敏你要听我的话", [("allergy", "花生")]),
    ("以防万一我对花生过敏", [("allergy", "花生")]),
    ("如果可以我想少油少辣", [("flavor_profile", {"oil": "low", "spicy": "low"})]),
    ("如果要我说我不吃辣", [("flavor_profile", {"spicy": "none"})]),
    # ...and a hedge is no supposition
    ("You can assume I'm vegetarian", [("dietary_restriction", "vegetarian")]),
    ("I suppose I'm vegetarian now", [("dietary_restriction", "vegetarian")]),
    ("Even if I'm vegan I eat honey", [("dietary_restriction", "vegan")]),
    ("I say I'm vegan", [("dietary_restriction", "vegan")]),
    ("记住，如果我迟到了就先开始", [(None, "如果我迟到了就先开始")]),
    ("Remember, if I'm late, start without me.", [(None, "If I'm late, start without me")]),
    # a condition kept as said is an instruction; a statement with 呢 or a tag question is no question
    ("Remember: if the build fails ping me", [(None, "If the build fails ping me")]),
    ("记住，万一我迟到了你们先开始", [(None, "万一我迟到了你们先开始")]),
    ("Remember: say hello to Anna from me", [(None, "Say hello to Anna from me")]),
    ("Say, I'm allergic to peanuts, what can I eat?", [("allergy", "peanuts")]),
    ("记住，我还没吃饭呢", [(None, "我还没吃饭呢")]),
    ("记住：我老婆想吃什么就吃什么", [(None, "我老婆想吃什么就吃什么")]),
    ("记住，我的生日是五月三号，好吗", [(None, "我的生日是五月三号,好吗")]),
    # a run of spaces or tabs after an opener (one way to read each: this took hours with \s+ inside *)
    ("if" + " " * 30 + "x I'm vegan", [("dietary_restriction", "vegan")]),
    ("Not sure if" + "\t" * 30 + "this matters I'm vegan", [("dietary_restriction", "vegan")]),
    # the user before the opener, or left unsaid; only what befalls a person then (如果是周末 is no state)
    ("要是怀孕了，我就不能吃生鱼片", []),
    ("我要是怀孕了，就不能吃生鱼片", []),
    ("我如果感冒了，就不吃辣", []),
    ("万一过敏了，我就不吃了", []),
    ("如果我们点外卖，我就不要葱", [("avoid_ingredient", "葱")]),
    # an English consequence said without a mark (a review's)
    ("If I get pregnant I can't eat sushi", []),
    ("Remember, if I'm ever pregnant I can't eat sushi", [(None, "If I'm ever pregnant I can't eat sushi")]),
    ("If I'm cooking I can't have onions", [("avoid_ingredient", "onions")]),
    # a note that imagines a change of the user's and what they would do then (a newcomer's)
    ("Remember, if I were vegetarian I'd eat more tofu.", []),
    ("记住，要是我是素食者，我会多吃豆腐。", []),
    ("Remember: if I'm late, I'll call you", [(None, "If I'm late, I'll call you")]),
    ("Remember, if I eat peanuts I'd die", [(None, "If I eat peanuts I'd die")]),
    ("也" * 4000, []),  # 香菜也也…可以接受: a run of 也 was read once per start (3 s)
    (("a" + " " * 250 + "b. ") * 15, []),  # "…, me too" looked for over every run of spaces
])
def test_a_supposition_is_no_fact(text, expected):
    assert [(operation["node"].get("key"), operation["node"]["value_json"]) for operation in extract(text)] == expected


# A tag after a statement is no part of its item: 我不吃香菜好不好 stored "香菜好不好", 对吧 "香菜对",
# "I don't eat pork ok" "pork ok", "allergic to shellfish haha" no allergy key at all.
@pytest.mark.parametrize(("text", "expected"), [
    ("我不吃香菜好不好", [("avoid_ingredient", "香菜")]),
    ("我不吃香菜的好不好", [("avoid_ingredient", "香菜")]),
    ("我不吃香菜对吧", [("avoid_ingredient", "香菜")]),
    ("我喜欢吃火锅的说", [("preferred_cuisine", "火锅")]),
    ("I don't eat pork ok", [("avoid_ingredient", "pork")]),
    ("I don't eat cilantro right?", [("avoid_ingredient", "cilantro")]),
    ("I don't eat cilantro anyway", [("avoid_ingredient", "cilantro")]),
    ("I don't eat cilantro right now", [("avoid_ingredient", "cilantro")]),
    ("I'm allergic to shellfish haha", [("allergy", "shellfish")]),
    ("I'm allergic to peanuts lol", [("allergy", "peanuts")]),
    ("I'm allergic to shellfish hahaha", [("allergy", "shellfish")]),
    ("I don't eat pork lmao", [("avoid_ingredient", "pork")]),
    ("我不吃香菜嘿嘿", [("avoid_ingredient", "香菜")]),
    ("我不吃香菜呵呵", [("avoid_ingredient", "香菜")]),
    # ...and an emoji or a symbol ends an item as a mark does (the statement was lost)
    ("I hate cilantro 😂", [("avoid_ingredient", "cilantro")]),
    ("I'm allergic to peanuts 🥜!", [("allergy", "peanuts")]),
    ("I hate cilantro :)", [("avoid_ingredient", "cilantro")]),
    ("I'm a nurse 😊", [("occupation", {"job": "nurse"})]),
    # ...but the word that ends a real item stays
    ("我喜欢派对吧", [(None, "派对")]),
    ("我最喜欢旅行吧", [(None, "旅行")]),
    ("我喜欢自由行吧", [(None, "自由行")]),
    ("我不爱喝牛奶对吧", [("avoid_ingredient", "牛奶")]),
    ("我不爱吃香菜行不行", [("avoid_ingredient", "香菜")]),
    ("我喜欢喝茶", [(None, "喝茶")]),  # one character is no item: 喝 stays
    ("I love playing LoL", [(None, "playing LoL")]),
    ("I like turning right", [(None, "turning right")]),
    ("My favorite band is Yeah Yeah Yeahs", [("favorite_band", "Yeah Yeah Yeahs")]),
])
def test_a_tag_after_a_statement_is_no_part_of_its_item(text, expected):
    assert [(operation["node"].get("key"), operation["node"]["value_json"]) for operation in extract(text)] == expected


# What the user eats or touches is the allergy (我吃花生会过敏 became a note "吃花生会"), and someone
# named before the allergy's 对 is not the user (小明对花生过敏, 你对虾过敏 were the user's).
@pytest.mark.parametrize(("text", "expected"), [
    ("我吃花生会过敏", [("allergy", "花生")]),
    ("我一吃花生就过敏", [("allergy", "花生")]),
    ("我吃了芒果会过敏", [("allergy", "芒果")]),
    ("我喝牛奶容易过敏", [("allergy", "牛奶")]),
    ("吃虾过敏", [("allergy", "虾")]),
    ("我吃海鲜和芒果都会过敏", [("allergy", "海鲜"), ("allergy", "芒果")]),
    ("我碰到猫就过敏", [(None, "猫")]),
    ("我碰到我家猫就过敏", [(None, "猫")]),
    ("我吃我妈做的花生会过敏", [("allergy", "花生")]),
    ("我其实吃花生会过敏", [("allergy", "花生")]),
    ("我吃花生好像会过敏", [("allergy", "花生")]),
    ("我吃花生真的会过敏", [("allergy", "花生")]),
    ("我吃花生是会过敏的", [("allergy", "花生")]),
    ("我吃芒果嘴巴会过敏", [("allergy", "芒果")]),
    ("我对花生有点过敏", [("allergy", "花生")]),
    ("我一吃就过敏", []),
    ("吃过敏", []),
    ("我吃花生以前会过敏，现在不会了", []),
    ("小明吃花生会过敏", []),
    ("我们家小王对虾过敏", []),
    ("夏天对花粉过敏", [(None, "花粉")]),
    ("周末对花生过敏", [("allergy", "花生")]),
    ("老子对花生过敏", [("allergy", "花生")]),
    ("黄梅天对霉菌过敏", [(None, "霉菌")]),
    ("Tom对花生过敏", []),
    ("听说小明对花生过敏", []),
    ("欧阳娜娜对花生过敏", []),
    ("我从小时候起吃虾就过敏", [("allergy", "虾")]),
    ("我晚上吃海鲜会过敏", [("allergy", "海鲜")]),
    ("我喝牛奶的时候会过敏", [("allergy", "牛奶")]),
    ("我吃过量芒果会过敏", [("allergy", "芒果")]),
    ("我吃海鲜或者芒果会过敏", [("allergy", "海鲜"), ("allergy", "芒果")]),
    ("我吃一点点花生都会过敏", [("allergy", "花生")]),
    ("我吃虾全身过敏", [("allergy", "虾")]),
    ("我吃花生等坚果会过敏", [("allergy", "花生")]),
    ("我吃含麸质的食物会过敏", [("allergy", "麸质")]),
    ("我吃加了味精的菜会过敏", [("allergy", "味精")]),
    ("我一吃花生就会起疹子过敏", [("allergy", "花生")]),
    ("我吃别人做的菜会过敏", []),
    ("小明和小红都对花生过敏", []),
    ("李雷说小明对虾过敏", []),
    ("大家都对花生过敏", []),
    ("我对一点点花生都过敏", [("allergy", "花生")]),
    ("我有虾过敏", [("allergy", "虾")]),
    ("我对芒果轻微过敏", [("allergy", "芒果")]),
    ("我对含花生的食物过敏", [("allergy", "花生")]),
    ("我对宠物过敏", [(None, "宠物")]),
    ("我妈一吃海鲜就过敏", []),
    ("我吃花生不会过敏", []),
    ("我吃了花生也没过敏", []),
    ("我女儿吃花生会过敏", []),
    ("小明对花生过敏", []),
    ("张伟对虾过敏", []),
    ("老王也对虾过敏", []),
    ("王老师对花生过敏", []),
    ("你对虾过敏", []),
    ("对了，小红对芒果过敏", []),
    ("老是对花生过敏", [("allergy", "花生")]),
    ("其实对花生过敏", [("allergy", "花生")]),
    ("从小就对花生过敏", [("allergy", "花生")]),
    ("本人对花生过敏", [("allergy", "花生")]),
    ("你知道我对虾过敏", [("allergy", "虾")]),
    ("我有很多忌口，对花生过敏", [("allergy", "花生")]),
    # names from other languages, and pet names of a doubled character
    ("安娜对芒果过敏", []),
    ("大卫对花生过敏", []),
    ("克里斯也对花生过敏", []),
    ("安娜和大卫都对虾过敏", []),
    ("莉莉对虾过敏", []),
    ("乐乐对猫毛过敏", []),
    # ...but not the adverbs and interjections that double, nor a word that begins like such a name
    ("哈哈，我对花生过敏", [("allergy", "花生")]),
    ("明明对花生过敏", [("allergy", "花生")]),
    ("特别对花生过敏", [("allergy", "花生")]),
    ("大概对花生过敏", [("allergy", "花生")]),
    ("汤姆说我对花生过敏", [("allergy", "花生")]),
    ("凯文对花生过敏", []),
    ("海伦对花生过敏", []),
    ("本杰明对花生过敏", []),
    ("艾薇儿对花生过敏", []),
    ("克里斯蒂娜对花生过敏", []),
    ("我家多多对鸡蛋过敏", []),
    ("我有鼻炎，年年都对花粉过敏", [(None, "花粉")]),
    ("我从小就这样，次次都对海鲜过敏", [("allergy", "海鲜")]),
    ("恩恩对花生过敏", [("allergy", "花生")]),
    ("微微对酒精过敏", [(None, "酒精")]),
    ("大约对芒果过敏", [("allergy", "芒果")]),
    ("我我对花生过敏", [("allergy", "花生")]),
    # ...and someone named before any statement of taste (Subjects.named)
    ("王小明不吃香菜", []),
    ("安娜不吃香菜", []),
    ("其实不吃香菜", [("avoid_ingredient", "香菜")]),
    ("冬天不吃辣", [("flavor_profile", {"spicy": "none"})]),
    ("王小明说我不吃香菜", [("avoid_ingredient", "香菜")]),
    ("小明最近对花生过敏", []),  # a time or a guess between the name and what they do
    ("安娜这几天不吃火锅", []),
    ("小明可能对花生过敏", []),
    ("最近不吃辣", [("flavor_profile", {"spicy": "none"})]),
    # ...but not a Latin word said first, the one spoken to, a dish or a word that begins like a name
    ("OK我住在杭州", [("home", {"lives": "杭州"})]),
    ("ok不吃香菜", [("avoid_ingredient", "香菜")]),
    ("你别放香菜", [("avoid_ingredient", "香菜")]),
    ("黄瓜别放蒜", [("avoid_ingredient", "蒜")]),
    ("白粥不要放糖", [("avoid_ingredient", "糖")]),
    ("比萨别放洋葱", [("avoid_ingredient", "洋葱")]),
    ("何况我住在杭州", [("home", {"lives": "杭州"})]),
    ("何况我不吃榴莲", [("avoid_ingredient", "榴莲")]),
    ("阿姨我住在杭州", [("home", {"lives": "杭州"})]),
    ("Note: 不要香菜", [("avoid_ingredient", "香菜")]),
    ("Actually 不吃香菜", [("avoid_ingredient", "香菜")]),
    ("小份不要香菜", [("avoid_ingredient", "香菜")]),
    ("黄焖鸡不要放香菜", [("avoid_ingredient", "香菜")]),
    ("韩餐不吃辣", [("flavor_profile", {"spicy": "none"})]),
    # a list of names read one way only (read two ways, this took 14 s to be found no list of names)
    ("苏珊、卢卡、汤姆、罗丽、雷娜、戴安、苏菲、卢娜" * 3 + "和我都对花生过敏", [("allergy", "花生")]),
    ("苏苏、" * 14 + "我对花生过敏", [("allergy", "花生")]),
])
def test_the_allergy_is_what_the_user_eats_and_no_one_elses(text, expected):
    assert [(operation["node"].get("key"), operation["node"]["value_json"]) for operation in extract(text)] == expected


# "Me too" after someone else's statement says it of the user (很多人对花生过敏，我也是 stored
# nothing; 我老公不吃香菜，我也是 nothing): the clause before, said of the user (Language.me_too).
@pytest.mark.parametrize(("text", "expected"), [
    ("很多人对花生过敏，我也是", [("allergy", "花生")]),
    ("我妈对花生过敏，我也是", [("allergy", "花生")]),
    ("你对花生过敏，我也一样", [("allergy", "花生")]),
    ("我老公不吃香菜，我也是", [("avoid_ingredient", "香菜")]),
    ("小明和小红都不吃香菜，我也是", [("avoid_ingredient", "香菜")]),
    ("他喜欢吃辣，我也是的", [("flavor_profile", {"spicy": "high"})]),
    ("她住在杭州，我也是", [("home", {"lives": "杭州"})]),
    ("安娜是素食者，我也是", [("dietary_restriction", "素食")]),
    ("我妈是护士，我也是", [("occupation", {"job": "护士"})]),
    ("我也是素食者", [("dietary_restriction", "素食")]),
    # ...not another word after the other's statement, nor what is not said of someone else
    ("我妈对花生过敏，我不是", []),
    ("我妈对花生过敏，我也是这么想的", []),
    ("我也是醉了", []),
    ("他要是对花生过敏，我也一样", []),
    ("他不一定对花生过敏，我也是", []),
    ("他不吃辣，我也会", []),
    ("我老公住在北京，我也是，开玩笑的", []),
    ("记住，他喜欢我，我也是", [(None, "他喜欢我,我也是")]),  # a note keeps the words as said
    ("我老公不吃香菜，我也是。", [("avoid_ingredient", "香菜")]),
    ("我老公不吃香菜，我也是啦", [("avoid_ingredient", "香菜")]),
    ("我老公不吃香菜，俺也一样", [("avoid_ingredient", "香菜")]),
    ("她老公对花生过敏，我也是", [("allergy", "花生")]),
    ("我闺蜜的老公对花生过敏，我也是", [("allergy", "花生")]),
    ("我老公他不吃香菜，我也是", [("avoid_ingredient", "香菜")]),
    # English, with the verb said of the user
    ("My husband hates cilantro, me too", [("avoid_ingredient", "cilantro")]),
    ("My wife is vegetarian and so am I", [("dietary_restriction", "vegetarian")]),
    ("Tom doesn't eat pork, neither do I", [("avoid_ingredient", "pork")]),
    ("My mom is allergic to peanuts, and I am too", [("allergy", "peanuts")]),
    ("She's allergic to shellfish, me too", [("allergy", "shellfish")]),
    ("She lives in Berlin, so do I", [("home", {"lives": "Berlin"})]),
    ("My little sister never eats pork, neither do I", [("avoid_ingredient", "pork")]),
    ("My husband is a nurse, me too", [("occupation", {"job": "nurse"})]),
    ("My sister's husband is vegan, me too", []),
    ("He might be vegan, me too", []),
    ("My husband hates cilantro, me too, just kidding", []),
    # ...and "me too" said as a sentence of its own
    ("我老公不吃香菜。我也是。", [("avoid_ingredient", "香菜")]),
    ("My husband loves spicy food. Me too.", [("flavor_profile", {"spicy": "high"})]),
    ("Me too.", []),
    # ...the nearest statement, its time words; not after a question, nor said as one
    ("Tom is a nurse and Anna is a teacher, me too", [("occupation", {"job": "teacher"})]),
    ("Tom hates cilantro but I love garlic. Me too.", [("preferred_ingredient", "garlic")]),
    ("Nobody likes liver, me neither", []),
    ("Does he hate cilantro? Me too", []),
    ("Tom hates cilantro, me too?", []),
    ("我老公对花生过敏，我也是？", []),
    ("他不吃香菜吗？我也是", []),
    ("小明不吃香菜，我也不吃", [("avoid_ingredient", "香菜")]),
    ("小明不吃香菜，我也从来不吃", [("avoid_ingredient", "香菜")]),
    ("小明不吃香菜，我也受不了", [("avoid_ingredient", "香菜")]),
    ("小明不吃香菜，我也喜欢", []),  # not alike: no "me too"
    ("我老公现在不吃香菜，我也喜欢", []),
    ("小明对花生过敏，我也喜欢", []),
    ("我老公最近不吃辣，我也不吃", [("flavor_profile", {"spicy": "none"})]),
    ("王小明不爱吃猪肉，不过我也不吃", [("avoid_ingredient", "猪肉")]),
    ("我老公不吃辣，我最近也是", [("flavor_profile", {"spicy": "none"})]),
    ("我老婆是素食者，我其实也是", [("dietary_restriction", "素食")]),
    ("露西喜欢吃芹菜。嗯，我也是哈哈！", [("preferred_ingredient", "芹菜")]),  # an interjection between
    ("如果她不吃豆腐，那我也吃素", []),  # a consequence said with 那…也
    ("如果我老公吃素，我也吃素", []),
    ("My dad loves spicy food, me neither", []),
    ("My wife doesn't eat beef. Same here!", [("avoid_ingredient", "beef")]),  # "me too" after both
    ("我室友对羊肉过敏，我也不吃", []),  # an allergy is said again only by 我也是 or 我也对
    ("My husband is a doctor, neither am I", []),
    ("我老公爱吃辣，我也爱吃", [("flavor_profile", {"spicy": "high"})]),
    ("我老公这周不吃辣。我也是，我对花生过敏。", [("allergy", "花生"), ("flavor_profile", {"spicy": "none"})]),
    ("今天我不想吃辣，我老公不吃香菜。我也是。", [("flavor_profile", {"spicy": "none"}), ("avoid_ingredient", "香菜")]),
])
def test_me_too_says_the_clause_before_of_the_user(text, expected):
    assert [(operation["node"].get("key"), operation["node"]["value_json"]) for operation in extract(text)] == expected


def test_me_too_keeps_the_time_words_of_what_it_repeats():
    """我老公这周不吃辣。我也是。 was kept with no expiry (the time words are in the sentence before)."""
    for text in ("我老公这周不吃辣。我也是。", "我老公这周不吃辣，我也是"):
        [operation] = extract(text)
        assert operation["node"]["value_json"] == {"spicy": "none"}
        assert operation["node"]["expires_at"] == (NOW + timedelta(days=7)).isoformat()
    # ...and only of what it repeats: the allergy said after it lasts
    allergy, flavor = extract("我老公这周不吃辣。我也是，我对花生过敏。")
    assert allergy["node"]["value_json"] == "花生" and allergy["node"].get("expires_at") is None
    assert flavor["node"]["expires_at"] == (NOW + timedelta(days=7)).isoformat()


# The same kind, wider (a newcomer's "我不太能吃辣" became "prefers spicy", "我特别喜欢吃鱼" "avoids
# 喜欢吃鱼"): a negation with words between it and the wish, 别 inside another word, 没 (what
# happened, not what is wanted), and a clause that names nobody going on about a family member.
@pytest.mark.parametrize(("text", "expected"), [
    ("我不太能吃辣", [("flavor_profile", {"spicy": "low"})]),
    ("我不是很能吃辣", [("flavor_profile", {"spicy": "low"})]),
    ("我不怎么吃辣", [("flavor_profile", {"spicy": "low"})]),
    ("我一点都不爱吃辣", [("flavor_profile", {"spicy": "none"})]),
    ("我不喜欢吃辣", [("flavor_profile", {"spicy": "none"})]),
    ("我特别能吃辣", [("flavor_profile", {"spicy": "high"})]),
    ("我今天没吃辣", []),
    ("我不喜欢清淡的", [("", "清淡")]),  # a dislike in the user's words, not a wish for it
    ("我不喜欢川菜", [("avoid_ingredient", "川菜")]),
    ("我喜欢川菜", [("preferred_cuisine", "川菜")]),
    ("我不太喜欢吃香菜", [("avoid_ingredient", "香菜")]),
    ("我特别喜欢吃鱼", [("preferred_ingredient", "鱼")]),
    ("我特别喜欢川菜", [("preferred_cuisine", "川菜")]),
    ("特别不要放香菜", [("avoid_ingredient", "香菜")]),
    ("不可以放一点香菜", []),
    ("我女儿今年六岁，对虾过敏", []),
    ("我老公最近在减肥，晚饭要少油", []),
    ("我妈妈来了，我不吃香菜", [("avoid_ingredient", "香菜")]),
    ("I don't really like spicy food", [("flavor_profile", {"spicy": "low"})]),
    ("I don't want spicy food", [("flavor_profile", {"spicy": "none"})]),
    ("I no longer want spicy food", [("flavor_profile", {"spicy": "none"})]),
    ("I like spicy food", [("flavor_profile", {"spicy": "high"})]),
])
def test_negations_between_words_and_subjects_carried_over_clauses(text, expected):
    assert [(operation["node"].get("key", ""), operation["node"]["value_json"]) for operation in extract(text)] == expected


# A newcomer's first message, "我叫小红，住在杭州，是一名护士", gave no memory at all: the user's own
# name and work had no rule, and the later clauses name nobody (the sentence is about the user).
@pytest.mark.parametrize(("text", "expected"), [
    ("我叫小红，住在杭州，是一名护士", ["用户叫小红", "用户住在杭州", "用户是护士"]),
    ("我的名字是王小红", ["用户叫王小红"]),
    ("我叫小芳，住在成都，是一名程序员。", ["用户叫小芳", "用户住在成都", "用户是程序员"]),
    ("我是老师！", ["用户是老师"]),
    ("我当老师", ["用户是老师"]),
    ("我叫了外卖", []),
    ("我叫外卖了", []),
    ("我叫车", []),
    ("我是说你不对", []),
    ("我是一个很懒的人", []),
    ("我老公是医生", []),
    ("我女儿今年六岁，是小学生", []),
    ("我妈妈来了，住在我家", []),
    # 我家在… says where the user lives when it names a place (a city, a country, a district)
    ("我家在杭州", ["用户住在杭州"]),
    ("我们家在成都", ["用户住在成都"]),
    ("我家在杭州市西湖区", ["用户住在杭州市西湖区"]),
    ("我家在美国", ["用户住在美国"]),
    ("我家在装修", []),
    ("我家在三楼", []),
    ("我家在附近", []),
    ("我老家在杭州", []),  # where the user comes from
    ("我妈家在杭州", []),
    ("我家在杭州住了十年了", ["用户住在杭州"]),
    ("我家在杭州呢", ["用户住在杭州"]),
    ("我家在北京朝阳", ["用户住在北京朝阳"]),
    ("我家在杭州买了房", []),
    ("我家在杭州上班", ["用户在杭州工作"]),
    ("我家在南京吃饭", []),
    ("我们家在泰国玩", []),
    ("My name is Alice Smith, I live in Berlin", ["User's name is Alice Smith", "User lives in Berlin"]),
    ("Call me Al", []),  # as often "call me back", "call me Monday": not read
    ("Please call me tomorrow", []),
    ("I'm a nurse and I love cooking", ["User is a nurse", "User likes cooking"]),
    ("I am a software engineer", ["User is a software engineer"]),
    ("I am not a doctor", []),
    ("I am a terrible cook", []),
])
def test_the_users_own_name_and_work(text, expected):
    operations = extract(text)
    assert [operation["node"]["title"] for operation in operations] == expected
    facts = [operation["node"] for operation in operations if "likes" not in operation["node"]["title"]]
    assert all(node["type"] == "fact" and node["scope"] == "session" for node in facts)  # said in passing


# A second review of the same kind (each was wrong before or after the first fix): softened and
# indirect negations, A不A questions, questions, the past, denied allergies and illnesses, other
# people the list lacked, and the user named again after someone else.
@pytest.mark.parametrize(("text", "expected"), [
    ("我不特别喜欢吃鱼", [("avoid_ingredient", "鱼")]),
    ("我会不会太爱吃辣了", [("flavor_profile", {"spicy": "high"})]),
    ("你爱不爱吃辣？", []),
    ("你能吃辣吗？", []),
    ("可以放一点香菜吗？", []),
    ("我很少吃辣", [("flavor_profile", {"spicy": "low"})]),
    ("医生不让我吃辣", [("flavor_profile", {"spicy": "none"})]),
    ("我怕吃辣", [("flavor_profile", {"spicy": "low"})]),
    ("我不怕吃辣", [("flavor_profile", {"spicy": "high"})]),
    ("别给我做清淡的", []),
    ("我也不是那么喜欢吃鱼", [("avoid_ingredient", "鱼")]),
    ("我以前很爱吃辣，现在不行了", []),
    ("我小时候不爱吃鱼，现在爱吃了", []),
    ("我没发烧", []),
    ("我不过敏", []),
    ("我对花生不过敏", []),
    ("我有过敏性鼻炎", []),
    ("我从不吃亏", []),
    ("我不能吃太多肉", []),
    ("我先生对花生过敏", []),
    ("他对花生过敏", []),
    ("我太太不吃香菜", []),
    ("我女儿来我家吃饭，她不吃香菜", []),
    ("我老公什么都能吃，我海鲜过敏", [("allergy", "海鲜")]),
    # The user together with someone else (Subjects.joint): 我和老公都… is the user's too.
    ("我和老公都不吃香菜", [("avoid_ingredient", "香菜")]),
    ("我跟我女儿都对花生过敏", [("allergy", "花生")]),
    ("我和老公俩都不吃辣", [("flavor_profile", {"spicy": "none"})]),
    ("我和女儿都对虾过敏，老公对花生过敏", [("allergy", "虾")]),
    ("我跟女儿说不要吃辣", []),
    ("我和老公吵架了，他不吃香菜", []),
    # A review's misreads of the user's own facts: a guess, a game, someone called, a question, a cut place.
    ("把我当成医生", []),
    ("你扮演病人，我是医生", []),
    ("就当我是医生", []),
    ("我是医生吧", []),
    ("我叫房东", []),
    ("我叫张师傅", []),
    ("我叫王医生", []),
    ("我叫王总监", []),
    # A third review's: a name said as a joke, hearsay and guesses, past jobs, words run on past a place.
    ("我叫小绿，开玩笑的", []),
    ("My name is Alice, just kidding", []),
    ("I'm a nurse. My kids say I'm funny lol", [("occupation", {"job": "nurse"})]),
    ("据说我住在上海", []),
    ("我估计我是医生", []),
    ("我住在上海吧", []),
    ("Maybe I moved to Lisbon", []),
    ("I'm a former nurse", []),
    ("我是退休医生", []),
    ("我搬到上海之前在北京住了十年。", []),
    ("我在腾讯上班三年了", [("workplace", {"works": "腾讯"})]),
    ("我是护士长", [("occupation", {"job": "护士长"})]),
    ("我叫李工", []),
    ("我在北京的一家公司上班", []),
    ("我和我老公都在腾讯上班", [("workplace", {"works": "腾讯"})]),
    ("我和老公都不吃香菜吗", []),
    ("我不吃香菜吗", []),
    ("我搬到上海了🏠", []),
    ("I'm a nurse, just kidding", []),
    ("I work as a nurse in my dreams", []),
    ("I moved to Washington D.C. last year", []),
    ("我是护士，以后想当医生", [("occupation", {"job": "护士"})]),
    # A liking of what the conversation points at says nothing alone (read on MADial's turns).
    ("真的吗？我妈妈选的呢，我很喜欢这个颜色！", []),
    ("我特别喜欢这道菜", []),
    ("我喜欢真丝", [("", "真丝")]),
    ("我女儿不吃香菜，我香菜可以接受一点", [("limit_ingredient", {"ingredient": "香菜", "amount": "少量"})]),
    ("带女儿出去吃饭，不要放辣", [("avoid_ingredient", "辣")]),
    ("我对猫毛过敏", [("", "猫毛")]),
    ("其他都行，我不吃香菜", [("avoid_ingredient", "香菜")]),
    ("I don’t want spicy food", [("flavor_profile", {"spicy": "none"})]),
    ("I don’t eat pork", [("avoid_ingredient", "pork")]),
    ("I don't want very spicy food", [("flavor_profile", {"spicy": "low"})]),
    ("I don't just like spicy food, I love it", [("flavor_profile", {"spicy": "high"})]),
    ("Who doesn't love spicy food?", []),
    # Read on LoCoMo's turns: a question that begins "Remember that…" asks, and "every day" is no liking.
    ("Remember that epic block in Game 7 of the '16 Finals? He chased down Iguodala.", []),
    ("Thanks, Joanna! I'm really grateful to have a job I enjoy every day.", []),
    ("My kids don't want spicy food", []),
    ("I used to love spicy food", []),
    ("我不是不吃香菜", []),
    ("我没那么能吃辣了", [("flavor_profile", {"spicy": "low"})]),
    ("我吃不了特辣", [("flavor_profile", {"spicy": "low"})]),
    ("我不是不爱吃辣", [("flavor_profile", {"spicy": "high"})]),
    ("我现在不喜欢芒果冰淇淋了", [("", "芒果冰淇淋")]),  # a newcomer's correction had given nothing
])
def test_a_second_review_of_negations_questions_and_other_people(text, expected):
    assert [(operation["node"].get("key", ""), operation["node"]["value_json"]) for operation in extract(text)] == expected


def test_a_long_message_naming_many_others_is_read_in_linear_time():
    """Who a match is about is read once per sentence (a review's 16,000 狗 before 我不吃辣 took
    61 s when each match searched the sentence before it): the finding is still the user's."""
    operations = extract("狗" * 16000 + "我" + "不吃辣," * 50)
    assert [(operation["node"]["key"], operation["node"]["value_json"]) for operation in operations] == [
        ("flavor_profile", {"spicy": "none"})]


# A third review (each stored a wrong memory after the second round): "cannot stop" read as a
# negation, 叫 as "order" or "wake" read as a name, a job after 不/过/然/说, a supposition, a
# clause that names nobody after a family member or in a sentence's first clause, denied and
# past allergies and illnesses, double negations inside the flavour, a flavour that hurts, and
# English questions, suppositions and "call me back".
@pytest.mark.parametrize(("text", "expected"), [
    ("我戒不了吃辣", ["用户偏好吃辣"]),
    ("我百无禁忌爱吃辣", ["用户偏好吃辣"]),
    ("谁不爱吃辣呢", []),
    # (a fourth review's: a question, a belief, a suspicion)
    ("我是不是对花生过敏啊", []), ("我以为我对花生过敏，其实不是", []), ("我怀疑我对花生过敏", []),
    ("帮我叫个外卖", []),
    ("太晚了，我叫个车", []),
    ("我叫儿子起床", []),
    ("我儿子总说我叫奥特曼", []),
    ("大家好，我叫王小明", ["用户叫王小明"]),
    ("我当不了老师", []),
    ("我当过老师", []),
    ("我当然是老师", []),
    ("我是党员", []),
    ("如果我是医生", []),
    ("我是一名儿科医生", ["用户是儿科医生"]),
    ("谁来接孩子？是老师", []),
    ("我老公比我大五岁，是医生", []),
    ("住在楼下的邻居对猫过敏", []),
    ("在北京工作的朋友说烤鸭好吃", []),
    ("我老公叫大明。住在杭州，是一名护士", ["用户的老公叫大明"]),
    ("我哥对花生过敏", []),
    ("我从来没对花生过敏", []),
    ("我以前对虾过敏，现在好了", []),
    ("我发烧好了", []),
    ("是不是感冒了", []),
    ("我不得不吃辣", []),
    ("我一天不吃辣就难受", []),
    ("我吃不吃辣都无所谓", []),
    ("我吃辣会拉肚子", ["用户偏好不吃辣"]),
    ("No spicy food for me please", ["User prefers no spicy food"]),
    ("I'd like to avoid spicy food", ["User prefers no spicy food"]),
    ("Call me back", []),
    ("My name is Bob?", []),
    ("Pretend I'm a doctor", []),
    ("I'm a Doctor Who fan", []),
    ("I'm a terrible driver", []),
    ("I'm allergic to peanuts? No way", []),
    ("I love spicy food? Not really", []),
    ("我不" + "算太" * 30 + "的吃辣", ["用户偏好吃辣"]),  # each repeat had doubled the time: hours at 30
    ("我叫小红，小明是我男朋友，是医生", ["用户叫小红"]),
    ("我叫小红，今年三十岁，是一名护士", ["用户叫小红", "用户是护士"]),
    ("我妈想让我当医生", []),
    ("等我当上医生", []),
    ("我是个好学生", []),
    ("我叫一声", []),
    ("我住在杭州吗", []),
    ("我住在酒店", []),
    ("我不吃香菜是假的", []),
    ("胃不舒服的时候我不吃辣", []),
])
def test_a_third_review_of_names_jobs_negations_and_questions(text, expected):
    assert [operation["node"]["title"] for operation in extract(text)] == expected


def test_a_lone_surrogate_is_read_not_raised():
    """JSON "\\ud800" parses to a lone surrogate, which the script converter could not encode."""
    assert [operation["node"]["title"] for operation in extract("我不吃香菜 \ud800")] == ["用户不吃香菜"]


def test_a_window_plans_at_most_plan_max_memories_and_says_it_stopped():
    """A job applies at most CAPTURE_PROPOSALS_MAX; planning thousands compared each with every
    earlier one (a review's ten 4,000-character lists of foods took 175 s)."""
    from memory.capture.rules import PLAN_MAX

    foods = ["".join(f"我不吃{chr(0x4e00 + number + 600 * message)}菜。" for number in range(570))[:4000]
             for message in range(10)]
    extraction = RuleExtractor().extract(context(*foods))
    assert len(extraction.operations) == PLAN_MAX
    assert extraction.notes[-1] == f"over {PLAN_MAX} memories in this window: the rest of it was not read"


# ---- a newcomer's review of changed preferences (2026-12-03) ---------------------------------


@pytest.mark.parametrize("text,old_value,new_value,key", [
    ("Actually, my favorite color is green now.", "blue", "green", "favorite_color"),
    ("不对，我最喜欢的颜色是绿色", "蓝色", "绿色", "favorite_color"),
])
def test_a_new_favorite_supersedes_the_old_one_of_the_same_kind(text, old_value, new_value, key):
    """"Remember that my favorite color is blue", later "…green now": both stayed active and were
    injected side by side. A favorite of one kind holds one value."""
    old = active(7, key, old_value, type="preference", domain="general")
    [operation] = extract(text, existing=[old])
    assert (operation["operation"], operation["target_id"], operation["node"]["value_json"]) == ("supersede", 7, new_value)
    assert operation["explicit_user_intent"] is True  # the user revising their own user memory


def test_a_favorite_is_keyed_by_its_kind_and_another_kind_leaves_it_alone():
    [color] = extract("Remember that my favorite color is blue.")
    assert (color["node"]["key"], color["node"]["value_json"], color["node"]["scope"]) == ("favorite_color", "blue", "user")
    old = active(7, "favorite_color", "blue", type="preference", domain="general")
    [movie] = extract("My favorite movie genre is horror.", existing=[old])
    assert (movie["operation"], movie["node"]["key"]) == ("create", "favorite_movie_genre")
    assert extract("My favorite color is blue.", existing=[old]) == []  # said again: already remembered


@pytest.mark.parametrize("text,stored,item", [
    ("I'm no longer vegetarian, I eat meat again.", "vegetarian", "vegetarian"),
    ("I'm not vegan anymore", "vegan", "vegan"),
    ("I've stopped being a pescatarian", "pescatarian", "pescatarian"),
    ("我不再吃素了", "素食", "素食"),
    ("我现在不吃素了", "素食", "素食"),
    ("我已经不是素食者了", "素食", "素食"),
])
def test_a_diet_said_over_ends_the_stored_one(text, stored, item):
    old = active(5, "dietary_restriction", stored)
    [operation] = extract(text, existing=[old])
    assert (operation["operation"], operation["target_id"]) == ("supersede", 5)
    assert operation["node"]["value_json"] == {"no_longer": item}
    assert operation["node"]["key"] == ""  # no diet any more: the successor is no restriction


@pytest.mark.parametrize("text", ["I'm no longer vegetarian", "我不再吃素了", "I'm not vegetarian", "我不吃素"])
def test_a_diet_said_over_with_none_stored_proposes_nothing(text):
    assert extract(text, existing=[active(5, "dietary_restriction", "vegan")]) == []


# "I don't think I like sushi" stored "likes sushi"; "I don't think I'm allergic to peanuts" an allergy.
@pytest.mark.parametrize("text,expected", [
    ("I don't think I like sushi.", []),
    ("I'm not sure I like sushi.", []),
    ("I doubt I like sushi", []),
    ("I don't think I'm allergic to peanuts", []),
    ("我不觉得我喜欢寿司", []),
    ("I think I like sushi", ["User likes sushi"]),
    ("I don't think so. I love sushi", ["User likes sushi"]),
    ("I don't think I mentioned that I'm allergic to peanuts", ["User is allergic to peanuts"]),
    ("I'm not sure I told you, but I'm allergic to peanuts", ["User is allergic to peanuts"]),
    ("我不觉得我跟你说过我对花生过敏", ["用户对花生过敏"]),
])
def test_a_doubt_right_before_a_statement_voids_it(text, expected):
    assert [operation["node"]["title"] for operation in extract(text)] == expected


# A newcomer's "I work at Google as a software engineer" gave nothing; "I work at Google" did.
@pytest.mark.parametrize("text,expected", [
    ("I work at Google as a software engineer", ["User works at Google", "User is a software engineer"]),
    ("I work for the University of Michigan as a nurse practitioner.",
     ["User works at University of Michigan", "User is a nurse practitioner"]),
    ("I work at Google as a favour to a friend", ["User works at Google"]),
    ("I work at Google as well", ["User works at Google"]),
    ("I worked at Google as a nurse", []),
    ("If I work at Google as a nurse, I'd be happy", []),
])
def test_the_job_said_after_the_workplace(text, expected):
    assert [operation["node"]["title"] for operation in extract(text)] == expected


# ---- a breaker's review of the above (2026-12-03) --------------------------------------------


@pytest.mark.parametrize("text", [
    "We decided to ship the pet adoption feature.", "We decided on a couple of changes to the schema.",
    "We decided to use Postgres; my partner on the project agreed.", "我们决定做一个旅游推荐功能。",
    "我们决定把宠物模块重构一下。", "我们决定修复登录问题，爸爸级别的bug。",
])
def test_a_work_decision_naming_pets_or_trips_stays_the_workspaces(text):
    [operation] = extract(text, workspace_id="proj")
    assert (operation["node"]["type"], operation["node"]["scope"]) == ("decision", "workspace")


@pytest.mark.parametrize("text,expected", [
    ("I don't think I can eat that since I'm allergic to peanuts.", ["User is allergic to peanuts"]),
    ("I'm not sure my wife knows I'm allergic to shellfish.", ["User is allergic to shellfish"]),
    ("I doubt I'd enjoy it since I hate cilantro.", ["User avoids cilantro"]),
    ("我不觉得这个能吃因为我对花生过敏。", ["用户对花生过敏"]),
    ("我不认为有人知道我吃素。", ["用户吃素"]),
])
def test_a_doubt_about_something_else_keeps_the_statement_after_it(text, expected):
    assert [operation["node"]["title"] for operation in extract(text)] == expected


BLUE = active(7, "favorite_color", "blue", type="preference", domain="general")


@pytest.mark.parametrize("text", [
    "My favorite color is green?", "My son thinks my favorite color is green.", "My wife said my favorite color is green.",
    "My favorite color is Blue.", "我最喜欢的颜色是绿色吗？", "我妈说我最喜欢的颜色是绿色", "My favorite team is losing?",
])
def test_a_favorite_asked_or_someone_elses_word_or_the_same_replaces_nothing(text):
    zh = active(8, "favorite_颜色", "蓝色", type="preference", domain="general")
    assert not any(operation["operation"] == "supersede" for operation in extract(text, existing=[BLUE, zh]))


def test_a_favorite_said_with_an_adverb_or_in_british_or_plural_is_the_same_kind():
    [usually] = extract("My favorite colour is usually green.", existing=[BLUE])
    assert (usually["operation"], usually["node"]["value_json"]) == ("supersede", "green")
    [movies] = extract("My favorite movies are westerns.")
    assert movies["node"]["key"] == "favorite_movie"


@pytest.mark.parametrize("text", [
    "我不再吃素了吗？", "他说我不是素食者了", "I'm no longer vegetarian?", "My mom said I'm no longer vegetarian",
])
def test_a_diet_asked_over_or_said_over_by_someone_else_ends_nothing(text):
    stored = [active(5, "dietary_restriction", "素食"), active(6, "dietary_restriction", "vegetarian")]
    assert extract(text, existing=stored) == []


@pytest.mark.parametrize("text,item", [("I'm vegetarian.", "vegetarian"), ("我吃素", "素食")])
def test_a_diet_said_again_replaces_the_memory_that_it_had_ended(text, item):
    ended = active(9, "", {"no_longer": item}, type="preference")
    [operation] = extract(text, existing=[ended])
    assert (operation["operation"], operation["target_id"], operation["node"]["value_json"]) == ("supersede", 9, item)
