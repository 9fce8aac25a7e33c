"""Members and roles (issue 6 page 8; R-TEN): admins add, change and remove members through the
accounts services, audited; the last admin stays; viewers and editors are refused on the server."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from accounts.models import Membership, Role
from accounts.services import membership_set
from memory.models import AuditEvent
from tests.dashboard.conftest import logged_in

URL = reverse("dashboard:members")
HTMX = {"HTTP_HX_REQUEST": "true"}


def member_of(team, user) -> Membership:
    return Membership.objects.get(team=team, user=user)


def add(client, htmx=False, **fields):
    return client.post(URL, {"action": "add", **{f"add-{name}": value for name, value in fields.items()}},
                       **(HTMX if htmx else {}))


def events(event_type):
    return list(AuditEvent.objects.filter(event_type=event_type).order_by("pk"))


def test_a_viewer_may_not_see_the_members_page(viewer_client):
    assert viewer_client.get(URL).status_code == 403


def test_an_editor_sees_members_and_roles_without_the_admin_forms(editor_client, admin, viewer):
    response = editor_client.get(URL)
    html = response.content.decode()
    assert response.status_code == 200
    assert all(name in html for name in ("ada", "eddie", "vera"))
    assert 'name="action" value="add"' not in html and 'value="remove"' not in html


def test_an_admin_sees_every_member_with_a_role_form(admin_client, editor, viewer, outsider):
    html = admin_client.get(URL).content.decode()
    assert html.count('name="action" value="role"') == 3
    assert "otto" not in html  # another team's admin


def test_an_admin_adds_a_new_login_with_a_password(admin_client, team, admin):
    response = add(admin_client, username="nina", role="editor", password="a-long-pass-phrase")
    assert response.status_code == 302 and response.url == URL
    nina = get_user_model().objects.get(username="nina")
    assert member_of(team, nina).role == Role.EDITOR
    [event] = events("accounts.member.set")[-1:]
    assert event.actor == "user:ada" and event.payload == {"username": "nina", "role": "editor", "previous_role": None,
                                                           "created_user": True}
    assert "a-long-pass-phrase" not in str(event.payload)
    assert nina.check_password("a-long-pass-phrase")


def test_an_admin_adds_an_existing_login_without_touching_its_password(admin_client, team, outsider):
    before = outsider.password
    response = add(admin_client, htmx=True, username="otto", role="viewer")
    assert response.status_code == 200 and "Added otto as viewer." in response.content.decode()
    outsider.refresh_from_db()
    assert member_of(team, outsider).role == Role.VIEWER and outsider.password == before


def test_a_password_for_an_existing_login_is_refused(admin_client, team, outsider):
    response = add(admin_client, username="otto", role="admin", password="take-over-123")
    assert response.status_code == 400
    assert "leave empty for an existing login" in response.content.decode()
    outsider.refresh_from_db()
    assert outsider.check_password("pw-otto") and not Membership.objects.filter(team=team, user=outsider).exists()


@pytest.mark.parametrize("fields, field", [
    ({"username": "newbie", "role": "viewer"}, "required for a new login"),
    ({"username": "newbie", "role": "viewer", "password": "short"}, "too short"),
    ({"username": "bad name!", "role": "viewer", "password": "a-long-pass-phrase"}, "valid username"),
    ({"username": "newbie", "role": "owner", "password": "a-long-pass-phrase"}, "Select a valid choice"),
    ({"username": "", "role": "viewer"}, "This field is required"),
])
def test_a_bad_new_member_is_refused_per_field_with_400(admin_client, fields, field):
    response = add(admin_client, htmx=True, **fields)
    assert response.status_code == 400 and field in response.content.decode()
    assert not get_user_model().objects.filter(username=fields["username"] or "-").exists()


def test_adding_a_member_twice_is_a_409(admin_client, editor):
    response = add(admin_client, username="eddie", role="viewer")
    assert response.status_code == 409 and "member already" in response.content.decode()


def test_an_admin_changes_a_role_and_it_is_audited(admin_client, team, editor):
    membership = member_of(team, editor)
    response = admin_client.post(URL, {"action": "role", "member": membership.pk, "role": "viewer"}, **HTMX)
    assert response.status_code == 200 and "eddie is now viewer." in response.content.decode()
    assert member_of(team, editor).role == Role.VIEWER
    assert events("accounts.member.set")[-1].payload["previous_role"] == "editor"


def test_an_admin_removes_a_member_and_it_is_audited(admin_client, team, viewer):
    response = admin_client.post(URL, {"action": "remove", "member": member_of(team, viewer).pk})
    assert response.status_code == 302
    assert not Membership.objects.filter(team=team, user=viewer).exists()
    assert get_user_model().objects.filter(pk=viewer.pk).exists()  # the login itself stays
    [event] = events("accounts.member.removed")
    assert event.actor == "user:ada" and event.payload == {"username": "vera", "role": "viewer"}


def test_the_last_admin_can_be_neither_demoted_nor_removed(admin_client, team, admin):
    membership = member_of(team, admin)
    for data in ({"action": "role", "member": membership.pk, "role": "editor"},
                 {"action": "remove", "member": membership.pk}):
        for headers in ({}, HTMX):
            response = admin_client.post(URL, data, **headers)
            assert response.status_code == 409, data
            assert "last admin" in response.content.decode()
    assert member_of(team, admin).role == Role.ADMIN
    assert not events("accounts.member.removed")


def test_with_a_second_admin_an_admin_may_step_down(admin_client, team, admin, editor):
    membership_set(team=team, username="eddie", role=Role.ADMIN)
    response = admin_client.post(URL, {"action": "role", "member": member_of(team, admin).pk, "role": "editor"})
    assert response.status_code == 302 and response.url == URL
    assert member_of(team, admin).role == Role.EDITOR
    page = admin_client.get(URL).content.decode()  # now built for an editor
    assert 'value="remove"' not in page


def test_an_admin_who_removes_themselves_leaves_the_page(admin_client, team, admin, editor):
    membership_set(team=team, username="eddie", role=Role.ADMIN)
    response = admin_client.post(URL, {"action": "remove", "member": member_of(team, admin).pk}, **HTMX)
    assert response.status_code == 200 and response["HX-Redirect"] == reverse("dashboard:memories")


@pytest.mark.parametrize("data", [
    {"action": "add", "add-username": "x1", "add-role": "admin", "add-password": "a-long-pass-phrase"},
    {"action": "role", "member": "1", "role": "admin"},
    {"action": "remove", "member": "1"},
])
def test_viewers_and_editors_are_refused_every_member_change(viewer_client, editor_client, team, admin, data):
    data = {**data, "member": str(member_of(team, admin).pk)} if "member" in data else data
    assert viewer_client.post(URL, data).status_code == 403
    response = editor_client.post(URL, data)
    assert response.status_code == 403 and "only team admins" in response.content.decode()
    assert member_of(team, admin).role == Role.ADMIN and not get_user_model().objects.filter(username="x1").exists()
    assert not events("accounts.member.removed")


def test_another_teams_membership_is_not_found(admin_client, other_team, outsider):
    theirs = member_of(other_team, outsider)
    assert admin_client.post(URL, {"action": "role", "member": theirs.pk, "role": "viewer"}).status_code == 404
    assert admin_client.post(URL, {"action": "remove", "member": theirs.pk}).status_code == 404
    assert member_of(other_team, outsider).role == Role.ADMIN


@pytest.mark.parametrize("data", [
    {}, {"action": "fly"}, {"action": "role", "member": "x", "role": "admin"}, {"action": "remove", "member": ""},
    {"action": "role", "member": "99999999999999999999999", "role": "admin"}, {"action": "add"},
    {"action": "add", "add-username": "a\x00b", "add-role": "viewer", "add-password": "a-long-pass-phrase"},
])
def test_malformed_posts_get_a_400_never_a_500(admin_client, data):
    assert admin_client.post(URL, data).status_code == 400


def test_a_superuser_outside_the_team_manages_it_as_an_admin(team, admin, viewer):
    root = get_user_model().objects.create_superuser("root", password="pw-root-123456")
    client = logged_in(root)
    response = client.post(URL, {"action": "role", "member": member_of(team, viewer).pk, "role": "editor"})
    assert response.status_code == 302 and member_of(team, viewer).role == Role.EDITOR
    assert events("accounts.member.set")[-1].actor == "user:root"


def test_the_page_takes_the_same_queries_for_many_members(admin_client, team, django_assert_max_num_queries):
    for number in range(30):
        membership_set(team=team, username=f"member{number}", role=Role.VIEWER)
    with django_assert_max_num_queries(4):
        assert admin_client.get(URL).status_code == 200
