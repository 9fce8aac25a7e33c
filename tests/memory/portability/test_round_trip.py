"""Export a team, import it into another: the same context calls answer the same way."""

import io

import pytest
from django.core.management import call_command

from memory.models import AuditEvent, Message, Node, NodeStatus, Session, Summary
from memory.profile_models import UserProfile, UserProfileVersion
from memory.selectors.context import ContextRequest, context_build
from memory.selectors.messages import messages_search
from memory.selectors.nodes import Owner
from memory.selectors.query import MemoryQuery, memory_query
from tests.memory.portability.conftest import export_bytes, import_bytes

CALLS = [
    (Owner(workspace_id="home", user_id="xiaoming", session_id="cooking-1"), "晚饭做什么菜？"),
    (Owner(workspace_id="home", user_id="xiaoming", session_id="new-session"), "香菜"),
    (Owner(workspace_id="trips", user_id="xiaoming", session_id="travel-1"), "Which seat should I book to Kyoto?"),
    (Owner(workspace_id="trips", user_id="xiaoming", session_id="travel-1"), "hotel"),
    (Owner(workspace_id="office", user_id="bob", session_id="b-1"), "tea"),
]


def _shape(context) -> dict:
    """What a context call answers, with ids left out (they differ after an import)."""
    return {
        "block": context.block,
        "items": [(item.section, item.kind, item.text, item.why) for item in context.items],
        "omitted_reasons": sorted(item.reason for item in context.omitted),
        "chars_by_layer": context.chars_by_layer,
        "warnings": context.warnings,
        "store_status": context.store_status,
        "budget": context.budget.as_dict(),
    }


def _contexts(principal) -> list[dict]:
    return [_shape(context_build(principal=principal, request=ContextRequest(owner=owner, query=query), record=False))
            for owner, query in CALLS]


def test_imported_team_answers_every_context_call_the_same_way(filled, target):
    data = export_bytes(filled)
    import_bytes(target, data)
    before, after = _contexts(filled), _contexts(target)
    assert before == after
    assert any("香菜" in shape["block"] for shape in before)
    assert any("aisle" in shape["block"] for shape in before)
    assert all(shape["store_status"] == "ok" for shape in before)


def test_imported_team_has_the_same_rows_of_every_kind(filled, target):
    result = import_bytes(target, export_bytes(filled))
    for model in (Session, Message, Summary, Node, UserProfile, UserProfileVersion):
        assert model.objects.filter(team=target.team).count() == model.objects.filter(team=filled.team).count(), model
    assert result.counts["node"] == Node.objects.filter(team=filled.team).count()


def test_commands_move_a_team_to_a_new_team_that_answers_the_same(filled, tmp_path):
    path = tmp_path / "acme.jsonl"
    call_command("export_memories", team="acme", output=path, stderr=io.StringIO())
    out = io.StringIO()
    call_command("import_memories", str(path), team="fresh", create=True, stdout=out)
    assert "imported team of team acme into fresh" in out.getvalue()
    from accounts.models import Team
    from accounts.principal import principal_for_user_role

    fresh = principal_for_user_role(Team.objects.get(slug="fresh"), None, "admin")
    assert _contexts(filled) == _contexts(fresh)


def _search(principal, text: str, owner: Owner) -> list[tuple[str, str]]:
    result = memory_query(principal=principal, query=MemoryQuery(query_text=text, owner=owner, limit=20))
    return [(node.title, node.status) for node in result.exact + result.relevant]


@pytest.mark.parametrize("text", ["香菜", "少油", "aisle seats", "Kyoto", "economy", "行程", "green tea"])
def test_keyword_search_finds_the_same_memories_after_import(filled, target, text):
    import_bytes(target, export_bytes(filled))
    for owner in (Owner(user_id="xiaoming", workspace_id="trips"), Owner(user_id="xiaoming", workspace_id="home"),
                  Owner(user_id="bob", workspace_id="office")):
        assert _search(filled, text, owner) == _search(target, text, owner)
    assert any(_search(filled, text, owner) for owner in (Owner(user_id="xiaoming", workspace_id="trips"),
                                                          Owner(user_id="bob", workspace_id="office")))


def test_earlier_messages_are_found_by_keyword_after_import(filled, target):
    import_bytes(target, export_bytes(filled))
    owner = Owner(workspace_id="trips", user_id="xiaoming", session_id="travel-2")
    found = [[(hit.message.content, hit.score) for hit in messages_search(principal=p, session=None, owner=owner,
                                                             query_text="Kyoto trip", limit=5)]
             for p in (filled, target)]
    assert found[0] == found[1] and found[0]


def test_supersede_chains_sources_and_status_survive_the_import(filled, target):
    result = import_bytes(target, export_bytes(filled))
    nodes = result.ids["node"]
    for source in Node.objects.filter(team=filled.team).order_by("pk"):
        copy = Node.objects.get(pk=nodes[source.pk], team=target.team)
        assert (copy.title, copy.status, copy.version, copy.updated_at) == (
            source.title, source.status, source.version, source.updated_at)
        assert copy.supersedes_id == (nodes[source.supersedes_id] if source.supersedes_id else None)
        assert copy.source_message_ids == [result.ids["message"][pk] for pk in source.source_message_ids]
    aisle = Node.objects.get(team=target.team, title="Prefers aisle seats")
    assert aisle.supersedes.title == "Prefers window seats"
    assert aisle.supersedes.status == NodeStatus.SUPERSEDED
    assert Node.objects.get(team=target.team, title="Old hotel booking").status == NodeStatus.DELETED
    assert not Node.objects.filter(title__contains="Passport").exists()


def test_summary_chains_keep_their_order_and_message_ranges(filled, target):
    result = import_bytes(target, export_bytes(filled))
    messages = result.ids["message"]
    for source in Summary.objects.filter(team=filled.team):
        copy = Summary.objects.get(pk=result.ids["summary"][source.pk])
        assert (copy.from_message_id, copy.to_message_id) == (messages[source.from_message_id],
                                                              messages[source.to_message_id])
        assert copy.parent_id == (result.ids["summary"][source.parent_id] if source.parent_id else None)
        assert copy.summary == source.summary


def test_audit_events_are_preserved_with_their_actor_time_and_an_import_marker(filled, target):
    result = import_bytes(target, export_bytes(filled), reason="moving to the new cluster")
    source_events = list(AuditEvent.objects.filter(team=filled.team).order_by("pk"))
    copies = list(AuditEvent.objects.filter(team=target.team, payload__imported__isnull=False).order_by("pk"))
    assert [(e.event_type, e.actor, e.created_at, e.reason) for e in copies] == [
        (e.event_type, e.actor, e.created_at, e.reason) for e in source_events]
    assert all(copy.payload["imported"]["import_event_id"] == result.import_event_id for copy in copies)
    assert [copy.payload["imported"]["event_id"] for copy in copies] == [e.pk for e in source_events]
    hard = next(copy for copy in copies if copy.event_type == "memory.node.hard_deleted")
    assert hard.node_id is None and hard.payload["imported"]["node_id"] is not None
    assert "12345" not in str([copy.payload for copy in copies])
    window = Node.objects.get(team=target.team, title="Prefers window seats")
    superseded = next(copy for copy in copies if copy.event_type == "memory.node.superseded"
                      and copy.node_id == window.pk)
    assert superseded.payload["superseded_by"] == Node.objects.get(team=target.team, title="Prefers aisle seats").pk
    event = AuditEvent.objects.get(pk=result.import_event_id)
    assert event.event_type == "memory.team.imported" and event.team_id == target.team.pk
    assert event.payload["counts"]["node"] == Node.objects.filter(team=filled.team).count()
    assert event.reason == "moving to the new cluster" and event.payload["source_team"] == "acme"


def test_imported_team_takes_the_team_policy_minimum_confidence(filled, target):
    import_bytes(target, export_bytes(filled))
    target.team.refresh_from_db()
    assert target.team.min_confidence == pytest.approx(0.3)


@pytest.mark.parametrize("content", [None, b"", b'{"type":"manifest","format":"memory-export","schema_version":9}\n'])
def test_a_failed_command_import_leaves_no_team_behind(tmp_path, db, content):
    from django.core.management.base import CommandError

    from accounts.models import Team

    path = tmp_path / "acme.jsonl"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(CommandError):
        call_command("import_memories", str(path), team="fresh", create=True, stdout=io.StringIO())
    assert not Team.objects.filter(slug="fresh").exists()
