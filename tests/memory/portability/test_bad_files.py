"""A bad file is refused with a clear error naming the line, and nothing is stored."""

import json
from datetime import UTC, datetime

import pytest

from memory.errors import AccessDenied, Conflict
from memory.models import Message
from memory.services.portability import import_ as importer
from tests.memory.portability.conftest import edit, export_bytes, import_bytes, lines_of, refused, reseal, stored


@pytest.fixture
def exported(filled):
    return export_bytes(filled)


def test_an_unknown_schema_version_is_refused(exported, target):
    refused(target, edit(exported, "manifest", lambda r: r.update(schema_version=2)),
             "line 1: schema_version 2 is not supported; this instance reads version 1")


def test_a_file_without_a_manifest_is_refused(exported, target):
    refused(target, b"".join(lines_of(exported)[1:]), "line 1: the first line must be the manifest")


def test_a_truncated_file_is_refused(exported, target):
    lines = lines_of(exported)
    refused(target, b"".join(lines[: len(lines) // 2]), "ends before its end record")


def test_a_line_cut_in_the_middle_is_refused(exported, target):
    lines = lines_of(exported)
    lines[5] = lines[5][:20] + b"\n"
    refused(target, b"".join(lines), "line 6: not a JSON object")


def test_a_changed_byte_fails_the_checksum(exported, target):
    changed = exported.replace("少油少辣".encode(), "多油多辣".encode(), 1)
    assert changed != exported
    refused(target, changed, "checksum does not match")


def test_nul_in_a_text_is_refused(exported, target):
    data = edit(exported, "message", lambda r: r["fields"].update(content="a\u0000b"))
    refused(target, data, r"line \d+: message record: content contains U\+0000")


def test_a_reference_to_a_record_not_in_the_file_is_refused(exported, target):
    data = edit(exported, "node", lambda r: r["refs"].update(source_messages=[987654321]))
    refused(target, data, r"line \d+: refers to message 987654321, which is not in the file")


def test_a_supersede_link_to_a_missing_node_is_refused(exported, target):
    data = edit(exported, "node", lambda r: r["refs"].update(supersedes=987654321))
    refused(target, data, "refers to node 987654321")


def test_a_bad_value_names_the_field(exported, target):
    data = edit(exported, "node", lambda r: r["fields"].update(status="forgotten"))
    refused(target, data, "node record: status is not one of active, superseded, expired, deleted")


def test_an_unknown_field_is_refused(exported, target):
    data = edit(exported, "session", lambda r: r["fields"].update(colour="blue"))
    refused(target, data, "unknown field.s. colour")


def test_a_huge_line_is_refused(exported, target, monkeypatch):
    monkeypatch.setattr(importer, "LINE_MAX_BYTES", 2000)
    data = edit(exported, "message", lambda r: r["fields"].update(content="长" * 3000))
    refused(target, data, r"line \d+: longer than 2000 bytes")


def test_a_file_over_the_size_limit_is_refused(exported, target):
    before = stored(target.team)
    with pytest.raises(importer.FileTooLarge, match="larger than 1000 bytes"):
        import_bytes(target, exported, max_bytes=1000)
    assert stored(target.team) == before


def test_records_breaking_a_store_rule_roll_everything_back(exported, target):
    lines = lines_of(exported)
    sessions = [i for i, line in enumerate(lines) if json.loads(line)["type"] == "session"]
    twin = json.loads(lines[sessions[0]])
    twin["id"] = 987654321
    lines.insert(sessions[0] + 1, (json.dumps(twin, ensure_ascii=False) + "\n").encode())
    refused(target, reseal(lines), "break a rule of the store")


def test_a_team_file_does_not_import_into_a_team_with_memories(exported, filled):
    refused(filled, exported, "^the team already has sessions and memories and profiles in team 'acme': "
            "import into a team that has none$", error=Conflict)


def test_a_reader_may_not_import(exported, target):
    from accounts.principal import principal_for_user_role

    viewer = principal_for_user_role(target.team, None, "viewer")
    refused(viewer, exported, "team admins only", error=AccessDenied)


def test_a_user_file_may_not_carry_another_users_rows(filled, target):
    data = export_bytes(filled, "user", user_id="bob")
    data = edit(data, "node", lambda r: r["fields"].update(user_id="xiaoming"))
    refused(target, data, "node of user_id 'xiaoming' in an export of user 'bob'")


def test_an_id_given_twice_is_refused(exported, target):
    lines = lines_of(exported)
    nodes = [i for i, line in enumerate(lines) if json.loads(line)["type"] == "node"]
    second = json.loads(lines[nodes[1]])
    second["id"] = json.loads(lines[nodes[0]])["id"]
    lines[nodes[1]] = (json.dumps(second, ensure_ascii=False) + "\n").encode()
    refused(target, reseal(lines), rf"line {nodes[1] + 1}: node \d+ appears twice")



@pytest.mark.parametrize("value", ["2025-13-01T00:00:00Z", "2025-01-01T00:00:00+25:00"])
def test_a_time_naming_no_date_is_refused_not_a_crash(exported, target, value):
    def change(record):
        record["fields"]["created_at"] = value

    refused(target, edit(exported, "message", change), "created_at must be an ISO 8601 time with a UTC offset")


def test_a_time_with_an_offset_postgresql_cannot_store_is_imported_in_utc(exported, target):
    def change(record):
        record["fields"]["created_at"] = "2030-01-03T05:52:55+17:27"

    import_bytes(target, edit(exported, "message", change))
    times = set(Message.objects.filter(team=target.team).values_list("created_at", flat=True))
    assert datetime(2030, 1, 2, 12, 25, 55, tzinfo=UTC) in times
