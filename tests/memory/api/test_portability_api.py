"""GET /api/v1/export and POST /api/v1/import: who may, what they get, and errors (docs/export.md)."""

import hashlib
import json

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.services import agent_key_create
from memory.models import AuditEvent, Node
from tests.conftest import key_client
from tests.helpers import make_node

SECRET = "acme's secret recipe"


def _download(response) -> bytes:
    return b"".join(response.streaming_content)


def _world(admin_principal):
    make_node(admin_principal, user_id="vera", title=SECRET)
    make_node(admin_principal, user_id="someone", title="someone else's memory")


def test_a_team_admin_downloads_the_team_as_json_lines(client, admin, admin_principal):
    _world(admin_principal)
    client.force_login(admin)
    response = client.get(reverse("api-export"), {"kind": "team"})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    assert response["Content-Disposition"].startswith('attachment; filename="acme-team-')
    lines = [json.loads(line) for line in _download(response).splitlines()]
    assert lines[0]["type"] == "manifest" and lines[0]["source_team"] == "acme"
    assert lines[-1]["type"] == "end" and lines[-1]["counts"]["node"] == 2
    assert AuditEvent.objects.filter(team=admin_principal.team, event_type="memory.team.exported",
                                     actor="user:ada").count() == 1


def test_the_other_teams_admin_cannot_export_this_team(client, outsider, admin_principal):
    _world(admin_principal)
    client.force_login(outsider)
    assert client.get(reverse("api-export"), {"kind": "team"}, HTTP_X_TEAM="acme").status_code == 403
    own = client.get(reverse("api-export"), {"kind": "team"})
    assert own.status_code == 200 and SECRET.encode() not in _download(own)


def test_an_agent_key_that_is_not_an_admin_key_cannot_export(agent_client):
    response = agent_client.get(reverse("api-export"), {"kind": "team"})
    assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"


def test_an_admin_key_limited_to_a_workspace_exports_only_that_workspace(team):
    client = key_client(agent_key_create(team=team, name="w1 admin", kind="admin", workspace_ids=["w1"])[1])
    assert client.get(reverse("api-export"), {"kind": "workspace", "workspace_id": "w1"}).status_code == 200
    assert client.get(reverse("api-export"), {"kind": "workspace", "workspace_id": "w2"}).status_code == 403
    assert client.get(reverse("api-export"), {"kind": "team"}).status_code == 403


def test_a_viewer_downloads_the_end_user_named_like_their_login_only(client, viewer, admin_principal):
    _world(admin_principal)
    client.force_login(viewer)
    mine = client.get(reverse("api-export"), {"kind": "user", "user_id": "vera"})
    assert mine.status_code == 200
    body = _download(mine).decode()
    assert SECRET in body and "someone else" not in body
    assert client.get(reverse("api-export"), {"kind": "user", "user_id": "someone"}).status_code == 403


def test_bad_export_parameters_get_400(client, admin):
    client.force_login(admin)
    assert client.get(reverse("api-export"), {"kind": "galaxy"}).status_code == 400
    response = client.get(reverse("api-export"), {"kind": "user"})
    assert response.status_code == 400 and "user_id is required" in response.json()["error"]["message"]


def _exported(client, admin, admin_principal) -> bytes:
    _world(admin_principal)
    client.force_login(admin)
    return _download(client.get(reverse("api-export"), {"kind": "team"}))


def _new_team_admin():
    from accounts.models import Role
    from accounts.services import membership_set, team_create

    other = team_create(slug="copy", name="Copy")
    return other, membership_set(team=other, username="cora", role=Role.ADMIN, password="pw-cora")[0]


def test_a_team_admin_imports_a_file_into_their_team(client, admin, admin_principal):
    data = _exported(client, admin, admin_principal)
    other, cora = _new_team_admin()
    importer = Client()
    importer.force_login(cora)
    response = importer.post(reverse("api-import") + "?reason=move", data=data, content_type="application/x-ndjson")
    assert response.status_code == 201, response.content
    assert response.json()["counts"]["node"] == 2 and response.json()["source_team"] == "acme"
    assert sorted(Node.objects.filter(team=other).values_list("title", flat=True)) == [SECRET, "someone else's memory"]
    again = importer.post(reverse("api-import"), data=data, content_type="application/x-ndjson")
    assert again.status_code == 409 and again.json()["error"]["code"] == "import_collision"


def test_a_viewer_cannot_import(client, admin, admin_principal, viewer):
    data = _exported(client, admin, admin_principal)
    client.force_login(viewer)
    response = client.post(reverse("api-import"), data=data, content_type="application/x-ndjson")
    assert response.status_code == 403


def test_a_bad_file_gets_400_with_the_line_and_stores_nothing(client, admin, admin_principal):
    data = _exported(client, admin, admin_principal)
    other, cora = _new_team_admin()
    importer = Client()
    importer.force_login(cora)
    response = importer.post(reverse("api-import"), data=data[: len(data) - 40], content_type="application/x-ndjson")
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("line ")
    assert not Node.objects.filter(team=other).exists()


def test_a_file_over_the_import_limit_gets_413(client, admin, admin_principal, settings):
    data = _exported(client, admin, admin_principal)
    settings.MEMORY_IMPORT_MAX_BYTES = 1024
    other, cora = _new_team_admin()
    importer = Client()
    importer.force_login(cora)
    response = importer.post(reverse("api-import"), data=data, content_type="application/x-ndjson")
    assert response.status_code == 413 and response.json()["error"]["code"] == "payload_too_large"


@pytest.mark.parametrize("content_type", ["application/x-ndjson", "application/octet-stream", "text/plain",
                                          "application/x-www-form-urlencoded", "application/json"])
def test_a_logged_in_admin_imports_with_any_content_type_and_a_csrf_token(client, admin, admin_principal,
                                                                          content_type):
    data = _exported(client, admin, admin_principal)
    other, cora = _new_team_admin()
    importer = APIClient(enforce_csrf_checks=True)
    importer.force_login(cora)
    importer.cookies["csrftoken"] = "c" * 32
    response = importer.post(reverse("api-import"), data=data, content_type=content_type, HTTP_X_CSRFTOKEN="c" * 32)
    assert response.status_code == 201, response.content
    assert response.json()["counts"]["node"] == 2
    assert AuditEvent.objects.filter(team=other, event_type="memory.team.imported", actor="user:cora").count() == 1


def test_a_logged_in_admin_without_a_csrf_token_cannot_import(client, admin, admin_principal):
    data = _exported(client, admin, admin_principal)
    other, cora = _new_team_admin()
    importer = APIClient(enforce_csrf_checks=True)
    importer.force_login(cora)
    response = importer.post(reverse("api-import"), data=data, content_type="application/x-ndjson")
    assert response.status_code == 403 and "CSRF" in response.json()["error"]["message"]
    assert not Node.objects.filter(team=other).exists()


def test_a_workspace_limited_admin_key_cannot_import_global_memories_over_http(client, admin, admin_principal):
    make_node(admin_principal, scope="workspace", workspace_id="work2", title="work2 note")
    client.force_login(admin)
    data = _download(client.get(reverse("api-export"), {"kind": "workspace", "workspace_id": "work2"}))
    body, end = data.rsplit(b"\n", 2)[0] + b"\n", json.loads(data.splitlines()[-1])
    body = body.replace(b'"scope":"workspace"', b'"scope":"global"')
    end["sha256"] = hashlib.sha256(body).hexdigest()
    other, _ = _new_team_admin()
    key = agent_key_create(team=other, name="work2", kind="admin", workspace_ids=["work2"],
                           writable_scopes=["session", "workspace"])[1]
    response = key_client(key).post(reverse("api-import"), data=body + json.dumps(end).encode() + b"\n",
                                    content_type="application/x-ndjson")
    assert response.status_code == 403, response.content
    assert "may not write 'global' scope memories" in response.json()["error"]["message"]
    assert not Node.objects.filter(team=other).exists()


def test_a_workspace_with_a_chinese_id_downloads_under_an_rfc_6266_file_name(client, admin, admin_principal):
    from django.utils import timezone

    make_node(admin_principal, scope="workspace", workspace_id="家", title="家里的事")
    client.force_login(admin)
    response = client.get(reverse("api-export"), {"kind": "workspace", "workspace_id": "家"})
    day = f"{timezone.now():%Y%m%d}"
    assert response["Content-Disposition"] == (f'attachment; filename="acme-workspace-_-{day}.jsonl"; '
                                               f"filename*=UTF-8''acme-workspace-%E5%AE%B6-{day}.jsonl")
    assert "家里的事" in _download(response).decode()
