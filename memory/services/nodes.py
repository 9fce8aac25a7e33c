"""Writing memory nodes: create/upsert, update, supersede, expire, delete (seed MemoryStore; R-STORE).

Every function is atomic with its audit event. Validation happens before anything is
written, so a rejected input leaves nothing behind.
"""

from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.principal import Principal
from memory import limits
from memory.errors import Conflict, InvalidInput, NotFound
from memory.models import Message, Node, NodeSource, NodeStatus, Scope, Session
from memory.services.audit import FORGOTTEN, audit_record, audit_redact_node, node_snapshot, node_words, reason_quotes
from memory.services.embeddings import embeddings_drop, embeddings_schedule
from memory.services.forgotten_turns import forget_turns
from memory.services.node_input import (  # noqa: F401 - callers import the input shape from here too
    DEFAULT_DOMAIN,
    NodeInput,
    canonical_json,
    conflict_slot,
    node_owner_tokens,
    node_search_tokens,
    note_text,
    supersede_input,
    tells_less,
    validate_node_input,
    value_hash,
)
from memory.services.profiles import profile_forget_nodes
from memory.services.sessions import SessionRef, session_get_or_create
from memory.validation import clean_text

DESCRIPTIVE_FIELDS = ("title", "content", "category_path", "confidence", "importance", "tags", "entities", "expires_at")


def owner_columns(principal: Principal, data: NodeInput) -> dict[str, Any]:
    """The owner columns for `data.scope`, creating the session for session scope."""
    if data.scope == Scope.SESSION:
        if not data.session_id:
            raise InvalidInput("session scope needs session_id", fields={"session_id": ["required for session scope"]})
        ref = SessionRef(session_id=data.session_id, workspace_id=data.workspace_id, user_id=data.user_id)
        session = session_get_or_create(principal=principal, ref=ref)
        return {"session": session, "workspace_id": session.workspace_id, "user_id": session.user_id}
    principal.check_workspace(data.workspace_id)
    if data.scope == Scope.WORKSPACE:
        if not data.workspace_id:
            raise InvalidInput(
                "workspace scope needs workspace_id", fields={"workspace_id": ["required for workspace scope"]}
            )
        return {"session": None, "workspace_id": data.workspace_id, "user_id": ""}
    if data.scope == Scope.USER:
        if not data.user_id:
            raise InvalidInput("user scope needs user_id", fields={"user_id": ["required for user scope"]})
        return {"session": None, "workspace_id": "", "user_id": data.user_id}
    return {"session": None, "workspace_id": "", "user_id": ""}


def lock_sessions(principal: Principal, data: NodeInput) -> None:
    """Lock the sessions a write touches, before any node: its own (session scope) or those of
    its source messages, in messages_append's order. A conversation's forget locks its
    session first too (memory.services.forget), so a memory citing its messages is written
    wholly before it (and goes with it) or finds them gone; no lock cycle is possible."""
    if data.scope == Scope.SESSION:
        owner_columns(principal, data)
    elif data.source_message_ids:
        cited = Message.objects.filter(team=principal.team, pk__in=data.source_message_ids).values("session_id")
        sessions = Session.objects.select_for_update().filter(pk__in=cited)
        list(sessions.order_by("workspace_id", "user_id", "external_id").values_list("pk", flat=True))


def bind_sources(principal: Principal, data: NodeInput, owner: dict[str, Any]) -> list[int]:
    """Check that every source message exists in the team, outside soft-deleted sessions (and
    in the caller's session, when the caller names one); returns the ids in the order given."""
    if not data.source_message_ids:
        return []
    found = {
        pk: (session_pk, workspace)
        for pk, session_pk, workspace in Message.objects.filter(
            team=principal.team, pk__in=data.source_message_ids, session__deleted_at__isnull=True
        ).values_list("pk", "session_id", "session__workspace_id")
    }
    session_pk = None
    if data.session_id:
        session = owner.get("session")
        if session is None:
            ref = SessionRef(session_id=data.session_id, workspace_id=data.workspace_id, user_id=data.user_id)
            session = Session.objects.filter(
                team=principal.team,
                workspace_id=ref.workspace_id,
                user_id=ref.user_id,
                external_id=ref.session_id,
            ).first()
        session_pk = session.pk if session is not None else -1
    for message_id in data.source_message_ids:
        if message_id not in found:
            raise InvalidInput(
                f"source message {message_id} does not exist", fields={"source_message_ids": [f"unknown id {message_id}"]}
            )
        message_session, workspace = found[message_id]
        if session_pk is not None and message_session != session_pk:
            raise InvalidInput(
                f"source message {message_id} is not in session {data.session_id!r}",
                fields={"source_message_ids": [f"{message_id} is not in this session"]},
            )
        if not principal.can_read_workspace(workspace):
            raise InvalidInput(
                f"source message {message_id} does not exist", fields={"source_message_ids": [f"unknown id {message_id}"]}
            )
    return list(data.source_message_ids)


def _check_parent(principal: Principal, parent_id: int | None) -> None:
    """The parent must be a node the principal may read (another workspace's looks absent)."""
    if parent_id is None:
        return
    parent = Node.objects.filter(team=principal.team, pk=parent_id).values_list("workspace_id", flat=True).first()
    if parent is None or (parent and not principal.can_read_workspace(parent)):
        raise InvalidInput(f"parent node {parent_id} does not exist", fields={"parent_id": ["unknown node"]})


def insert_node(principal: Principal, data: NodeInput, *, supersedes: Node | None = None) -> Node:
    owner = owner_columns(principal, data)
    sources = bind_sources(principal, data, owner)
    _check_parent(principal, data.parent_id)
    now = timezone.now()
    node = Node(
        team=principal.team,
        parent_id=data.parent_id,
        supersedes=supersedes,
        scope=data.scope,
        domain=data.domain,
        category_path=list(data.category_path),
        category_path_text="/".join(data.category_path),
        type=data.type,
        key=data.key,
        value_json=data.value_json,
        value_hash=value_hash(data.value_json),
        slot=conflict_slot(key=data.key, value=data.value_json, cardinality=data.cardinality,
                           title=data.title, content=data.content),
        title=data.title,
        content=data.content,
        status=NodeStatus.ACTIVE,
        confidence=data.confidence,
        importance=data.importance,
        tags=list(data.tags),
        entities=list(data.entities),
        explicit=data.explicit,
        created_at=now,
        updated_at=now,
        expires_at=data.expires_at,
        **owner,
    )
    node.search_tokens = node_search_tokens(node)
    node.save()
    NodeSource.objects.bulk_create(
        [NodeSource(node=node, message_id=message_id, position=index) for index, message_id in enumerate(sources)]
    )
    embeddings_schedule(principal.team.pk)
    return node


def node_create(*, principal: Principal, data: NodeInput, reason: str = "") -> Node:
    """Create a node (status active). Raises InvalidInput, AccessDenied, Conflict (the slot is
    taken: the same value, or another value of a one-valued key, is active)."""
    data = validate_node_input(data)
    clean_text(reason, field="reason", max_length=limits.REASON_MAX)
    principal.check_write_scope(data.scope)
    with transaction.atomic():
        lock_sessions(principal, data)
        try:
            with transaction.atomic():
                node = insert_node(principal, data)
        except IntegrityError:
            holder = slot_holders(principal, data).first()
            raise Conflict(f"node {holder.pk if holder else '?'} already holds this slot; upsert or supersede it") from None
        audit_record(
            principal=principal, event_type="memory.node.created", node=node, reason=reason,
            payload={"node": node_snapshot(node), "source_message_ids": list(data.source_message_ids)},
        )
    return node


def _same_text(left: str, right: str) -> bool:
    return note_text(left) == note_text(right)


def slot_holders(principal: Principal, data: NodeInput):
    """The active nodes in the slot `data` would take: same owner, scope, domain, type, key
    and conflict slot (at most one, by node_active_slot_unique)."""
    owner = owner_columns(principal, data)
    return Node.objects.filter(
        team=principal.team,
        status=NodeStatus.ACTIVE,
        scope=data.scope,
        session=owner["session"],
        workspace_id=owner["workspace_id"],
        user_id=owner["user_id"],
        domain=data.domain,
        type=data.type,
        key=data.key,
        slot=conflict_slot(key=data.key, value=data.value_json, cardinality=data.cardinality,
                           title=data.title, content=data.content),
    )


def descriptive_changes(node: Node, data: NodeInput, *, as_notes: bool = True) -> dict[str, Any]:
    """The descriptive fields `data` changes on `node`. With `as_notes`, a title or content
    that reads as the same note (note_text) is no change: a repeated write does not churn the
    stored text. An explicit edit passes False: the text becomes exactly what was sent."""
    wanted = {
        "title": data.title,
        "content": data.content,
        "category_path": list(data.category_path),
        "confidence": data.confidence,
        "importance": data.importance,
        "tags": list(data.tags),
        "entities": list(data.entities),
        "expires_at": data.expires_at,
    }
    changes = {}
    for name, value in wanted.items():
        current = getattr(node, name)
        if as_notes and isinstance(value, str) and _same_text(current, value):
            continue
        if current != value and not (as_notes and tells_less(name, current, value)):
            changes[name] = value
    return changes


def apply_update(principal: Principal, node: Node, changes: dict[str, Any], *, reason: str) -> Node:
    before = {name: _jsonable(getattr(node, name)) for name in changes}
    for name, value in changes.items():
        setattr(node, name, value)
    if "category_path" in changes:
        node.category_path_text = "/".join(node.category_path)
    node.version += 1
    node.updated_at = timezone.now()
    node.search_tokens = node_search_tokens(node)
    if not node.key and ("title" in changes or "content" in changes):
        node.slot = conflict_slot(key="", value=None, cardinality="one", title=node.title, content=node.content)
    try:
        with transaction.atomic():
            node.save()
    except IntegrityError:
        raise Conflict(f"another active memory already says this; node {node.pk} was left unchanged") from None
    audit_record(
        principal=principal, event_type="memory.node.updated", node=node, reason=reason,
        payload={"before": before, "after": {name: _jsonable(getattr(node, name)) for name in changes},
                 "version": node.version},
    )
    if "title" in changes or "content" in changes:
        embeddings_drop(node)  # what it no longer says must not be found by meaning meanwhile
    embeddings_schedule(principal.team.pk)
    return node


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def node_for_write(*, principal: Principal, node_id: int, workspace_id: str = "") -> Node:
    """Lock and return a node the principal may change. Raises NotFound or AccessDenied.

    Must run inside a transaction. A key limited to workspaces must name one of them in
    `workspace_id` (AccessDenied before any id is looked up). A node in a workspace the
    principal may not read is reported as not found, like another team's node.
    """
    principal.check_workspace(workspace_id)
    node = Node.objects.select_for_update().filter(team=principal.team, pk=node_id).first()
    if node is None or (node.workspace_id and not principal.can_read_workspace(node.workspace_id)):
        raise NotFound(f"no node {node_id}")
    principal.check_write_scope(node.scope)
    return node


def node_update(
    *,
    principal: Principal,
    node_id: int,
    changes: dict[str, Any],
    reason: str = "",
    expected_version: int | None = None,
    workspace_id: str = "",
) -> Node:
    """Change descriptive fields of an active node in place (version + 1).

    `changes` may hold title, content, category_path, confidence, importance, tags,
    entities, expires_at. Key, value, scope, type or domain change by supersede instead.
    Raises InvalidInput, NotFound, Conflict (not active, or `expected_version` is stale).
    """
    unknown = set(changes) - set(DESCRIPTIVE_FIELDS)
    if unknown:
        raise InvalidInput(
            f"update may change only {', '.join(DESCRIPTIVE_FIELDS)}; use supersede to change "
            f"{', '.join(sorted(unknown))}",
            fields={name: ["use supersede"] for name in sorted(unknown)},
        )
    clean_text(reason, field="reason", max_length=limits.REASON_MAX)
    with transaction.atomic():
        node = node_for_write(principal=principal, node_id=node_id, workspace_id=workspace_id)
        if node.status != NodeStatus.ACTIVE:
            raise Conflict(f"node {node_id} is {node.status}; only active nodes can be updated")
        if expected_version is not None and expected_version != node.version:
            raise Conflict(f"node {node_id} is at version {node.version}, not {expected_version}")
        merged = {name: changes.get(name, getattr(node, name)) for name in DESCRIPTIVE_FIELDS}
        data = validate_node_input(
            NodeInput(scope=node.scope, type=node.type, domain=node.domain, key=node.key,
                      value_json=node.value_json, **merged)
        )
        effective = {name: value for name, value in descriptive_changes(node, data, as_notes=False).items()
                     if name in changes}
        if not effective:
            return node
        return apply_update(principal, node, effective, reason=reason)


def supersede_locked(principal: Principal, old: Node, data: NodeInput, *, reason: str, rule: str = "") -> Node:
    """Supersede `old` (already locked by the caller's transaction) with a new node from
    validated `data`; both audited. `rule` names an automatic resolution (latest_wins).
    Raises Conflict when `old` is no longer active."""
    claimed = Node.objects.filter(pk=old.pk, status=NodeStatus.ACTIVE).update(
        status=NodeStatus.SUPERSEDED, updated_at=timezone.now()
    )
    if not claimed:
        raise Conflict(f"node {old.pk} is {old.status}; only an active node can be superseded")
    new = insert_node(principal, data, supersedes=old)
    extra = {"rule": rule} if rule else {}
    audit_record(
        principal=principal, event_type="memory.node.superseded", node=old, reason=reason,
        payload={"superseded_by": new.pk, "previous_status": NodeStatus.ACTIVE, **extra},
    )
    audit_record(
        principal=principal, event_type="memory.node.created", node=new, reason=reason,
        payload={"node": node_snapshot(new), "supersedes_id": old.pk,
                 "source_message_ids": list(data.source_message_ids), **extra},
    )
    return new


def node_supersede(
    *, principal: Principal, old_node_id: int, data: NodeInput, reason: str = "", workspace_id: str = ""
) -> Node:
    """Replace an active node by a new one (seed supersedeNode).

    The old node becomes `superseded`; the new one is active with `supersedes` → old.
    Two concurrent supersedes of one node leave exactly one successor: the loser gets
    Conflict (409). Raises InvalidInput, NotFound, Conflict, AccessDenied.
    """
    data = validate_node_input(data)
    clean_text(reason, field="reason", max_length=limits.REASON_MAX)
    principal.check_write_scope(data.scope)
    try:
        with transaction.atomic():
            lock_sessions(principal, data)
            old = node_for_write(principal=principal, node_id=old_node_id, workspace_id=workspace_id)
            new = supersede_locked(principal, old, data, reason=reason)
    except IntegrityError:
        with transaction.atomic():  # resolving the owner locks its session
            holder = slot_holders(principal, data).first()
        if holder is not None and holder.pk != old_node_id:
            raise Conflict(f"node {holder.pk} already holds this slot; update or forget it instead") from None
        raise Conflict(f"node {old_node_id} was superseded by another request") from None
    return new


def node_expire(*, principal: Principal, node_id: int, reason: str = "", workspace_id: str = "") -> Node:
    """Mark an active node expired (it stays readable by id, out of retrieval). Raises Conflict if not active."""
    with transaction.atomic():
        node = node_for_write(principal=principal, node_id=node_id, workspace_id=workspace_id)
        if node.status != NodeStatus.ACTIVE:
            raise Conflict(f"node {node_id} is {node.status}; only an active node can expire")
        node.status = NodeStatus.EXPIRED
        node.updated_at = timezone.now()
        node.save(update_fields=["status", "updated_at"])
        audit_record(principal=principal, event_type="memory.node.expired", node=node, reason=reason,
                     payload={"previous_status": NodeStatus.ACTIVE})
    return node


def node_delete(
    *, principal: Principal, node_id: int, mode: str, reason: str = "", workspace_id: str = "",
    repeats: int | None = None,
) -> None:
    """Forget a node (seed deleteNode).

    soft: status → deleted; out of every search and context, kept for audit and restore.
    hard: the row, its source links and its keyword-index entry are removed and its content
    is redacted from earlier audit payloads and its line from every profile version; one
    audit event records who, when and why.
    Either way the messages it was taken from are no longer recalled as earlier messages
    (Message.memory_forgotten_at): the turn says what was forgotten (a newcomer forgot an
    allergy and the next conversation's block still quoted "…我对花生过敏"), and the summaries
    of those conversations lose the sentences and items that say it
    (memory.services.forgotten_turns.forget_turns). The user's other turns that state it again
    go with them (linked as its sources first; memory.services.forgotten_repeats; `repeats`:
    how many the caller already linked, None to look for them here). The audit event counts
    them (`hidden_messages`, `stripped_summaries`, `repeated_messages`), and the memories kept
    from what else the hidden turns say (`kept_memories`).
    Raises InvalidInput (bad mode), NotFound, Conflict (soft delete of a deleted node).
    """
    if mode not in ("soft", "hard"):
        raise InvalidInput("mode must be 'soft' or 'hard'", fields={"mode": ["invalid choice"]})
    clean_text(reason, field="reason", max_length=limits.REASON_MAX)
    with transaction.atomic():
        node = node_for_write(principal=principal, node_id=node_id, workspace_id=workspace_id)
        previous = node.status
        now = timezone.now()
        if mode == "soft":
            if previous == NodeStatus.DELETED:
                raise Conflict(f"node {node_id} is already deleted")
            node.status = NodeStatus.DELETED
            node.updated_at = now
            node.save(update_fields=["status", "updated_at"])
            words = node_words(node)
            hidden, summaries, repeats, kept = forget_turns(principal=principal, node=node, now=now, words=words,
                                                            repeats=repeats)
            audit_record(principal=principal, event_type="memory.node.deleted", node=node, reason=reason,
                         payload={"mode": "soft", "previous_status": previous, "hidden_messages": hidden,
                                  "stripped_summaries": summaries, "repeated_messages": repeats, "kept_memories": kept})
            return
        session, workspace, user = node.session, node.workspace_id, node.user_id
        words = node_words(node)
        hidden, summaries, repeats, kept = forget_turns(principal=principal, node=node, now=now, words=words, hard=True,
                                                        repeats=repeats)
        redacted = audit_redact_node(principal=principal, node_id=node.pk, words=words)
        profile_forget_nodes(team=principal.team, node_ids=[node.pk], principal=principal)
        node.delete()
        audit_record(
            principal=principal, event_type="memory.node.hard_deleted", node_id=node_id, session=session,
            workspace_id=workspace, user_id=user, reason=FORGOTTEN if reason_quotes(reason, words) else reason,
            payload={"mode": "hard", "previous_status": previous, "redacted_events": redacted,
                     "hidden_messages": hidden, "stripped_summaries": summaries, "repeated_messages": repeats,
                     "kept_memories": kept},
        )

