"""Concept tokens (memory.search.concepts; issue 7, R-QUERY): a Chinese word's thesaurus
categories rerank the memories a question's words found, so the one about the same kind of
thing rises; when the words find nothing, a class of a middle level or finer finds memories of
the same kind (女儿 for 闺女); they are off with MEMORY_CONCEPTS=""."""

import time
from datetime import UTC, datetime

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings

from memory.models import AuditEvent, Node
from memory.search import engine
from memory.search.concepts import CONCEPT_TOKENS_MAX, concept_tokens, query_concepts, similarities, thesaurus
from memory.search.text import FIELD_SEPARATOR, MAX_INDEX_TOKENS, document_tokens, index_tokens, normalize, query_tokens
from memory.selectors.nodes import Owner
from memory.selectors.query import MemoryQuery, memory_query
from tests.helpers import latest_migrations, make_node, migrate_to


def search(principal, text):
    found = memory_query(principal=principal, query=MemoryQuery(owner=Owner(workspace_id="w1", user_id="u1"),
                                                                query_text=text))
    return [node.title for node in found.relevant]


def test_words_are_cut_longest_first_and_function_words_give_no_concept():
    assert thesaurus().words(normalize("周末我们在圣诞节晚会上跳舞")) == ["周末", "圣诞节", "晚会", "跳舞"]


def test_a_word_gives_one_token_per_level_of_each_sense():
    assert concept_tokens("跳舞") == ["zzchh", "zzchh04", "zzchh04b", "zzchh04b01"]
    assert set(concept_tokens("表演")) & set(concept_tokens("跳舞")) == {"zzchh"}  # both 文体活动
    assert concept_tokens("开心") == concept_tokens("開心")  # traditional folds to simplified first
    assert len(concept_tokens("开心")) == 8  # two senses (高兴; 逗乐), four levels each
    assert concept_tokens("I love dancing") == []


def test_a_query_weighs_a_concept_by_how_often_its_lines_name_it_latest_most():
    weights = query_concepts("我想跳舞\n好的\n跳舞吧")
    assert weights["zzchh04b01"] == pytest.approx(1.0 + 0.8**2)
    assert query_concepts("跳舞") == dict.fromkeys(concept_tokens("跳舞"), 1.0)


def test_closeness_of_the_bags_weighted_by_idf_among_the_rows_with_a_pivoted_norm():
    rows = ["zzca zzcb", "zzca zzcc", "", "zzcb zzcb"]
    near = similarities(rows, {"zzcb": 1.0})
    assert near[1] == 0.0 and near[2] == 0.0  # no concept of the question; no concept at all
    assert near[3] > near[0] > 0.0
    assert similarities(["zzcb", "zzca"], {"zzcb": 1.0}) == [pytest.approx(1.0), 0.0]  # rows of one norm: the cosine
    # the pivot: a long row that has the question's concept is diluted half as much as by a cosine
    long_row = "zzcb " + " ".join(f"zzcx{index}" for index in range(8))
    near = similarities(["zzcb zzcy", long_row, "zzcz"], {"zzcb": 1.0})
    assert near[1] > similarities([long_row], {"zzcb": 1.0})[0] == 0.0
    assert near[0] / near[1] < 2.2  # a cosine: (9 ** 0.5) / (2 ** 0.5) = 2.12 times, as the norms go
    assert similarities(rows, {}) == [0.0, 0.0, 0.0, 0.0]


def test_a_node_indexes_its_concepts_in_a_field_before_its_owner_tokens(principal):
    node = make_node(principal, title="周末在晚会上跳舞", tags=["开心"])
    fields = Node.objects.get(pk=node.pk).search_tokens.split(FIELD_SEPARATOR)
    assert len(fields) == 7
    assert "zzchh04b01" in fields[5].split() and "zzcga01a01" in fields[5].split()
    assert fields[6].startswith("zzo")
    english = make_node(principal, title="Dances at parties")
    assert Node.objects.get(pk=english.pk).search_tokens.split(FIELD_SEPARATOR)[5] == ""


def test_the_memory_about_the_same_kind_of_thing_rises_after_the_best_word_match(principal):
    make_node(principal, title="周末去超市")  # the shortest: the shared word alone ranks it first
    make_node(principal, title="周末在晚会上跳舞")
    make_node(principal, title="周末在家睡觉")
    assert search(principal, "周末想表演节目") == ["周末去超市", "周末在晚会上跳舞", "周末在家睡觉"]
    with override_settings(MEMORY_CONCEPTS=""):
        assert search(principal, "周末想表演节目") == ["周末去超市", "周末在家睡觉", "周末在晚会上跳舞"]


# A newcomer's finding: notes start with 用户 by convention, and with idf log(1 + N/df) the
# short note whose one concept is 用户 (or the broad class of 猫 beside 狗) outranked the
# detailed note that has the asked word. A concept every reranked row has now counts 0.
FILMS = "最喜欢宫崎骏的动画电影，千与千寻看过五遍，也喜欢诺兰的科幻片，周末常去电影院看首映"
EXACT_WORD_FIRST = [
    ("用户养的狗叫什么", [("用户养了一条狗叫旺财",
                           "旺财是金毛，三岁，每天傍晚在小区公园遛，周末带去宠物医院洗澡，喜欢吃牛肉罐头"),
                       ("用户养了一只猫", "")]),
    ("用户喜欢什么电影", [("用户喜欢的电影", FILMS), ("用户喜欢话剧", "")]),
    ("用户喜欢看电影吗", [("用户喜欢的电影", FILMS), ("用户喜欢话剧", "")]),
    ("用户的女儿在哪上学", [("用户的女儿在北京上大学", "学的是计算机，每个月回家一次，喜欢吃妈妈做的红烧肉，明年毕业"),
                        ("用户的儿子", "")]),
    ("用户跑步多少公里", [("用户每天早上跑步五公里", "坚持了三年，参加过两次半程马拉松，膝盖有点旧伤，跑完会拉伸"),
                       ("用户喜欢游泳", "")]),
    ("用户对花生过敏吗", [("用户对花生过敏", "吃了会起疹子，随身带着肾上腺素笔，去餐厅点菜要提醒服务员"),
                       ("用户对猫毛过敏", "")]),
]


@pytest.mark.parametrize(("question", "notes"), EXACT_WORD_FIRST, ids=[case[0] for case in EXACT_WORD_FIRST])
def test_a_note_with_the_asked_word_stays_above_one_that_only_shares_its_kind(principal, question, notes):
    for title, content in notes:
        make_node(principal, type="fact", title=title, content=content)
    assert search(principal, question)[0] == notes[0][0]


# A newcomer's store of one user's notes (short ones beside detailed ones of the same kind).
PROFILE = [
    ("用户喜欢打羽毛球", "每周三晚上和同事在公司附近的体育馆打两个小时，用的是尤尼克斯的拍子，水平中等，去年膝盖扭伤过一次。"),
    ("用户喜欢打网球", ""),
    ("用户的妈妈喜欢看京剧",
     "妈妈六十八岁，年轻时在文工团唱过戏，最爱梅派，每个周末都守着电视看戏曲频道，用户过年给她买过长安大戏院的票。"),
    ("用户的妈妈喜欢看越剧", ""),
    ("用户的女儿喜欢弹钢琴", "小美今年七岁，每周六上午去少年宫上钢琴课，已经考过三级，平时每天练琴半小时。"),
    ("用户的女儿喜欢弹吉他", ""),
    ("用户住在上海浦东", "租的房子在地铁二号线附近，离公司通勤大约四十分钟。"),
    ("用户是后端工程师", "在一家互联网公司写Go和Python。"),
    ("用户对花生过敏", ""),
    ("用户喜欢喝咖啡", "每天早上一杯美式。"),
    ("用户养了一条狗叫旺财", "金毛，三岁。"),
    ("用户的女儿在北京上大学", "学的是计算机，每个月回家一次，喜欢吃妈妈做的红烧肉，明年毕业"),
    ("用户的儿子", ""),
]
PROFILE_QUESTIONS = [
    ("我喜欢打羽毛球吗", "用户喜欢打羽毛球"), ("周三晚上打羽毛球吗", "用户喜欢打羽毛球"), ("羽毛球", "用户喜欢打羽毛球"),
    ("我妈妈喜欢看京剧吗", "用户的妈妈喜欢看京剧"), ("妈妈喜欢京剧吗", "用户的妈妈喜欢看京剧"),
    ("我女儿喜欢弹钢琴吗", "用户的女儿喜欢弹钢琴"), ("我喜欢打网球吗", "用户喜欢打网球"),
    ("我妈妈喜欢看越剧吗", "用户的妈妈喜欢看越剧"), ("我女儿喜欢弹吉他吗", "用户的女儿喜欢弹吉他"),
    ("我对花生过敏吗", "用户对花生过敏"), ("我喜欢喝咖啡吗", "用户喜欢喝咖啡"), ("我的狗叫什么", "用户养了一条狗叫旺财"),
    ("我住在上海哪里", "用户住在上海浦东"), ("我是做什么工程师的", "用户是后端工程师"),
    ("用户的女儿在哪上学", "用户的女儿在北京上大学"),
]


def test_in_a_profile_the_note_with_the_asked_word_comes_first(principal):
    for title, content in PROFILE:
        make_node(principal, type="fact", title=title, content=content)
    firsts = {question: (search(principal, question) or [""])[0] for question, _ in PROFILE_QUESTIONS}
    assert firsts == dict(PROFILE_QUESTIONS)


def test_notes_tied_for_the_best_keyword_score_keep_their_usual_order(principal):
    # A newcomer's finding: keeping "the" best row first picked the newer of two tied notes and
    # overrode the seed's order, which puts a note the user stated before an inferred one.
    stated = make_node(principal, type="fact", title="用户对花生过敏", explicit=True)
    inferred = make_node(principal, type="fact", title="用户对芒果过敏")
    with override_settings(MEMORY_CONCEPTS="off"):
        order = search(principal, "我对什么过敏")
    assert order[0] == stated.title and set(order) == {stated.title, inferred.title}
    assert search(principal, "我对什么过敏") == order


def test_only_the_best_keyword_rows_are_reranked(principal, monkeypatch):
    make_node(principal, title="周末在晚会上跳舞")
    make_node(principal, title="周末去超市")
    monkeypatch.setattr(engine, "CONCEPT_RERANK_MAX", 1)
    assert search(principal, "周末想表演节目") == ["周末去超市", "周末在晚会上跳舞"]


def test_a_broad_class_alone_finds_no_memory(principal):
    make_node(principal, title="在晚会上跳舞")  # 跳舞 Hh04B01 and 表演 Hh01A01 share only the subclass Hh
    assert search(principal, "表演") == []


def test_when_the_words_find_nothing_the_same_kind_of_thing_is_found(principal):
    """A newcomer's questions in other words found nothing (closing note of 2026-12-01)."""
    make_node(principal, title="用户的女儿今年六岁")
    make_node(principal, title="用户的老公在腾讯上班")
    make_node(principal, title="用户喜欢打羽毛球")
    make_node(principal, title="用户的女儿今年六岁", user_id="u2")  # another user's: never found
    assert search(principal, "我闺女几岁了？") == ["用户的女儿今年六岁"]  # word group Ah14B01
    assert search(principal, "我儿子几岁了") == []  # Ah14A01: only the middle class Ah14 is the daughter's
    assert search(principal, "我爱人在哪工作") == ["用户的老公在腾讯上班"]  # word group Ah08A01
    # The words found something: concepts only rerank it (丈夫 and 女儿 share the class Ab01).
    assert search(principal, "我丈夫在哪上班？") == ["用户的老公在腾讯上班"]
    with override_settings(MEMORY_CONCEPTS=""):
        assert search(principal, "我闺女几岁了？") == []


def test_found_by_concepts_the_finest_shared_class_ranks_first_and_no_old_version_comes_back(principal):
    daughter = make_node(principal, title="女儿学钢琴")  # 闺女's word group Ah14B01 itself
    old = make_node(principal, title="女儿以前学画画")
    child = make_node(principal, title="小女今年上小学")  # Ah14B03: only the minor class Ah14B; the newest
    Node.objects.filter(pk=old.pk).update(status="superseded")
    found = memory_query(principal=principal, query=MemoryQuery(owner=Owner(workspace_id="w1", user_id="u1"),
                                                                query_text="闺女"))
    assert [node.pk for node in found.relevant] == [daughter.pk, child.pk]
    assert found.omitted == []  # found by no word of the question: an old version is not reported
    assert found.matched == {daughter.pk: (), child.pk: ()}
    assert old.pk not in {node.pk for node in found.relevant}


def test_function_words_find_nothing_by_their_class(principal):
    make_node(principal, title="用户觉得有点累")
    assert search(principal, "如果或者") == []  # 如果, 或者: class K, function words


def test_a_user_cannot_type_a_concept_token_into_a_query():
    assert query_tokens("zzchh04b01 zzchh 跳舞 zzcats zzcatsup") == ["跳舞", "zzcatsup"]  # zzcats stems to zzcat


def test_concepts_off_and_an_unknown_source():
    for off in ("", "off", "OFF", " none "):
        with override_settings(MEMORY_CONCEPTS=off):
            assert concept_tokens("跳舞") == [] and query_concepts("跳舞") == {}
    with override_settings(MEMORY_CONCEPTS=" Cilin "):
        assert concept_tokens("跳舞") == ["zzchh", "zzchh04", "zzchh04b", "zzchh04b01"]
    with override_settings(MEMORY_CONCEPTS="wordnet"), pytest.raises(ImproperlyConfigured, match="MEMORY_CONCEPTS"):
        thesaurus()


@pytest.mark.django_db(transaction=True)
def test_migration_0025_gives_every_node_its_concept_field(team):
    latest = latest_migrations()
    try:
        apps = migrate_to([("memory", "0024_message_system_index")])
        when = datetime(2026, 1, 1, tzinfo=UTC)
        old = "周末 末在 在晚 晚会 会上 上跳 跳舞 周 末 在 晚 会 上 跳 舞 | | | | | zzo1t zzo1u1"  # as written before 0025
        pk = apps.get_model("memory", "Node").objects.create(
            team_id=team.pk, scope="user", user_id="u1", domain="general", type="fact", title="周末在晚会上跳舞",
            status="active", slot="s", search_tokens=old, created_at=when, updated_at=when).pk
        migrate_to([("memory", "0025_node_concept_tokens")])
        fields = Node.objects.get(pk=pk).search_tokens.split(FIELD_SEPARATOR)
        assert len(fields) == 7 and "zzchh04b01" in fields[5].split() and fields[0] == old.split(" | ")[0]
    finally:
        migrate_to(latest)


def test_a_long_note_keeps_every_text_token_and_at_most_512_concept_tokens(principal):
    content = "".join(f"第{index}天去公园跑步，" for index in range(300))[:3990] + "鳄梨"
    fields = Node.objects.get(pk=make_node(principal, title="跑步", content=content).pk).search_tokens.split(FIELD_SEPARATOR)
    assert len(fields[5].split()) == CONCEPT_TOKENS_MAX == 512
    assert "鳄梨" in fields[1].split()
    assert search(principal, "鳄梨") == ["跑步"]
    # Text fields just under the index's bound stay whole: concepts do not count toward it (a
    # newcomer's note lost a word three quarters into its content when they did).
    text = "".join(f"第{index}天去公园跑步，" for index in range(1100))  # ~14,000 text tokens a field
    assert len(index_tokens(text)) * 2 < MAX_INDEX_TOKENS
    stored = document_tokens([text, text], concepts=concept_tokens(text)).split(FIELD_SEPARATOR)
    assert stored[0].split() == index_tokens(text) and len(stored[2].split()) == 512


def test_reindex_gives_nodes_written_with_concepts_off_their_concepts(principal, other_principal, team):
    with override_settings(MEMORY_CONCEPTS=""):
        mine = make_node(principal, title="周末在晚会上跳舞")
        theirs = make_node(other_principal, title="周末在晚会上跳舞")

    def concepts(node):
        return Node.objects.get(pk=node.pk).search_tokens.split(FIELD_SEPARATOR)[5]

    assert concepts(mine) == concepts(theirs) == ""
    with pytest.raises(CommandError, match="no team ''"):  # an unset $TEAM is not every team
        call_command("reindex_nodes", "--team", "")
    call_command("reindex_nodes", "--team", team.slug, stdout=open("/dev/null", "w"))
    assert "zzchh04b01" in concepts(mine).split() and concepts(theirs) == ""  # another team's stays as it was
    event = AuditEvent.objects.get(event_type="memory.nodes.reindexed")
    assert (event.team_id, event.payload) == (team.pk, {"count": 1, "first_id": mine.pk, "last_id": mine.pk})
    call_command("reindex_nodes", "--team", team.slug, stdout=open("/dev/null", "w"))
    assert AuditEvent.objects.filter(event_type="memory.nodes.reindexed").count() == 1  # nothing changed: no write
    with override_settings(MEMORY_CONCEPTS="off"):
        with pytest.raises(CommandError, match="--without-concepts"):
            call_command("reindex_nodes", "--team", team.slug)
        assert "zzchh04b01" in concepts(mine).split()
        call_command("reindex_nodes", "--team", team.slug, "--without-concepts", stdout=open("/dev/null", "w"))
        assert concepts(mine) == ""


@pytest.mark.postgres_only
@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs parallel connections to one database")
@pytest.mark.django_db(transaction=True)
def test_an_edit_made_while_reindexing_keeps_its_own_tokens(team, agent_key, monkeypatch):
    from accounts.principal import principal_for_key
    from memory.services import reindex
    from memory.services.nodes import node_update
    from tests.helpers import run_parallel

    principal = principal_for_key(agent_key[0])
    with override_settings(MEMORY_CONCEPTS=""):
        node = make_node(principal, type="fact", title="用户喜欢郁金香")
    computed = reindex.node_search_tokens

    def slow(row):  # the batch holds its rows while the edit arrives
        time.sleep(0.5)
        return computed(row)

    monkeypatch.setattr(reindex, "node_search_tokens", slow)

    def edit():
        time.sleep(0.2)
        return node_update(principal=principal, node_id=node.pk, changes={"title": "用户喜欢紫罗兰"}, reason="r")

    results = run_parallel([lambda: reindex.nodes_reindex(team=team), edit], team=team)
    assert not any(isinstance(result, Exception) for result in results), results
    assert search(principal, "紫罗兰") == ["用户喜欢紫罗兰"]


def test_what_every_memory_says_and_time_words_find_nothing(principal):
    """A review's finds: 客户 shares 用户's word group, so 帮我给客户写一封道歉邮件 brought five
    unrelated memories; 明天 shares a class with 今天."""
    for title in ("用户的女儿今年六岁", "用户对花生过敏", "用户养了一只猫叫咪咪", "用户今天心情不好", "用户明年打算考研"):
        make_node(principal, title=title)
    assert search(principal, "帮我给客户写一封道歉邮件") == []
    assert search(principal, "后天有什么安排") == []


def test_five_at_most_after_what_may_not_be_returned_is_left_out(principal):
    """A review's find: the five were cut before expired and excluded memories were dropped, so
    five newer expired ones hid the one that answers."""
    answer = make_node(principal, title="用户的女儿今年六岁")
    expired = [make_node(principal, title=f"女儿第{index}次发烧住院") for index in range(5)]
    Node.objects.filter(pk__in=[node.pk for node in expired]).update(status="expired")
    excluded = [make_node(principal, title=f"用户的女儿喜欢画画{index}").pk for index in range(5)]
    found = memory_query(principal=principal, query=MemoryQuery(
        owner=Owner(workspace_id="w1", user_id="u1"), query_text="我闺女几岁了", exclude_ids=frozenset(excluded)))
    assert [node.pk for node in found.relevant] == [answer.pk]
    more = [make_node(principal, title=f"女儿的第{index}个爱好").pk for index in range(6)]
    found = memory_query(principal=principal, query=MemoryQuery(owner=Owner(workspace_id="w1", user_id="u1"),
                                                                query_text="我闺女几岁了"))
    assert [node.pk for node in found.relevant] == more[::-1][:5]  # five at most; the newest of equals first
