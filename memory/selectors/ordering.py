"""The seed's conflict-resolution order (seed 000 冲突消解; R-QUERY), in one place.

Narrower scope first, then unexpired, stated by the user over inferred, a temporary
constraint over a long-term preference, newer, higher confidence, higher importance; the
id breaks remaining ties so the order is total and deterministic.
"""

from datetime import datetime
from typing import Any

from django.db.models import F
from django.db.models.expressions import OrderBy, RawSQL

from memory.models import SCOPE_PRIORITY, NodeType


def _scope_rank_sql(alias: str) -> str:
    return (f"CASE {alias}.\"scope\" " + " ".join(f"WHEN '{scope}' THEN {rank}" for scope, rank in SCOPE_PRIORITY.items())
            + f" ELSE {len(SCOPE_PRIORITY)} END")


def _temporary_constraint_sql(alias: str) -> str:
    return (f"CASE WHEN {alias}.\"type\" = '{NodeType.CONSTRAINT}' AND {alias}.\"expires_at\" IS NOT NULL "
            "THEN 0 ELSE 1 END")


# Plain SQL CASE terms: the same order as ORM Case/When expressions, at a fraction of their
# compile cost on the hot path.
SCOPE_RANK_SQL = _scope_rank_sql('"memory_node"')
TEMPORARY_CONSTRAINT_SQL = _temporary_constraint_sql('"memory_node"')


def seed_order_sql(alias: str) -> str:
    """The seed's order as a plain SQL ORDER BY list over the columns of `alias` (a node row
    or subquery with scope, type, explicit, expires_at, updated_at, confidence, importance,
    id), for unexpired nodes."""
    return (f"{_scope_rank_sql(alias)}, {alias}.explicit DESC, {_temporary_constraint_sql(alias)}, {alias}.updated_at DESC, "
            f"{alias}.confidence DESC, {alias}.importance DESC, {alias}.id DESC")


def seed_order_by() -> list[Any]:
    """ORDER BY terms for active, unexpired nodes of a query on Node (use after filtering out expired ones)."""
    return [
        RawSQL(SCOPE_RANK_SQL, []).asc(),
        OrderBy(F("explicit"), descending=True),
        RawSQL(TEMPORARY_CONSTRAINT_SQL, []).asc(),
        OrderBy(F("updated_at"), descending=True),
        OrderBy(F("confidence"), descending=True),
        OrderBy(F("importance"), descending=True),
        OrderBy(F("pk"), descending=True),
    ]


def seed_order_key(values: dict[str, Any], now: datetime) -> tuple:
    """The same order as seed_order_by, for rows already in Python (dict of node columns)."""
    expires_at = values.get("expires_at")
    expired = expires_at is not None and expires_at <= now
    temporary_constraint = values["type"] == NodeType.CONSTRAINT and expires_at is not None
    return (
        SCOPE_PRIORITY.get(values["scope"], len(SCOPE_PRIORITY)),
        1 if expired else 0,
        0 if values["explicit"] else 1,
        0 if temporary_constraint else 1,
        -values["updated_at"].timestamp(),
        -values["confidence"],
        -values["importance"],
        -values["pk"],
    )


ORDER_FIELDS = ("scope", "type", "explicit", "expires_at", "updated_at", "confidence", "importance")
