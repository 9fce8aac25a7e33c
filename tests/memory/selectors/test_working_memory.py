"""The L4 working-state section for the context (seed 004 L4; R-CTX):
memory.selectors.working_memory.working_memory_for_context."""

from memory.models import Session
from memory.selectors.working_memory import working_memory_for_context
from memory.services.forget import session_forget
from memory.services.sessions import SessionRef
from memory.services.working_memory import working_memory_patch, working_memory_put
from tests.helpers import append

REF = SessionRef("s1", "w1", "u1")


def session_of(team, session_id="s1"):
    return Session.objects.get(team=team, external_id=session_id)


def test_the_section_holds_the_four_fields_with_keys_in_code_point_order(principal, team):
    working_memory_put(principal=principal, ref=REF, data={
        "current_goal": "今晚吃什么", "references": {"the report": "Q3 report", "它": "番茄炒蛋"},
        "slots": {"people": 2, "cuisine": None}, "scratchpad": "少辣"})
    section = working_memory_for_context(session=session_of(team))
    assert section is not None
    assert {name: section[name] for name in ("current_goal", "references", "slots", "scratchpad", "version")} == {
        "current_goal": "今晚吃什么", "references": {"the report": "Q3 report", "它": "番茄炒蛋"},
        "slots": {"cuisine": None, "people": 2}, "scratchpad": "少辣", "version": 1}
    assert list(section["references"]) == ["the report", "它"] and list(section["slots"]) == ["cuisine", "people"]
    assert section["updated_at"] is not None


def test_no_session_no_document_or_an_emptied_one_gives_none(principal, team):
    assert working_memory_for_context(session=None) is None
    append(principal, "hello", session_id="s1", workspace_id="w1", user_id="u1")
    assert working_memory_for_context(session=session_of(team)) is None
    working_memory_put(principal=principal, ref=REF, data={"slots": {"people": 2}})
    working_memory_patch(principal=principal, ref=REF, changes={"slots": {"people": None}})
    assert working_memory_for_context(session=session_of(team)) is None


def test_a_soft_forgotten_session_gives_none(principal, team):
    working_memory_put(principal=principal, ref=REF, data={"current_goal": "plan"})
    session_forget(principal=principal, ref=REF, mode="soft")
    assert working_memory_for_context(session=session_of(team)) is None


def test_it_reads_only_the_sessions_own_team(principal, other_principal, team, other_team):
    working_memory_put(principal=principal, ref=REF, data={"current_goal": "acme's"})
    working_memory_put(principal=other_principal, ref=REF, data={"current_goal": "globex's"})
    assert working_memory_for_context(session=session_of(team))["current_goal"] == "acme's"
    assert working_memory_for_context(session=session_of(other_team))["current_goal"] == "globex's"
