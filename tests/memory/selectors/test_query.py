from datetime import timedelta

import pytest
from django.utils import timezone

from memory.errors import AccessDenied
from memory.selectors.nodes import Owner
from memory.selectors.query import MemoryQuery, ValueFilter, memory_query
from memory.services.nodes import node_delete, node_supersede, supersede_input
from tests.helpers import append, make_node

U1 = Owner(user_id="u1")


def search(principal, text, owner=U1, **kwargs):
    return memory_query(principal=principal, query=MemoryQuery(owner=owner, query_text=text, **kwargs))


@pytest.mark.parametrize("query,stored", [
    ("香菜", "用户不吃香菜"),
    ("少辣", "口味清淡少辣"),
    ("pytest", "发布前先跑pytest再推到Staging环境"),
    ("staging", "发布前先跑pytest再推到Staging环境"),
    ("Staging环境", "发布前先跑pytest再推到Staging环境"),
    ("环境", "发布前先跑pytest再推到Staging环境"),
    ("50", "预算５０元以内，在ＡＰＰ里下单"),
    ("app", "预算５０元以内，在ＡＰＰ里下单"),
    ("ＡＰＰ", "预算５０元以内，在ＡＰＰ里下单"),
    ("７点", "晚上7点后别打电话"),
    ("發佈", "发布前先跑pytest再推到Staging环境"),
    ("cilantro", "no cilantro, mild spice"),
])
def test_keyword_search_finds_chinese_english_and_mixed_text_at_rank_one(principal, query, stored):
    target = make_node(principal, title=stored)
    make_node(principal, title="完全无关的记忆 unrelated memory")
    result = search(principal, query)
    assert result.relevant and result.relevant[0].pk == target.pk


def test_value_strings_are_searchable(principal):
    target = make_node(principal, title="口味", key="food.taste", value_json={"text": "吃饭不要香菜，口味清淡少辣"})
    for query in ("香菜", "少辣", "清淡", "不要香菜"):
        assert search(principal, query).relevant[0].pk == target.pk


def test_returned_text_keeps_its_original_width(principal):
    make_node(principal, title="预算５０元以内，在ＡＰＰ里下单")
    assert search(principal, "50").relevant[0].title == "预算５０元以内，在ＡＰＰ里下单"


def test_more_matching_terms_rank_higher(principal):
    weak = make_node(principal, title="香菜的种植方法")
    strong = make_node(principal, title="不要香菜，要少辣")
    assert [n.pk for n in search(principal, "不要香菜少辣").relevant][:2] == [strong.pk, weak.pk]


def test_deleted_rows_do_not_take_top_k_slots(principal):
    noise = [make_node(principal, title=f"window seat note {i}") for i in range(30)]
    live = make_node(principal, title="window seat preferred on long flights")
    for node in noise:
        node_delete(principal=principal, node_id=node.pk, mode="soft")
    result = search(principal, "window seat", limit=5)
    assert [n.pk for n in result.relevant] == [live.pk]
    assert result.omitted == []


def test_superseded_match_is_omitted_and_the_successor_returned(principal):
    old = make_node(principal, title="周会定在周二上午十点", scope="workspace", workspace_id="w1", type="decision",
                    key="team.weekly_meeting")
    new = node_supersede(principal=principal, old_node_id=old.pk,
                         data=supersede_input(old, {"title": "周会改到周四下午三点"}, {}))
    result = search(principal, "周会", owner=Owner(workspace_id="w1"))
    assert [n.pk for n in result.relevant] == [new.pk]
    assert [(o.node_id, o.reason) for o in result.omitted] == [(old.pk, "superseded")]


def test_exact_results_follow_scope_priority(principal, admin_principal):
    append(principal, "hi", session_id="s1", workspace_id="w1")
    owner = Owner(workspace_id="w1", user_id="u1", session_id="s1")
    common = dict(type="constraint", key="spicy")
    g = make_node(admin_principal, scope="global", title="g", **common)
    u = make_node(principal, scope="user", title="u", **common)
    w = make_node(principal, scope="workspace", workspace_id="w1", title="w", **common)
    s = make_node(principal, scope="session", session_id="s1", workspace_id="w1", title="s", **common)
    result = memory_query(principal=principal, query=MemoryQuery(owner=owner, key="spicy"))
    # One-valued key in four competing scopes: the narrowest wins, the rest are conflict_lost.
    assert [n.pk for n in result.exact] == [s.pk]
    assert {(o.node_id, o.reason) for o in result.omitted} == {(w.pk, "conflict_lost"), (u.pk, "conflict_lost"),
                                                               (g.pk, "conflict_lost")}


def test_many_valued_keys_in_several_scopes_all_come_back_narrowest_first(principal, admin_principal):
    append(principal, "hi", session_id="s1", workspace_id="w1")
    owner = Owner(workspace_id="w1", user_id="u1", session_id="s1")
    common = dict(type="constraint", key="avoid", cardinality="many")
    g = make_node(admin_principal, scope="global", title="g", value_json="g", **common)
    u = make_node(principal, scope="user", title="u", value_json="u", **common)
    w = make_node(principal, scope="workspace", workspace_id="w1", title="w", value_json="w", **common)
    s = make_node(principal, scope="session", session_id="s1", workspace_id="w1", title="s", value_json="s", **common)
    result = memory_query(principal=principal, query=MemoryQuery(owner=owner, key="avoid"))
    assert [n.pk for n in result.exact] == [s.pk, w.pk, u.pk, g.pk]
    assert result.omitted == []


def test_temporary_constraint_comes_before_long_term_preference(principal):
    likes = make_node(principal, title="喜欢川菜", type="preference", key="cuisine", importance=0.9)
    today = make_node(principal, title="今天胃不舒服，少辣", type="constraint", key="cuisine",
                      expires_at=timezone.now() + timedelta(hours=12))
    result = memory_query(principal=principal, query=MemoryQuery(owner=U1, key="cuisine"))
    assert [n.pk for n in result.exact] == [today.pk, likes.pk]


def test_over_limit_and_low_confidence_are_reported(principal):
    nodes = [make_node(principal, title=f"fact {i}", type="fact", confidence=0.9) for i in range(3)]
    weak = make_node(principal, title="weak fact", type="fact", confidence=0.2)
    result = memory_query(principal=principal, query=MemoryQuery(owner=U1, limit=2, min_confidence=0.5))
    assert [n.pk for n in result.exact] == [nodes[2].pk, nodes[1].pk]
    assert {(o.node_id, o.reason) for o in result.omitted} == {(nodes[0].pk, "over_limit"), (weak.pk, "low_confidence")}


def test_an_absent_owner_id_reaches_nothing_of_that_scope(principal):
    make_node(principal, title="user memory", user_id="u1")
    make_node(principal, title="workspace memory", scope="workspace", workspace_id="w1", type="fact")
    assert memory_query(principal=principal, query=MemoryQuery(owner=Owner())).exact == []


def test_workspace_search_returns_only_that_workspace(principal):
    mine = make_node(principal, title="PROJECT_P plan", scope="workspace", workspace_id="w1", type="decision")
    make_node(principal, title="PROJECT_P plan", scope="workspace", workspace_id="w2", type="decision")
    result = search(principal, "project_p", owner=Owner(workspace_id="w1"))
    assert [n.pk for n in result.relevant] == [mine.pk]


def test_a_key_limited_to_one_workspace_is_refused_another(team):
    from accounts.principal import principal_for_key
    from accounts.services import agent_key_create

    limited = principal_for_key(agent_key_create(team=team, name="w1", workspace_ids=["w1"])[0])
    with pytest.raises(AccessDenied):
        search(limited, "x", owner=Owner(workspace_id="w2"))
    empty = principal_for_key(agent_key_create(team=team, name="none", workspace_ids=[])[0])
    with pytest.raises(AccessDenied):
        search(empty, "x", owner=Owner(workspace_id="w1"))


def test_other_teams_nodes_never_match(principal, other_principal):
    make_node(other_principal, title="香菜 secret")
    assert search(principal, "香菜").relevant == []


def test_tags_and_entities_filter(principal):
    tagged = make_node(principal, title="a", tags=["忌口", "菜谱推荐"], entities=["香菜"])
    make_node(principal, title="b", tags=["菜谱推荐"])
    q = MemoryQuery(owner=U1, tags=("忌口",), entities=("香菜",))
    assert [n.pk for n in memory_query(principal=principal, query=q).exact] == [tagged.pk]


class TestValueFilters:
    """S15: null versus missing keys, the same on both databases (documented on ValueFilter)."""

    @pytest.fixture
    def nodes(self, principal):
        return {
            "A": make_node(principal, title="A", key="level", cardinality="many", value_json={"level": None}),
            "B": make_node(principal, title="B", key="level", cardinality="many", value_json={}),
            "C": make_node(principal, title="C", key="level", cardinality="many", value_json={"level": "mild"}),
        }

    @pytest.mark.parametrize("op,expected", [
        ("is_null", {"A"}), ("exists", {"A", "C"}), ("missing", {"B"}), ("not_null", {"B", "C"}),
    ])
    def test_value_filter(self, principal, nodes, op, expected):
        q = MemoryQuery(owner=U1, key="level", value_filters=(ValueFilter(path=("level",), op=op),))
        assert {n.title for n in memory_query(principal=principal, query=q).exact} == expected

    def test_equals(self, principal, nodes):
        q = MemoryQuery(owner=U1, value_filters=(ValueFilter(path=("level",), op="equals", value="mild"),))
        assert [n.title for n in memory_query(principal=principal, query=q).exact] == ["C"]

    def test_a_key_named_like_a_lookup_is_still_a_key(self, principal):
        make_node(principal, title="D", key="k", value_json={"contains": {"x": None}})
        q = MemoryQuery(owner=U1, value_filters=(ValueFilter(path=("contains", "x"), op="is_null"),))
        assert [n.title for n in memory_query(principal=principal, query=q).exact] == ["D"]


def test_search_reaches_each_scope_of_the_callers_context_and_nothing_else(principal, admin_principal):
    append(principal, "hi", session_id="s1", workspace_id="w1", user_id="u1")
    owner = Owner(workspace_id="w1", user_id="u1", session_id="s1")
    mine = {
        make_node(admin_principal, scope="global", type="fact", title="jenkins global").pk,
        make_node(principal, scope="user", user_id="u1", title="jenkins user").pk,
        make_node(principal, scope="workspace", workspace_id="w1", type="fact", title="jenkins workspace").pk,
        make_node(principal, scope="session", session_id="s1", workspace_id="w1", user_id="u1", title="jenkins session").pk,
    }
    make_node(principal, scope="user", user_id="u2", title="jenkins other user")
    make_node(principal, scope="workspace", workspace_id="w2", type="fact", title="jenkins other workspace")
    append(principal, "hi", session_id="s1", workspace_id="w1", user_id="u2")
    make_node(principal, scope="session", session_id="s1", workspace_id="w1", user_id="u2", title="jenkins other session")
    assert {n.pk for n in search(principal, "jenkins", owner=owner).relevant} == mine
    only_user = search(principal, "jenkins", owner=owner, scopes=("user",)).relevant
    assert [n.title for n in only_user] == ["jenkins user"]


def test_owner_tokens_are_in_the_index_and_never_match_text(principal):
    from memory.models import Node
    from memory.search.text import owner_token
    from tests.helpers import index_hits

    make_node(principal, scope="user", user_id="u1", title="plain words")
    token = owner_token(principal.team.pk, "u", "u1")
    assert index_hits(Node, token) == 1
    assert search(principal, token).relevant == []
    assert search(principal, "plain").relevant
