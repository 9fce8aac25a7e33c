"""Reads for the dashboard pages (R-UI): the memory browser, the node page and the sessions.

Every function takes the request's `principal` as a required keyword and starts from its
team (and the workspaces it may read), like the other selectors; run them inside
`django_scopes.scope(team=principal.team)`.
"""

from typing import Any

from django.db import connections, router
from django.db.models import Count, F, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.principal import Principal
from memory.errors import NotFound
from memory.models import Message, Node, NodeStatus, Session, Summary
from memory.selectors.nodes import followable, node_get, node_list, node_text_filter, nodes_for_team, status_q
from memory.services.audit import audit_merge_survivors

CHAIN_MAX = 500  # versions followed each way from a node (a guard: a chain is a linked list)


def node_browse(*, principal: Principal, filters: dict[str, Any], text: str = "") -> QuerySet[Node]:
    """The memory browser's rows: `node_list` filters plus the free-text search, newest first.

    `filters` takes node_list's keys (scope, workspace_id, user_id, session_id, domain,
    category_path_prefix, type, status, key); empty values are ignored. `text` matches
    every token of the text, Chinese and English alike (R-QUERY tokenisation); a text with
    no searchable token (only stop words or punctuation) matches nothing. Lazy queryset,
    ordered by -id, with the session joined and the source links prefetched.
    """
    nodes = node_list(principal=principal, filters=filters)
    if text.strip():
        nodes = node_text_filter(nodes, text, team_id=principal.team.pk)
    # Bounded by the team's newest id: without the bound PostgreSQL walked the primary key
    # backwards from the newest row of any team, past a million rows of other teams, for the
    # first page (0.9–1.8 s; with it 2.5 ms through node_team_recent_idx; docs/performance.md).
    newest = Node.objects.filter(team=principal.team).order_by("-pk").values("pk")[:1]
    return nodes.filter(pk__lte=Subquery(newest))


def node_status_counts(*, principal: Principal, filters: dict[str, Any], text: str = "") -> dict[str, int]:
    """How many nodes each status has under the browser's filters, ignoring the status filter.

    Returns {status: count} for every NodeStatus value (zeros included) plus "all", the nodes
    the list shows without a status filter (soft-deleted ones left out, as node_list does);
    each count is the length of the list with that status filter, so the pager can take it.
    Two queries: one aggregate over the nodes that are not deleted, one count of the deleted.
    """
    others = {name: value for name, value in filters.items() if name != "status"}
    live = node_browse(principal=principal, filters=others, text=text).order_by()
    now = timezone.now()
    shown = [status for status in NodeStatus.values if status != NodeStatus.DELETED]
    counts = live.aggregate(all=Count("pk"), **{status: Count("pk", filter=status_q(status, now)) for status in shown})
    deleted = node_browse(principal=principal, filters={**others, "status": NodeStatus.DELETED}, text=text)
    counts[NodeStatus.DELETED] = deleted.order_by().count()
    return {name: counts[name] or 0 for name in ["all", *NodeStatus.values]}


def _chain_links(*, team_id: int, node_id: int) -> tuple[list[int], list[int]]:
    """The ids before `node_id` in its supersede chain (nearest first) and after it (nearest
    first), at most CHAIN_MAX each way, in one recursive query (same SQL on SQLite and
    PostgreSQL). Only the team's rows are followed; readability is the caller's.

    Each step looks its neighbour up by a scalar subquery, not a join: with planner statistics
    SQLite joined the recursive step through a Bloom filter built by reading every node of the
    table (90 ms at 100k nodes, against well under 1 ms by the primary key and the
    supersedes_id index)."""
    connection = connections[router.db_for_read(Node)]  # the replica on a dashboard page (config.db_router)
    table = connection.ops.quote_name(Node._meta.db_table)
    sql = f"""
        WITH RECURSIVE back(id, older, depth) AS (
            SELECT id, supersedes_id, 0 FROM {table} WHERE id = %s AND team_id = %s
            UNION ALL
            SELECT b.older, (SELECT n.supersedes_id FROM {table} n WHERE n.id = b.older AND n.team_id = %s),
                   b.depth + 1
            FROM back b WHERE b.older IS NOT NULL AND b.depth < %s
        ), ahead(id, depth) AS (
            SELECT id, 0 FROM {table} WHERE id = %s AND team_id = %s
            UNION ALL
            SELECT (SELECT n.id FROM {table} n WHERE n.supersedes_id = a.id AND n.team_id = %s), a.depth + 1
            FROM ahead a WHERE a.id IS NOT NULL AND a.depth < %s
        )
        SELECT 'back', id, depth FROM back WHERE depth > 0 AND id IS NOT NULL
        UNION ALL
        SELECT 'ahead', id, depth FROM ahead WHERE depth > 0 AND id IS NOT NULL
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [node_id, team_id, team_id, CHAIN_MAX, node_id, team_id, team_id, CHAIN_MAX])
        rows = cursor.fetchall()
    back = [row[1] for row in sorted((row for row in rows if row[0] == "back"), key=lambda row: row[2])]
    ahead = [row[1] for row in sorted((row for row in rows if row[0] == "ahead"), key=lambda row: row[2])]
    return back, ahead


def node_version_chain(*, principal: Principal, node: Node) -> list[Node]:
    """The whole supersede chain through `node`, oldest first (both directions), as
    memory.selectors.nodes.node_chain gives it — a link the principal may not read ends the
    walk that way — in two queries however long the chain is (the ids by one recursive
    query, then the readable nodes)."""
    back, ahead = _chain_links(team_id=principal.team.pk, node_id=node.pk)
    found = nodes_for_team(principal=principal).in_bulk([*back, *ahead]) if back or ahead else {}

    def walk(ids: list[int], seen: set[int]) -> list[int]:
        kept: list[int] = []
        for pk in ids:
            if pk not in found or pk in seen:
                break
            kept.append(pk)
            seen.add(pk)
        return kept

    seen = {node.pk}
    older = walk(back, seen)
    newer = walk(ahead, seen)
    return [*(found[pk] for pk in reversed(older)), node, *(found[pk] for pk in newer)]


def node_source_messages(*, principal: Principal, node: Node) -> list[Message]:
    """The messages `node` was derived from, in the order the writer gave, with their session.

    One query. Messages in a workspace the principal may not read, or of a soft-deleted
    session, are left out.
    """
    messages = Message.objects.filter(followable(principal), team=principal.team, node_links__node=node)
    return list(messages.select_related("session").order_by("node_links__position", "pk"))


def _count_of(queryset: QuerySet, group: str) -> Coalesce:
    """A correlated COUNT(*) of `queryset` (already filtered by OuterRef) grouped by `group`; 0 when none."""
    counted = queryset.order_by().values(group).annotate(count=Count("pk")).values("count")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def _of_sessions(model) -> QuerySet:
    """`model`'s rows without the team condition the scope adds, for reads filtered by
    sessions already read through the team (_readable_sessions). With `team_id = …` beside
    `session_id = …`, SQLite without planner statistics picks the team's index and reads every
    row of the team instead of the session's: 6 s for the session list and 30 ms for a
    session's message count at 100k messages (benchmarks/dashboard_pages.py)."""
    return model.objects.with_scopes_disabled()


def _readable_sessions(principal: Principal) -> QuerySet[Session]:
    sessions = Session.objects.filter(team=principal.team)
    if principal.workspace_ids is not None:
        sessions = sessions.filter(workspace_id__in=sorted(principal.workspace_ids))
    return sessions


def session_browse(*, principal: Principal, filters: dict[str, str]) -> QuerySet[Session]:
    """The team's conversations for the session list, most recent message first.

    `filters`: workspace_id, user_id, session_id (exact ids; empty ignored) and status: "" for
    live sessions, "forgotten" for soft-forgotten ones, "all". Lazy queryset; the counts of
    the rows shown come from session_counts.
    """
    sessions = _readable_sessions(principal)
    exact = {name: filters[name] for name in ("workspace_id", "user_id") if filters.get(name)}
    if filters.get("session_id"):
        exact["external_id"] = filters["session_id"]
    sessions = sessions.filter(**exact)
    status = filters.get("status", "")
    if status == "forgotten":
        sessions = sessions.filter(deleted_at__isnull=False)
    elif status != "all":
        sessions = sessions.filter(deleted_at__isnull=True)
    return sessions.order_by(F("last_message_at").desc(nulls_last=True), "-pk")


def session_counts(*, sessions: list[Session]) -> list[Session]:
    """Set `message_count`, `summary_count` and `node_count` (session-scope memories not
    deleted) on each of `sessions` — rows of session_browse, read through the team — in three
    grouped queries over their ids (none for no sessions), whatever their number; returns them.
    Counting only the rows shown: correlated counts in session_browse's query were computed
    for every session of the team before the sort and the page cut."""
    ids = [session.pk for session in sessions]
    if not ids:
        return sessions

    def grouped(queryset: QuerySet) -> dict[int, int]:
        return dict(queryset.filter(session_id__in=ids).order_by().values_list("session").annotate(n=Count("pk")))

    messages = grouped(_of_sessions(Message))
    summaries = grouped(_of_sessions(Summary))
    nodes = grouped(_of_sessions(Node).exclude(status=NodeStatus.DELETED))
    for session in sessions:
        session.message_count = messages.get(session.pk, 0)
        session.summary_count = summaries.get(session.pk, 0)
        session.node_count = nodes.get(session.pk, 0)
    return sessions


def session_for_page(*, principal: Principal, session_pk: int) -> Session:
    """One conversation of the team by its database id, soft-forgotten ones included (so that
    they can still be forgotten for good). Raises NotFound for another team's id, an unknown
    one, or a workspace the principal may not read."""
    session = _readable_sessions(principal).filter(pk=session_pk).first()
    if session is None:
        raise NotFound(f"no session {session_pk}")
    return session


def session_messages(*, principal: Principal, session: Session) -> QuerySet[Message]:
    """The conversation's messages in server order (oldest first), for paging; none once it
    was forgotten (a forgotten conversation leaves every read path, R-STORE)."""
    if session.deleted_at is not None:
        return Message.objects.none()
    return _of_sessions(Message).filter(session=session).order_by("pk")


def session_message_position(*, principal: Principal, session: Session, message_id: int) -> int | None:
    """How many messages of the conversation come before `message_id` (0-based), or None when
    it is not one of them; the page to show is position // page size + 1."""
    messages = session_messages(principal=principal, session=session)
    if not messages.filter(pk=message_id).exists():
        return None
    return messages.filter(pk__lt=message_id).count()


def session_summary_chain(*, principal: Principal, session: Session) -> list[Summary]:
    """The conversation's summary chain, oldest first (each links to the one before it by
    `parent_id`); each summary carries `message_count`, the messages its range
    from_message_id..to_message_id covers. Empty once the conversation was forgotten. One query."""
    if session.deleted_at is not None:
        return []
    covered = _of_sessions(Message).filter(session=OuterRef("session"), pk__gte=OuterRef("from_message_id"),
                                           pk__lte=OuterRef("to_message_id"))
    chain = _of_sessions(Summary).filter(session=session).annotate(
        message_count=_count_of(covered, "session"))
    return list(chain.order_by("pk"))


def node_merged_into(*, principal: Principal, node: Node) -> Node | None:
    """The node a deleted `node` was merged into as a duplicate (memory.services.twins), or None;
    one the principal cannot read is None too."""
    if node.status != NodeStatus.DELETED:
        return None
    target = audit_merge_survivors(team_id=principal.team.pk, node_ids=[node.pk]).get(node.pk)
    if target is None:
        return None
    try:
        return node_get(principal=principal, node_id=target)
    except NotFound:
        return None
