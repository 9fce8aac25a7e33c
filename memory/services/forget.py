"""Forgetting a whole conversation (R-STORE provable forgetting; R-API DELETE /sessions/{id}).

What belongs to a session:
- its messages and the summaries built on them;
- its session-scope nodes;
- nodes of any scope whose every source message is a message of this session or of a
  session already soft-deleted ("derived only from it" and what is forgotten). A node that
  also cites a message of another session not deleted is a memory of that other
  conversation too: it stays as it is (same status, same text) and, on a hard delete,
  only loses its links to the removed messages; its text (and the audit snapshots of it)
  stays, even where it restates what was said here. Nodes with no recorded source are
  never attributed to a session, whatever their text.

soft (kept in the store, but nothing brings it back through the API; its derived memories
cannot be restored one by one either, memory.services.forgetting): the session gets `deleted_at`; its messages,
summaries and working memory leave every read path (the selectors skip sessions with
`deleted_at`), it takes no new messages, session memories or working memory (409), and its messages can no longer be cited
as sources; the nodes that belong to it become `deleted`, one `memory.node.deleted` event
each (nodes already deleted are left alone). Nodes that also cite another session keep
their status and their links. Nothing is redacted. Repeating a soft delete is a Conflict.

hard (final; also for a soft-deleted session):
- its nodes are removed — rows, source links and keyword-index entries (the tsvector is a
  column of the row on PostgreSQL; the FTS5 row goes with it by trigger on SQLite) — their
  content is redacted from earlier audit payloads (audit_redact_node) and their lines from
  every profile version of their users (profile_forget_nodes), and one
  `memory.node.hard_deleted` event is written per node, as node_delete does (S07: one audit
  row per memory that left the store);
- its summaries and messages are removed, and with them their keyword-index entries;
- its working memory (memory.working_models.WorkingMemory) is removed; its audit events
  (`memory.working_memory.updated`) name fields changed, never their content, so they stay
  as they are;
- hit-ledger rows (Retrieval) of the session keep their sizes, layers, budget and node ids
  for the KPIs, but their query text becomes "[forgotten]", their message and summary ids
  are cleared and the matched query terms dropped, and the note of an agent's feedback on
  them becomes "[forgotten]" too; ledger rows of the same end user's other
  context calls forget the ids of the removed messages that episodic recall had injected;
- the Session row itself is deleted, so the same ids afterwards start a new, empty session.
  What remains is the audit: `memory.session.hard_deleted` keeps the session's ids (external
  id, workspace, user), who, when, why and how many of each kind went.
Audit payloads of messages and summaries hold ids and counts only (memory.services.messages,
.summaries), never text, so no other event needs redacting (their ids stay, resolving to
nothing); the tests grep every payload. Reasons given with earlier events and with this one
are kept as written: they are the "why" of the record.

Permission: write rights on session scope, and on the scope of every node that would be
deleted (an agent key cannot take down a team-wide global memory this way; the whole call
is refused, 403, with nothing changed). A key limited to workspaces must name one of them
(AccessDenied, 403, as on every session call; it depends on the ids named, not on what is
stored). A session in another team is NotFound, like an unknown one. Everything happens in one
transaction with its audit events, under a lock on the session row: a failure changes
nothing. Writers lock that row too before touching the conversation (messages_append, and
node writes of its session or citing its messages), so each runs wholly before a forget
(and its rows go with it) or wholly after (a new session; sources no longer found).
"""

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.principal import AccessDenied, Principal
from memory import limits
from memory.errors import Conflict, InvalidInput, NotFound
from memory.kpi_models import RetrievalFeedback
from memory.models import Message, Node, NodeSource, NodeStatus, Retrieval, Scope, Session, Summary
from memory.services.audit import audit_record, audit_redact_node, node_words
from memory.services.idempotency import idempotency_forget_answers
from memory.services.profiles import profile_forget_nodes
from memory.services.sessions import SessionRef
from memory.validation import clean_text
from memory.working_models import WorkingMemory

MODES = ("soft", "hard")
FORGOTTEN = "[forgotten]"


@dataclass
class SessionForgetResult:
    """What a forget did. `counts`: messages, summaries, working_memory (0 or 1), nodes
    (hidden or deleted on soft, removed on hard), source_links, retrievals_redacted,
    audit_events_redacted."""

    mode: str
    ref: SessionRef
    counts: dict[str, int]
    node_ids: list[int] = field(default_factory=list)  # nodes deleted with the session
    kept_node_ids: list[int] = field(default_factory=list)  # nodes that also cite another session


def _session_for_write(principal: Principal, ref: SessionRef) -> Session:
    principal.check_workspace(ref.workspace_id)  # 403, as every other session call (messages, working memory)
    session = (
        Session.objects.select_for_update()
        .filter(team=principal.team, workspace_id=ref.workspace_id, user_id=ref.user_id, external_id=ref.session_id)
        .first()
    )
    if session is None:
        raise NotFound(f"no session {ref.session_id!r} for this workspace and user")
    return session


def _derived_nodes(principal: Principal, session: Session) -> tuple[list[Node], list[int]]:
    """(nodes that go with the session, locked; ids of nodes that also cite another session)."""
    cited = set(
        NodeSource.objects.filter(message__session=session, node__team=principal.team).values_list("node_id", flat=True)
    )
    # Evidence in a soft-deleted conversation counts for nothing: its messages left every read path.
    elsewhere = set(
        NodeSource.objects.filter(node_id__in=cited, message__session__deleted_at__isnull=True)
        .exclude(message__session=session).values_list("node_id", flat=True)
    )
    own = set(Node.objects.filter(team=principal.team, session=session).values_list("pk", flat=True))
    going = own | (cited - elsewhere)
    nodes = list(Node.objects.select_for_update().filter(team=principal.team, pk__in=going).order_by("pk"))
    return nodes, sorted((cited & elsewhere) - own)


def _check_nodes(principal: Principal, nodes: list[Node]) -> None:
    for node in nodes:
        if node.workspace_id and not principal.can_read_workspace(node.workspace_id):
            raise AccessDenied("a memory derived from this conversation lies in a workspace this key may not access")
        try:
            principal.check_write_scope(node.scope)
        except AccessDenied:
            raise AccessDenied(
                f"this conversation has {node.scope}-scope memories derived from it, which this principal "
                f"may not delete"
            ) from None


def session_forget(*, principal: Principal, ref: SessionRef, mode: str, reason: str = "") -> SessionForgetResult:
    """Forget the conversation named by `ref`, soft or hard (see the module docstring).

    Raises InvalidInput (bad mode or reason), AccessDenied (no write right on session scope
    or on a derived node's scope), NotFound (no such session for this principal), Conflict
    (soft delete of a soft-deleted session).
    """
    if mode not in MODES:
        raise InvalidInput("mode must be 'soft' or 'hard'", fields={"mode": ["invalid choice"]})
    clean_text(reason, field="reason", max_length=limits.REASON_MAX)
    principal.check_write_scope(Scope.SESSION)
    with transaction.atomic():
        session = _session_for_write(principal, ref)
        if mode == "soft" and session.deleted_at is not None:
            raise Conflict(f"session {ref.session_id!r} is already deleted")
        message_ids = list(Message.objects.filter(team=principal.team, session=session).values_list("pk", flat=True))
        nodes, kept = _derived_nodes(principal, session)
        _check_nodes(principal, nodes)
        counts = {
            "messages": len(message_ids),
            "summaries": Summary.objects.filter(team=principal.team, session=session).count(),
            "working_memory": WorkingMemory.objects.filter(team=principal.team, session=session).count(),
            "nodes": 0,
            "source_links": 0,
            "retrievals_redacted": 0,
            "audit_events_redacted": 0,
        }
        if mode == "soft":
            deleted = _soft(principal, session, nodes, reason)
        else:
            deleted = _hard(principal, session, nodes, message_ids, reason, counts)
        counts["nodes"] = len(deleted)
        audit_record(
            principal=principal,
            event_type="memory.session.deleted" if mode == "soft" else "memory.session.hard_deleted",
            session=session,
            reason=reason,
            payload={"mode": mode, "counts": counts, "node_ids": deleted, "kept_node_ids": kept},
        )
    return SessionForgetResult(mode=mode, ref=ref, counts=counts, node_ids=deleted, kept_node_ids=kept)


def _soft(principal: Principal, session: Session, nodes: list[Node], reason: str) -> list[int]:
    now = timezone.now()
    session.deleted_at = now
    session.save(update_fields=["deleted_at"])
    deleted = []
    for node in nodes:
        previous = node.status
        if previous == NodeStatus.DELETED:
            continue
        node.status = NodeStatus.DELETED
        node.updated_at = now
        node.save(update_fields=["status", "updated_at"])
        audit_record(
            principal=principal, event_type="memory.node.deleted", node=node,
            session=session if node.session_id == session.pk else None, reason=reason,
            payload={"mode": "soft", "previous_status": previous, "with_session": session.external_id},
        )
        deleted.append(node.pk)
    return deleted


def _hard(
    principal: Principal, session: Session, nodes: list[Node], message_ids: list[int], reason: str,
    counts: dict[str, int],
) -> list[int]:
    team = principal.team
    counts["source_links"] = NodeSource.objects.filter(message__session=session, node__team=team).count()
    counts["retrievals_redacted"] = _redact_retrievals(principal, session, set(message_ids))
    for node in nodes:
        counts["audit_events_redacted"] += audit_redact_node(principal=principal, node_id=node.pk,
                                                             words=node_words(node))
    profile_forget_nodes(team=team, node_ids=[node.pk for node in nodes], principal=principal)
    Node.objects.filter(team=team, pk__in=[node.pk for node in nodes]).delete()
    for node in nodes:
        audit_record(
            principal=principal, event_type="memory.node.hard_deleted", node_id=node.pk,
            session=session if node.session_id == session.pk else None,
            workspace_id=node.workspace_id, user_id=node.user_id, reason=reason,
            payload={"mode": "hard", "previous_status": node.status, "with_session": session.external_id},
        )
    Summary.objects.filter(team=team, session=session).delete()
    WorkingMemory.objects.filter(team=team, session=session).delete()
    Message.objects.filter(team=team, session=session).delete()  # and the kept nodes' links to them
    Session.objects.filter(pk=session.pk).delete()
    idempotency_forget_answers(team=team)
    return [node.pk for node in nodes]


def _forget_items(items: list[dict[str, Any]], message_ids: set[int] | None) -> list[dict[str, Any]]:
    """Ledger items of the forgotten session's own calls (`message_ids` None): no matched query
    terms, no message or summary ids. Of other calls: the removed messages' items lose their
    id and matched terms; the rest is theirs and stays."""
    forgotten = []
    for item in items:
        if message_ids is None:
            item = {**item, "matched": []}
            if item.get("kind") in ("message", "summary"):
                item["id"] = None
        elif item.get("kind") == "message" and item.get("id") in message_ids:
            item = {**item, "id": None, "matched": []}
        forgotten.append(item)
    return forgotten


def _redact_retrievals(principal: Principal, session: Session, message_ids: set[int]) -> int:
    """Redact the hit ledger (see the module docstring); returns rows changed."""
    own = list(Retrieval.objects.filter(team=principal.team, session=session))
    for retrieval in own:
        retrieval.query = FORGOTTEN if retrieval.query else ""
        retrieval.message_ids = []
        retrieval.summary_id = None
        retrieval.items = _forget_items(retrieval.items, None)
    Retrieval.objects.bulk_update(own, ["query", "message_ids", "summary_id", "items"], batch_size=500)
    # The agent's note on a call may quote the conversation; the ids it reported used stay.
    RetrievalFeedback.objects.filter(team=principal.team, retrieval__in=[retrieval.pk for retrieval in own]).exclude(
        note="").update(note=FORGOTTEN)
    changed = len(own)
    if not session.user_id or not message_ids:
        return changed
    # Episodic recall reaches a user's sessions of one workspace (memory.selectors.messages).
    others = (
        Retrieval.objects.filter(team=principal.team, workspace_id=session.workspace_id, user_id=session.user_id,
                                 created_at__gte=session.created_at)
        .exclude(session=session)
        .only("pk", "message_ids", "items")
    )
    touched = []
    for retrieval in others.iterator(chunk_size=500):
        if not message_ids.intersection(retrieval.message_ids):
            continue
        retrieval.message_ids = [pk for pk in retrieval.message_ids if pk not in message_ids]
        retrieval.items = _forget_items(retrieval.items, message_ids)
        touched.append(retrieval)
    Retrieval.objects.bulk_update(touched, ["message_ids", "items"], batch_size=500)
    return changed + len(touched)
