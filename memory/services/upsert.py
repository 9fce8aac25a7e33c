"""Remembering a node without duplicates or contradictions (seed upsertNode, 冲突消解; R-STORE, R-TOOLS).

node_upsert looks at the slot the new node would take among its owner's active nodes
(memory.services.node_input.conflict_slot) and:

- the same value (or, keyless, the same text) is already there → nothing is written and the
  existing node is returned; only differing descriptive fields (title, tags, …) are updated, and
  none to tell less (no tags where it had some, a shorter category: node_input.tells_less) —
  except by background capture on a node an agent or a person wrote or changed, whose words it
  never replaces (a newcomer saw "会休克，随身带肾上腺素笔" become capture's "推荐菜谱时绝对避免花生") —
  and the write's source messages that the node does not cite yet are linked to it (the same
  fact said again in another conversation is evidence of it too; forgetting one of the two
  conversations then keeps it), up to NODE_SOURCES_MAX links;
- a one-valued key holds another value → the new value supersedes it ("latest wins",
  audited with rule latest_wins), unless the rule asks for confirmation, or the active value
  was stated by the user with high confidence and the new one was not: then nothing is
  written and the result names the conflicting node (requires_confirmation);
- a keyless note whose title reads as the title of a keyed node of the same owner, scope and
  type (keyed_holder), and whose content says nothing more (the same text, or its title
  again: twins.adds_nothing) → that node is returned, as for the same value: it holds the fact;
- the slot is free → a new node is inserted.

Writers of one slot take turns: on PostgreSQL a transaction-scoped advisory lock on the slot
(SQLite serialises writers already). Should two still meet at the unique index
node_active_slot_unique, the loser looks again and ends in one of the cases above, so a key
never holds two active values.
"""

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction

from accounts.principal import Principal
from memory import limits
from memory.errors import Conflict
from memory.models import AuditEvent, Node, NodeSource, NodeStatus, Scope
from memory.services.audit import audit_record, node_snapshot
from memory.services.node_input import DEFAULT_DOMAIN, note_text, value_hash
from memory.services.nodes import (
    NodeInput,
    apply_update,
    bind_sources,
    descriptive_changes,
    insert_node,
    lock_sessions,
    owner_columns,
    slot_holders,
    supersede_locked,
    validate_node_input,
)
from memory.services.twins import CAPTURE_ACTOR, CAPTURE_ROLE, adds_nothing, fact_of
from memory.validation import clean_text

# Replacing a value the user stated with at least this confidence needs the user's own words.
STATED_CONFIDENCE = 0.9
_ATTEMPTS = 3


@dataclass
class UpsertResult:
    node: Node | None
    created: bool
    changed: bool
    superseded: Node | None = None  # the node the new value replaced
    conflict: Node | None = None  # the active node that needs confirmation before it is replaced
    cited: tuple[int, ...] = ()  # source messages a repeated write linked to the node it repeats


def may_replace(old: Node, data: NodeInput, *, on_conflict: str) -> bool:
    """Whether a new value may supersede `old` without asking (seed 权限和确认策略)."""
    if on_conflict == "confirm":
        return False
    return not (old.explicit and old.confidence >= STATED_CONFIDENCE and not data.explicit)


def node_upsert(
    *, principal: Principal, data: NodeInput, reason: str = "", on_conflict: str = "supersede", confirm: bool = False
) -> UpsertResult:
    """Store `data` unless it is already remembered (see module doc). `confirm` replaces a
    conflicting value even when the rule would ask first.

    Returns UpsertResult (node None and `conflict` set when confirmation is needed). Raises
    InvalidInput, AccessDenied, Conflict (after repeated races; retry).
    """
    data = validate_node_input(data)
    clean_text(reason, field="reason", max_length=limits.REASON_MAX)
    principal.check_write_scope(data.scope)
    for _ in range(_ATTEMPTS):
        try:
            with transaction.atomic():
                return _upsert_once(principal, data, reason=reason, on_conflict=on_conflict, confirm=confirm)
        except IntegrityError:
            continue  # a concurrent writer took the slot first; look again
    raise Conflict("the same memory was being written at the same time; retry")


def _lock_slot(principal: Principal, data: NodeInput) -> None:
    """Wait for other writers of this owner's domain, type and key (PostgreSQL advisory lock,
    released at the end of the transaction)."""
    if connection.vendor != "postgresql":
        return
    owner = {Scope.SESSION: [data.workspace_id, data.user_id, data.session_id], Scope.WORKSPACE: [data.workspace_id],
             Scope.USER: [data.user_id]}.get(data.scope, [])
    identity = "\x00".join([str(principal.team.pk), data.scope, *owner, data.domain, data.type, data.key])
    lock_id = int.from_bytes(hashlib.sha256(identity.encode()).digest()[:8], "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [lock_id])


def _upsert_once(principal: Principal, data: NodeInput, *, reason: str, on_conflict: str, confirm: bool) -> UpsertResult:
    lock_sessions(principal, data)  # sessions first, as every writer and a conversation's forget do
    _lock_slot(principal, data)
    holder = slot_holders(principal, data).select_for_update().order_by("pk").first()
    if holder is not None and is_identical(holder, data):
        cited = cite_again(principal, holder, data, reason=reason)
        changes = descriptive_changes(holder, data)
        # Saying it again is no reason to trust it less or weigh it less (an agent's repeat of
        # capture's allergy, without an importance, had lowered it from 0.95 to 0.5); an update
        # operation still sets any value.
        changes = {name: value for name, value in changes.items()
                   if name not in ("confidence", "importance") or value > getattr(holder, name)}
        if changes and principal.role == CAPTURE_ROLE and _written_by_others(holder):
            changes = {}
        if not changes:
            return UpsertResult(node=holder, created=False, changed=False, cited=cited)
        return UpsertResult(node=apply_update(principal, holder, changes, reason=reason), created=False, changed=True,
                            cited=cited)
    keyed = keyed_holder(principal, data) if holder is None else None
    # the note says what a keyed memory of its owner already holds, and nothing more
    if keyed is not None and (_same_note(keyed.content, data.content) or adds_nothing(data.content, fact_of(data.title))):
        return UpsertResult(node=keyed, created=False, changed=False, cited=cite_again(principal, keyed, data, reason=reason))
    if holder is not None:
        if not confirm and not may_replace(holder, data, on_conflict=on_conflict):
            return UpsertResult(node=None, created=False, changed=False, conflict=holder)
        new = supersede_locked(principal, holder, data, reason=reason, rule="" if confirm else "latest_wins")
        return UpsertResult(node=new, created=True, changed=True, superseded=holder)
    with transaction.atomic():
        node = insert_node(principal, data)
    audit_record(
        principal=principal, event_type="memory.node.created", node=node, reason=reason,
        payload={"node": node_snapshot(node), "source_message_ids": list(data.source_message_ids)},
    )
    return UpsertResult(node=node, created=True, changed=True)


def is_identical(node: Node, data: NodeInput) -> bool:
    """Same value (keyed; a string value with spacing and a closing full stop aside, so " green "
    and "green." repeat "green", while "Green" or "McDonald" is a new spelling to keep), or the
    same title and content as notes are compared (keyless; node_input.note_text: case, spacing
    and the marks that only punctuate aside)."""
    if data.key:
        if isinstance(node.value_json, str) and isinstance(data.value_json, str):
            return _spaced(node.value_json) == _spaced(data.value_json)
        return node.value_hash == value_hash(data.value_json)
    return note_text(node.title) == note_text(data.title) and note_text(node.content) == note_text(data.content)


def _spaced(value: str) -> str:
    return " ".join(value.split()).removesuffix(".").removesuffix("。")


def keyed_holder(principal: Principal, data: NodeInput) -> Node | None:
    """For a keyless note: an active keyed node of the same owner, scope and type whose title reads
    as the same note (the allergy capture keyed from 记住，我对花生过敏, titled 用户对花生过敏, when
    an agent then writes the note 用户对花生过敏: two copies were injected side by side), or None.
    Only one that holds all the note says: its value if it names one, its domain unless the note
    left the default, at least its importance and confidence, and as long (a review's "Release
    owner" = bob was returned as the keyed alice; "No nuts" at importance 1.0 as a 0.2 one)."""
    if data.key or not data.title:
        return None
    owner = owner_columns(principal, data)
    candidates = Node.objects.filter(
        team=principal.team, status=NodeStatus.ACTIVE, scope=data.scope, session=owner["session"],
        workspace_id=owner["workspace_id"], user_id=owner["user_id"], type=data.type, title__iexact=data.title,
    ).exclude(key="").order_by("pk")

    def holds(node: Node) -> bool:
        return (_same_note(node.title, data.title) and data.domain in (node.domain, DEFAULT_DOMAIN)
                and (data.value_json is None or node.value_hash == value_hash(data.value_json))
                and node.importance >= data.importance and node.confidence >= data.confidence
                and (node.expires_at is None or (data.expires_at is not None and node.expires_at >= data.expires_at)))
    return next((node for node in candidates[:5] if holds(node)), None)


def _same_note(left: str, right: str) -> bool:
    return note_text(left) == note_text(right)


def _written_by_others(node: Node) -> bool:
    """Whether anyone but background capture created or changed `node` (its audit trail)."""
    return AuditEvent.objects.filter(team_id=node.team_id, node_id=node.pk).exclude(actor=CAPTURE_ACTOR).exists()


def cite_again(principal: Principal, node: Node, data: NodeInput, *, reason: str = "") -> tuple[int, ...]:
    """Link to `node` the source messages of `data` (a write that repeats it) that it does not
    cite yet, after its own, while it cites fewer than NODE_SOURCES_MAX; audited
    (`memory.node.cited`, payload source_message_ids) in the caller's transaction. Returns the
    ids linked. Raises InvalidInput for a source message the write may not cite, as a new
    node's write does (R-STORE)."""
    sources = bind_sources(principal, data, {})
    if not sources:
        return ()
    links = list(NodeSource.objects.filter(node=node).values_list("message_id", "position"))
    have = {message_id for message_id, _ in links}
    added = [message_id for message_id in sources if message_id not in have][:max(0, limits.NODE_SOURCES_MAX - len(links))]
    if not added:
        return ()
    start = max((position for _, position in links), default=-1) + 1
    NodeSource.objects.bulk_create([NodeSource(node=node, message_id=message_id, position=start + index)
                                    for index, message_id in enumerate(added)])
    audit_record(principal=principal, event_type="memory.node.cited", node=node, reason=reason,
                 payload={"source_message_ids": added})
    return tuple(added)


def node_cite(*, principal: Principal, node_id: int, message_ids: Sequence[int], reason: str = "") -> tuple[int, ...]:
    """Link to the active node `node_id` the messages `message_ids` that say it again, as a
    repeated write of it would (cite_again; R-STORE): for capture, which finds a fact already
    remembered. Returns the ids linked; () when the node is not the team's or no longer
    active. Raises InvalidInput for a message it may not cite, AccessDenied for a node the
    principal may not write."""
    found = Node.objects.filter(team=principal.team, pk=node_id).select_related("session").first()
    if found is None or not message_ids or (found.workspace_id and not principal.can_read_workspace(found.workspace_id)):
        return ()
    principal.check_write_scope(found.scope)
    data = NodeInput(scope=found.scope, workspace_id=found.workspace_id, user_id=found.user_id,
                     session_id=found.session.external_id if found.session_id else "", type=found.type,
                     title=found.title, source_message_ids=tuple(dict.fromkeys(message_ids)))
    with transaction.atomic():
        lock_sessions(principal, data)  # sessions before the node, as every writer and a forget do
        node = Node.objects.select_for_update().filter(pk=found.pk, status=NodeStatus.ACTIVE).first()
        return cite_again(principal, node, data, reason=reason) if node is not None else ()
