"""The ranking and rendering techniques of issue 7 one by one (docs/retrieval.md): a
query-focused excerpt, temporal query expansion, session evidence, the unigram backoff and
the weighting of a conversation's lines by recency."""

import pytest

from memory.models import Message
from memory.search.engine import rank
from memory.search.source import Rows
from memory.search.text import cjk_unigrams, query_token_weights, query_tokens, temporal_expansions
from memory.selectors.context import ContextRequest, context_build
from memory.selectors.context_items import focused_excerpt
from memory.selectors.messages import MESSAGE_FIELD_WEIGHTS, messages_search
from memory.selectors.nodes import Owner
from memory.selectors.query import MemoryQuery, memory_query
from tests.helpers import append, make_node

LONG = ("We spent the whole morning packing the car and the kids argued about snacks. "
        "Traffic was awful on the highway. Finally we reached the lake and pitched the tent near the water. "
        "At night we watched the meteor shower, it was amazing.")


def test_a_long_message_is_cut_around_the_sentence_the_query_matched():
    text = focused_excerpt(LONG, tuple(query_tokens("meteor shower")), limit=80)
    assert text == "…At night we watched the meteor shower, it was amazing."
    assert len(text) <= 80


def test_the_focused_excerpt_adds_the_sentences_around_the_match_while_they_fit():
    matched = tuple(query_tokens("tent lake"))
    assert focused_excerpt(LONG, matched, limit=100) == (
        "…Traffic was awful on the highway. Finally we reached the lake and pitched the tent near the water.…")
    assert focused_excerpt(LONG, matched, limit=160) == (
        "…Traffic was awful on the highway. Finally we reached the lake and pitched the tent near the water. "
        "At night we watched the meteor shower, it was amazing.")
    assert all(len(focused_excerpt(LONG, matched, limit)) <= limit for limit in range(20, 250, 7))


def test_without_a_match_beyond_the_first_sentence_the_excerpt_is_the_head():
    assert focused_excerpt(LONG, tuple(query_tokens("morning car")), limit=60) == LONG[:59] + "…"
    assert focused_excerpt(LONG, (), limit=60) == LONG[:59] + "…"
    assert focused_excerpt("Short one.", tuple(query_tokens("meteor")), limit=60) == "Short one."


def test_a_question_asking_when_expands_with_dating_words_in_both_languages():
    assert {"yesterday", "week", "last"} <= set(temporal_expansions("When did Caroline go to the support group?"))
    assert {"昨天", "上周"} <= set(temporal_expansions("你什么时候去的健身房？"))
    assert temporal_expansions("What does Caroline like to paint?") == []


def test_an_expansion_token_raises_a_match_but_never_finds_a_row_by_itself(principal):
    dated, undated, unrelated = append(principal, "I went to the support group yesterday.",
                                       "The support group was powerful.", "Yesterday it rained all day.")
    queryset = Rows(Message, '"memory_message"."team_id" = %s', (principal.team.pk,))
    tokens = query_tokens("When did she go to the support group?")
    plain = rank(queryset, tokens, weights=MESSAGE_FIELD_WEIGHTS)
    expanded = rank(queryset, tokens, weights=MESSAGE_FIELD_WEIGHTS,
                    expansions=dict.fromkeys(temporal_expansions("When did she go to the support group?"), 0.3))
    assert {item.pk for item in plain} == {item.pk for item in expanded} == {dated.pk, undated.pk}
    dated_plain, dated_expanded = (next(item.score for item in found if item.pk == dated.pk)
                                   for found in (plain, expanded))
    assert dated_expanded > dated_plain
    assert next(item for item in expanded if item.pk == dated.pk).matched == tuple(
        next(item for item in plain if item.pk == dated.pk).matched)


def test_a_turn_of_a_conversation_about_the_question_outranks_an_equal_stray_turn(principal):
    """Session evidence: two turns match the query equally; the one whose session has other
    matching turns comes first (the stray one is newer, so plain ranking puts it first)."""
    owner = dict(user_id="mel", workspace_id="home")
    append(principal, "We went camping at the lake.", session_id="trip", **owner)
    append(principal, "The lake camping trip was fun, the kids loved the tent.", session_id="trip", **owner)
    talk = append(principal, "Camping again next summer?", session_id="trip", **owner)[0]
    stray = append(principal, "Camping again next summer?!", session_id="other", **owner)[0]
    found = messages_search(principal=principal, session=None, owner=Owner(**owner), query_text="camping summer",
                            limit=5)
    order = [hit.message.pk for hit in found]
    assert order.index(talk.pk) < order.index(stray.pk)


def test_the_context_block_shows_the_part_of_a_long_earlier_message_that_matched(principal):
    owner = dict(user_id="mel", workspace_id="home")
    append(principal, LONG, session_id="trip", **owner)
    context = context_build(principal=principal, request=ContextRequest(
        owner=Owner(session_id="new", **owner), query="When did we see the meteor shower?"))
    line = next(line for line in context.block.splitlines() if "meteor" in line)
    assert line.endswith("…Traffic was awful on the highway. Finally we reached the lake and pitched the tent near "
                         "the water. At night we watched the meteor shower, it was amazing.")
    assert "packing the car" not in line


def test_chinese_characters_back_off_the_query_bigrams_but_not_grammar_characters():
    assert cjk_unigrams("我的演出你觉得怎么样") == ["演", "出", "觉", "样"]
    assert cjk_unigrams("好") == []  # a one-character run is a query token already


def test_a_memory_sharing_characters_beyond_the_bigram_ranks_above_an_equal_one_sharing_only_the_bigram(principal):
    """Both memories share 晚会 with the query; 表演 shares only the character 演 with 要演 / 演魔.
    Without the backoff they tie and the newer (the song) comes first."""
    owner = Owner(workspace_id="home", user_id="bart")
    fields = dict(scope="user", type="fact", user_id="bart", workspace_id="home")
    show = make_node(principal, **fields, title="晚会上表演戏法")
    song = make_node(principal, **fields, title="晚会上唱歌跳舞")
    found = memory_query(principal=principal, query=MemoryQuery(owner=owner, query_text="元旦晚会我要演魔术", limit=5))
    assert [node.pk for node in found.relevant] == [show.pk, song.pk]


def test_a_memory_sharing_only_function_words_with_a_chinese_question_is_not_returned(principal):
    """我们 / 不是 / 这个 are grammar, not topic (memory.search.text.CJK_FUNCTION_CHARACTERS)."""
    owner = Owner(workspace_id="home", user_id="bart")
    fields = dict(scope="user", type="fact", user_id="bart", workspace_id="home")
    hike = make_node(principal, **fields, title="周末去香山爬山")
    make_node(principal, **fields, title="我们不是这个意思")
    found = memory_query(principal=principal, query=MemoryQuery(owner=owner, query_text="我们是不是这个周末去爬山？",
                                                                limit=5))
    assert [node.pk for node in found.relevant] == [hike.pk]
    alone = memory_query(principal=principal, query=MemoryQuery(owner=owner, query_text="我们不是", limit=5))
    assert [node.title for node in alone.relevant] == ["我们不是这个意思"]


def test_function_words_still_rank_the_memories_the_other_words_find(principal):
    """Both share 周末 and 爬山 with the question; 我们 (at FUNCTION_BIGRAM_SHARE) puts ours
    first, where a tie would put the newer one first."""
    owner = Owner(workspace_id="home", user_id="bart")
    fields = dict(scope="user", type="fact", user_id="bart", workspace_id="home")
    ours = make_node(principal, **fields, title="我们周末爬山了")
    theirs = make_node(principal, **fields, title="他们周末爬山了")
    found = memory_query(principal=principal, query=MemoryQuery(owner=owner, query_text="我们周末爬山", limit=5))
    assert [node.pk for node in found.relevant] == [ours.pk, theirs.pk]


def test_later_lines_of_a_conversation_query_weigh_more_than_earlier_ones():
    weights = query_token_weights("I walked the dog\nthen baked bread\nnow I want pasta")
    assert weights["pasta"] == 1.0 and weights["bread"] == pytest.approx(0.8) and weights["dog"] == pytest.approx(0.64)
    assert query_token_weights("one line only, pasta") == {}
    assert min(query_token_weights("\n".join(f"word{i}" for i in range(30))).values()) == pytest.approx(0.2)


def test_a_memory_about_the_latest_turn_outranks_one_about_an_earlier_turn(principal):
    owner = Owner(workspace_id="home", user_id="bart")
    fields = dict(scope="user", type="fact", user_id="bart", workspace_id="home")
    early = make_node(principal, **fields, title="Bart walked the dog")
    late = make_node(principal, **fields, title="Bart baked bread at home in the oven")
    query = "Bart: I walked the dog today\nAssistant: nice\nBart: and then I baked bread"
    found = memory_query(principal=principal, query=MemoryQuery(owner=owner, query_text=query, limit=5))
    assert [node.pk for node in found.relevant][:2] == [late.pk, early.pk]


def test_a_long_text_without_sentence_marks_is_cut_around_its_first_match():
    text = "alpha beta gamma " * 3000 + "kiwifruit orchard at the end"
    cut = focused_excerpt(text, tuple(query_tokens("kiwifruit orchard")), limit=160)
    assert "kiwifruit orchard at the end" in cut and cut.startswith("…") and len(cut) <= 160


def test_a_conversation_query_keeps_a_word_said_again_in_its_last_line_among_its_latest_tokens():
    lines = ["user: tell me the zebracode"] + [" ".join(f"w{i}x{j}" for j in range(10)) for i in range(15)]
    tokens = query_tokens("\n".join([*lines, "user: so what was the zebracode again?"]), limit=5)
    assert "zebracod" in tokens
