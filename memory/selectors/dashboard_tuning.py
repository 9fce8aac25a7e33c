"""Reads for the dashboard's hit preview, budgets and KPI pages (R-UI, R-CTX, R-TEN).

The preview builds the memory context with the selector the API's context call uses
(context_build), with record=False so that no hit-ledger row is written, and beside it the
same request under a draft policy, resolved as policy simulation resolves one
(budget_resolve with `draft=`). Every function takes the request's `principal` (or its team)
as a required keyword and starts from its team; run them inside
`django_scopes.scope(team=principal.team)`.
"""

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db.models import Count, Max, Min

from accounts.models import Team
from accounts.principal import Principal
from memory.capture_models import CaptureJob, JobStatus
from memory.models import Node, Retrieval, Session
from memory.policy_models import POLICY_FIELDS, BudgetPolicy
from memory.selectors.budget import Budget, budget_resolve
from memory.selectors.context import ContextRequest, MemoryContext, context_build
from memory.selectors.kpi_json import JSONArrayLength
from memory.services.policies import policy_changes_clean, policy_get

KNOWN_IDS_MAX = 200  # values offered per datalist (the most recently active first)
LATEST_CALLS_MAX = 10  # recorded context calls listed under the KPI charts


@dataclass(frozen=True)
class KnownIds:
    """Ids the team's agents used, for the pickers' datalists: workspace and user ids, and
    recent sessions as (session_id, workspace_id, user_id)."""

    workspaces: list[str]
    users: list[str]
    sessions: list[tuple[str, str, str]]


def known_ids(*, principal: Principal) -> KnownIds:
    """Workspace ids (of live sessions and of budget policies), user ids and sessions of the
    team, most recently active first, at most KNOWN_IDS_MAX each; three queries."""
    sessions = Session.objects.filter(team=principal.team, deleted_at__isnull=True)
    if principal.workspace_ids is not None:
        sessions = sessions.filter(workspace_id__in=sorted(principal.workspace_ids))

    def recent(field: str) -> list[str]:
        rows = (sessions.exclude(**{field: ""}).values(field).annotate(last=Max("last_message_at"))
                .order_by("-last", field)[:KNOWN_IDS_MAX])
        return [row[field] for row in rows]

    workspaces = recent("workspace_id")
    for workspace_id in policy_workspaces(principal=principal):
        if workspace_id not in workspaces and len(workspaces) < KNOWN_IDS_MAX:
            workspaces.append(workspace_id)
    latest = sessions.order_by("-last_message_at", "-pk").values_list("external_id", "workspace_id", "user_id")
    return KnownIds(workspaces=workspaces, users=recent("user_id"), sessions=list(latest[:KNOWN_IDS_MAX]))


def policy_workspaces(*, principal: Principal) -> list[str]:
    """The workspaces that have a budget policy of their own, by id."""
    rows = BudgetPolicy.objects.filter(team=principal.team).exclude(workspace_id="")
    if principal.workspace_ids is not None:
        rows = rows.filter(workspace_id__in=sorted(principal.workspace_ids))
    return list(rows.order_by("workspace_id").values_list("workspace_id", flat=True))


def policy_overrides(*, principal: Principal) -> list[tuple[str, dict[str, Any]]]:
    """Each workspace policy of the team as (workspace_id, {setting: value}) with only the
    settings it sets (not None), by workspace id; one query."""
    rows = BudgetPolicy.objects.filter(team=principal.team).exclude(workspace_id="").order_by("workspace_id")
    if principal.workspace_ids is not None:
        rows = rows.filter(workspace_id__in=sorted(principal.workspace_ids))
    return [(row.workspace_id, {name: value for name, value in row.settings().items() if value is not None})
            for row in rows]


def node_titles(*, principal: Principal, node_ids: list[int]) -> dict[int, str]:
    """{node id: title} of the team's nodes among `node_ids` (others are left out); one query."""
    if not node_ids:
        return {}
    return dict(Node.objects.filter(team=principal.team, pk__in=sorted(set(node_ids))).values_list("pk", "title"))


@dataclass
class ContextPreview:
    """What a context call would inject now (`current`, under the budget in force) and under
    the draft (`draft`, None without draft changes), neither recorded. `level` is the policy
    the draft replaces: "workspace" with a workspace_id, else "team"."""

    current: MemoryContext
    draft: MemoryContext | None
    level: str
    draft_changes: dict[str, Any]


def draft_budget(*, principal: Principal, workspace_id: str, changes: dict[str, Any]) -> Budget:
    """The budget a context call in `workspace_id` would get if `changes` were saved to its
    level (the workspace's policy, or the team's without a workspace_id), PATCH semantics as
    in policy simulation: settings not named stay as stored, None inherits.

    Raises InvalidInput naming each bad setting (policy_changes_clean) and AccessDenied.
    """
    cleaned = policy_changes_clean(changes)
    stored = policy_get(principal=principal, workspace_id=workspace_id).settings()
    stored.update(cleaned)
    level = "workspace" if workspace_id else "team"
    return budget_resolve(team=principal.team, workspace_id=workspace_id, draft=(level, stored))


def context_preview(*, principal: Principal, request: ContextRequest,
                    draft_changes: dict[str, Any] | None = None) -> ContextPreview:
    """The memory context of `request` under the budget in force and, when `draft_changes`
    names any setting, under that draft; built with context_build(record=False), so no
    hit-ledger row is written. The two builds share their store reads when the draft changes
    only what fits (memory.selectors.context_gather.ReadSizes).

    Raises InvalidInput (bad ids or draft settings, each named in `fields`) and AccessDenied.
    """
    workspace_id = request.owner.workspace_id
    changes = {name: value for name, value in (draft_changes or {}).items() if name in POLICY_FIELDS}
    draft_in_force = draft_budget(principal=principal, workspace_id=workspace_id, changes=changes) if changes else None
    reads: dict = {}
    current = context_build(principal=principal, request=request, record=False, reads=reads)
    draft = None
    if draft_in_force is not None:
        draft = context_build(principal=principal, request=request, budget=draft_in_force, record=False, reads=reads)
    return ContextPreview(current=current, draft=draft, level="workspace" if workspace_id else "team",
                          draft_changes=changes)


@dataclass(frozen=True)
class Backlog:
    """Capture jobs now: pending (waiting or retrying) and failed, the oldest pending one's
    creation time (None when none waits)."""

    pending: int
    failed: int
    oldest_pending: datetime | None


def capture_backlog(*, team: Team, workspace_id: str = "") -> Backlog:
    """The team's (or one workspace's) capture job backlog as it is now; one query."""
    jobs = CaptureJob.objects.filter(team=team, status__in=[JobStatus.PENDING, JobStatus.FAILED])
    if workspace_id:
        jobs = jobs.filter(workspace_id=workspace_id)
    counts = {row["status"]: row for row in jobs.values("status").annotate(n=Count("pk"), oldest=Min("created_at"))
              .order_by()}
    pending = counts.get(JobStatus.PENDING, {})
    return Backlog(pending=pending.get("n", 0), failed=counts.get(JobStatus.FAILED, {}).get("n", 0),
                   oldest_pending=pending.get("oldest"))


@dataclass(frozen=True)
class RecordedCall:
    """One context call of the hit ledger as the KPI page lists it: when, for whom, the query,
    the block's characters and estimated tokens, the max_chars in force and where it came
    from, whether the block was cut, how many memories were injected and left out."""

    retrieval_id: int
    created_at: datetime
    workspace_id: str
    user_id: str
    session_id: str
    query: str
    chars: int
    tokens: int
    max_chars: Any
    max_chars_source: str
    truncated: bool
    memories: int
    omitted: int
    latency_ms: float


def latest_context_calls(*, team: Team, workspace_id: str = "", since: date, until: date,
                         limit: int = LATEST_CALLS_MAX) -> list[RecordedCall]:
    """The team's (or one workspace's) newest recorded context calls of the UTC days
    since..until (both included), newest first, at most `limit`; one query. What the KPIs
    sum, call by call: a budget change shows in the next call's max_chars and its source."""
    start = datetime.combine(since, time.min, tzinfo=UTC)
    end = datetime.combine(until + timedelta(days=1), time.min, tzinfo=UTC)
    calls = Retrieval.objects.filter(team=team, created_at__gte=start, created_at__lt=end)
    if workspace_id:
        calls = calls.filter(workspace_id=workspace_id)
    # The lists are counted in the database: a call's `omitted` holds a hundred entries or more
    # in a large store, and decoding them took longer than the query.
    rows = (calls.select_related("session").order_by("-created_at", "-pk")
            .only("created_at", "workspace_id", "user_id", "query", "total_chars", "total_tokens", "truncated",
                  "policy", "latency_ms", "session__external_id")
            .annotate(memories=JSONArrayLength("used_node_ids"), left_out=JSONArrayLength("omitted"))[:limit])
    out = []
    for row in rows:
        max_chars = row.policy.get("max_chars") if isinstance(row.policy, dict) else None
        max_chars = max_chars if isinstance(max_chars, dict) else {}
        out.append(RecordedCall(
            retrieval_id=row.pk, created_at=row.created_at, workspace_id=row.workspace_id, user_id=row.user_id,
            session_id=row.session.external_id if row.session is not None else "", query=row.query,
            chars=row.total_chars, tokens=row.total_tokens, max_chars=max_chars.get("value"),
            max_chars_source=str(max_chars.get("source", "")), truncated=row.truncated,
            memories=row.memories or 0, omitted=row.left_out or 0, latency_ms=row.latency_ms,
        ))
    return out
