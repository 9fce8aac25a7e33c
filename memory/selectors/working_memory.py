"""Reading a session's working memory (seed 004 L4 临时工作记忆; R-CTX, R-API
GET /sessions/{session_id}/working-memory). Writes: memory.services.working_memory."""

from datetime import datetime
from typing import Any, TypedDict

from accounts.principal import Principal
from memory.models import Session
from memory.selectors.rows import columns, read
from memory.selectors.sessions import session_get
from memory.services.sessions import SessionRef
from memory.services.working_memory import empty_working_memory
from memory.working_models import WorkingMemory


class WorkingMemorySection(TypedDict):
    """The L4 working-state part of a context. Keys of references and slots in code-point
    order (PostgreSQL's jsonb keeps no order of its own, so this is the order on every database)."""

    current_goal: str
    references: dict[str, Any]
    slots: dict[str, Any]
    scratchpad: str
    version: int
    updated_at: datetime


def sorted_object(value: dict[str, Any]) -> dict[str, Any]:
    """A JSON object with its keys in code-point order (top level only)."""
    return {key: value[key] for key in sorted(value)}


def working_memory_get(*, principal: Principal, ref: SessionRef) -> WorkingMemory:
    """The working memory of the session named by `ref`: the stored document, or the empty
    one (version 0, not saved) when nothing was written to it yet.

    Raises NotFound when the principal's team has no such session or it is soft-deleted (its
    working memory is hidden with it), AccessDenied for a workspace the principal may not read.
    """
    session = session_get(principal=principal, ref=ref)
    memory = WorkingMemory.objects.filter(team=principal.team, session=session).first()
    return memory if memory is not None else empty_working_memory(session)


def working_memory_for_context(*, session: Session | None) -> WorkingMemorySection | None:
    """The session's working memory for the context's L4 section, or None when there is no
    session, it is soft-deleted, or its working memory is empty. The caller has checked that
    the principal may read the session; the query still starts from the session's team.

    Sizes (characters): current_goal ≤ limits.WORKING_GOAL_MAX, scratchpad ≤
    limits.WORKING_SCRATCHPAD_MAX; references and slots ≤ limits.WORKING_KEYS_MAX keys each.
    """
    if session is None or session.pk is None or session.deleted_at is not None:
        return None
    found = read(WorkingMemory, f"SELECT {columns(WorkingMemory, 'w')} FROM {WorkingMemory._meta.db_table} w "
                                "WHERE w.team_id = %s AND w.session_id = %s ORDER BY w.id LIMIT 1",
                 [session.team_id, session.pk])
    memory = found[0] if found else None
    if memory is None or memory.is_empty:
        return None
    return {
        "current_goal": memory.current_goal,
        "references": sorted_object(memory.references),
        "slots": sorted_object(memory.slots),
        "scratchpad": memory.scratchpad,
        "version": memory.version,
        "updated_at": memory.updated_at,
    }
