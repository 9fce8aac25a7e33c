import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memory.services.nodes import node_expire
from tests.dashboard.conftest import make_message, make_node

TITLES = {
    "cilantro": "用户不吃香菜",
    "staging": "Deploy to staging first",
    "notes": "Write the release notes",
    "old": "Use the old build server",
}


@pytest.fixture
def nodes(principal):
    cilantro = make_node(
        principal, title=TITLES["cilantro"], scope="workspace", workspace_id="proj-a", domain="food",
        category_path=["diet", "veg"], type="preference", key="diet.cilantro", value_json={"eats": False},
    )
    staging = make_node(
        principal, title=TITLES["staging"], scope="user", user_id="u-1", workspace_id="", domain="dev",
        category_path=["ops", "deploy"], type="decision", key="deploy.target", value_json="staging",
    )
    message = make_message(principal, "Please write the release notes tomorrow")
    notes = make_node(
        principal, title=TITLES["notes"], scope="session", session_id="s-1", workspace_id="proj-b", user_id="u-2",
        domain="dev", type="task", source_message_ids=[message.pk],
    )
    old = make_node(principal, title=TITLES["old"], scope="workspace", workspace_id="proj-c", domain="dev")
    node_expire(principal=principal, node_id=old.pk, reason="moved to new servers")
    return {"cilantro": cilantro, "staging": staging, "notes": notes, "old": old}


def shown(response) -> set[str]:
    html = response.content.decode()
    return {name for name, title in TITLES.items() if title in html}


def test_viewer_sees_their_teams_nodes(viewer_client, nodes):
    response = viewer_client.get(reverse("dashboard:memories"))
    assert response.status_code == 200
    assert shown(response) == set(TITLES)


def test_viewer_never_sees_another_teams_nodes(viewer_client, nodes, other_principal):
    make_node(other_principal, title="Globex secret plan")
    html = viewer_client.get(reverse("dashboard:memories")).content.decode()
    assert "Globex secret plan" not in html


def test_list_links_each_row_to_its_node_page(viewer_client, nodes):
    html = viewer_client.get(reverse("dashboard:memories")).content.decode()
    assert f'href="{reverse("dashboard:node", args=[nodes["notes"].pk])}"' in html


def test_list_is_newest_first(viewer_client, nodes):
    html = viewer_client.get(reverse("dashboard:memories")).content.decode()
    positions = [html.index(TITLES[name]) for name in ("old", "notes", "staging", "cilantro")]
    assert positions == sorted(positions)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"scope": "user"}, {"staging"}),
        ({"workspace_id": "proj-a"}, {"cilantro"}),
        ({"user_id": "u-2"}, {"notes"}),
        ({"session_id": "s-1"}, {"notes"}),
        ({"domain": "food"}, {"cilantro"}),
        ({"category": "diet"}, {"cilantro"}),
        ({"category": "ops/deploy"}, {"staging"}),
        ({"category": "di"}, set()),
        ({"type": "decision"}, {"staging"}),
        ({"status": "expired"}, {"old"}),
        ({"key": "deploy.target"}, {"staging"}),
        ({"q": "香菜"}, {"cilantro"}),
        ({"q": "STAGING"}, {"staging"}),
        ({"q": "release notes"}, {"notes"}),
        ({"domain": "dev", "type": "task"}, {"notes"}),
    ],
    ids=lambda value: "-".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict) else "",
)
def test_each_filter_narrows_the_list(viewer_client, nodes, params, expected):
    response = viewer_client.get(reverse("dashboard:memories"), params)
    assert response.status_code == 200
    assert shown(response) == expected


def test_text_search_with_only_stop_words_finds_nothing(viewer_client, nodes):
    assert shown(viewer_client.get(reverse("dashboard:memories"), {"q": "the"})) == set()


def test_the_text_filter_keeps_function_words_apart(viewer_client, principal):
    """A ranking query leaves 没有 and 不是 out of what it looks for (memory.search.text); the
    filter, which wants every word, keeps the negations: 没有钱 is not 有钱."""
    listed = ("我没有钱", "他很有钱", "我不是素食者", "是素食者", "用户的女儿叫小美")
    for title in listed:
        make_node(principal, title=title)

    def titles(q: str) -> set[str]:
        html = viewer_client.get(reverse("dashboard:memories"), {"q": q}).content.decode()
        return {title for title in listed if f">{title}<" in html}

    assert titles("没有钱") == {"我没有钱"}
    assert titles("不是素食") == {"我不是素食者"}
    assert titles("有钱") == {"我没有钱", "他很有钱"}
    assert titles("我的女儿") == {"用户的女儿叫小美"}  # only negations are kept: 我的 would lose it


def test_invalid_filter_is_reported_and_shows_nothing(viewer_client, nodes):
    response = viewer_client.get(reverse("dashboard:memories"), {"scope": "galaxy"})
    assert response.status_code == 200
    assert shown(response) == set()
    assert "not applied" in response.content.decode()


def test_nul_in_a_filter_is_a_form_error_not_a_500(viewer_client, nodes):
    response = viewer_client.get(reverse("dashboard:memories"), {"q": "a\x00b"})
    assert response.status_code == 200
    assert shown(response) == set()


def test_counts_per_status_follow_the_other_filters(viewer_client, nodes):
    response = viewer_client.get(reverse("dashboard:memories"), {"domain": "dev", "status": "active"})
    assert response.context["status_counts"] == {"all": 3, "active": 2, "superseded": 0, "expired": 1, "deleted": 0}
    assert shown(response) == {"staging", "notes"}


def test_list_as_a_full_page(viewer_client, nodes):
    html = viewer_client.get(reverse("dashboard:memories")).content.decode()
    assert "<html" in html
    assert 'hx-get="/"' in html and 'hx-target="#results"' in html and 'hx-push-url="true"' in html
    assert 'id="results"' in html


def test_list_as_an_htmx_fragment(viewer_client, nodes):
    response = viewer_client.get(reverse("dashboard:memories"), {"q": "香菜"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html and "<form" not in html
    assert html.lstrip().startswith('<div id="results">')
    assert shown(response) == {"cilantro"}
    assert "HX-Request" in response.headers["Vary"]


def test_htmx_history_restore_gets_the_full_page(viewer_client, nodes):
    response = viewer_client.get(
        reverse("dashboard:memories"), HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true"
    )
    assert "<html" in response.content.decode()


def test_list_pages_by_fifty_newest_first(viewer_client, principal):
    for number in range(55):
        make_node(principal, title=f"Note number {number:02d}")
    first = viewer_client.get(reverse("dashboard:memories")).content.decode()
    assert "Note number 54" in first and "Note number 05" in first and "Note number 04" not in first
    second = viewer_client.get(reverse("dashboard:memories"), {"page": 2}).content.decode()
    assert "Note number 04" in second and "Note number 00" in second and "Note number 05" not in second
    assert "Page 2 of 2" in second


def test_pager_links_keep_the_filters(viewer_client, principal):
    for number in range(51):
        make_node(principal, title=f"Note number {number:02d}", domain="ops")
    html = viewer_client.get(reverse("dashboard:memories"), {"domain": "ops"}).content.decode()
    assert 'href="/?domain=ops&amp;page=2"' in html


def _count_list_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("dashboard:memories"))
    assert response.status_code == 200
    return len(queries)


def _varied_nodes(principal, start: int, count: int) -> None:
    for number in range(start, start + count):
        message = make_message(principal, f"message {number}", session_id=f"s-{number}")
        make_node(
            principal, title=f"Node {number}", scope="session", session_id=f"s-{number}",
            workspace_id="proj-b", user_id="u-2", tags=["t"], source_message_ids=[message.pk],
        )


def test_list_renders_in_the_same_number_of_queries_for_3_and_30_nodes(
    viewer_client, principal, django_assert_max_num_queries
):
    _varied_nodes(principal, 0, 3)
    with_three = _count_list_queries(viewer_client)
    _varied_nodes(principal, 3, 27)
    with django_assert_max_num_queries(with_three):
        response = viewer_client.get(reverse("dashboard:memories"))
    assert "Node 29" in response.content.decode()
    assert with_three <= 10


def test_the_deleted_count_counts_forgotten_memories_and_matches_their_list(viewer_client, principal, nodes):
    from memory.services.forgetting import ForgetSelector, memory_forget

    memory_forget(principal=principal, selector=ForgetSelector(node_id=nodes["staging"].pk), mode="soft",
                  reason="用户要求", confirm=True)
    url = reverse("dashboard:memories")
    counts = viewer_client.get(url).context["status_counts"]
    assert counts == {"all": 3, "active": 2, "superseded": 0, "expired": 1, "deleted": 1}
    deleted = viewer_client.get(url, {"status": "deleted"})
    assert shown(deleted) == {"staging"} and deleted.context["page_obj"].paginator.count == 1
    assert viewer_client.get(url, {"status": "deleted", "domain": "food"}).context["status_counts"]["deleted"] == 0


@pytest.mark.parametrize("params", [{}, {"status": "active"}, {"status": "expired"}, {"status": "deleted"},
                                    {"q": "release"}, {"domain": "dev", "status": "active"}])
def test_the_pager_counts_what_the_status_counts_say(viewer_client, nodes, params):
    response = viewer_client.get(reverse("dashboard:memories"), params)
    counts, page_obj = response.context["status_counts"], response.context["page_obj"]
    assert page_obj.paginator.count == counts[params.get("status") or "all"] == len(page_obj.object_list)
