import pytest
from django.urls import reverse

from memory.services.nodes import node_supersede, supersede_input
from tests.dashboard.conftest import make_message, make_node

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'


@pytest.fixture
def chain(principal):
    """Three versions of one memory: first → second → third (active)."""
    first = make_node(principal, title="Coffee: black", key="drink.coffee", value_json={"milk": False})
    second = node_supersede(
        principal=principal, old_node_id=first.pk, reason="user now takes milk",
        data=supersede_input(first, {"title": "Coffee: with milk", "value_json": {"milk": True}}, {}),
    )
    third = node_supersede(
        principal=principal, old_node_id=second.pk, reason="oat milk only",
        data=supersede_input(second, {"title": "Coffee: oat milk", "value_json": {"milk": "oat"}}, {}),
    )
    return first, second, third


def node_page(client, node):
    return client.get(reverse("dashboard:node", args=[node.pk]))


def test_node_page_shows_every_field(viewer_client, principal):
    node = make_node(
        principal, title="不吃香菜", content="用户说：不要放香菜。\n第二行", scope="workspace", workspace_id="proj-a",
        domain="food", category_path=["diet", "veg"], type="preference", key="diet.cilantro",
        value_json={"avoid": ["香菜"], "strict": True}, tags=["饮食"], entities=["香菜"], confidence=0.9,
        importance=0.7, explicit=True,
    )
    response = node_page(viewer_client, node)
    html = response.content.decode()
    assert response.status_code == 200
    for text in ("不吃香菜", "用户说：不要放香菜。\n第二行", "proj-a", "food", "diet/veg", "preference", "diet.cilantro",
                 "饮食", "0.90", "0.70", "workspace", 'class="badge status-active"'):
        assert text in html
    assert "&quot;avoid&quot;: [\n    &quot;香菜&quot;\n  ]" in html  # value_json pretty-printed, Chinese kept readable


def test_other_teams_node_id_is_404_for_a_logged_in_member(viewer_client, other_principal):
    foreign = make_node(other_principal, title="Globex secret plan")
    response = node_page(viewer_client, foreign)
    assert response.status_code == 404
    assert "Globex secret plan" not in response.content.decode()


def test_admin_of_another_team_gets_404_for_this_teams_node(client, outsider, principal):
    node = make_node(principal, title="Acme roadmap")
    client.force_login(outsider)
    response = node_page(client, node)
    assert response.status_code == 404
    assert "Acme roadmap" not in response.content.decode()


def test_unknown_node_id_is_404(viewer_client):
    assert viewer_client.get(reverse("dashboard:node", args=[999999])).status_code == 404


def test_node_page_shows_the_supersede_chain_both_ways(viewer_client, chain):
    first, second, third = chain
    html = node_page(viewer_client, second).content.decode()
    html = html[html.index('id="chain"'):html.index('id="audit"')]
    assert f'href="{reverse("dashboard:node", args=[first.pk])}"' in html
    assert f'href="{reverse("dashboard:node", args=[third.pk])}"' in html
    assert html.index("Coffee: black") < html.index("Coffee: with milk") < html.index("Coffee: oat milk")
    assert 'class="badge status-superseded"' in html


def test_node_page_shows_the_audit_trail_of_the_chain(viewer_client, chain, principal):
    first, second, third = chain
    html = node_page(viewer_client, first).content.decode()
    audit = html[html.index('id="audit"'):html.index('id="sources"')]
    assert audit.count("memory.node.created") == 3
    assert audit.count("memory.node.superseded") == 2
    assert "user now takes milk" in audit and "oat milk only" in audit
    assert principal.actor in audit
    assert "&quot;superseded_by&quot;" in audit  # the payload, escaped JSON


def test_node_page_shows_source_messages(viewer_client, principal):
    message = make_message(principal, "我不吃香菜，记住了", session_id="chat-42", workspace_id="proj-b", user_id="u-2")
    node = make_node(
        principal, title="不吃香菜", scope="session", session_id="chat-42", workspace_id="proj-b", user_id="u-2",
        source_message_ids=[message.pk],
    )
    html = node_page(viewer_client, node).content.decode()
    sources = html[html.index('id="sources"'):]
    assert "我不吃香菜，记住了" in sources
    assert "chat-42" in sources
    assert ">user<" in sources
    assert f"#{message.pk}" in sources


def test_node_page_has_no_write_actions(viewer_client, chain):
    html = node_page(viewer_client, chain[2]).content.decode()
    main = html[html.index("<main"):]
    assert 'method="post"' not in main and "hx-post" not in main


def test_stored_markup_is_rendered_escaped_everywhere(viewer_client, principal):
    owner = {"session_id": IMG, "workspace_id": SCRIPT, "user_id": IMG}
    message = make_message(principal, SCRIPT + IMG, **owner)
    node = make_node(
        principal, title=SCRIPT + IMG, content=SCRIPT + IMG, tags=[SCRIPT, IMG], entities=[IMG],
        key="xss.probe", value_json={"html": SCRIPT, "attr": IMG}, domain="xss", category_path=["<i>x"],
        scope="session", source_message_ids=[message.pk], **owner,
    )
    for response in (
        node_page(viewer_client, node),
        viewer_client.get(reverse("dashboard:memories")),
        viewer_client.get(reverse("dashboard:memories"), {"q": "alert"}, HTTP_HX_REQUEST="true"),
    ):
        html = response.content.decode()
        assert response.status_code == 200
        assert "<script>alert(1)" not in html
        assert "<img src=x" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in html


def test_a_replaced_version_says_which_version_replaced_it_and_which_is_newest(viewer_client, chain):
    first, second, third = chain
    html = node_page(viewer_client, first).content.decode()
    notice = html[html.index('id="newer-version"'):html.index("</p>", html.index('id="newer-version"'))]
    assert f'href="/nodes/{second.pk}">#{second.pk} Coffee: with milk</a>' in notice
    assert f'href="/nodes/{third.pk}">#{third.pk} Coffee: oat milk</a>' in notice and "status-active" in notice
    fields = html[html.index("<dt>Superseded by</dt>"):]
    assert fields.startswith(f'<dt>Superseded by</dt><dd><a href="/nodes/{second.pk}">#{second.pk}</a></dd>')
    newest = node_page(viewer_client, third).content.decode()
    assert 'id="newer-version"' not in newest and "<dt>Superseded by</dt><dd>—</dd>" in newest


def test_the_page_leads_to_its_chain_sources_and_audit(viewer_client, chain):
    html = node_page(viewer_client, chain[1]).content.decode()
    assert '<a href="#chain">supersede chain (3 versions)</a>' in html
    assert '<a href="#sources">source messages (0)</a>' in html
    assert '<a href="#audit">audit trail (' in html


def test_the_chain_stops_at_a_version_the_reader_may_not_see(principal, team):
    """A key limited to workspace w1 follows the chain only as far as it may read, as the API's
    node_chain does."""
    from accounts.principal import principal_for_key
    from accounts.services import agent_key_create
    from memory.selectors.dashboard import node_version_chain
    from memory.selectors.nodes import node_chain

    w2_chat = {"workspace_id": "w2", "user_id": "u1", "session_id": "w2-chat"}
    make_message(principal, "hi", **w2_chat)
    first = make_node(principal, title="v1", scope="workspace", workspace_id="w1", key="k", value_json=1)
    second = node_supersede(principal=principal, old_node_id=first.pk, reason="r",
                            data=supersede_input(first, {"title": "v2", "scope": "session"}, w2_chat))
    third = node_supersede(principal=principal, old_node_id=second.pk, reason="r",
                           data=supersede_input(second, {"title": "v3", "scope": "workspace"}, {"workspace_id": "w1"}))
    limited = principal_for_key(agent_key_create(team=team, name="w1 only", workspace_ids=["w1"])[0])
    for reader in (principal, limited):
        for node in (first, third):
            expected = [item.pk for item in node_chain(principal=reader, node=node)]
            assert [item.pk for item in node_version_chain(principal=reader, node=node)] == expected
    assert [item.pk for item in node_version_chain(principal=limited, node=first)] == [first.pk]
    assert [item.pk for item in node_version_chain(principal=principal, node=first)] == [first.pk, second.pk, third.pk]
