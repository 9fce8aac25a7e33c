"""An import writes only what the importing principal could write through the API: its
writable scopes and workspaces (docs/export.md, "Who may"), and every memory's owner columns
must agree with its scope, whoever imports."""

import json

import pytest

from accounts.principal import principal_for_key
from accounts.services import agent_key_create
from memory.errors import AccessDenied
from memory.models import Node
from tests.memory.portability.conftest import edit, export_bytes, import_bytes, refused


def _key(team, **options):
    return principal_for_key(agent_key_create(team=team, name="importer", kind="admin", **options)[0])


def _is_workspace_memory(record) -> bool:
    return record["fields"]["scope"] == "workspace"


@pytest.fixture
def trips(filled):
    return export_bytes(filled, "workspace", workspace_id="trips")


@pytest.fixture
def limited(target):
    """An admin key limited to workspace trips that writes session and workspace memories."""
    return _key(target.team, workspace_ids=["trips"], writable_scopes=["session", "workspace"])


def test_a_workspace_limited_key_imports_its_own_workspace(trips, limited):
    result = import_bytes(limited, trips)
    assert result.counts["node"] == Node.objects.filter(team=limited.team, workspace_id="trips").count() > 0
    assert not Node.objects.filter(team=limited.team, scope__in=["global", "user"]).exists()


@pytest.mark.parametrize("scope", ["global", "user"])
def test_a_workspace_limited_key_cannot_import_memories_of_a_scope_it_may_not_write(trips, limited, scope):
    data = edit(trips, "node", lambda r: r["fields"].update(scope=scope, user_id="xiaoming" if scope == "user" else ""),
                where=_is_workspace_memory)
    refused(limited, data, rf"line \d+: node record: this principal may not write '{scope}' scope memories",
            error=AccessDenied)


def test_a_key_that_writes_only_session_memories_cannot_import_workspace_memories(trips, target):
    key = _key(target.team, workspace_ids=["trips"], writable_scopes=["session"])
    refused(key, trips, r"line \d+: node record: this principal may not write 'workspace' scope", error=AccessDenied)


def test_an_admin_key_without_global_scope_cannot_import_a_team_file_with_global_memories(filled, target):
    key = _key(target.team, writable_scopes=["session", "workspace", "user"])
    refused(key, export_bytes(filled), r"line \d+: node record: this principal may not write 'global' scope",
            error=AccessDenied)


def test_a_global_memory_tied_to_a_workspace_is_refused_even_for_a_team_admin(trips, target):
    data = edit(trips, "node", lambda r: r["fields"].update(scope="global"), where=_is_workspace_memory)
    refused(target, data, r"line \d+: node record: a global memory needs no workspace_id and no user_id "
                          r"\(has workspace_id 'trips', user_id ''\)")


def test_a_user_memory_with_a_workspace_is_refused(trips, target):
    data = edit(trips, "node", lambda r: r["fields"].update(scope="user", user_id="xiaoming"),
                where=_is_workspace_memory)
    refused(target, data, r"a user memory needs a user_id and no workspace_id")


def test_a_workspace_memory_without_a_workspace_is_refused(filled, target):
    data = edit(export_bytes(filled), "node", lambda r: r["fields"].update(workspace_id=""),
                where=_is_workspace_memory)
    refused(target, data, r"a workspace memory needs a workspace_id and no user_id")


def test_a_user_memory_may_not_belong_to_a_session(filled, target):
    data = export_bytes(filled)
    session = next(r for r in map(json.loads, data.splitlines()) if r["type"] == "session")
    data = edit(data, "node", lambda r: r["refs"].update(session=session["id"]),
                where=lambda r: r["fields"]["scope"] == "user")
    refused(target, data, r"a user memory may not belong to a session")
