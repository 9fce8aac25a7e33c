"""Reads of a team's audit log for the dashboard's audit page (R-STORE audit events, R-UI
Administration): filters, the event types in use, and the links from events to what they name.

Every function takes the request's `principal` and starts from its team; run them inside
`django_scopes.scope(team=principal.team)`.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.principal import Principal
from memory.models import AuditEvent, Node, Session


def _start_of(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())


def audit_browse(*, principal: Principal, filters: dict[str, Any]) -> QuerySet[AuditEvent]:
    """The team's audit events, newest first, narrowed by `filters` (empty values ignored):

    - `event_type`: the type or a dotted prefix of it (`memory.node` takes every node event);
    - `actor`: part of the actor, case-insensitive (`ada` finds `user:ada`; `key:` every key);
    - `node_id`, `session_id`: exactly (session_id is the agent's id of the conversation);
    - `since`, `until`: dates, both included, in the server's time zone (UTC by default).

    Lazy queryset ordered by (-created_at, -pk).
    """
    events = AuditEvent.objects.filter(team=principal.team)
    event_type = filters.get("event_type")
    if event_type:
        events = events.filter(Q(event_type=event_type) | Q(event_type__startswith=event_type.rstrip(".") + "."))
    if filters.get("actor"):
        events = events.filter(actor__icontains=filters["actor"])
    if filters.get("node_id"):
        events = events.filter(node_id=filters["node_id"])
    if filters.get("session_id"):
        events = events.filter(session_id=filters["session_id"])
    if filters.get("since"):
        events = events.filter(created_at__gte=_start_of(filters["since"]))
    if filters.get("until"):
        events = events.filter(created_at__lt=_start_of(filters["until"] + timedelta(days=1)))
    return events.order_by("-created_at", "-pk")


def audit_event_types(*, principal: Principal) -> list[str]:
    """The event types the team's log holds, sorted (one DISTINCT query), for the filter's choices."""
    rows = AuditEvent.objects.filter(team=principal.team).order_by().values_list("event_type", flat=True).distinct()
    return sorted(rows)


@dataclass(frozen=True)
class AuditLinks:
    """What the events of one page point at and still exists: node ids, and the database id of
    each conversation by (workspace_id, user_id, session_id)."""

    node_ids: frozenset[int]
    sessions: dict[tuple[str, str, str], int]


def audit_links(*, principal: Principal, events: Iterable[AuditEvent]) -> AuditLinks:
    """The links of one page of events, in two queries whatever the page's size. Hard-deleted
    nodes and conversations get no link (their events outlive them)."""
    events = list(events)
    node_ids = {event.node_id for event in events if event.node_id is not None}
    owners = {(event.workspace_id, event.user_id, event.session_id) for event in events if event.session_id}
    found_nodes = frozenset(Node.objects.filter(team=principal.team, pk__in=node_ids).values_list("pk", flat=True)
                            ) if node_ids else frozenset()
    sessions: dict[tuple[str, str, str], int] = {}
    if owners:
        match = Q()
        for workspace_id, user_id, session_id in owners:
            match |= Q(workspace_id=workspace_id, user_id=user_id, external_id=session_id)
        rows = Session.objects.filter(match, team=principal.team)
        if principal.workspace_ids is not None:
            rows = rows.filter(workspace_id__in=sorted(principal.workspace_ids))
        for pk, workspace_id, user_id, external_id in rows.values_list("pk", "workspace_id", "user_id", "external_id"):
            sessions[(workspace_id, user_id, external_id)] = pk
    return AuditLinks(node_ids=found_nodes, sessions=sessions)
