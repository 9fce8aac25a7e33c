"""Store upkeep run by background jobs (R-EXTRACT upkeep, R-STORE; scenario S07).

Every change is audited with the job as actor (`system:<job>`), one event per node, so a
memory never leaves the active set without a trace.
"""

from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone
from django_scopes import scope

from accounts.models import Team
from accounts.principal import system_principal
from memory.models import Node, NodeStatus
from memory.services.audit import audit_record

EXPIRE_BATCH = 500
ANALYSIS_LIMIT = 1000  # rows SQLite samples per index when it refreshes its statistics


def statistics_refresh() -> bool:
    """Refresh the query planner's statistics on SQLite (ANALYZE over a sample of
    ANALYSIS_LIMIT rows per index: about 0.2 s at 100k nodes and 100k messages). Without them
    SQLite takes an equality on any indexed column as selective and may read a whole team's
    rows through the team index (the context call's conflict query: 70 ms instead of 1 ms at
    100k nodes). PostgreSQL's autovacuum keeps its own; nothing is done there. Returns whether
    statistics were refreshed. Run by the expiry sweep and `capture_run`."""
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        cursor.execute(f"PRAGMA analysis_limit={ANALYSIS_LIMIT}")
        cursor.execute("ANALYZE")
    return True


_ANALYSED_ROWS: dict[str, int] = {}  # database name → messages counted at this process's last refresh


def statistics_refresh_if_stale(*, growth: float = 2.0, min_rows: int = 1000) -> bool:
    """statistics_refresh when SQLite's planner has no statistics for the message table yet
    (once it holds `min_rows`) or the table has grown past `growth` times the rows they were
    computed over. The embedded default runs no beat, so no expiry sweep refreshes them; a
    newcomer measured a context call for a user of 20,000 turns at 10–16 s without them and
    52–64 ms with them. A count (0.02–0.14 ms at 105k rows, on the capture job's thread) and a
    small read when nothing is due. Returns whether it refreshed."""
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM memory_message")
        rows_now = cursor.fetchone()[0]
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'")
        computed_over = None
        if cursor.fetchone() is not None:
            cursor.execute("SELECT stat FROM sqlite_stat1 WHERE tbl = 'memory_message' AND idx IS NOT NULL LIMIT 1")
            row = cursor.fetchone()
            computed_over = int(row[0].split()[0]) if row else None
    # SQLite's own count is a sample's estimate (analysis_limit): as low as 0.4 of the rows at
    # 20k messages, which would look doubled at once; the count taken at this process's last
    # refresh is exact.
    database = connection.settings_dict["NAME"]
    computed_over = max(filter(None, (computed_over, _ANALYSED_ROWS.get(database))), default=None)
    if rows_now < min_rows or (computed_over is not None and rows_now <= growth * computed_over):
        return False
    refreshed = statistics_refresh()
    _ANALYSED_ROWS[database] = rows_now
    return refreshed


def nodes_expire_due(*, team: Team, now: datetime | None = None, batch: int = EXPIRE_BATCH) -> list[int]:
    """Mark the team's active nodes whose expires_at has passed as expired (at most `batch`
    per call, oldest expiry first). Returns their ids. Reads already treat them as expired;
    this makes the row say so, with an audit event `memory.node.expired` by system:expiry."""
    now = now or timezone.now()
    principal = system_principal(team, "expiry")
    with scope(team=team), transaction.atomic():
        due = list(
            Node.objects.select_for_update(skip_locked=True)
            .filter(team=team, status=NodeStatus.ACTIVE, expires_at__lte=now)
            .order_by("expires_at", "pk")[:batch]
        )
        for node in due:
            node.status = NodeStatus.EXPIRED
            node.updated_at = now
            node.save(update_fields=["status", "updated_at"])
            audit_record(principal=principal, event_type="memory.node.expired", node=node, reason="expires_at passed",
                         payload={"previous_status": NodeStatus.ACTIVE, "expires_at": node.expires_at.isoformat()})
    return [node.pk for node in due]
