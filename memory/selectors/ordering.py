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

_TABLE = '"memory_node"'
# Plain SQL CASE terms: the same order as ORM Case/When expressions, at a fraction of their
# compile cost on the hot path (every context call orders three layers this way).
SCOPE_RANK_SQL = (
    f"CASE {_TABLE}.\"scope\" "
    + " ".join(f"WHEN '{scope}' THEN {rank}" for scope, rank in SCOPE_PRIORITY.items())
    + f" ELSE {len(SCOPE_PRIORITY)} END"
)
TEMPORARY_CONSTRAINT_SQL = (
    f"CASE WHEN {_TABLE}.\"type\" = '{NodeType.CONSTRAINT}' AND {_TABLE}.\"expires_at\" IS NOT NULL THEN 0 ELSE 1 END"
)


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


def node_order_key(node, now: datetime) -> tuple:
    """seed_order_key for a Node instance."""
    return seed_order_key({**{name: getattr(node, name) for name in ORDER_FIELDS}, "pk": node.pk}, now)
