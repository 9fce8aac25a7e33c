"""The seed's conflict-resolution order (seed 000 冲突消解; R-QUERY), in one place.

Narrower scope first, then unexpired, stated by the user over inferred, a temporary
constraint over a long-term preference, newer, higher confidence, higher importance; the
id breaks remaining ties so the order is total and deterministic.
"""

from datetime import datetime
from typing import Any

from django.db.models import Case, F, IntegerField, Q, Value, When
from django.db.models.expressions import OrderBy

from memory.models import SCOPE_PRIORITY, NodeType


def scope_rank_expression() -> Case:
    return Case(
        *(When(scope=scope, then=Value(rank)) for scope, rank in SCOPE_PRIORITY.items()),
        default=Value(len(SCOPE_PRIORITY)),
        output_field=IntegerField(),
    )


def temporary_constraint_expression() -> Case:
    return Case(
        When(Q(type=NodeType.CONSTRAINT) & Q(expires_at__isnull=False), then=Value(0)),
        default=Value(1),
        output_field=IntegerField(),
    )


def seed_order_by() -> list[Any]:
    """ORDER BY terms for active, unexpired nodes (use after filtering out expired ones)."""
    return [
        scope_rank_expression().asc(),
        OrderBy(F("explicit"), descending=True),
        temporary_constraint_expression().asc(),
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
