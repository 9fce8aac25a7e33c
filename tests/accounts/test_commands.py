from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from accounts.models import AgentKey, Membership
from memory.models import AuditEvent
from tests.conftest import key_client


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


def test_team_member_and_key_commands_set_up_a_working_agent(db):
    run("create_team", "shop", "--name", "Shop")
    run("create_member", "shop", "sam", "--role", "editor", "--password", "s3cret-pass")
    raw = run("create_agent_key", "shop", "--workspace", "w1", "--scopes", "session,workspace")
    key = AgentKey.objects.get()
    assert raw.startswith(f"mk_{key.prefix}_") and key.key_hash not in raw
    assert key.workspace_ids == ["w1"] and key.writable_scopes == ["session", "workspace"]
    assert Membership.objects.get().role == "editor"
    assert key_client(raw).get(reverse("api-nodes"), {"workspace_id": "w1"}).status_code == 200
    assert key_client(raw).get(reverse("api-nodes")).status_code == 403  # a workspace-limited key names one
    assert AuditEvent.objects.filter(event_type="accounts.key.created").count() == 1


def test_a_read_only_key_has_no_writable_scopes(db):
    run("create_team", "shop")
    run("create_agent_key", "shop", "--scopes", "")
    assert AgentKey.objects.get().writable_scopes == []


def test_revoke_by_prefix_or_whole_key_then_the_key_is_refused(db):
    run("create_team", "shop")
    raw = run("create_agent_key", "shop")
    assert "revoked" in run("revoke_agent_key", raw)
    assert key_client(raw).get(reverse("api-nodes")).status_code == 401
    with pytest.raises(CommandError):
        run("revoke_agent_key", raw.split("_")[1])
    with pytest.raises(CommandError):
        run("revoke_agent_key", "nope")


def test_commands_refuse_unknown_teams_and_duplicates(db):
    run("create_team", "shop")
    with pytest.raises(CommandError):
        run("create_team", "shop")
    with pytest.raises(CommandError):
        run("create_agent_key", "nope")
    with pytest.raises(CommandError):
        run("create_agent_key", "shop", "--scopes", "planet")


def test_create_member_checks_the_password_and_says_when_it_replaces_one(db):
    """A review's find: create_member … --password x reset an existing login's password to "x"
    silently, past the password validators the Members page applies."""
    run("create_team", "shop")
    run("create_team", "other")
    assert run("create_member", "shop", "sam", "--role", "admin", "--password", "s3cret-pass") == "sam is admin of shop"
    with pytest.raises(CommandError, match="password: This password is too short"):
        run("create_member", "other", "sam", "--role", "admin", "--password", "x")
    said = run("create_member", "other", "sam", "--role", "viewer", "--password", "an0ther-pass")
    assert said == "sam is viewer of other (an existing login: its password is replaced)"
    assert run("create_member", "other", "sam", "--role", "editor") == "sam is editor of other"
