"""Downloading memories from the dashboard: my data for every login, any owner for admins (R-UI)."""

import json

from django.urls import reverse

from memory.models import AuditEvent
from tests.dashboard.conftest import logged_in, make_message, make_node

EXPORT = reverse("dashboard:export")


def _lines(response) -> list[dict]:
    return [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]


def test_a_viewer_downloads_the_end_user_named_like_their_login(viewer_client, principal):
    make_message(principal, "vera's own words", session_id="v-1", user_id="vera")
    make_message(principal, "someone else's words", session_id="x-1", user_id="xavier")
    response = viewer_client.get(EXPORT, {"kind": "user", "user_id": "vera"})
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith('attachment; filename="acme-user-vera-')
    contents = [line["fields"]["content"] for line in _lines(response) if line["type"] == "message"]
    assert contents == ["vera's own words"]
    assert AuditEvent.objects.filter(event_type="memory.user.exported", actor="user:vera", user_id="vera").exists()


def test_a_viewer_may_not_download_another_end_user_or_the_team(viewer_client, principal):
    make_message(principal, "someone else's words", session_id="x-1", user_id="xavier")
    assert viewer_client.get(EXPORT, {"kind": "user", "user_id": "xavier"}).status_code == 403
    assert viewer_client.get(EXPORT, {"kind": "team"}).status_code == 403
    assert not AuditEvent.objects.filter(event_type__endswith=".exported").exists()


def test_an_editor_may_not_download_a_workspace(editor_client):
    assert editor_client.get(EXPORT, {"kind": "workspace", "workspace_id": "proj-a"}).status_code == 403


def test_an_admin_downloads_a_chosen_user_a_workspace_and_the_team(admin_client, principal, other_principal):
    make_node(principal, title="proj-a fact")
    make_node(other_principal, title="globex secret")
    make_message(principal, "hello", session_id="s-1", user_id="u-2", workspace_id="proj-b")
    user = _lines(admin_client.get(EXPORT, {"kind": "user", "user_id": "u-2"}))
    assert [line["type"] for line in user if line["type"] == "session"] == ["session"]
    workspace = _lines(admin_client.get(EXPORT, {"kind": "workspace", "workspace_id": "proj-a"}))
    assert [line["fields"]["title"] for line in workspace if line["type"] == "node"] == ["proj-a fact"]
    team = b"".join(admin_client.get(EXPORT, {"kind": "team"}).streaming_content).decode()
    assert "proj-a fact" in team and "globex secret" not in team


def test_another_teams_admin_gets_their_own_team_only(outsider, principal):
    make_node(principal, title="acme secret")
    response = logged_in(outsider).get(EXPORT, {"kind": "team"})
    assert response.status_code == 200
    assert "acme secret" not in b"".join(response.streaming_content).decode()


def test_bad_parameters_get_400(admin_client):
    response = admin_client.get(EXPORT, {"kind": "user"})
    assert response.status_code == 400 and "user_id is required" in response.content.decode()


def test_anonymous_users_go_to_the_login_page(client):
    response = client.get(EXPORT, {"kind": "team"})
    assert response.status_code == 302 and "/login" in response["Location"]


def test_the_sessions_page_offers_my_data_to_everyone_and_owner_downloads_to_admins(viewer_client, admin_client,
                                                                                    principal):
    make_message(principal, "hello", session_id="s-1", user_id="u-2", workspace_id="proj-b")
    page = viewer_client.get(reverse("dashboard:sessions"), {"user_id": "u-2"}).content.decode()
    assert f"{EXPORT}?kind=user&amp;user_id=vera" in page
    assert "kind=team" not in page and "user_id=u-2\" download" not in page
    admin_page = admin_client.get(reverse("dashboard:sessions"), {"user_id": "u-2"}).content.decode()
    assert f"{EXPORT}?kind=team" in admin_page and f"{EXPORT}?kind=user&amp;user_id=u-2" in admin_page
    fragment = admin_client.get(reverse("dashboard:sessions"), {"workspace_id": "proj-b"}, HTTP_HX_REQUEST="true")
    assert f"{EXPORT}?kind=workspace&amp;workspace_id=proj-b" in fragment.content.decode()


def test_the_session_page_offers_the_users_download_next_to_forget(admin_client, viewer_client, principal):
    message = make_message(principal, "hello", session_id="s-1", user_id="u-2", workspace_id="proj-b")
    url = reverse("dashboard:session", args=[message.session_id])
    page = admin_client.get(url).content.decode()
    assert f"{EXPORT}?kind=user&amp;user_id=u-2" in page and "Forget this conversation" in page
    assert f"{EXPORT}?kind=user" not in viewer_client.get(url).content.decode()


def test_a_chinese_id_gives_an_ascii_file_name_and_the_exact_utf8_one(admin_client, principal):
    from django.utils import timezone

    make_message(principal, "晚饭吃什么", session_id="c-1", user_id="小明")
    response = admin_client.get(EXPORT, {"kind": "user", "user_id": "小明"})
    assert response.status_code == 200
    day = f"{timezone.now():%Y%m%d}"
    assert response["Content-Disposition"] == (f'attachment; filename="acme-user-__-{day}.jsonl"; '
                                               f"filename*=UTF-8''acme-user-%E5%B0%8F%E6%98%8E-{day}.jsonl")
