"""The user's name, home, workplace and occupation as capture stores them: one value per key, so
what the user says later supersedes what they said before, with the chain kept (R-EXTRACT,
R-STORE supersede). Before these facts had keys, "我叫小红，不，我叫小绿" kept both names and a
move kept both homes, and the next context block injected both."""

import pytest

from memory.models import Node, NodeStatus
from tests.helpers import make_node
from tests.memory.capture.test_rules_apply import OWNER, active_nodes, capture


def homes():
    return [(node.value_json, node.scope) for node in active_nodes(type="fact", key="home").order_by("pk")]


def test_a_name_corrected_in_the_same_message_is_stored_once(principal):
    [said], results = capture(principal, "记住，我叫小红，不，我叫小绿")
    assert [result.accepted for result in results] == [True]
    name = active_nodes(key="name").get()
    assert (name.value_json, name.scope, name.title, name.source_message_ids) == ({"name": "小绿"}, "user", "用户叫小绿",
                                                                                  [said.pk])
    assert not Node.objects.filter(title="用户叫小红").exists()


def test_a_move_supersedes_the_home_the_user_asked_to_remember(principal):
    capture(principal, "记住，我住在杭州")
    hangzhou = active_nodes(key="home").get()
    [moved], results = capture(principal, "我上个月搬到了上海")
    assert [(result.operation, result.superseded_id) for result in results] == [("supersede", hangzhou.pk)]
    shanghai = active_nodes(key="home").get()
    # The user revising their own memory in their own words keeps it theirs (seed 更新示例).
    assert (shanghai.value_json, shanghai.scope, shanghai.explicit, shanghai.supersedes_id) == (
        {"lives": "上海"}, "user", True, hangzhou.pk)
    assert shanghai.source_message_ids == [moved.pk]
    hangzhou.refresh_from_db()
    assert hangzhou.status == NodeStatus.SUPERSEDED


def test_saying_the_same_home_again_writes_nothing(principal):
    capture(principal, "记住，我住在杭州")
    _, results = capture(principal, "我现在住在杭州")
    assert results == [] and homes() == [({"lives": "杭州"}, "user")]


def test_a_keyless_home_stored_before_keys_is_superseded_too(principal):
    old = make_node(principal, **OWNER, scope="user", type="fact", domain="general", title="用户住在杭州",
                    content="用户说自己住在杭州。", value_json={"lives": "杭州"}, explicit=True, confidence=0.85)
    _, results = capture(principal, "我搬到上海了")
    assert [(result.operation, result.superseded_id) for result in results] == [("supersede", old.pk)]
    assert homes() == [({"lives": "上海"}, "user")]


def test_a_fact_of_another_shape_or_another_key_is_left_alone(principal):
    note = make_node(principal, **OWNER, scope="user", type="fact", domain="general", title="老家在杭州",
                     value_json={"hometown": "杭州"})
    capture(principal, "记住，我叫小红，在腾讯上班，是一名护士")
    capture(principal, "我搬到上海了")
    assert Node.objects.get(pk=note.pk).status == NodeStatus.ACTIVE
    keyed = {node.key: node.value_json for node in active_nodes(type="fact").exclude(key="")}
    assert keyed == {"name": {"name": "小红"}, "workplace": {"works": "腾讯"}, "occupation": {"job": "护士"},
                     "home": {"lives": "上海"}}


def test_a_new_job_supersedes_the_old_one_in_english(principal):
    capture(principal, "Remember that I work as a nurse and I live in Berlin.")
    nurse = active_nodes(key="occupation").get()
    berlin = active_nodes(key="home").get()
    _, results = capture(principal, "I'm a software engineer now. We moved to Lisbon last year.")
    assert sorted((result.operation, result.superseded_id) for result in results) == [
        ("supersede", nurse.pk), ("supersede", berlin.pk)]
    assert active_nodes(key="occupation").get().value_json == {"job": "software engineer"}
    assert homes() == [({"lives": "Lisbon"}, "user")]


@pytest.mark.parametrize("text", [
    "我妈搬到上海了", "我老公上个月搬到了深圳", "我想搬到上海", "我下个月搬去杭州", "我以前搬到过北京", "我搬到新家了",
    "My sister moved to Paris", "He moved to Rome last year", "I work as hard as I can",
    # A review's finds: suppositions, hearsay, dreams and past chapters replaced the real home.
    "如果我搬到北京，会怎么样？", "等我搬到北京", "假如我搬到北京", "我梦见我搬到北京了", "他以为我搬到北京了",
    "我妈说我搬到北京了",
    "我搬到公司附近了", "If I moved to Lisbon, would I be happier?", "Imagine I moved to Lisbon",
    "My boss thinks I moved to Lisbon", 'She said "I moved to Lisbon"', "I moved to Lisbon in 2010 and then to Berlin in 2015",
    "I moved to Lisbon for six months but came back", "I moved to St. Louis",
])
def test_someone_elses_move_a_plan_or_no_place_replaces_no_home(principal, text):
    capture(principal, "记住，我住在杭州")
    _, results = capture(principal, text)
    assert results == [] and homes() == [({"lives": "杭州"}, "user")]


def test_another_users_home_is_not_superseded(principal):
    capture(principal, "记住，我住在杭州", owner={**OWNER, "user_id": "someone-else", "session_id": "theirs"})
    capture(principal, "记住，我住在上海")
    assert sorted((node.user_id, node.value_json["lives"]) for node in active_nodes(key="home")) == [
        ("someone-else", "杭州"), ("xiaoming", "上海")]


def test_moving_back_is_the_last_move_said(principal):
    capture(principal, "记住，我住在杭州")
    capture(principal, "我去年搬到了上海，今年又搬回了杭州")
    assert homes() == [({"lives": "杭州"}, "user")]
    capture(principal, "我搬到北京去了")
    assert homes() == [({"lives": "北京"}, "user")]  # not "北京去"


@pytest.mark.parametrize("text", ["我在公司上班", "我在一家公司工作", "我在楼下上班", "我在家里上班", "I work at Google?"])
def test_a_place_that_names_no_workplace_replaces_none(principal, text):
    capture(principal, "记住，我在腾讯工作")
    _, results = capture(principal, text)
    assert results == [] and active_nodes(key="workplace").get().value_json == {"works": "腾讯"}


def test_a_keyless_fact_capture_did_not_write_is_left_alone(principal):
    """An agent's note about a project called 阿波罗 had {"name": ...} too; capture's old notes have
    capture's titles. An old English note "User works as/at nurse" may be a job or a workplace:
    a workplace does not replace it."""
    project = make_node(principal, **OWNER, scope="user", type="fact", domain="general", title="项目代号",
                        value_json={"name": "阿波罗"})
    legacy = make_node(principal, **OWNER, scope="user", type="fact", domain="general", title="User works as/at nurse",
                       value_json={"works": "nurse"})
    capture(principal, "记住，我叫小红。Remember: I work at Google.")
    assert Node.objects.get(pk=project.pk).status == NodeStatus.ACTIVE
    assert Node.objects.get(pk=legacy.pk).status == NodeStatus.ACTIVE
    assert active_nodes(key="name").get().value_json == {"name": "小红"}


def test_capture_s_old_english_work_notes_are_replaced_by_their_kind(principal):
    """Before keys, "I work at Google" and "I work as a nurse" were both "User works as/at …"."""
    google = make_node(principal, **OWNER, scope="user", type="fact", domain="general", title="User works as/at Google",
                       content="The user said they work as/at Google.", value_json={"works": "Google"})
    nurse = make_node(principal, **OWNER, scope="user", type="fact", domain="general", title="User works as/at nurse",
                      content="The user said they work as/at nurse.", value_json={"works": "nurse"})
    parents = make_node(principal, **OWNER, scope="user", type="fact", domain="general", title="用户住在杭州",
                        content="用户的父母住在杭州。", value_json={"lives": "杭州"})
    capture(principal, "Remember that I work at Amazon. I work as a teacher.")
    capture(principal, "我搬到上海了")
    status = dict(Node.objects.filter(pk__in=[google.pk, nurse.pk, parents.pk]).values_list("pk", "status"))
    assert status == {google.pk: NodeStatus.SUPERSEDED, nurse.pk: NodeStatus.SUPERSEDED, parents.pk: NodeStatus.ACTIVE}
    assert active_nodes(key="workplace").get().value_json == {"works": "Amazon"}
    assert active_nodes(key="occupation").get().value_json == {"job": "teacher"}


@pytest.mark.parametrize("text,home", [
    # A second review's finds: the words ran on past the place, or said it as someone else's.
    ("我住在杭州挺好的", "杭州"), ("我刚搬到上海的时候很不习惯", "杭州"), ("我搬到上海后就胖了", "杭州"),
    ("我搬到上海工作了", "上海"), ("我搬到公司宿舍了", "杭州"), ("我住在上海附近的昆山", "杭州"),
    ("我妈说，我搬到上海了", "杭州"), ("昨晚做了个梦，我搬到上海了", "杭州"), ("我搬到上海了，开玩笑的", "杭州"),
    ("我搬到上海，然后又搬回了杭州", "杭州"), ("我从杭州搬到了苏州", "苏州"),
    # ...and true statements the first fixes refused.
    ("说实话我住在上海", "上海"), ("我跟你说我搬到上海了", "上海"), ("我希望你记住我住在上海", "上海"),
    ("我和老公都住在上海", "上海"), ("我们住在上海", "上海"), ("我家住在上海", "上海"),
    ("I said I live in Munich now.", "Munich"), ("I moved to Lisbon in 2023.", "Lisbon"),
    ("I moved to Lisbon before the pandemic.", "Lisbon"), ("I live in Berlin, just kidding, I live in Munich.", "Munich"),
    ("I moved from Lisbon to Porto", "Porto"), ("I've lived in Berlin for ten years", "Berlin"),
    ("When I moved to Lisbon, I was 20", "杭州"),
    # The user with someone else, said without 都/一起; and "together" is no place.
    ("我和老公住在上海", "上海"), ("我和室友住在朝阳区", "朝阳区"), ("我们住在一起", "杭州"), ("我和他住在一起", "杭州"),
    ("我们住在同一个小区", "杭州"), ("我跟你说住在上海很贵", "杭州"),
    # A review's finds on the companion without 都/一起: a negation, a plan, a past, a stay or
    # someone's word between the companion and the verb; places that name none.
    ("我和爸妈不住在上海", "杭州"), ("我和老公已经不住在上海了", "杭州"), ("我和老公不想住在上海", "杭州"),
    ("我和他以前住在上海", "杭州"), ("我和老公打算住在上海", "杭州"), ("我和老公准备搬到上海", "杭州"),
    ("我和老公还没搬到上海", "杭州"), ("我和老公下个月搬到深圳", "杭州"), ("我和老公这周住在上海", "杭州"),
    ("我和老公出差住在上海", "杭州"), ("我和老婆吵架住在朋友家", "杭州"), ("我跟他说住在上海", "杭州"),
    ("我和老公要是住在上海", "杭州"), ("我和闺蜜住在同城", "杭州"), ("我和闺蜜住在一栋楼", "杭州"),
    ("我和闺蜜住在对门", "杭州"), ("我和他住在一条街上", "杭州"), ("我和老公住在婆家", "杭州"),
    ("我和老公住在两个城市", "杭州"),
    # A second review's: a trip or a stay, someone's home, a house that is no place.
    ("我和同事住在上海，出差三天", "杭州"), ("这次出差我和同事住在上海", "杭州"), ("我和朋友住在三亚，玩得很开心", "杭州"),
    ("国庆我和家人住在三亚", "杭州"), ("我和朋友住在如家", "杭州"), ("我和孩子住在外婆家", "杭州"),
    ("我和爸妈住在老房子", "杭州"), ("我搬到上海住一段时间", "杭州"), ("我和老公搬到上海住几天", "杭州"),
    ("我希望你记住我住在上海", "上海"), ("我住在上海，不可能搬走", "上海"), ("我住在上海，才怪", "杭州"),
    # How long, said after the place, is left out of it; a floor or a room is no place; 有 in it
    # says something else. (住 alone is not read: 我住到月底, 我住多久, 我住302, 我住病房.)
    ("我住在上海有三年了", "上海"), ("我住在上海两年半了", "上海"), ("我住在上海三个多月了", "上海"),
    ("我住在上海好多年了", "上海"), ("我住在上海一辈子了", "上海"), ("我住在三楼", "杭州"), ("我住在302室", "杭州"),
    ("我住在上海有点远", "杭州"), ("我住上海", "杭州"), ("我住到月底", "杭州"), ("我住院了", "杭州"),
    # Whom the user lives with, said between "live" and the place; a review's finds: a month, a
    # stay, a question without its mark, an idiom after "the".
    ("I live with my parents in Boston", "Boston"), ("I live with my wife and two kids in Denver.", "Denver"),
    ("I live with them in Boston", "Boston"), ("I live in The Hague", "The Hague"),
    ("I live with my parents in mind", "杭州"), ("My sister lives with my parents in Boston", "杭州"),
    ("If I lived with my parents in Boston", "杭州"), ("I live with my parents in Boston, just kidding", "杭州"),
    ("I live with my parents in August", "杭州"), ("I live with a host family in Tokyo this semester", "杭州"),
    ("I live in Boston for the summer", "杭州"), ("Can I live with my parents in Boston", "杭州"),
    ("Should I live in Boston", "杭州"), ("I live in the Moment", "杭州"),
])
def test_what_a_sentence_says_of_the_home(principal, text, home):
    capture(principal, "记住，我住在杭州")
    capture(principal, text)
    assert homes() == [({"lives": home}, "user")]


@pytest.mark.parametrize("text,job", [
    ("我妈说我是医生", "护士"), ("他们都说我是医生", "护士"), ("我梦见我是医生", "护士"), ("我是医生，开玩笑的", "护士"),
    ("I'm a doctor, you play the patient.", "护士"), ("你扮演厨师。我是一名医生", "医生"),
    ("我是医生，才怪", "护士"), ("不如我当医生", "护士"), ("去年我是医生", "护士"), ("我是医生，是不可能的", "护士"),
])
def test_what_a_sentence_says_of_the_job(principal, text, job):
    capture(principal, "记住，我是一名护士")
    capture(principal, text)
    assert active_nodes(key="occupation").get().value_json == {"job": job}


def facts(key: str) -> list:
    return [node.value_json for node in active_nodes(type="fact", key=key)]


@pytest.mark.parametrize("text,workplace,job", [
    ("记住，我在腾讯做程序员", [{"works": "腾讯"}], [{"job": "程序员"}]),
    ("记住，我在腾讯当产品经理", [{"works": "腾讯"}], [{"job": "产品经理"}]),
    ("记住，我在北京当老师三年了", [{"works": "北京"}], [{"job": "老师"}]),
    ("记住，我在一家医院当护士", [], [{"job": "护士"}]),  # 一家医院 names no place
    ("记住，我在公司当经理", [], [{"job": "经理"}]),
    ("I work as a nurse practitioner at Kaiser.", [{"works": "Kaiser"}], [{"job": "nurse practitioner"}]),
    ("I'm a software engineer at Google and I love it", [{"works": "Google"}], [{"job": "software engineer"}]),
    ("I'm a nurse practitioner.", [], [{"job": "nurse practitioner"}]),
    ("I'm a student at Stanford", [], [{"job": "student"}]),  # a school is no workplace
    # Not the user's job, or none: nothing.
    ("记住，我在家做饭", [], []), ("记住，我在腾讯做项目", [], []), ("记住，如果我在腾讯做程序员", [], []),
    ("记住，我老公在腾讯做程序员", [], []), ("记住，我在腾讯做过程序员", [], []), ("记住，我在腾讯做程序员吗", [], []),
    ("记住，我在学校当老师，开玩笑的", [], []), ("My wife is a nurse at Kaiser", [], []),
    ("If I were a nurse at Kaiser", [], []), ("I was a nurse at Kaiser", [], []),
    ("My boss thinks I'm a nurse at Kaiser", [], []),
    # A review's finds: what stands between 在 and 做/当 tells of no job, or of no place of the
    # user's own; a time, a game or a question around it.
    ("记住，我在腾讯不做程序员了", [], []), ("记住，我在腾讯想当程序员", [], []), ("记住，我在腾讯要当程序员", [], []),
    ("记住，我在游戏里当医生", [], []), ("记住，我在梦里当医生", [], []), ("记住，我在剧本杀里当医生", [], []),
    ("记住，我在家给孩子当老师", [], []), ("记住，我在腾讯做程序员还是在阿里做产品经理", [], []),
    ("记住，我在腾讯给老板当司机", [], [{"job": "司机"}]), ("记住，我在腾讯实习做程序员", [], [{"job": "程序员"}]),
    ("记住，我在北京和上海当老师", [], [{"job": "老师"}]), ("记住，我在北京一家公司做销售", [], [{"job": "销售"}]),
    ("记住，我在银行工作当会计", [], [{"job": "会计"}]), ("记住，我在老公公司当会计", [], [{"job": "会计"}]),
    ("记住，我在清华当研究生", [], [{"job": "研究生"}]), ("记住，我在厨房当厨师", [], [{"job": "厨师"}]),
    ("记住，三年前我在腾讯当程序员", [], []), ("记住，我在腾讯当程序员，已经离职了", [], []),
    ("记住，我们玩个游戏吧，我在医院当医生", [], []), ("记住，你当病人，我在医院当医生", [], []),
    ("记住，我在上海做律师，假的", [], []),
    ("记住，以前我在阿里做程序员，现在我在腾讯做程序员", [{"works": "腾讯"}], [{"job": "程序员"}]),
    ("记住，我还在腾讯做程序员", [{"works": "腾讯"}], [{"job": "程序员"}]),
    ("记住，我在字节跳动做产品经理已经三年了", [{"works": "字节跳动"}], [{"job": "产品经理"}]),
    ("记住，我在星巴克当咖啡师", [{"works": "星巴克"}], [{"job": "咖啡师"}]),
    ("记住，我在华为做工程师", [{"works": "华为"}], [{"job": "工程师"}]),
    ("I'm a nurse for Halloween", [], []), ("I'm a yoga practitioner", [], []),
    ("I'm a caregiver for Mom.", [], [{"job": "caregiver"}]), ("I work as a barista for Starbucks", [], [{"job": "barista"}]),
    ("Should I work as a barista at Starbucks, or keep looking?", [], []), ("I'm a nurse at Kaiser, right?", [], []),
    ("Let's play a game. I'm a doctor at Mercy Hospital.", [], []),
    ("I'm a nurse at Kaiser but I quit last week", [], []),
    ("Hi, I'm Anna and I'm a nurse at Kaiser", [{"works": "Kaiser"}], [{"job": "nurse"}]),
    ("I'm working as a nurse at Kaiser", [{"works": "Kaiser"}], [{"job": "nurse"}]),
    # A second review's: an occasion, a job to come or gone, a story, a figure of speech.
    ("记住，我在婚礼上当主持人", [], []), ("记住，我在公司年会上当主持人", [], []),
    ("I'm a nurse at Kaiser, or at least I will be next month", [], []),
    ("I'm a teacher at Lincoln High, well, I was until June", [], []),
    ("I work as a barista at Starbucks in my story", [], []), ("I'm a chef at home, not professionally", [], []),
    ("I'm a nurse at heart", [], []),
    # An occupation done at home, and "the" before a place of more than one word; a review's finds
    # around them: a job done anywhere at home, a suggestion, a year gone, a joke, an idiom.
    ("记住，我在家当全职妈妈", [], [{"job": "全职妈妈"}]), ("记住，我在家里做家庭主妇", [], [{"job": "家庭主妇"}]),
    ("记住，我在家做全职太太", [], [{"job": "全职太太"}]), ("记住，我在家当家庭煮夫", [], [{"job": "家庭煮夫"}]),
    ("记住，我在家当老师", [], []), ("记住，我在家里当厨师", [], []), ("记住，我妈在家当全职妈妈", [], []),
    ("记住，不如我在家当全职妈妈", [], []), ("记住，那年我在家当全职妈妈", [], []),
    ("记住，我在家当全职妈妈，才怪", [], []), ("记住，去年我在腾讯做程序员", [], []),
    ("I'm a professor at the University of Michigan", [{"works": "University of Michigan"}], [{"job": "professor"}]),
    ("I'm a nurse at the Mayo Clinic", [{"works": "Mayo Clinic"}], [{"job": "nurse"}]),
    ("I work at the Apple Store", [{"works": "Apple Store"}], []), ("I'm a nurse at the moment", [], [{"job": "nurse"}]),
    ("I work for the Man", [], []), ("I work at the Moment", [], []), ("Do I work at Google", [], []),
])
def test_a_job_said_with_where_it_is_done_gives_both(principal, text, workplace, job):
    capture(principal, text)
    assert (facts("workplace"), facts("occupation")) == (workplace, job)
