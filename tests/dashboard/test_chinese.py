"""Chinese and English content render alike on every page (R-UI; issue 6)."""

import pytest
from django.urls import reverse

from tests.dashboard.conftest import make_message, make_node

TEXTS = {
    "zh": {"title": "用户不吃香菜", "content": "推荐菜谱时避开香菜，口味少油少辣。", "tag": "忌口",
           "value": {"避开": ["香菜"], "辣度": "少辣"}, "message": "记住，我以后做饭不要香菜。", "session": "做饭-1",
           "workspace": "家里", "user": "小明"},
    "en": {"title": "User avoids cilantro", "content": "Leave cilantro out of recipes; low oil, mild.", "tag": "diet",
           "value": {"avoid": ["cilantro"], "spicy": "mild"}, "message": "Remember: no cilantro from now on.",
           "session": "cooking-1", "workspace": "home", "user": "xiaoming"},
}


@pytest.fixture(params=["zh", "en"])
def text(request, principal):
    text = TEXTS[request.param]
    message = make_message(principal, text["message"], session_id=text["session"], workspace_id=text["workspace"],
                           user_id=text["user"])
    node = make_node(principal, title=text["title"], content=text["content"], tags=[text["tag"]], scope="session",
                     session_id=text["session"], workspace_id=text["workspace"], user_id=text["user"],
                     key="diet.avoid", value_json=text["value"], source_message_ids=[message.pk])
    return {**text, "node": node, "message_obj": message}


def test_memory_list_finds_and_shows_the_node_by_a_word_of_its_title(viewer_client, text):
    word = "香菜" if text["title"].startswith("用户") else "cilantro"
    html = viewer_client.get(reverse("dashboard:memories"), {"q": word}).content.decode()
    for value in ("title", "tag", "session", "workspace", "user"):
        assert text[value] in html


def test_node_page_shows_every_text_as_written(viewer_client, text):
    html = viewer_client.get(reverse("dashboard:node", args=[text["node"].pk])).content.decode()
    for value in ("title", "content", "tag", "message", "session", "workspace", "user"):
        assert text[value] in html, value
    key, items = next(iter(text["value"].items()))
    assert f"&quot;{key}&quot;: [\n    &quot;{items[0]}&quot;" in html  # pretty JSON, no \\u escapes


def test_session_list_and_page_show_the_conversation_as_written(viewer_client, text):
    listing = viewer_client.get(reverse("dashboard:sessions"), {"workspace_id": text["workspace"]}).content.decode()
    assert text["session"] in listing and text["user"] in listing
    page = viewer_client.get(reverse("dashboard:session", args=[text["message_obj"].session_id])).content.decode()
    for value in ("message", "session", "workspace", "user"):
        assert text[value] in page, value


def test_the_page_declares_utf8(viewer_client, text):
    response = viewer_client.get(reverse("dashboard:node", args=[text["node"].pk]))
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert '<meta charset="utf-8">' in response.content.decode()


@pytest.mark.parametrize("typed,found", [
    ("圣诞节跳舞", {"dance"}), ("芒果冰淇淋", {"mango"}), ("芒果 冰淇淋", {"mango"}), ("冰淇淋", {"mango"}),
    ("晚会跳舞", {"dance"}), ("圣诞节唱歌", set()), ("没有跳舞", set()),
    ("芒果蛋糕", {"cake"}),  # each word is said there, though not together: a filter, not a phrase match
])
def test_a_chinese_phrase_typed_without_spaces_finds_the_memories_that_say_its_words(viewer_client, principal,
                                                                                     typed, found):
    """A review's find: /?q=圣诞节跳舞 listed nothing though a memory said Bart在圣诞节晚会上跳舞
    (the bigram 节跳 spans two words); every character and one bigram must be there now."""
    nodes = {"dance": make_node(principal, title="Bart在圣诞节晚会上跳舞"),
             "mango": make_node(principal, title="Bart最喜欢吃芒果冰淇淋"),
             "cake": make_node(principal, title="Bart不爱吃蛋糕，爱吃芒果干")}
    html = viewer_client.get(reverse("dashboard:memories"), {"q": typed}).content.decode()
    listed = {name for name, node in nodes.items() if node.title in html}
    assert listed == found


@pytest.mark.parametrize("typed,found", [
    ("不能吃海鲜", {"cannot"}), ("能吃海鲜", {"cannot", "can"}), ("没吃过榴莲", set()), ("吃过榴莲", {"can"}),
    ("不吃香菜", {"cilantro-no"}),
])
def test_a_negated_phrase_never_lists_the_memories_that_say_the_opposite(viewer_client, principal, typed, found):
    """A breaker's find: with one bigram enough, 不能吃海鲜 listed only 用户能吃海鲜，不吃辣."""
    nodes = {"cannot": make_node(principal, title="用户不能吃海鲜"),
             "can": make_node(principal, title="用户能吃海鲜，不吃辣，吃过榴莲，没去过泰国"),
             "cilantro-no": make_node(principal, title="用户不吃香菜"),
             "cilantro-yes": make_node(principal, title="用户喜欢吃香菜，不怕辣")}
    html = viewer_client.get(reverse("dashboard:memories"), {"q": typed}).content.decode()
    assert {name for name, node in nodes.items() if node.title in html} == found
