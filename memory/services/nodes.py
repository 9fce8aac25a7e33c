"""Writing memory nodes: create/upsert, update, supersede, expire, delete (seed MemoryStore; R-STORE).

Every function is atomic with its audit event. Validation happens before anything is
written, so a rejected input leaves nothing behind.
"""

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.principal import Principal
from memory import limits
from memory.errors import Conflict, InvalidInput, NotFound
from memory.models import Message, Node, NodeSource, NodeStatus, NodeType, Scope, Session
from memory.search.text import document_tokens, json_strings, owner_token
from memory.services.audit import audit_record, audit_redact_node, node_snapshot
from memory.services.sessions import SessionRef, session_get_or_create
from memory.validation import clean_identity, clean_text, first_json_problem

DEFAULT_DOMAIN = "general"
DESCRIPTIVE_FIELDS = ("title", "content", "category_path", "confidence", "importance", "tags", "entities", "expires_at")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class NodeInput:
    """What a caller asks to remember. Owner ids come from the caller's context; which of
    them the node keeps depends on `scope` (session → the session, workspace → workspace_id,
    user → user_id, global → none)."""

    scope: str
    type: str
    title: str = ""
    content: str = ""
    domain: str = DEFAULT_DOMAIN
    category_path: Sequence[str] = ()
    key: str = ""
    value_json: Any = None
    confidence: float = 0.8
    importance: float = 0.5
    tags: Sequence[str] = ()
    entities: Sequence[str] = ()
    expires_at: datetime | None = None
    explicit: bool = False
    source_message_ids: Sequence[int] = ()
    parent_id: int | None = None
    workspace_id: str = ""
    user_id: str = ""
    session_id: str = ""


@dataclass
class UpsertResult:
    node: Node
    created: bool
    changed: bool


def value_hash(value: Any) -> str:
    """SHA-1 of the canonical JSON of a value ("" for no value): equal values, equal hashes."""
    if value is None:
        return ""
    return hashlib.sha1(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def canonical_json(value: Any) -> Any:
    """The same JSON value with object keys sorted, so equal values compare equal on SQLite too."""
    return json.loads(json.dumps(value, sort_keys=True, ensure_ascii=False))


def _string_list(values: Sequence[str], *, field_name: str) -> list[str]:
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise InvalidInput(f"{field_name} must be a list of strings", fields={field_name: ["must be a list"]})
    if len(values) > limits.NODE_LIST_ITEMS_MAX:
        raise InvalidInput(
            f"{field_name}: at most {limits.NODE_LIST_ITEMS_MAX} items", fields={field_name: ["too many items"]}
        )
    cleaned: dict[str, None] = {}
    for value in values:
        text = clean_text(value, field=field_name, max_length=limits.NODE_LIST_ITEM_MAX, allow_empty=False).strip()
        cleaned.setdefault(text)
    return list(cleaned)


def _unit_interval(value: Any, *, field_name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidInput(f"{field_name} must be a number from 0 to 1", fields={field_name: ["must be in [0, 1]"]})
    return float(value)


def validate_node_input(data: NodeInput) -> NodeInput:
    """Check every field against the limits and choices; returns a cleaned copy.

    Raises InvalidInput naming the first bad field.
    """
    if data.scope not in Scope.values:
        raise InvalidInput(f"scope must be one of {', '.join(Scope.values)}", fields={"scope": ["invalid choice"]})
    if data.type not in NodeType.values:
        raise InvalidInput(f"type must be one of {', '.join(NodeType.values)}", fields={"type": ["invalid choice"]})
    content = clean_text(data.content, field="content", max_length=limits.NODE_CONTENT_MAX).strip()
    title = clean_text(data.title, field="title", max_length=limits.NODE_TITLE_MAX).strip()
    if not title:
        if not content:
            raise InvalidInput("a node needs a title or content", fields={"title": ["title or content is required"]})
        title = _SPACE.sub(" ", content)[: limits.NODE_TITLE_MAX]
    domain = clean_text(data.domain or DEFAULT_DOMAIN, field="domain", max_length=limits.NODE_DOMAIN_MAX).strip()
    if not domain:
        domain = DEFAULT_DOMAIN
    category_path = _string_list(data.category_path, field_name="category_path")
    if any("/" in level for level in category_path):
        raise InvalidInput("category_path levels may not contain '/'", fields={"category_path": ["no '/' in a level"]})
    key = clean_text(data.key or "", field="key", max_length=limits.NODE_KEY_MAX)
    if key and (not key.isprintable() or any(ch.isspace() for ch in key)):
        raise InvalidInput("key must be printable with no spaces", fields={"key": ["printable, no spaces"]})
    value = data.value_json
    if value is not None:
        problem = first_json_problem(value)
        if problem:
            raise InvalidInput(f"value_json{'.' + problem[0] if problem[0] != 'body' else ''} {problem[1]}",
                               fields={"value_json": [problem[1]]})
        if len(json.dumps(value, ensure_ascii=False)) > limits.NODE_VALUE_JSON_MAX:
            raise InvalidInput(
                f"value_json is too large: at most {limits.NODE_VALUE_JSON_MAX} characters as JSON",
                fields={"value_json": ["too large"]},
            )
        value = canonical_json(value)
    if data.expires_at is not None and timezone.is_naive(data.expires_at):
        raise InvalidInput("expires_at needs a UTC offset", fields={"expires_at": ["needs a UTC offset"]})
    sources = list(dict.fromkeys(data.source_message_ids))
    if len(sources) > limits.NODE_SOURCES_MAX:
        raise InvalidInput(
            f"at most {limits.NODE_SOURCES_MAX} source messages", fields={"source_message_ids": ["too many"]}
        )
    if any(isinstance(item, bool) or not isinstance(item, int) for item in sources):
        raise InvalidInput("source_message_ids must be integers", fields={"source_message_ids": ["integers only"]})
    return replace(
        data,
        title=title,
        content=content,
        domain=domain,
        category_path=category_path,
        key=key,
        value_json=value,
        confidence=_unit_interval(data.confidence, field_name="confidence"),
        importance=_unit_interval(data.importance, field_name="importance"),
        tags=_string_list(data.tags, field_name="tags"),
        entities=_string_list(data.entities, field_name="entities"),
        source_message_ids=sources,
        workspace_id=clean_identity(data.workspace_id, field="workspace_id"),
        user_id=clean_identity(data.user_id, field="user_id"),
        session_id=clean_identity(data.session_id, field="session_id"),
    )


def node_owner_tokens(node: Node) -> list[str]:
    """The team's token and the token of the node's owner for its scope."""
    team = node.team_id
    if node.scope == Scope.SESSION:
        owner = owner_token(team, "s", node.session_id)
    elif node.scope == Scope.WORKSPACE:
        owner = owner_token(team, "w", node.workspace_id)
    elif node.scope == Scope.USER:
        owner = owner_token(team, "u", node.user_id)
    else:
        owner = owner_token(team, "g")
    return [owner_token(team, "t"), owner]


def node_search_tokens(node: Node) -> str:
    """Fields, in weight order: title | content | tags | entities | key and value strings,
    then the owner tokens (node_owner_tokens)."""
    key_and_value = " ".join([node.key.replace("_", " ").replace(".", " "), *json_strings(node.value_json)])
    return document_tokens(
        [node.title, node.content, " ".join(node.tags), " ".join(node.entities), key_and_value],
        owners=node_owner_tokens(node),
    )


def _owner(principal: Principal, data: NodeInput) -> dict[str, Any]:
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


def _bind_sources(principal: Principal, data: NodeInput, owner: dict[str, Any]) -> list[int]:
    """Check that every source message exists in the team (and in the caller's session, when
    the caller names one); returns the ids in the order given."""
    if not data.source_message_ids:
        return []
    found = {
        pk: (session_pk, workspace)
        for pk, session_pk, workspace in Message.objects.filter(
            team=principal.team, pk__in=data.source_message_ids
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
    if parent_id is not None and not Node.objects.filter(team=principal.team, pk=parent_id).exists():
        raise InvalidInput(f"parent node {parent_id} does not exist", fields={"parent_id": ["unknown node"]})


def _insert(principal: Principal, data: NodeInput, *, supersedes: Node | None = None) -> Node:
    owner = _owner(principal, data)
    sources = _bind_sources(principal, data, owner)
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
    return node


def node_create(*, principal: Principal, data: NodeInput, reason: str = "") -> Node:
    """Create a node (status active). Raises InvalidInput, AccessDenied."""
    data = validate_node_input(data)
    clean_text(reason, field="reason", max_length=limits.REASON_MAX)
    principal.check_write_scope(data.scope)
    with transaction.atomic():
        node = _insert(principal, data)
        audit_record(
            principal=principal, event_type="memory.node.created", node=node, reason=reason,
            payload={"node": node_snapshot(node), "source_message_ids": list(data.source_message_ids)},
        )
    return node


def _same_text(left: str, right: str) -> bool:
    return _SPACE.sub(" ", left).strip().casefold() == _SPACE.sub(" ", right).strip().casefold()


def _owner_filter(principal: Principal, data: NodeInput) -> dict[str, Any]:
    owner = _owner(principal, data)
    return {"session": owner["session"], "workspace_id": owner["workspace_id"], "user_id": owner["user_id"]}


def _identical_candidates(principal: Principal, data: NodeInput):
    """Active nodes of the same owner, domain, type and key (and value, for a keyed node)."""
    candidates = Node.objects.filter(
        team=principal.team,
        status=NodeStatus.ACTIVE,
        scope=data.scope,
        domain=data.domain,
        type=data.type,
        key=data.key,
        **_owner_filter(principal, data),
    )
    if data.key:
        candidates = candidates.filter(value_hash=value_hash(data.value_json))
    return candidates


def _first_identical(candidates, data: NodeInput) -> Node | None:
    """The node among `candidates` identical to `data` (without a key: same title and content)."""
    for candidate in candidates.order_by("pk")[:50]:
        if data.key or (_same_text(candidate.title, data.title) and _same_text(candidate.content, data.content)):
            return candidate
    return None


def node_upsert(*, principal: Principal, data: NodeInput, reason: str = "") -> UpsertResult:
    """The seed's upsertNode: return the identical active node instead of adding a duplicate.

    Identical means same owner, domain, type, key and value (or, without a key, the same
    title and content up to case and whitespace). When only descriptive fields differ
    (title, content, tags, …) they are updated in place; when nothing differs, nothing is
    written (no audit event, no version bump). Otherwise a new node is created.
    """
    data = validate_node_input(data)
    clean_text(reason, field="reason", max_length=limits.REASON_MAX)
    principal.check_write_scope(data.scope)
    with transaction.atomic():
        candidates = _identical_candidates(principal, data)

        def identical() -> Node | None:
            return _first_identical(candidates.select_for_update(), data)

        existing = identical()
        if existing is None:
            try:
                with transaction.atomic():
                    node = _insert(principal, data)
            except IntegrityError:
                # A concurrent request stored the identical node first; it is the answer.
                existing = identical()
                if existing is None:
                    raise Conflict("an identical memory was being written at the same time; retry") from None
            else:
                audit_record(
                    principal=principal, event_type="memory.node.created", node=node, reason=reason,
                    payload={"node": node_snapshot(node), "source_message_ids": list(data.source_message_ids)},
                )
                return UpsertResult(node=node, created=True, changed=True)
        changes = _descriptive_changes(existing, data)
        if not changes:
            return UpsertResult(node=existing, created=False, changed=False)
        node = _apply_update(principal, existing, changes, reason=reason)
        return UpsertResult(node=node, created=False, changed=True)


def _descriptive_changes(node: Node, data: NodeInput) -> dict[str, Any]:
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
        if isinstance(value, str) and _same_text(current, value):
            continue
        if current != value:
            changes[name] = value
    return changes


def _apply_update(principal: Principal, node: Node, changes: dict[str, Any], *, reason: str) -> Node:
    before = {name: _jsonable(getattr(node, name)) for name in changes}
    for name, value in changes.items():
        setattr(node, name, value)
    if "category_path" in changes:
        node.category_path_text = "/".join(node.category_path)
    node.version += 1
    node.updated_at = timezone.now()
    node.search_tokens = node_search_tokens(node)
    node.save()
    audit_record(
        principal=principal, event_type="memory.node.updated", node=node, reason=reason,
        payload={"before": before, "after": {name: _jsonable(getattr(node, name)) for name in changes},
                 "version": node.version},
    )
    return node


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def node_for_write(*, principal: Principal, node_id: int, workspace_id: str = "") -> Node:
    """Lock and return a node the principal may change. Raises NotFound or AccessDenied.

    Must run inside a transaction. A node in a workspace the principal may not read is
    reported as not found, like another team's node.
    """
    node = Node.objects.select_for_update().filter(team=principal.team, pk=node_id).first()
    if node is None or (node.workspace_id and not principal.can_read_workspace(node.workspace_id)):
        raise NotFound(f"no node {node_id}")
    if not node.workspace_id:
        principal.check_workspace(workspace_id)
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
        effective = {name: value for name, value in _descriptive_changes(node, data).items() if name in changes}
        if not effective:
            return node
        return _apply_update(principal, node, effective, reason=reason)


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
            old = node_for_write(principal=principal, node_id=old_node_id, workspace_id=workspace_id)
            claimed = Node.objects.filter(pk=old.pk, status=NodeStatus.ACTIVE).update(
                status=NodeStatus.SUPERSEDED, updated_at=timezone.now()
            )
            if not claimed:
                raise Conflict(f"node {old_node_id} is {old.status}; only an active node can be superseded")
            new = _insert(principal, data, supersedes=old)
            audit_record(
                principal=principal, event_type="memory.node.superseded", node=old, reason=reason,
                payload={"superseded_by": new.pk, "previous_status": NodeStatus.ACTIVE},
            )
            audit_record(
                principal=principal, event_type="memory.node.created", node=new, reason=reason,
                payload={"node": node_snapshot(new), "supersedes_id": old.pk,
                         "source_message_ids": list(data.source_message_ids)},
            )
    except IntegrityError:
        same = _first_identical(_identical_candidates(principal, data), data) if data.key else None
        if same is not None:
            raise Conflict(f"node {same.pk} already holds this value; update or forget node {old_node_id} instead") from None
        raise Conflict(f"node {old_node_id} was superseded by another request") from None
    return new


def supersede_input(old: Node, overrides: dict[str, Any], context: dict[str, str]) -> NodeInput:
    """A NodeInput for the successor of `old`: fields not in `overrides` are inherited, and the
    owner stays the same unless the scope changes (then it comes from the caller's `context`)."""
    inherited = {
        "scope": old.scope,
        "type": old.type,
        "title": old.title,
        "content": old.content,
        "domain": old.domain,
        "category_path": list(old.category_path),
        "key": old.key,
        "value_json": old.value_json,
        "confidence": old.confidence,
        "importance": old.importance,
        "tags": list(old.tags),
        "entities": list(old.entities),
        "expires_at": old.expires_at,
        "explicit": old.explicit,
        "parent_id": old.parent_id,
    }
    inherited.update(overrides)
    if inherited["scope"] == old.scope:
        owner = {
            "workspace_id": old.workspace_id,
            "user_id": old.user_id,
            "session_id": old.session.external_id if old.session_id else "",
        }
        if old.session_id:
            owner["workspace_id"] = old.session.workspace_id
            owner["user_id"] = old.session.user_id
        elif not owner["workspace_id"]:
            # User and global memory belong to no workspace; the caller's workspace still
            # decides access for a key limited to workspaces.
            owner["workspace_id"] = context.get("workspace_id", "")
    else:
        owner = {name: context.get(name, "") for name in ("workspace_id", "user_id", "session_id")}
    return NodeInput(**inherited, **owner)


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
    *, principal: Principal, node_id: int, mode: str, reason: str = "", workspace_id: str = ""
) -> None:
    """Forget a node (seed deleteNode).

    soft: status → deleted; out of every search and context, kept for audit and restore.
    hard: the row, its source links and its keyword-index entry are removed and its content
    is redacted from earlier audit payloads; one audit event records who, when and why.
    Raises InvalidInput (bad mode), NotFound, Conflict (soft delete of a deleted node).
    """
    if mode not in ("soft", "hard"):
        raise InvalidInput("mode must be 'soft' or 'hard'", fields={"mode": ["invalid choice"]})
    clean_text(reason, field="reason", max_length=limits.REASON_MAX)
    with transaction.atomic():
        node = node_for_write(principal=principal, node_id=node_id, workspace_id=workspace_id)
        previous = node.status
        if mode == "soft":
            if previous == NodeStatus.DELETED:
                raise Conflict(f"node {node_id} is already deleted")
            node.status = NodeStatus.DELETED
            node.updated_at = timezone.now()
            node.save(update_fields=["status", "updated_at"])
            audit_record(principal=principal, event_type="memory.node.deleted", node=node, reason=reason,
                         payload={"mode": "soft", "previous_status": previous})
            return
        session, workspace, user = node.session, node.workspace_id, node.user_id
        redacted = audit_redact_node(principal=principal, node_id=node.pk)
        node.delete()
        audit_record(
            principal=principal, event_type="memory.node.hard_deleted", node_id=node_id, session=session,
            workspace_id=workspace, user_id=user, reason=reason,
            payload={"mode": "hard", "previous_status": previous, "redacted_events": redacted},
        )
