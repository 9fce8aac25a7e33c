"""Export a team, import it into another: the same context calls answer the same way."""

import io

import pytest
from django.core.management import call_command

from memory.models import AuditEvent, Message, Node, NodeStatus, Session, Summary
from memory.profile_models import UserProfile, UserProfileVersion
from memory.selectors.context import ContextRequest, context_build
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
