"""What a context call reads from the store before any budget cut (R-CTX).

gather_parts reads every part of the memory context — pinned instructions (L0), standing
workspace, user and session nodes (L1, L2, L4), the profile and latest corrections (L2), the
window's summary and recent messages (L3), working memory (L4), and the query's relevant
nodes and earlier messages (L5) — at the sizes of ReadSizes. memory.selectors.context then
cuts them to one budget. Two budgets whose ReadSizes differ only in top_n can share one read
(policy simulation builds the policy in force and the draft from the same parts): hits are
read for the larger top_n and the smaller one takes a prefix, exactly what it would have read.

A failure in one part is logged and reported (Parts.warnings, degraded); the others are
still read.
"""

import logging
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo

from django.db import DatabaseError, connections, router
from django.utils import timezone

from accounts.principal import Principal
from memory.instruction_models import PinnedInstructions
from memory.models import Message, MessageRole, Node, NodeStatus, Scope, Session, Summary
from memory.search.text import normalize
from memory.selectors.budget import Budget
from memory.selectors.context_items import (
    SECTION_SHARES,
    Item,
    correction_item,
    followup_item,
    instructions_items,
    message_item,
    node_item,
    profile_item,
    working_items,
)
from memory.selectors.layers import DEFAULT_LIST_MAX, default_layers
from memory.selectors.messages import messages_recent, messages_search
from memory.selectors.nodes import Owner
from memory.selectors.profiles import profile_as_injected
from memory.selectors.query import MemoryQuery, Omission, memory_query
from memory.selectors.rows import NODE_JOINS, NODE_SELECT, columns, instances, nodes_of_rows, read
from memory.selectors.working_memory import working_memory_for_context
from memory.services.forgotten_turns import summary_says_nothing
from memory.validation import context_time_zone

logger = logging.getLogger(__name__)

MIN_LINE_CHARS = 30  # a node line is rarely shorter; sizes the read of standing nodes
CORRECTIONS_SHOWN = 8  # seed 004: the latest feedback hints
UNSHOWN_COUNTED_MAX = 16  # unshown messages a summary's count sets aside; with more, it is never called redundant
# A summary that covers at most this many messages before the recent window gives way to them:
# they join the window, and the summary, which would repeat the window, is left out.
SUMMARY_GAP_MAX = 2


@dataclass(frozen=True)
class ContextRequest:
    owner: Owner
    query: str = ""
    domain: str = ""
    category_path_prefix: tuple[str, ...] = ()
    budget: dict | None = None
    timezone: str = ""  # the end user's IANA time zone ("Asia/Shanghai"; "" is UTC): dates are read in it


@dataclass(frozen=True)
class ReadSizes:
    """The settings of a budget that change what is read, not only what fits: standing nodes
    per section (about as many lines of MIN_LINE_CHARS as the largest section share of
    max_chars holds, at most DEFAULT_LIST_MAX), recent messages, L5 hits, minimum confidence."""

    enabled: bool
    standing: int
    recent_messages: int
    top_n: int
    min_confidence: float

    @classmethod
    def of(cls, budget: Budget) -> "ReadSizes":
        room = math.ceil(budget.max_chars * max(SECTION_SHARES.values()) / MIN_LINE_CHARS)
        return cls(enabled=budget.enabled, standing=max(1, min(room, DEFAULT_LIST_MAX)),
                   recent_messages=budget.recent_messages, top_n=budget.top_n, min_confidence=budget.min_confidence)

    def but_top_n(self) -> tuple:
        return (self.enabled, self.standing, self.recent_messages, self.min_confidence)


@dataclass
class Parts:
    """Everything read for one call, uncut. Hits are best first; `omitted` holds the nodes the
    reads themselves left out (standing overflow, search omissions)."""

    top_n: int = 0  # the L5 hits were read for this many
    foundation: list[Item] = field(default_factory=list)
    working: list[Item] = field(default_factory=list)
    standing: list[Item] = field(default_factory=list)  # sections session, workspace, user_preferences
    long_term: list[Item] = field(default_factory=list)  # profile and corrections
    summary: Summary | None = None
    summary_covers: int = 0  # the session's messages up to the summary's last one, counted as _latest_summary says
    recent: list[Message] = field(default_factory=list)
    node_hits: list[Item] = field(default_factory=list)
    message_hits: list[list[Item]] = field(default_factory=list)  # each: the hit, then its follow-up if any
    omitted: list[Omission] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    degraded: bool = False

    def fail(self, part: str, error: Exception) -> None:
        logger.exception("context: %s failed", part)
        self.warnings.append(f"{part} unavailable ({type(error).__name__}); answered without it")
        self.degraded = True


def gather_parts(principal: Principal, request: ContextRequest, session: Session | None, sizes: ReadSizes) -> Parts:
    """Read every part of the context for `request` at `sizes` (see the module docstring)."""
    parts = Parts(top_n=sizes.top_n)
    owner = request.owner
    now = timezone.now()
    try:
        layers = default_layers(team_id=principal.team.pk, owner=owner, session=session, now=now,
                                domain=request.domain, category_prefix=request.category_path_prefix,
                                limit=sizes.standing)
        why = {"session": "session_memory", "workspace": "workspace_memory", "user_preferences": "user_preference"}
        for section in ("session", "workspace", "user_preferences"):
            parts.standing += [node_item(section, node, why[section]) for node in layers[section]]
        parts.omitted += [Omission(pk, "over_limit") for pk in layers["overflow"]]
    except DatabaseError as error:
        parts.fail("default memory layers", error)
    try:
        parts.long_term = _long_term(principal, owner, session, now)
    except DatabaseError as error:
        parts.fail("user profile and corrections", error)
    try:
        levels = sorted({"", owner.workspace_id})
        pinned = read(PinnedInstructions, f"SELECT {columns(PinnedInstructions, 'p')} FROM "
                                          f"{PinnedInstructions._meta.db_table} p WHERE p.team_id = %s AND "
                                          f"p.workspace_id IN ({', '.join(['%s'] * len(levels))})",
                      [principal.team.pk, *levels])
        parts.foundation = instructions_items(sorted(pinned, key=lambda row: row.workspace_id))
    except DatabaseError as error:
        parts.fail("pinned instructions", error)
    try:
        memory = working_memory_for_context(session=session)
        parts.working = working_items(session.pk, memory) if memory else []
    except DatabaseError as error:
        parts.fail("working memory", error)
    try:
        if session is not None:
            fetched = messages_recent(session=session, limit=sizes.recent_messages + SUMMARY_GAP_MAX)
            parts.summary, parts.summary_covers = _latest_summary(principal, session, sizes)
            parts.recent = _window(fetched, sizes.recent_messages, parts.summary, parts.summary_covers)
    except DatabaseError as error:
        parts.fail("conversation window", error)
    if request.query.strip() and sizes.top_n > 0:
        _read_hits(principal, request, session, sizes, parts, now, context_time_zone(request.timezone))
    return parts


def _read_hits(principal: Principal, request: ContextRequest, session: Session | None, sizes: ReadSizes,
               parts: Parts, now: datetime, zone: tzinfo | None) -> None:
    listed = {item.obj.pk for item in parts.standing}
    try:
        result = memory_query(
            principal=principal,
            session=session,
            prefetch_sources=False,
            resolve_conflicts=False,  # resolved once the hits are cut, with the standing nodes
            query=MemoryQuery(
                owner=request.owner,
                domain=request.domain,
                category_path_prefix=request.category_path_prefix,
                query_text=request.query,
                limit=sizes.top_n,
                min_confidence=sizes.min_confidence,
                policy_floor=False,
                exclude_ids=frozenset(listed),
            ),
        )
        parts.node_hits = [node_item("relevant", node, "relevant", result.matched.get(node.pk, ()))
                           for node in result.relevant]
        parts.omitted += result.omitted
    except Exception as error:  # noqa: BLE001 - a search failure must not fail the agent's call (R-CTX)
        parts.fail("memory search", error)
    try:
        found = messages_search(
            principal=principal,
            session=session,
            owner=request.owner,
            query_text=request.query,
            limit=sizes.top_n,
            exclude_ids={message.pk for message in parts.recent},
            exclude_texts={normalize(message.content) for message in parts.recent},
            now=now,
            zone=zone,
        )
        parts.message_hits = [
            [message_item("earlier_messages", hit.message, hit.why, hit.matched, zone or UTC)]
            + ([followup_item(hit.followup, hit.message.pk)] if hit.followup is not None else [])
            for hit in found
        ]
    except Exception as error:  # noqa: BLE001 - as above
        parts.fail("message search", error)


def _window(fetched: list[Message], size: int, summary: Summary | None, covers: int) -> list[Message]:
    """The recent window: the last `size` of `fetched` (the session's newest messages, oldest
    first) — or more of them, when `summary` covers only up to SUMMARY_GAP_MAX messages before
    the window (`covers` of them in all, as _latest_summary counts): those join it, so the
    block can show every message the summary covers and leave the summary out as redundant
    (memory.selectors.context._fit_with_summary) instead of repeating the window in it. A
    newcomer's find in the demo: a summary of messages 2–8 beside the window 3–8."""
    window = fetched[max(0, len(fetched) - size):] if size > 0 else []
    if summary is None or not window:
        return window
    covered = [message for message in fetched if message.pk <= summary.to_message_id]
    before = len(covered) - sum(1 for message in window if message.pk <= summary.to_message_id)
    if len(covered) == covers and 0 < before <= SUMMARY_GAP_MAX:
        return fetched[fetched.index(covered[0]):]
    return window


def _latest_summary(principal: Principal, session: Session, sizes: ReadSizes) -> tuple[Summary | None, int]:
    """The session's latest summary and how many of the session's messages it covers — all of
    them up to its last one, as each link of the chain is built on the one before, but those
    the block never shows: system messages (the agent has its own) and turns a forgotten
    memory was taken from — counted up to one more than the block can show (the recent
    window, and each L5 hit with the turn that followed it), in the same statement."""
    shown_at_most = sizes.recent_messages + 2 * sizes.top_n
    cap = shown_at_most + 1 + UNSHOWN_COUNTED_MAX
    table, messages = Summary._meta.db_table, Message._meta.db_table
    # The messages are those of the team's own session (the summary's, read under the team): by
    # session and id alone the count is an index-only scan of message_session_seq_idx (the
    # statement 0.17 ms on the bench store; with the team's column too, PostgreSQL read every
    # counted row from the table: 2.7 ms); the unshown ones, through the partial index
    # message_session_unshown_idx, whose condition (models.UNSHOWN_MESSAGE) is written out the
    # same here so that both databases use it (counting the others would read every row).
    covered = (f"SELECT COUNT(*) FROM (SELECT 1 FROM {messages} m WHERE m.session_id = s.session_id "
               f"AND m.id <= s.to_message_id{{unshown}} LIMIT {{limit}}) AS counted")
    # The role is written in, not bound: a prepared statement's generic plan could not prove a
    # bound parameter equal to the index's condition.
    unshown = f" AND (m.role = '{MessageRole.SYSTEM.value}' OR m.memory_forgotten_at IS NOT NULL)"
    sql = (f"SELECT {columns(Summary, 's')}, ({covered.format(unshown='', limit=int(cap))}), "
           f"({covered.format(unshown=unshown, limit=UNSHOWN_COUNTED_MAX + 1)}) FROM {table} s "
           "WHERE s.team_id = %s AND s.session_id = %s ORDER BY s.id DESC LIMIT 1")
    using = router.db_for_read(Summary)
    with connections[using].cursor() as cursor:
        cursor.execute(sql, [principal.team.pk, session.pk])
        rows = cursor.fetchall()
    if not rows:
        return None, 0
    summary = instances(Summary, rows, using=using)[0]
    summary.session = session  # serialisers read it
    if summary_says_nothing(summary):
        return None, 0  # all it said was forgotten (memory.services.forgotten_turns)
    every, unshown_count = int(rows[0][-2]), int(rows[0][-1])
    if every >= cap or unshown_count > UNSHOWN_COUNTED_MAX:
        return summary, shown_at_most + 1  # more than the block can show
    return summary, every - unshown_count


def _long_term(principal: Principal, owner: Owner, session: Session | None, now: datetime) -> list[Item]:
    """L2 beyond the preference nodes: the user's profile summary as it holds now (corrected,
    edited, forgotten memories: profile_as_injected), and their latest corrections (active nodes
    that superseded another, newest first; not a copy kept for the user)."""
    items: list[Item] = []
    if owner.user_id:
        version = profile_as_injected(principal=principal, user_id=owner.user_id, now=now)
        if version is not None and version.summary.strip():
            items.append(profile_item(version))
    # One part per owner, each through its own index (an OR of the two made SQLite, which has
    # no statistics, read the team's nodes: 48 ms at 100k nodes), then the newest of both.
    # Only session-scope nodes carry a session; naming the scope too in the session's part would
    # lead SQLite to the team-wide (team, scope, status) index instead of the session's.
    corrected = (f"SELECT id, created_at FROM {Node._meta.db_table} "
                 "WHERE team_id = %s AND status = %s AND supersedes_id IS NOT NULL")
    order = f"ORDER BY created_at DESC, id DESC LIMIT {CORRECTIONS_SHOWN}"
    parts: list[str] = []
    params: list = []
    if owner.user_id:
        # A conversation's memory kept for its user (memory.services.keep.keep_for_user) is a
        # copy of what it superseded, the same title and value: no correction.
        kept = (f"NOT EXISTS (SELECT 1 FROM {Node._meta.db_table} p WHERE p.id = {Node._meta.db_table}.supersedes_id "
                f"AND p.scope = '{Scope.SESSION}' AND p.\"key\" = {Node._meta.db_table}.\"key\" "
                f"AND p.value_hash = {Node._meta.db_table}.value_hash AND p.title = {Node._meta.db_table}.title)")
        parts.append(f"SELECT * FROM ({corrected} AND user_id = %s AND scope = %s AND {kept} {order}) AS by_user")
        params += [principal.team.pk, NodeStatus.ACTIVE, owner.user_id, Scope.USER]
    if session is not None:
        parts.append(f"SELECT * FROM ({corrected} AND session_id = %s {order}) AS by_session")
        params += [principal.team.pk, NodeStatus.ACTIVE, session.pk]
    if not parts:
        return items
    using = router.db_for_read(Node)
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT {NODE_SELECT} FROM ({' UNION ALL '.join(parts)}) AS picked "
                       f"JOIN {Node._meta.db_table} n ON n.id = picked.id {NODE_JOINS}", params)
        found = nodes_of_rows(cursor.fetchall(), using=using)
    found.sort(key=lambda node: (node.created_at, node.pk), reverse=True)
    items += [correction_item(node) for node in found[:CORRECTIONS_SHOWN]]
    return items
