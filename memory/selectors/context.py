"""The memory context injected before each model call, within a budget (seed 000 默认自动检索,
seed 004 L0–L5 and §10 前置注入; R-CTX).

Sections of the rendered block, in display order, with the layer each belongs to
(memory.selectors.context_items.SECTIONS):
  L0 [Instructions]               the team's and the workspace's pinned instructions (admins)
  L1 [Workspace and team memory]  active workspace and global constraints, decisions, facts
  L2 [User preferences]           the end user's active preferences and constraints
  L2 [User profile]               the summary of the user's profile document (seed 004)
  L2 [Recent corrections]         the user's latest corrections not shown above (at most 8),
                                  marked as replacing an earlier memory (never the old value)
  L3 [Conversation summary]       the session's latest summary, unless the block shows every
                                  message it covers word for word, system messages aside
                                  (counts.summary_redundant)
  L3 [Recent messages]            the last `recent_messages` turns, oldest first, and up to
                                  SUMMARY_GAP_MAX (2) before them when the summary covers no
                                  more: then it shows what the summary says, which is left out
  L4 [This session]               active session-scope nodes (tasks, temporary constraints, …)
  L4 [Working memory]             the session's working state: goal, resolved references,
                                  known and still-open slots, notes (one line each)
  L5 [Relevant memories]          nodes relevant to the query (keyword search)
  L5 [Earlier messages]           earlier turns relevant to the query (episodic recall), also
                                  from the user's other sessions, and in a new session; each
                                  with the turn that followed it, indented beneath (`  ↳ …`)
L5 holds at most `top_n` hits, nodes and messages interleaved by rank; an earlier message
with the same text as a recent or better-ranked one is shown once, and so is a memory whose
line says what a memory already placed says (two keys, one value: omitted as `same_text`;
memory.selectors.context_fit).

The whole block — headers, separators, summary — stays within `max_chars` characters.
Items are placed in priority order — L0, L4 (working memory first), L1, L2, the summary, L5 hits (best first), recent
messages (newest first) — first within a share of the budget per section (SECTION_SHARES),
then into whatever room is left, the three newest recent messages before the L5 hits (RECENT_FIRST);
what does not fit is left out and counted in diagnostics
(nodes also as `over_limit`), each under the limit that left it out (MemoryContext.dropped,
a warning per limit). An item is never cut: it fits whole or is left out. Recent
messages stay a contiguous window ending at the newest turn. A message is shown as one line, `role: text` or
`role (name): text` when its metadata names the speaker, of at most MESSAGE_EXCERPT_CHARS
characters of text (longer ones end with "…"). Every node left out for the
budget is reported as `over_limit`.

The store is read first (memory.selectors.context_gather), then cut to the budget here.
A failure in one part (say, keyword search) is logged, reported in diagnostics with
store_status "degraded", and the other parts are still returned.
"""

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from accounts.principal import Principal
from memory.models import Retrieval, Session
from memory.ops.metrics import context_observe
from memory.selectors.budget import Budget, budget_resolve, estimate_tokens
from memory.selectors.conflicts import below_confidence, conflict_losers
from memory.selectors.context_fit import LIMITS, SAME_TEXT, Dropped, fit_with_summary, limit_value
from memory.selectors.context_gather import ContextRequest, Parts, ReadSizes, gather_parts
from memory.selectors.context_items import (
    LAYERS,
    SECTIONS,
    Item,
    message_item,
    one_line,
    render,
)
from memory.selectors.nodes import owner_session
from memory.selectors.query import Omission
from memory.selectors.rows import prefetch_source_links
from memory.validation import context_time_zone

__all__ = ["ContextRequest", "Dropped", "MemoryContext", "context_build", "limit_value"]

logger = logging.getLogger(__name__)


@dataclass
class MemoryContext:
    retrieval_id: int | None
    block: str
    budget: Budget
    items: list[Item]
    omitted: list[Omission]
    warnings: list[str]
    store_status: str
    chars_by_layer: dict[str, int]
    tokens_by_layer: dict[str, int]
    truncated: bool
    latency_ms: float
    counts: dict[str, int] = field(default_factory=dict)
    dropped: list[Dropped] = field(default_factory=list)  # in fill priority order

    def section(self, name: str) -> list[Any]:
        return [item.obj for item in self.items if item.section == name]

    @property
    def used_memory_ids(self) -> list[int]:
        return [item.obj.pk for item in self.items if item.kind == "node"]


@dataclass
class _Gathered:
    candidates: list[Item] = field(default_factory=list)  # in fill priority order
    omitted: list[Omission] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    degraded: bool = False
    counts: dict[str, int] = field(default_factory=dict)
    summary_covers: int = 0  # Parts.summary_covers

    def fail(self, part: str, error: Exception) -> None:
        logger.exception("context: %s failed", part)
        self.warnings.append(f"{part} unavailable ({type(error).__name__}); answered without it")
        self.degraded = True


def _assemble(principal: Principal, request: ContextRequest, session: Session | None, parts: Parts,
              budget: Budget) -> _Gathered:
    """Cut `parts` to `budget` (L5 hits to top_n, conflicts and minimum confidence resolved)
    and list the candidates in fill priority order."""
    gathered = _Gathered(omitted=list(parts.omitted), warnings=list(parts.warnings), degraded=parts.degraded,
                         summary_covers=parts.summary_covers)
    hits: list[Item] = []
    if request.query.strip() and budget.top_n > 0:
        top_n = min(budget.top_n, parts.top_n)
        node_hits, message_hits = parts.node_hits[:top_n], parts.message_hits[:top_n]
        gathered.omitted += [Omission(item.obj.pk, "over_limit") for item in parts.node_hits[top_n:]]
        interleaved: list[list[Item]] = []  # hits by rank, a message hit with its follow-up
        for index in range(max(len(node_hits), len(message_hits))):
            interleaved += [[item] for item in node_hits[index : index + 1]] + message_hits[index : index + 1]
        placed: set[int] = set()
        for unit in interleaved[:top_n]:
            if unit[0].kind == "message" and unit[0].obj.pk in placed:
                continue  # already shown as the follow-up of a better hit
            for item in unit:
                if item.kind == "message":
                    if item.obj.pk in placed:
                        continue
                    placed.add(item.obj.pk)
                hits.append(item)
        gathered.omitted += [Omission(unit[0].obj.pk, "over_limit") for unit in interleaved[top_n:]
                             if unit[0].kind == "node"]
    shown = {item.obj.pk for item in parts.standing + hits if item.kind == "node"}
    long_term = [item for item in parts.long_term if item.kind != "node" or item.obj.pk not in shown]
    defaults, hits = _resolve_conflicts(principal, request, session, parts.standing + long_term, hits, gathered,
                                        budget.min_confidence)
    # Fill priority: L4, L1, L2 (preferences, then profile and corrections), the summary, L5
    # hits, recent messages newest first.
    priority = {"session": 0, "workspace": 1, "user_preferences": 2, "profile": 3, "corrections": 4}
    gathered.candidates = parts.foundation + parts.working + sorted(defaults, key=lambda item: priority[item.section])
    if parts.summary is not None:
        gathered.candidates.append(Item("summary", "summary", parts.summary, one_line(parts.summary.summary), "summary"))
    gathered.candidates += hits
    # The window as gathered: the last recent_messages turns, or a few more a summary gives way to.
    recent = parts.recent if budget.recent_messages > 0 else []
    gathered.candidates += [message_item("recent_messages", message, "recent_message") for message in reversed(recent)]
    gathered.counts = {"default_nodes": len(defaults), "retrieval_hits": sum(1 for item in hits if item.after is None),
                       "recent_messages": len(recent)}
    return gathered


def _parts(principal: Principal, request: ContextRequest, session: Session | None, budget: Budget,
           reads: dict | None) -> Parts:
    sizes = ReadSizes.of(budget)
    if reads is None:
        return gather_parts(principal, request, session, sizes)
    earlier = reads.get(sizes.but_top_n())
    if earlier is None or earlier.top_n < sizes.top_n:
        earlier = reads[sizes.but_top_n()] = gather_parts(principal, request, session, sizes)
    return earlier


def _resolve_conflicts(principal: Principal, request: ContextRequest, session: Session | None, defaults: list[Item],
                       hits: list[Item], gathered: _Gathered, floor: float) -> tuple[list[Item], list[Item]]:
    """Leave out nodes that lose a conflict or fall below the budget's minimum confidence."""
    nodes = [item.obj for item in defaults + hits if item.kind == "node"]
    try:
        losers = conflict_losers(principal=principal, nodes=nodes, owner=request.owner, session=session,
                                 now=timezone.now())
    except DatabaseError as error:
        gathered.fail("conflict resolution", error)
        losers = {}
    weak = below_confidence(nodes, floor)
    gathered.omitted += [Omission(pk, "conflict_lost") for pk in losers]
    gathered.omitted += [Omission(pk, "low_confidence") for pk in sorted(weak - set(losers))]
    left_out = set(losers) | weak

    def keep(item: Item) -> bool:
        return item.kind != "node" or item.obj.pk not in left_out

    return [item for item in defaults if keep(item)], [item for item in hits if keep(item)]


def context_build(*, principal: Principal, request: ContextRequest, budget: Budget | None = None,
                  record: bool = True, reads: dict | None = None) -> MemoryContext:
    """Build, render and record the memory context for one model call (R-CTX).

    Returns a MemoryContext whose `block` is at most `budget.max_chars` characters and whose
    `retrieval_id` names the hit-ledger row. For policy simulation: `budget` replaces the
    resolved one, `record=False` writes no ledger row, and `reads` (a dict kept by the caller
    for one request) lets a second budget reuse the first one's reads when they differ only
    in what fits or in top_n (ReadSizes). Raises AccessDenied for a workspace outside a key's
    limit and InvalidInput for bad ids or an unknown time zone; never fails because a search
    part failed.
    """
    started = time.perf_counter()
    context_time_zone(request.timezone)  # InvalidInput before any work
    if budget is None:
        budget = budget_resolve(request.budget, team=principal.team, workspace_id=request.owner.workspace_id)
    principal.check_workspace(request.owner.workspace_id)
    session = owner_session(principal=principal, owner=request.owner)
    gathered = _Gathered()
    if budget.enabled:
        gathered = _assemble(principal, request, session, _parts(principal, request, session, budget, reads), budget)
    candidates: list[Item] = []
    switched_off: list[Item] = []
    for item in gathered.candidates:
        on = budget.layer_enabled(item.layer) and (item.section != "summary" or budget.summary_enabled)
        (candidates if on else switched_off).append(item)
    caps = {layer: budget.layer_chars(layer) for layer in LAYERS if budget.layer_chars(layer) is not None}
    chosen, dropped, summary_redundant = fit_with_summary(candidates, budget.max_chars, caps, gathered.summary_covers)
    gathered.omitted += [Omission(left.item.obj.pk, SAME_TEXT) for left in dropped if left.limit == SAME_TEXT]
    dropped = [left for left in dropped if left.limit != SAME_TEXT]  # not left out for the budget
    gathered.omitted += [Omission(item.obj.pk, "layer_disabled") for item in switched_off if item.kind == "node"]
    try:
        prefetch_source_links([item.obj for item in chosen if item.kind == "node"], principal=principal)
    except DatabaseError as error:
        gathered.fail("source links", error)
    shown = {item.obj.pk for item in chosen if item.kind == "node"}
    omitted = list({(item.node_id, item.reason): item for item in gathered.omitted + [
        Omission(left.item.obj.pk, "over_limit") for left in dropped if left.item.kind == "node"]
        if item.node_id not in shown}.values())
    block = render(chosen)
    chars_by_layer = {layer: 0 for layer in LAYERS}
    tokens_by_layer = {layer: 0 for layer in LAYERS}
    for item in chosen:
        chars_by_layer[item.layer] += len(item.text)
        tokens_by_layer[item.layer] += estimate_tokens(item.text)
    status = "disabled" if not budget.enabled else ("degraded" if gathered.degraded else "ok")
    warnings = list(budget.warnings) + gathered.warnings
    by_limit = {limit: sum(1 for left in dropped if left.limit == limit) for limit in LIMITS
                if any(left.limit == limit for left in dropped)}
    warnings += [f"{count} item(s) left out to stay within {limit}={limit_value(budget, limit)}"
                 for limit, count in by_limit.items()]
    warnings += [f"pinned instructions of {'workspace ' + repr(item.obj.workspace_id) if item.obj.workspace_id else 'the team'}"
                 f" ({len(item.text)} characters) left out: they do not fit max_chars={budget.max_chars} or the L0 cap"
                 for item in (left.item for left in dropped) if item.section == "instructions"]
    context = MemoryContext(
        retrieval_id=None,
        block=block,
        budget=budget,
        items=chosen,
        omitted=omitted,
        warnings=warnings,
        store_status=status,
        chars_by_layer=chars_by_layer,
        tokens_by_layer=tokens_by_layer,
        truncated=bool(dropped),
        latency_ms=0.0,
        dropped=dropped,
        counts={
            **gathered.counts,
            "dropped_for_budget": len(dropped),
            "dropped_by_section": {section: sum(1 for left in dropped if left.item.section == section)
                                   for section in SECTIONS if any(left.item.section == section for left in dropped)},
            "dropped_by_limit": by_limit,
            "omitted_nodes": len(omitted),
            "summary_redundant": int(summary_redundant),
        },
    )
    context.latency_ms = round((time.perf_counter() - started) * 1000, 3)
    context_observe(store_status=status, milliseconds=context.latency_ms)
    if record:
        context.retrieval_id = _record(principal, request, session, context)
    return context


def _record(principal: Principal, request: ContextRequest, session: Session | None, context: MemoryContext) -> int | None:
    """Write the hit-ledger row: ids, reasons and sizes — never the injected text.

    On PostgreSQL, outside any caller's transaction, the row commits asynchronously
    (synchronous_commit off for this one transaction): the call does not wait for the WAL
    flush, 6.5 ms per commit on the 2-core benchmark machine against 0.45 ms without it. A
    crash can lose the ledger rows of the last moments (at most three wal_writer_delay, 600 ms
    by default) and nothing else: a later synchronous commit — a feedback row, an audited
    write — flushes the WAL before it, ledger rows included, so nothing that refers to a
    ledger row can outlive it. After such a crash the id sequence may hand out a lost row's id
    again, so a late feedback for the lost call would land on a newer call of the same team.
    """
    asynchronous = connection.vendor == "postgresql" and not connection.in_atomic_block
    try:
        with transaction.atomic():  # inside a caller's transaction a savepoint: a failure here leaves it usable
            if asynchronous:
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL synchronous_commit TO OFF")
            retrieval_id = _insert(Retrieval, connection, {
                "team_id": principal.team.pk,
                "actor": principal.actor,
                "agent_key_id": principal.agent_key.pk if principal.agent_key is not None else None,
                "session_id": session.pk if session is not None else None,
                "workspace_id": request.owner.workspace_id,
                "user_id": request.owner.user_id,
                "query": request.query,
                "domain": request.domain,
                "policy": {**context.budget.as_dict(), "requested": dict(request.budget or {})},
                "items": [item.ref for item in context.items],
                "omitted": [{"node_id": item.node_id, "reason": item.reason} for item in context.omitted],
                "used_node_ids": context.used_memory_ids,
                "message_ids": [item.obj.pk for item in context.items if item.kind == "message"],
                "summary_id": next((item.obj.pk for item in context.items if item.kind == "summary"), None),
                "chars_by_layer": context.chars_by_layer,
                "tokens_by_layer": context.tokens_by_layer,
                "total_chars": len(context.block),
                "total_tokens": estimate_tokens(context.block),
                "truncated": context.truncated,
                "store_status": context.store_status,
                "warnings": context.warnings,
                "latency_ms": context.latency_ms,
                "created_at": timezone.now(),
            })
    except DatabaseError:
        logger.exception("context: could not record the retrieval")
        context.warnings.append("the hit ledger could not record this call")
        return None
    return retrieval_id


def _insert(model, connection, values: dict[str, Any]) -> int:
    """INSERT one row of `model` with `values` (attname → value; a concrete column it leaves out
    takes its field's default), each prepared by its field as Model.save prepares it; returns
    the new id. Written out: the ORM's save costs ~2 ms of CPU here, on every context call."""
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    sql = (f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} "
           f"({', '.join(connection.ops.quote_name(field.column) for field in fields)}) "
           f"VALUES ({', '.join(['%s'] * len(fields))})")
    # A column `values` does not name takes its field's default, as Model.save would write it.
    params = [field.get_db_prep_save(values[field.attname] if field.attname in values else field.get_default(),
                                     connection) for field in fields]
    with connection.cursor() as cursor:
        if connection.features.can_return_columns_from_insert:
            cursor.execute(f"{sql} RETURNING {connection.ops.quote_name(model._meta.pk.column)}", params)
            return cursor.fetchone()[0]
        cursor.execute(sql, params)
        return connection.ops.last_insert_id(cursor, model._meta.db_table, model._meta.pk.column)
