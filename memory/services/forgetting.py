"""memory_forget and restore (seed 000 删除和遗忘; R-TOOLS, R-STORE "provable forgetting").

Forget by id, or by a selector (scope, domain, category prefix, type, key, value, source
messages) within the caller's own reach: the user, workspace and session it names. A selector
never reaches past that owner, so "forget everything of mine" cannot touch another user (S06).
A user memory forgotten by id takes along its session copies: the same user's session nodes of
the same key and value (or note text) in any conversation (_session_copies); a conversation's
memory forgotten by id takes along the copy that keeps it for its user (kept_copy), and that
copy's session copies. They are listed as candidates, so the forget needs `confirm`.

- soft: active or expired nodes become `deleted`: out of search and context, kept for audit
  and restore.
- hard: the node, the versions it superseded (its chain: they hold the same fact) and the
  duplicates merged into any of them are removed with their source links and keyword-index
  entries (the index lives on the row), and their content is redacted from earlier audit
  payloads and profile versions, and the team's stored Idempotency-Key answers (which may
  quote it) are erased: a retry gets 409 answer_forgotten. The audit keeps who, when, why
  and how many: one event per removed node and one `memory.forget` event with the ids.

More than one candidate, or any hard delete through the tool, needs `confirm`: without it the
answer is requires_confirmation with the candidates, and nothing is written.

Restore undoes a soft delete (the node is active again), or a supersede: the current version
is superseded by a copy of the restored one, so the chain stays linear and its history
complete (old → newer → restored copy). Both audited.
"""

from dataclasses import dataclass, field, replace
from functools import partial

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.principal import Principal
from memory import limits
from memory.errors import Conflict, InvalidInput, NotFound
from memory.models import AuditEvent, Message, Node, NodeSource, NodeStatus, Scope
from memory.selectors.nodes import Owner, category_path_prefix_q, owner_session, reach
from memory.services.audit import FORGOTTEN, MERGED_EVENT, audit_merged_into, audit_record, node_words, reason_quotes
from memory.services.forgotten_repeats import cite_repeats
from memory.services.forgotten_turns import recall_turns
from memory.services.idempotency import idempotency_forget_answers
from memory.services.node_input import note_text, value_hash
from memory.services.nodes import (
    node_delete,
    node_for_write,
    supersede_input,
    supersede_locked,
    validate_node_input,
)
from memory.services.schema import schema_terms
from memory.validation import clean_text

FORGET_MAX = limits.FORGET_NODES_MAX
CANDIDATES_SHOWN = 50
MODES = ("soft", "hard")


@dataclass(frozen=True)
class ForgetSelector:
    """What to forget: `node_id`, or any of the other fields (all given must match)."""

    owner: Owner = Owner()
    node_id: int | None = None
    scope: str = ""
    domain: str = ""
    category_path_prefix: tuple[str, ...] = ()
    type: str = ""
    key: str = ""
    has_value: bool = False
    value_json: object = None
    source_message_ids: tuple[int, ...] = ()

    def is_empty(self) -> bool:
        return self.node_id is None and not (self.scope or self.domain or self.category_path_prefix or self.type
                                             or self.key or self.has_value or self.source_message_ids)


@dataclass
class ForgetResult:
    mode: str
    deleted_ids: list[int] = field(default_factory=list)
    requires_confirmation: bool = False
    candidates: list[Node] = field(default_factory=list)
    candidate_count: int = 0
    message: str = ""


def _selects(team, selector: ForgetSelector, proposal: dict) -> bool:
    """Whether a forget by `selector` would take what a proposal's node body says: its domain,
    type, category path and sources as given, its key and value in the schema's words (as
    _candidates matches them: disliked_ingredient is avoid_ingredient); the scope, which
    capture's policy decides, is not compared. The memories kept from the turns such a forget
    hides leave out what it forgets (memory.services.forgotten_repeats.cite_repeats)."""
    prefix = tuple(selector.category_path_prefix)
    if ((selector.domain and proposal.get("domain") != selector.domain)
            or (selector.type and proposal.get("type") != selector.type)
            or (prefix and tuple(proposal.get("category_path") or ())[: len(prefix)] != prefix)
            or (selector.source_message_ids
                and not set(proposal.get("source_message_ids") or ()) & set(selector.source_message_ids))):
        return False
    if not (selector.key or selector.has_value):
        return True
    key, value = schema_terms(team=team, domain=selector.domain, key=selector.key, value=selector.value_json,
                              has_value=selector.has_value)
    said_key, said_value = schema_terms(team=team, domain=str(proposal.get("domain") or ""),
                                        key=str(proposal.get("key") or ""), value=proposal.get("value_json"),
                                        has_value=True)
    return ((not key or said_key == key)
            and (not selector.has_value or value_hash(said_value) == value_hash(value)))


def _candidates(principal: Principal, selector: ForgetSelector, mode: str):
    statuses = [NodeStatus.ACTIVE, NodeStatus.EXPIRED] if mode == "soft" else list(NodeStatus.values)
    principal.check_workspace(selector.owner.workspace_id)
    session = owner_session(principal=principal, owner=selector.owner)
    owner = selector.owner
    if selector.node_id is not None:
        node_for_write(principal=principal, node_id=selector.node_id, workspace_id=owner.workspace_id)
        nodes = Node.objects.filter(team=principal.team, pk=selector.node_id)
        if owner.user_id or owner.workspace_id or owner.session_id:
            nodes = nodes.filter(reach(owner=owner, session=session))  # the caller's own memory only
    else:
        nodes = Node.objects.filter(team=principal.team).filter(reach(owner=owner, session=session))
    if selector.scope:
        nodes = nodes.filter(scope=selector.scope)
    if selector.domain:
        nodes = nodes.filter(domain=selector.domain)
    if selector.category_path_prefix:
        nodes = nodes.filter(category_path_prefix_q(list(selector.category_path_prefix)))
    if selector.type:
        nodes = nodes.filter(type=selector.type)
    key, value = schema_terms(team=principal.team, domain=selector.domain, key=selector.key,
                              value=selector.value_json, has_value=selector.has_value)
    if key:  # and memories stored under the key as sent, before its spelling or a synonym applied
        nodes = nodes.filter(key__in={key, selector.key})
    if selector.has_value:
        nodes = nodes.filter(value_hash=value_hash(value))
    if selector.source_message_ids:
        linked = NodeSource.objects.filter(message_id__in=selector.source_message_ids).values("node_id")
        nodes = nodes.filter(pk__in=linked)
    if selector.node_id is not None and not nodes.exists():
        raise NotFound(f"no node {selector.node_id} of this user, workspace or session matching the selector")
    return nodes.filter(status__in=statuses)


def _session_copies(principal: Principal, ids: list[int], mode: str) -> list[int]:
    """The session copies of the user memories `ids` name: the same user's session nodes, in
    any of their conversations the principal may read, of the same domain, key and value (a
    keyless note: the same note text). Capture keeps what the user said in passing in the
    conversation's memory; when they later ask to remember it, the user memory is another node,
    and forgetting that one by its id left the copy (and the turn it came from) to be recalled."""
    if Scope.SESSION not in principal.writable_scopes:
        return []
    statuses = [NodeStatus.ACTIVE, NodeStatus.EXPIRED] if mode == "soft" else list(NodeStatus.values)
    copies: list[int] = []
    for node in Node.objects.filter(team=principal.team, pk__in=ids, scope=Scope.USER).exclude(user_id=""):
        same = Node.objects.filter(team=principal.team, scope=Scope.SESSION, user_id=node.user_id, domain=node.domain,
                                   status__in=statuses, session__deleted_at__isnull=True)
        if principal.workspace_ids is not None:
            same = same.filter(workspace_id__in=sorted(principal.workspace_ids))
        if node.key:
            same = same.filter(key=node.key, value_hash=node.value_hash)
        else:
            same = [other for other in same.filter(key="", type=node.type)
                    if note_text(other.title) == note_text(node.title)]
        copies += [other.pk for other in same if other.pk not in ids and other.pk not in copies]
    return copies


def kept_copy(node: Node) -> Node | None:
    """The copy that keeps `node`, a conversation's memory, for its user
    (memory.services.keep.keep_for_user): its direct successor when that is the same user's
    user memory of the same fact (domain, key and value; a keyless note: type and note text).
    Any other successor (a correction to another value, a scope given to someone else) is None."""
    if node.scope != Scope.SESSION or not node.user_id:
        return None
    successor = Node.objects.filter(team_id=node.team_id, supersedes_id=node.pk).first()
    if successor is None or successor.scope != Scope.USER or successor.user_id != node.user_id \
            or successor.domain != node.domain:
        return None
    if node.key:
        same = successor.key == node.key and successor.value_hash == node.value_hash
    else:
        same = not successor.key and successor.type == node.type and note_text(successor.title) == note_text(node.title)
    return successor if same else None


def _kept_copies(principal: Principal, node_id: int, ids: list[int], mode: str) -> list[int]:
    """[the kept copy of node `node_id`] (kept_copy) when `mode` forgets its status; AccessDenied
    when the principal may not write user memory. Forgetting a conversation's memory by the id the conversation
    knows forgot only that version and left the copy recalled in every conversation."""
    node = Node.objects.filter(team=principal.team, pk=node_id).first()
    copy = kept_copy(node) if node is not None else None
    statuses = [NodeStatus.ACTIVE, NodeStatus.EXPIRED] if mode == "soft" else list(NodeStatus.values)
    if copy is None or copy.pk in ids or copy.status not in statuses:
        return []
    principal.check_write_scope(copy.scope)  # a key that cannot forget the copy forgets neither (403)
    return [copy.pk]


def _with_predecessors(principal: Principal, ids: list[int]) -> list[int]:
    """`ids` and every node they superseded or absorbed as duplicates (memory.capture.consolidate),
    directly or not (newest first)."""
    found = list(dict.fromkeys(ids))
    frontier = list(found)
    while frontier and len(found) <= FORGET_MAX:
        merged = audit_merged_into(team_id=principal.team.pk, node_ids=frontier)
        older = list(Node.objects.filter(Q(superseded_by__in=frontier) | Q(pk__in=merged), team=principal.team)
                     .distinct().order_by("-pk").values_list("pk", flat=True))
        frontier = [pk for pk in older if pk not in found]
        found += frontier
    return found


def memory_forget(
    *, principal: Principal, selector: ForgetSelector, mode: str = "soft", reason: str = "", confirm: bool = False,
    confirm_hard: bool = True,
) -> ForgetResult:
    """Forget the nodes `selector` names (see module doc). `confirm_hard=False` lets a direct
    REST delete by id skip the confirmation a hard delete otherwise needs.

    Returns ForgetResult. Raises InvalidInput (no selector, bad mode, too many candidates),
    NotFound (unknown id), AccessDenied (a workspace or scope the caller may not change).
    """
    if mode not in MODES:
        raise InvalidInput("mode must be 'soft' or 'hard'", fields={"mode": ["invalid choice"]})
    if selector.is_empty():
        raise InvalidInput("name what to forget: an id, or at least one of scope, domain, category_path_prefix, type, "
                           "key, value_json, source_message_ids", fields={"id": ["id or a selector is required"]})
    clean_text(reason, field="reason", max_length=limits.REASON_MAX)
    with transaction.atomic():
        candidates = _candidates(principal, selector, mode).select_related("session").order_by("-pk")
        ids = list(candidates.values_list("pk", flat=True)[: FORGET_MAX + 1])
        if len(ids) > FORGET_MAX:
            raise InvalidInput(f"the selector matches more than {FORGET_MAX} nodes; narrow it",
                               fields={"id": ["too many candidates"]})
        for node in candidates:
            principal.check_write_scope(node.scope)
        copies: list[int] = []
        if selector.node_id is not None:
            copies = _kept_copies(principal, selector.node_id, ids, mode)
            copies += _session_copies(principal, ids + copies, mode)
            ids += copies
        matched = len(ids)
        if mode == "hard":
            ids = _with_predecessors(principal, ids)  # the versions they replaced hold the same fact
        needs_confirmation = matched > 1 or bool(copies) or (mode == "hard" and confirm_hard and bool(ids))
        if needs_confirmation and not confirm:
            shown = list(Node.objects.filter(team=principal.team, pk__in=ids[:CANDIDATES_SHOWN]).order_by("-pk"))
            return ForgetResult(mode=mode, requires_confirmation=True, candidates=shown, candidate_count=len(ids),
                                message=f"{len(ids)} {'memory' if len(ids) == 1 else 'memories'} would be forgotten "
                                        f"({mode}); repeat with confirm=true")
        words: list[str] = []
        if mode == "hard":
            idempotency_forget_answers(team=principal.team)
            for node in Node.objects.filter(team=principal.team, pk__in=ids):
                words += node_words(node)  # the forget's own reason may quote them too
        # The turns that say them again, read once for all of them (memory.services.forgotten_repeats).
        cited = cite_repeats(principal, list(Node.objects.filter(team=principal.team, pk__in=ids)), hard=mode == "hard",
                             forgets=None if selector.node_id is not None else partial(_selects, principal.team, selector))
        for node_id in ids:
            node_delete(principal=principal, node_id=node_id, mode=mode, reason=reason,
                        workspace_id=selector.owner.workspace_id, repeats=cited.turns.get(node_id, 0))
        if ids:
            audit_record(principal=principal, event_type="memory.forget",
                         reason=FORGOTTEN if words and reason_quotes(reason, words) else reason,
                         workspace_id=selector.owner.workspace_id, user_id=selector.owner.user_id,
                         payload={"mode": mode, "count": len(ids), "node_ids": ids, "kept_memories": cited.kept,
                                  "by": "id" if selector.node_id is not None else "selector"})
    message = f"forgot {len(ids)} {'memory' if len(ids) == 1 else 'memories'} ({mode})" if ids else "nothing to forget"
    if ids and cited.kept:
        message += (f"; kept {cited.kept} other {'memory' if cited.kept == 1 else 'memories'} that the turns it hid "
                    "also said")
    return ForgetResult(mode=mode, deleted_ids=ids, candidate_count=len(ids), message=message)


def node_restore(*, principal: Principal, node_id: int, reason: str = "", workspace_id: str = "") -> Node:
    """Undo a soft delete or a supersede of `node_id` (R-STORE); returns the restored node.

    deleted → active again (the same node), or superseded again when a newer version replaced
    it before it was deleted (restore it once more to make it current), or expired again when
    it had expired before it was deleted. superseded → its
    active successor is superseded by a new node with the restored one's fields and sources
    (the chain stays linear). Raises
    NotFound, AccessDenied, Conflict (any other status; the successor is no longer the
    current version; the node's session, or every conversation it cites, was forgotten; it was
    merged into another node as a duplicate; another node now holds the slot).
    """
    clean_text(reason, field="reason", max_length=limits.REASON_MAX)
    with transaction.atomic():
        node = node_for_write(principal=principal, node_id=node_id, workspace_id=workspace_id)
        if node.session_id and node.session.deleted_at is not None:
            raise Conflict(f"node {node_id} belongs to a forgotten session; it cannot come back")
        if _only_forgotten_sources(principal, node):
            raise Conflict(f"every conversation node {node_id} was taken from has been forgotten; it cannot come back")
        if node.status == NodeStatus.SUPERSEDED:
            return _restore_superseded(principal, node, reason=reason, workspace_id=workspace_id)
        if node.status != NodeStatus.DELETED:
            raise Conflict(f"node {node_id} is {node.status}; only a deleted or superseded node can be restored")
        merged = AuditEvent.objects.filter(team=principal.team, node_id=node.pk, event_type=MERGED_EVENT).first()
        if merged is not None:
            raise Conflict(f"node {node_id} was merged into node {merged.payload.get('merged_into')}, which says it; "
                           f"restore or edit that one")
        if Node.objects.filter(team=principal.team, supersedes=node).exists():
            return _undelete_as(principal, node, NodeStatus.SUPERSEDED, reason=reason)
        if _status_when_deleted(principal, node) == NodeStatus.EXPIRED:
            return _undelete_as(principal, node, NodeStatus.EXPIRED, reason=reason)
        holder = Node.objects.filter(team=principal.team, status=NodeStatus.ACTIVE, scope=node.scope,
                                     session_id=node.session_id, workspace_id=node.workspace_id, user_id=node.user_id,
                                     domain=node.domain, type=node.type, key=node.key, slot=node.slot).first()
        if holder is not None:
            raise Conflict(f"node {holder.pk} now holds this memory; forget or supersede it first")
        node.status = NodeStatus.ACTIVE
        node.updated_at = timezone.now()
        node.version += 1
        node.save(update_fields=["status", "updated_at", "version"])
        recalled = recall_turns(principal=principal, node=node)
        audit_record(principal=principal, event_type="memory.node.restored", node=node, reason=reason,
                     payload={"previous_status": NodeStatus.DELETED, "recalled_messages": recalled})
    return node


def _undelete_as(principal: Principal, node: Node, status: str, *, reason: str) -> Node:
    """A deleted node goes back to the status it had in the chain or in time, not to active:
    `superseded` when a newer version had replaced it (made active, it would be injected beside
    its successor: a newcomer's find), `expired` when it had expired before it was deleted
    (restoring undoes the forget, not the expiry: Expire, Forget, Restore made it active and
    injected again)."""
    node.status = status
    node.updated_at = timezone.now()
    node.version += 1
    node.save(update_fields=["status", "updated_at", "version"])
    recalled = recall_turns(principal=principal, node=node)
    audit_record(principal=principal, event_type="memory.node.restored", node=node, reason=reason,
                 payload={"previous_status": NodeStatus.DELETED, "status": status, "recalled_messages": recalled})
    return node


def _status_when_deleted(principal: Principal, node: Node) -> str:
    """The status `node` had when it was last soft-deleted (its audit event), "" if unknown."""
    event = (AuditEvent.objects.filter(team=principal.team, node_id=node.pk, event_type="memory.node.deleted")
             .order_by("-pk").first())
    return (event.payload or {}).get("previous_status", "") if event is not None else ""


def _restore_superseded(principal: Principal, node: Node, *, reason: str, workspace_id: str) -> Node:
    successor = Node.objects.filter(team=principal.team, supersedes=node).first()
    if successor is None or successor.status != NodeStatus.ACTIVE:
        raise Conflict(f"node {node.pk}'s successor is not the current version; restore from the newest one")
    current = node_for_write(principal=principal, node_id=successor.pk, workspace_id=workspace_id)
    # The copy cites what it still may: not the messages of a conversation forgotten since,
    # which a write would refuse. A user's memory spans workspaces; a key
    # limited to some writes it naming the workspace it speaks for, as a create does.
    data = replace(supersede_input(node, {}, {}), workspace_id=node.workspace_id or workspace_id,
                   source_message_ids=_still_citable(principal, node))
    try:
        with transaction.atomic():
            restored = supersede_locked(principal, current, validate_node_input(data), reason=reason)
    except IntegrityError:
        raise Conflict(f"another active node holds node {node.pk}'s value; forget or supersede it first") from None
    audit_record(principal=principal, event_type="memory.node.restored", node=restored, reason=reason,
                 payload={"previous_status": NodeStatus.SUPERSEDED, "restored_from": node.pk,
                          "superseded": current.pk})
    return restored


def _only_forgotten_sources(principal: Principal, node: Node) -> bool:
    """True when `node` cites messages and every one lies in a forgotten (soft-deleted)
    conversation: forgetting that conversation deleted the node, and a restore would bring
    back what the user asked to forget. A node with no recorded source is never such a node."""
    sources = node.source_message_ids
    return bool(sources) and not Message.objects.filter(
        team=principal.team, pk__in=sources, session__deleted_at__isnull=True).exists()


def _still_citable(principal: Principal, node: Node) -> list[int]:
    """The node's source messages that a write of it may cite now, in order: in a conversation
    not deleted (of its own session, for session scope), in a workspace the principal may read
    (memory.services.nodes.bind_sources)."""
    sources = node.source_message_ids
    own = {"session_id": node.session_id} if node.scope == "session" else {}
    citable = {pk for pk, workspace in Message.objects.filter(
        team=principal.team, pk__in=sources, session__deleted_at__isnull=True, **own,
    ).values_list("pk", "session__workspace_id") if principal.can_read_workspace(workspace)}
    return [pk for pk in sources if pk in citable]
