"""Writing a session's working memory (seed 004 L4 临时工作记忆, §5.2; R-CTX, R-API
PUT/PATCH /sessions/{session_id}/working-memory).

The document has four fields: `current_goal` (text), `references` (resolved references,
a JSON object: {"它": "番茄炒蛋", "the report": "Q3 report"}), `slots` (clarification slots,
a JSON object: {"cuisine": null, "people": 2}) and `scratchpad` (text). Limits are in
memory.limits (WORKING_*): goal ≤ 1000 and scratchpad ≤ 4000 characters; references and
slots at most 50 keys each, a key 1–64 printable characters, a value any JSON of at most
2000 characters serialized and 4 levels of nesting. A write that breaks a limit is refused
whole (InvalidInput, 400) and stores nothing.

- put replaces the whole document: a field left out becomes empty ("" or {}). A null value
  inside references or slots is stored as null (an unfilled slot).
- patch changes only the fields it names. current_goal and scratchpad are replaced;
  references and slots are merged key by key, and a key whose value is JSON null is
  deleted (JSON Merge Patch, RFC 7396, at the first level only: a key's value is replaced
  whole). So patch cannot store a null value — a slot is marked unfilled by put, or by
  leaving it out. The limits apply to the merged document.

Both create the session when it does not exist yet, as appending a message does
(memory.services.sessions.session_get_or_create: a soft-deleted session is a Conflict, 409;
the session row is locked, so writes of one session and a forget of it run one after the
other). Both need the right to write session-scope memory. `expected_version` (optimistic
concurrency) names the version the caller read: 0 when there was no document yet; another
current version is a Conflict (409, code version_conflict) and nothing changes. A write
that changes nothing keeps the version and is not audited; any other write adds 1 to the
version and records one `memory.working_memory.updated` event in its transaction, whose
payload names the operation, the fields changed and the new version — never their content,
so forgetting the session leaves nothing of it in the audit.
"""

import json
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.principal import Principal
from memory import limits
from memory.errors import Conflict, InvalidInput
from memory.models import Scope, Session
from memory.services.audit import audit_record
from memory.services.sessions import SessionRef, session_get_or_create
from memory.validation import clean_text, first_json_problem
from memory.working_models import WorkingMemory

TEXT_FIELDS = {"current_goal": limits.WORKING_GOAL_MAX, "scratchpad": limits.WORKING_SCRATCHPAD_MAX}
MAP_FIELDS = ("references", "slots")
FIELDS = ("current_goal", "references", "slots", "scratchpad")
UPDATED_EVENT = "memory.working_memory.updated"

Document = dict[str, Any]


def empty_document() -> Document:
    return {"current_goal": "", "references": {}, "slots": {}, "scratchpad": ""}


def document_of(memory: WorkingMemory | None) -> Document:
    if memory is None:
        return empty_document()
    return {name: getattr(memory, name) for name in FIELDS}


def _depth(value: Any) -> int:
    """Levels of nesting: 0 for a scalar, 1 for [] or {"a": 1}, and so on. Iterative."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            stack.extend((child, level + 1) for child in item.values())
            deepest = max(deepest, level + 1)
        elif isinstance(item, list):
            stack.extend((child, level + 1) for child in item)
            deepest = max(deepest, level + 1)
    return deepest


def _invalid(field: str, problem: str) -> InvalidInput:
    return InvalidInput(f"{field} {problem}", fields={field: [problem]})


def _check_key(field: str, key: Any) -> None:
    if not isinstance(key, str):
        raise _invalid(field, "keys must be strings")
    if not 1 <= len(key) <= limits.WORKING_KEY_MAX:
        shown = key if len(key) <= limits.WORKING_KEY_MAX else key[:limits.WORKING_KEY_MAX] + "…"
        raise _invalid(f"{field}.{shown}", f"key must be 1–{limits.WORKING_KEY_MAX} characters")
    if not key.isprintable() or not key.strip():
        raise _invalid(f"{field}.{key}", "key must be printable and not only white space")


def _check_value(field: str, key: str, value: Any) -> None:
    where = f"{field}.{key}"
    problem = first_json_problem(value, where)
    if problem:
        raise _invalid(problem[0], problem[1])
    if _depth(value) > limits.WORKING_VALUE_DEPTH_MAX:
        raise _invalid(where, f"is nested deeper than {limits.WORKING_VALUE_DEPTH_MAX} levels")
    size = len(json.dumps(value, ensure_ascii=False))
    if size > limits.WORKING_VALUE_JSON_MAX:
        raise _invalid(where, f"is too large: at most {limits.WORKING_VALUE_JSON_MAX} characters as JSON (got {size})")


def _check_fields(data: dict[str, Any], *, deleting: bool) -> None:
    """Types and per-item limits of the fields in `data`; with `deleting`, null values in
    references and slots are allowed (they delete a key)."""
    if not isinstance(data, dict):
        raise InvalidInput("the working memory must be a JSON object", fields={"body": ["must be an object"]})
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0]!r}; the fields are {', '.join(FIELDS)}",
                           fields={name: ["unknown field"] for name in unknown})
    for name, max_length in TEXT_FIELDS.items():
        if name in data:
            clean_text(data[name], field=name, max_length=max_length)
    for name in MAP_FIELDS:
        if name not in data:
            continue
        value = data[name]
        if not isinstance(value, dict):
            raise _invalid(name, "must be a JSON object")
        for key, item in value.items():
            _check_key(name, key)
            if item is None and deleting:
                continue
            _check_value(name, key, item)


def _check_key_counts(document: Document) -> None:
    for name in MAP_FIELDS:
        if len(document[name]) > limits.WORKING_KEYS_MAX:
            raise _invalid(name, f"has too many keys: at most {limits.WORKING_KEYS_MAX} (got {len(document[name])})")


def _write(
    *,
    principal: Principal,
    ref: SessionRef,
    operation: str,
    expected_version: int | None,
    build: Callable[[Document], Document],
) -> WorkingMemory:
    principal.check_write_scope(Scope.SESSION.value)
    principal.check_workspace(ref.workspace_id)
    with transaction.atomic():
        session = session_get_or_create(principal=principal, ref=ref)
        memory = WorkingMemory.objects.select_for_update().filter(team=principal.team, session=session).first()
        current = memory.version if memory is not None else 0
        if expected_version is not None and expected_version != current:
            raise Conflict(
                f"the working memory of session {ref.session_id!r} is at version {current}, not {expected_version}; "
                f"read it again",
                fields={"expected_version": [f"current version is {current}"]},
                code="version_conflict",
            )
        before = document_of(memory)
        after = build(before)
        _check_key_counts(after)
        changed = [name for name in FIELDS if after[name] != before[name]]
        if not changed:
            return memory if memory is not None else empty_working_memory(session)
        if memory is None:
            memory = WorkingMemory(team=principal.team, session=session, version=1)
        else:
            memory.version += 1
        for name in FIELDS:
            setattr(memory, name, after[name])
        memory.updated_at = timezone.now()
        memory.updated_by = principal.actor
        memory.save()
        audit_record(
            principal=principal,
            event_type=UPDATED_EVENT,
            session=session,
            payload={"operation": operation, "fields": changed, "version": memory.version},
        )
    return memory


def empty_working_memory(session: Session) -> WorkingMemory:
    """The document of a session nothing was written to yet: empty, version 0, not saved."""
    return WorkingMemory(team_id=session.team_id, session=session, version=0, updated_at=None, **empty_document())


def working_memory_put(
    *, principal: Principal, ref: SessionRef, data: dict[str, Any], expected_version: int | None = None
) -> WorkingMemory:
    """Replace the session's working memory with `data` ({current_goal?, references?, slots?,
    scratchpad?}; a field left out becomes empty). Returns the stored document (version 0
    and unsaved when it is, and was, empty). See the module docstring for the rules.

    Raises InvalidInput (400: a limit or type, unknown field), AccessDenied (403: no
    session-scope write right, or a workspace the principal may not touch), Conflict (409: the
    session was soft-deleted; code version_conflict: `expected_version` is stale).
    """
    _check_fields(data, deleting=False)
    replacement = {**empty_document(), **data}
    _check_key_counts(replacement)
    return _write(principal=principal, ref=ref, operation="put", expected_version=expected_version,
                  build=lambda before: replacement)


def working_memory_patch(
    *, principal: Principal, ref: SessionRef, changes: dict[str, Any], expected_version: int | None = None
) -> WorkingMemory:
    """Merge `changes` into the session's working memory: current_goal and scratchpad are
    replaced; references and slots are merged key by key, a null value deleting its key.
    `changes` must name at least one field. Returns the stored document. Raises as
    working_memory_put does.
    """
    _check_fields(changes, deleting=True)
    if not changes:
        raise InvalidInput(f"nothing to change: name at least one of {', '.join(FIELDS)}",
                           fields={"body": ["may not be empty"]})

    def merge(before: Document) -> Document:
        after = dict(before)
        for name, value in changes.items():
            if name in MAP_FIELDS:
                merged = dict(before[name])
                for key, item in value.items():
                    if item is None:
                        merged.pop(key, None)
                    else:
                        merged[key] = item
                after[name] = merged
            else:
                after[name] = value
        return after

    return _write(principal=principal, ref=ref, operation="patch", expected_version=expected_version, build=merge)
