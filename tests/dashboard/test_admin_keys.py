"""Agent keys (issue 6 page 8; R-TEN): admins create keys — the raw key shown once, in the
creation response only — and revoke them, audited; the API refuses a revoked key."""

import json
import logging
import re

import pytest
from django.contrib.sessions.models import Session as WebSession
from django.urls import reverse

from accounts.models import AgentKey, hash_key
from accounts.principal import principal_for_user_role
from accounts.services import agent_key_create
from memory.models import AuditEvent
from tests.conftest import key_client

URL = reverse("dashboard:keys")
HTMX = {"HTTP_HX_REQUEST": "true"}
RAW_KEY = re.compile(r"mk_[0-9a-f]{12}_[A-Za-z0-9_-]{20,}")


def create(client, htmx=False, **fields):
    data = {"action": "create", "create-kind": "agent", **{f"create-{name}": value for name, value in fields.items()}}
    return client.post(URL, data, **(HTMX if htmx else {}))


def raw_keys(response) -> list[str]:
    return RAW_KEY.findall(response.content.decode())


@pytest.fixture
def created(admin_client, caplog):
    caplog.set_level(logging.DEBUG)
    response = create(admin_client, name="planner", workspace_ids="proj-a, proj-b",
                      writable_scopes=["session", "workspace"])
    [raw] = raw_keys(response)
    return response, raw, AgentKey.objects.get(name="planner")


def test_a_viewer_may_not_see_the_keys(viewer_client):
    assert viewer_client.get(URL).status_code == 403


def test_an_editor_sees_the_keys_without_the_secrets_or_the_admin_forms(editor_client, agent_key):
    key, raw = agent_key
    html = editor_client.get(URL).content.decode()
    assert f"mk_{key.prefix}_…" in html and raw not in html
    assert 'value="create"' not in html and 'value="revoke"' not in html


def test_creating_a_key_shows_it_once_with_201(created):
    response, raw, key = created
    assert response.status_code == 201
    assert key.key_hash == hash_key(raw) and raw.startswith(f"mk_{key.prefix}_")
    assert (key.kind, key.workspace_ids, key.writable_scopes) == ("agent", ["proj-a", "proj-b"], ["session", "workspace"])
    assert "shown only this once" in response.content.decode()
    assert "no-store" in response["Cache-Control"]


def test_a_reload_never_shows_the_key_again(admin_client, created):
    _, raw, key = created
    for headers in ({}, HTMX):
        html = admin_client.get(URL, **headers).content.decode()
        assert raw not in html and f"mk_{key.prefix}_…" in html and not RAW_KEY.findall(html)


def test_the_raw_key_is_in_no_audit_event_session_or_log(created, caplog):
    _, raw, key = created
    [event] = AuditEvent.objects.filter(event_type="accounts.key.created", payload__prefix=key.prefix)
    assert event.actor == "user:ada"
    assert event.payload == {"prefix": key.prefix, "name": "planner", "kind": "agent",
                             "workspace_ids": ["proj-a", "proj-b"], "writable_scopes": ["session", "workspace"]}
    everything = json.dumps([e.payload for e in AuditEvent.objects.all()]) + "".join(
        e.reason for e in AuditEvent.objects.all())
    assert raw not in everything and raw.split("_", 2)[2] not in everything
    assert all(raw not in str(row.get_decoded()) for row in WebSession.objects.all())
    assert all(raw not in record.getMessage() for record in caplog.records)


def test_the_new_key_calls_the_api_and_a_revoked_one_no_longer_can(admin_client, created):
    _, raw, key = created
    agent = key_client(raw)
    assert agent.get(reverse("api-nodes"), {"workspace_id": "proj-a"}).status_code == 200
    response = admin_client.post(URL, {"action": "revoke", "key": key.pk})
    assert response.status_code == 302 and response.url == URL
    refused = agent.get(reverse("api-nodes"), {"workspace_id": "proj-a"})
    assert refused.status_code == 401 and "revoked" in refused.json()["error"]["message"]
    [event] = AuditEvent.objects.filter(event_type="accounts.key.revoked")
    assert event.payload == {"prefix": key.prefix, "name": "planner"} and event.actor == "user:ada"


def test_revoking_over_htmx_returns_the_list_with_the_key_marked_revoked(admin_client, agent_key):
    key, _ = agent_key
    response = admin_client.post(URL, {"action": "revoke", "key": key.pk}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<div id="keys">')
    assert f"Revoked key {key.prefix}" in html and "revoked</span>" in html


def test_revoking_a_revoked_key_is_a_409(admin_client, agent_key):
    key, _ = agent_key
    admin_client.post(URL, {"action": "revoke", "key": key.pk})
    response = admin_client.post(URL, {"action": "revoke", "key": key.pk})
    assert response.status_code == 409 and "revoked already" in response.content.decode()
    assert AuditEvent.objects.filter(event_type="accounts.key.revoked").count() == 1


def test_an_admin_key_may_write_global_memory(admin_client):
    response = create(admin_client, name="ops", kind="admin", writable_scopes=["global", "workspace"])
    [raw] = raw_keys(response)
    body = {"operation": "create", "node": {"scope": "global", "type": "fact", "title": "公司假期从周五开始"}}
    answer = key_client(raw).post(reverse("api-memory-propose"), body, format="json")
    assert answer.status_code == 201 and answer.json()["accepted"] is True


def test_an_empty_scope_list_makes_a_read_only_key(admin_client):
    [raw] = raw_keys(create(admin_client, name="reader"))
    assert AgentKey.objects.get(name="reader").writable_scopes == []
    body = {"operation": "create", "node": {"scope": "session", "type": "fact", "title": "x"}, "session_id": "s"}
    assert key_client(raw).post(reverse("api-memory-propose"), body, format="json").status_code == 403


@pytest.mark.parametrize("fields, message", [
    ({"name": "x", "writable_scopes": ["global"]}, "only with an admin key"),
    ({"name": ""}, "This field is required"),
    ({"name": "x" * 201}, "at most 200 characters"),
    ({"name": "x", "kind": "root"}, "Select a valid choice"),
    ({"name": "x", "writable_scopes": ["everything"]}, "Select a valid choice"),
    ({"name": "x", "workspace_ids": "w" * 129}, "1–128 characters"),
    ({"name": "x", "workspace_ids": ".."}, "may not be"),
])
def test_a_bad_key_is_refused_per_field_with_400(admin_client, fields, message):
    response = create(admin_client, htmx=True, **fields)
    html = response.content.decode()
    assert response.status_code == 400 and message in html, html
    assert not raw_keys(response) and not AgentKey.objects.filter(name="x").exists()


def test_viewers_and_editors_may_neither_create_nor_revoke(viewer_client, editor_client, agent_key):
    key, _ = agent_key
    for client in (viewer_client, editor_client):
        assert create(client, name="sneaky").status_code == 403
        assert client.post(URL, {"action": "revoke", "key": key.pk}).status_code == 403
    assert not AgentKey.objects.filter(name="sneaky").exists()
    key.refresh_from_db()
    assert key.revoked_at is None


def test_another_teams_key_is_not_found(admin_client, other_team):
    theirs, raw = agent_key_create(team=other_team, name="theirs")
    assert admin_client.post(URL, {"action": "revoke", "key": theirs.pk}).status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
    assert "theirs" not in admin_client.get(URL).content.decode()


@pytest.mark.parametrize("data", [{}, {"action": "rotate"}, {"action": "revoke"}, {"action": "revoke", "key": "x"},
                                  {"action": "revoke", "key": "99999999999999999999999"}])
def test_malformed_posts_get_a_400_never_a_500(admin_client, data):
    assert admin_client.post(URL, data).status_code == 400


def test_the_list_shows_limits_scopes_and_last_use(admin_client, agent_key):
    key, raw = agent_key
    key_client(raw).get(reverse("api-nodes"))
    html = admin_client.get(URL).content.decode()
    row = html[html.index(f'data-key="{key.pk}"'):]
    row = row[: row.index("</tr>")]
    assert "every workspace" in row and "never" not in row and "live" in row
    assert all(f'<span class="tag">{scope}</span>' in row for scope in ("session", "workspace", "user"))


def test_the_page_takes_the_same_queries_for_many_keys(admin_client, team, admin, django_assert_max_num_queries):
    actor = principal_for_user_role(team, admin, "admin")
    for number in range(30):
        agent_key_create(team=team, name=f"key {number}", actor=actor)
    with django_assert_max_num_queries(4):
        assert admin_client.get(URL).status_code == 200


def test_sending_the_same_create_form_twice_makes_one_key(admin_client):
    """A review's find: the create answer is a 201 with no redirect, so a double click or a
    reload made a second live key of the same name. The form's one-time token is remembered
    (with the prefix it made, never the raw key)."""
    page = admin_client.get(URL).content.decode()
    [once] = re.findall(r'name="create-once" value="([0-9a-f]{32})"', page)
    first = create(admin_client, name="dup", once=once)
    assert first.status_code == 201 and len(raw_keys(first)) == 1
    key = AgentKey.objects.get(name="dup")
    again = create(admin_client, name="dup", once=once)
    assert again.status_code == 409 and raw_keys(again) == []
    assert f"it created key {key.prefix} (dup)" in again.content.decode()
    assert AgentKey.objects.filter(name="dup").count() == 1
    [other] = re.findall(r'name="create-once" value="([0-9a-f]{32})"', admin_client.get(URL).content.decode())
    assert other != once and create(admin_client, name="dup", once=other).status_code == 201
    assert AgentKey.objects.filter(name="dup").count() == 2
