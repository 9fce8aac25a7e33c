import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django_scopes import scope

from accounts.models import Role
from accounts.services import membership_set, team_create
from tests.dashboard.conftest import make_message, make_node


def test_user_without_a_team_gets_a_plain_403(client, db):
    lonely = get_user_model().objects.create_user("lonely", password="pw-lonely")
    client.force_login(lonely)
    response = client.get(reverse("dashboard:memories"))
    assert response.status_code == 403
    assert b"not a member of any team" in response.content


def test_member_of_two_teams_works_in_the_first_by_slug(client, viewer, other_team):
    membership_set(team=other_team, username="vera", role=Role.EDITOR)
    client.force_login(viewer)
    response = client.get(reverse("dashboard:memories"))
    assert response.context["current_team"].slug == "acme"
    assert response.context["current_role"] == Role.VIEWER


def test_team_switcher_moves_a_member_to_their_other_team(client, viewer, other_team, other_principal):
    membership_set(team=other_team, username="vera", role=Role.EDITOR)
    make_node(other_principal, title="Globex plans")
    client.force_login(viewer)
    response = client.post(reverse("dashboard:team_switch"), {"team": "globex"})
    assert response.status_code == 302
    assert client.session["team_slug"] == "globex"
    page = client.get(reverse("dashboard:memories"))
    assert page.context["current_team"].slug == "globex"
    assert page.context["current_role"] == Role.EDITOR
    assert "Globex plans" in page.content.decode()


def test_team_switcher_refuses_a_team_the_user_is_not_in(viewer_client, other_team):
    response = viewer_client.post(reverse("dashboard:team_switch"), {"team": "globex"})
    assert response.status_code == 403
    assert "team_slug" not in viewer_client.session


def test_team_switcher_refuses_a_team_that_does_not_exist(viewer_client):
    response = viewer_client.post(reverse("dashboard:team_switch"), {"team": "nope"})
    assert response.status_code == 403


def test_team_switcher_refuses_get(viewer_client):
    assert viewer_client.get(reverse("dashboard:team_switch")).status_code == 405


def test_team_left_behind_in_the_session_falls_back_to_a_current_membership(viewer_client, other_team):
    session = viewer_client.session
    session["team_slug"] = "globex"
    session.save()
    response = viewer_client.get(reverse("dashboard:memories"))
    assert response.context["current_team"].slug == "acme"


def test_superuser_may_switch_to_any_team_as_admin(client, team, other_team, other_principal):
    root = get_user_model().objects.create_superuser("root", password="pw-root")
    make_node(other_principal, title="Globex plans")
    client.force_login(root)
    assert client.post(reverse("dashboard:team_switch"), {"team": "globex"}).status_code == 302
    page = client.get(reverse("dashboard:memories"))
    assert page.context["current_team"].slug == "globex"
    assert page.context["current_role"] == Role.ADMIN
    assert "Globex plans" in page.content.decode()


def test_switcher_lists_only_the_users_teams(viewer_client, other_team):
    membership_set(team=team_create(slug="initech", name="Initech"), username="vera", role=Role.VIEWER)
    html = viewer_client.get(reverse("dashboard:memories")).content.decode()
    assert 'value="acme"' in html and 'value="initech"' in html
    assert 'value="globex"' not in html


def test_a_member_of_one_team_sees_its_name_without_a_switcher(viewer_client):
    html = viewer_client.get(reverse("dashboard:memories")).content.decode()
    assert '<span class="team-name">Team <b>Acme</b></span>' in html
    assert 'class="team-switch"' not in html
    assert 'vera <span class="badge role" title="your role in this team">viewer</span>' in html


@pytest.mark.parametrize("page", ["list", "node", "sessions", "session"])
def test_pages_run_inside_the_team_scope(client, viewer, principal, page):
    """Outside the test's scopes_disabled(), an unscoped query would raise ScopeError: the
    view must set the team scope itself, templates included."""
    message = make_message(principal, "Scoped message", session_id="scoped-chat")
    node = make_node(principal, title="Scoped", scope="session", session_id="scoped-chat", workspace_id="proj-b",
                     user_id="u-2", source_message_ids=[message.pk])
    client.force_login(viewer)
    url = {
        "list": reverse("dashboard:memories"),
        "node": reverse("dashboard:node", args=[node.pk]),
        "sessions": reverse("dashboard:sessions"),
        "session": reverse("dashboard:session", args=[message.session_id]),
    }[page]
    with scope():  # scopes enabled, no team: only the view's own scope makes queries work
        response = client.get(url)
    assert response.status_code == 200
    assert "scoped-chat" in response.content.decode()


@pytest.mark.parametrize("action", ["node", "session"])
def test_actions_run_inside_the_team_scope(client, editor, principal, action):
    message = make_message(principal, "Scoped message", session_id="scoped-chat")
    node = make_node(principal, title="Scoped", source_message_ids=[message.pk])
    client.force_login(editor)
    if action == "node":
        url, data = reverse("dashboard:node", args=[node.pk]), {"action": "expire", "expire-reason": "r"}
    else:
        url = reverse("dashboard:session", args=[message.session_id])
        data = {"action": "forget", "forget-mode": "soft", "forget-reason": "r"}
    with scope():
        response = client.post(url, data)
    assert response.status_code == 302
