"""A workspace or user export holds that workspace's or user's rows and nothing of anyone else."""

import json

import pytest

from memory.models import AuditEvent, Message, Node, Session
from memory.profile_models import UserProfile
from tests.memory.portability.conftest import export_bytes, import_bytes


def _records(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode().splitlines()]


def test_a_workspace_export_holds_only_that_workspace(filled):
    data = export_bytes(filled, "workspace", workspace_id="trips")
    records = _records(data)
    assert records[0]["kind"] == "workspace" and records[0]["filters"] == {"workspace_id": "trips"}
    types = {record["type"] for record in records}
    assert {"session", "message", "node", "summary", "working_memory", "audit"} <= types
    assert not types & {"schema_rule", "profile", "profile_version", "key_synonym"}
    for record in records[1:-1]:
        if "workspace_id" in record["fields"]:
            assert record["fields"]["workspace_id"] == "trips", record
    text = data.decode()
    for foreign in ("green tea", "Office opens", "香菜", "economy class", "Bob"):
        assert foreign not in text
    assert "Prefers aisle seats" not in text  # a user-scope memory, not the workspace's
    assert "京都行程定在四月" in text and "Kyoto" in text


def test_a_user_export_holds_only_that_user(filled):
    data = export_bytes(filled, "user", user_id="bob")
    records = _records(data)
    text = data.decode()
    assert "green tea" in text
    for foreign in ("xiaoming", "香菜", "Kyoto", "Office opens", "economy class", "Answer in the user's language"):
        assert foreign not in text
    sessions = [record for record in records if record["type"] == "session"]
    assert [record["fields"]["external_id"] for record in sessions] == ["b-1"]


def test_a_user_export_carries_their_profile_and_every_workspace(filled):
    records = _records(export_bytes(filled, "user", user_id="xiaoming"))
    workspaces = {record["fields"]["workspace_id"] for record in records if record["type"] == "session"}
    assert workspaces == {"home", "trips"}
    assert [record["type"] for record in records].count("profile") == 1
    assert all(record["fields"]["user_id"] == "xiaoming" for record in records
               if record["type"] in ("node", "audit", "profile_version"))


def test_a_user_export_imports_into_a_team_that_does_not_know_the_user(filled, target):
    result = import_bytes(target, export_bytes(filled, "user", user_id="xiaoming"))
    assert Session.objects.filter(team=target.team).count() == Session.objects.filter(
        team=filled.team, user_id="xiaoming").count()
    assert Message.objects.filter(team=target.team).count() == Message.objects.filter(
        team=filled.team, session__user_id="xiaoming").count()
    assert Node.objects.filter(team=target.team).count() == Node.objects.filter(
        team=filled.team, user_id="xiaoming").count() == result.counts["node"]
    assert UserProfile.objects.filter(team=target.team, user_id="xiaoming").exists()


def test_a_workspace_import_is_refused_where_the_workspace_exists(filled, target):
    data = export_bytes(filled, "workspace", workspace_id="trips")
    import_bytes(target, data)
    import pytest

    from memory.errors import Conflict
    with pytest.raises(Conflict, match="workspace 'trips' already has sessions and memories in team 'copy': import into a team "
                                         "where that workspace has none$"):
        import_bytes(target, data)


@pytest.mark.parametrize(("kind", "filters"), [("team", {}), ("workspace", {"workspace_id": "trips"}),
                                               ("user", {"user_id": "xiaoming"})])
def test_the_manifest_and_end_counts_agree_when_nothing_changes_meanwhile(filled, kind, filters):
    records = _records(export_bytes(filled, kind, **filters))
    assert records[0]["counts"] == records[-1]["counts"]
    assert records[0]["counts"]["audit"] == sum(1 for record in records if record["type"] == "audit")
    event = AuditEvent.objects.filter(team=filled.team, event_type=f"memory.{kind}.exported").latest("pk")
    assert event.payload["counts"] == records[0]["counts"]
