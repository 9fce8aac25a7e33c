"""KPIs over the hit ledger, the agents' feedback, the proposal outcomes and capture jobs
(R-UI KPI page; seed 004 §7.3 度量 KPI 接入 L5 账本; issue 5 item 5).

Days are UTC calendar days, `since` and `until` both included, at most
limits.KPI_RANGE_DAYS_MAX of them. With a workspace_id, only that workspace's context calls,
proposals, capture jobs and nodes (its workspace and session memories) count; without one,
the whole team's.

What each figure means (per day, and for the range in `totals`):
- context_calls: context calls (hit-ledger rows); query_calls: those with a query that is not
  blank; hits: query calls that injected at least one of the query's relevant memories (an
  item of the ledger's "relevant" section, L5); hit_rate = hits / query_calls. l5_hits and
  l5_hit_rate count any L5 item, earlier messages (episodic recall) included
  (chars_by_layer["L5"] > 0).
- injected.chars / injected.tokens: the rendered block (total) and each layer's items, sum and
  mean per context call (characters are code points; tokens the ledger's estimate).
- budget_use: mean of total_chars / the policy's max_chars over calls with pre-injection on.
- omitted: nodes left out, by reason (expired, superseded, low_confidence, conflict_lost,
  over_limit, layer_disabled, same_text).
- latency_ms: p50 and p95 by the nearest-rank method over at most
  limits.KPI_LATENCY_ROWS_PER_DAY calls a day (the day's first); `capped` says a day had more.
- feedback: over context calls the agent reported on (POST /retrievals/{id}/feedback):
  used_rate = node ids reported used / node ids injected.
- proposals: by source (api: agents and users; capture: background extraction), accepted and
  refused, each by reason (memory.services.outcomes).
- extraction: capture jobs recorded that day that are done or failed, the proposals their
  extractors made and the outcomes (accepted, refusal reasons, invalid…); yield = accepted /
  proposals.
- nodes_created: memory growth, by type and scope.
`nodes` is the store as it is now (not per day): by type, scope and status (an active node
past its expires_at counts as expired). A rate whose denominator is 0 is null.

Everything is summed in the database, per day (JSON columns too: memory.selectors.kpi_json);
only the latency percentiles read rows.
"""

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db.models import Case, CharField, Count, F, FloatField, Q, Sum, Value, When
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast, NullIf, TruncDate
from django.utils import timezone

from accounts.models import Team
from memory import limits
from memory.capture_models import CaptureJob, JobStatus
from memory.errors import InvalidInput
from memory.kpi_models import OutcomeSource, ProposalOutcome, RetrievalFeedback
from memory.models import Node, NodeStatus, Retrieval
from memory.selectors.kpi_json import (
    JOB_OUTCOMES,
    NOT_BLANK,
    OMITTED_BY_REASON,
    RELEVANT_HITS,
    JSONArrayLength,
    Window,
    json_int,
    per_day,
)

LAYERS = ("L0", "L1", "L2", "L3", "L4", "L5")  # seed 004 §2; a layer the context does not fill reads 0
SOURCES = tuple(OutcomeSource.values)


def _ratio(part: float, whole: float, digits: int = 4) -> float | None:
    return round(part / whole, digits) if whole else None


def _mean(total: float, count: int) -> float | None:
    return round(total / count, 2) if count else None


def percentile(sorted_values: list[float], p: float) -> float | None:
    """Nearest-rank percentile of ascending values: the smallest value with at least p% of
    the values at or below it; None for no values."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return round(sorted_values[rank - 1], 3)


@dataclass
class _Tally:
    """The raw counts of one day (or, merged, of the range); as_dict() derives the figures."""

    counts: Counter = field(default_factory=Counter)
    chars: Counter = field(default_factory=Counter)
    tokens: Counter = field(default_factory=Counter)
    omitted: Counter = field(default_factory=Counter)
    proposals: dict[tuple[str, bool], Counter] = field(default_factory=dict)
    outcomes: Counter = field(default_factory=Counter)
    created_by_type: Counter = field(default_factory=Counter)
    created_by_scope: Counter = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    latency_capped: bool = False

    def merge(self, other: "_Tally") -> None:
        for name in ("counts", "chars", "tokens", "omitted", "outcomes", "created_by_type", "created_by_scope"):
            getattr(self, name).update(getattr(other, name))
        for key, reasons in other.proposals.items():
            self.proposals.setdefault(key, Counter()).update(reasons)
        self.latencies += other.latencies
        self.latency_capped = self.latency_capped or other.latency_capped

    def _sizes(self, by_layer: Counter, total: str) -> dict[str, Any]:
        calls = self.counts["calls"]
        return {
            "total": {"sum": self.counts[total], "mean": _mean(self.counts[total], calls)},
            "by_layer": {layer: {"sum": by_layer[layer], "mean": _mean(by_layer[layer], calls)} for layer in LAYERS},
        }

    def _proposals(self, source: str) -> dict[str, Any]:
        accepted = self.proposals.get((source, True), Counter())
        refused = self.proposals.get((source, False), Counter())
        return {
            "accepted": sum(accepted.values()),
            "refused": sum(refused.values()),
            # A plain accepted write has no reason; only the reasoned ones are listed.
            "accepted_by_reason": dict(sorted((reason, n) for reason, n in accepted.items() if reason)),
            "refused_by_reason": dict(sorted(refused.items())),
        }

    def as_dict(self) -> dict[str, Any]:
        c = self.counts
        latencies = sorted(self.latencies)
        return {
            "context_calls": c["calls"],
            "query_calls": c["query_calls"],
            "hits": c["hits"],
            "hit_rate": _ratio(c["hits"], c["query_calls"]),
            "l5_hits": c["l5_hits"],
            "l5_hit_rate": _ratio(c["l5_hits"], c["query_calls"]),
            "truncated_calls": c["truncated"],
            "degraded_calls": c["degraded"],
            "disabled_calls": c["disabled"],
            "injected": {"chars": self._sizes(self.chars, "chars_total"),
                         "tokens": self._sizes(self.tokens, "tokens_total")},
            "budget_use": {"mean": _ratio(c["budget_use"], c["budget_calls"]), "calls": c["budget_calls"]},
            "omitted": {"total": sum(self.omitted.values()), "by_reason": dict(sorted(self.omitted.items()))},
            "latency_ms": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95),
                           "rows": len(latencies), "capped": self.latency_capped},
            "feedback": {"retrievals": c["feedback"], "injected": c["injected"], "used": c["used"],
                         "used_rate": _ratio(c["used"], c["injected"]), "helpful": c["helpful"],
                         "not_helpful": c["not_helpful"]},
            "proposals": {source: self._proposals(source) for source in SOURCES},
            "extraction": {"jobs_done": c["jobs_done"], "jobs_failed": c["jobs_failed"],
                           "messages": c["job_messages"], "proposals": c["job_proposals"],
                           "accepted": c["job_accepted"], "yield": _ratio(c["job_accepted"], c["job_proposals"]),
                           "outcomes": dict(sorted(self.outcomes.items()))},
            "nodes_created": {"total": sum(self.created_by_type.values()),
                              "by_type": dict(sorted(self.created_by_type.items())),
                              "by_scope": dict(sorted(self.created_by_scope.items()))},
        }


def kpi_range(*, since: date | None, until: date | None, today: date) -> tuple[date, date]:
    """The days a KPI request covers: `until` defaults to today (UTC), `since` to the
    limits.KPI_DEFAULT_DAYS days up to `until`. Raises InvalidInput when since is after until or
    the range is longer than limits.KPI_RANGE_DAYS_MAX days."""
    until = until or today
    since = since or until - timedelta(days=limits.KPI_DEFAULT_DAYS - 1)
    if since > until:
        raise InvalidInput("since is after until", fields={"since": ["must be on or before until"]})
    days = (until - since).days + 1
    if days > limits.KPI_RANGE_DAYS_MAX:
        message = f"at most {limits.KPI_RANGE_DAYS_MAX} days (asked for {days})"
        raise InvalidInput(f"the range is too long: {message}", fields={"since": [message]})
    return since, until


def _start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


class _Reader:
    """Runs the per-day queries of one KPI request and tallies them by day."""

    def __init__(self, team: Team, workspace_id: str, since: date, until: date):
        self.team, self.workspace_id = team, workspace_id
        self.start, self.end = _start(since), _start(until + timedelta(days=1))
        self.window = Window(team_id=team.pk, workspace_id=workspace_id, start=self.start, end=self.end)
        self.days = {since + timedelta(days=n): _Tally() for n in range((until - since).days + 1)}

    def _in_range(self, queryset, created: str = "created_at", workspace: str = "workspace_id"):
        queryset = queryset.filter(team=self.team, **{f"{created}__gte": self.start, f"{created}__lt": self.end})
        if self.workspace_id:
            queryset = queryset.filter(**{workspace: self.workspace_id})
        return queryset.annotate(day=TruncDate(created, tzinfo=UTC))

    def retrievals(self) -> None:
        max_chars = Cast(KeyTextTransform("value", KeyTransform("max_chars", "policy")), FloatField())
        budgeted = Q(max_chars__gt=0) & ~Q(store_status="disabled")
        sizes = {}
        for layer in LAYERS:
            sizes[f"chars_{layer}"] = Sum(json_int("chars_by_layer", layer))
            sizes[f"tokens_{layer}"] = Sum(json_int("tokens_by_layer", layer))
        rows = (
            self._in_range(Retrieval.objects.all())
            .annotate(l5=json_int("chars_by_layer", "L5"), max_chars=max_chars)
            .values("day")
            .annotate(
                calls=Count("pk"),
                query_calls=Count("pk", filter=Q(query__regex=NOT_BLANK)),
                l5_hits=Count("pk", filter=Q(query__regex=NOT_BLANK, l5__gt=0)),
                truncated=Count("pk", filter=Q(truncated=True)),
                degraded=Count("pk", filter=Q(store_status="degraded")),
                disabled=Count("pk", filter=Q(store_status="disabled")),
                chars_total=Sum("total_chars"),
                tokens_total=Sum("total_tokens"),
                budget_calls=Count("pk", filter=budgeted),
                budget_use=Sum(Cast("total_chars", FloatField()) / NullIf("max_chars", 0.0), filter=budgeted),
                **sizes,
            )
            .order_by("day")
        )
        for row in rows:
            tally = self.days[row["day"]]
            tally.counts.update({name: row[name] or 0 for name in (
                "calls", "query_calls", "l5_hits", "truncated", "degraded", "disabled", "chars_total", "tokens_total",
                "budget_calls", "budget_use")})
            tally.chars.update({layer: row[f"chars_{layer}"] or 0 for layer in LAYERS})
            tally.tokens.update({layer: row[f"tokens_{layer}"] or 0 for layer in LAYERS})

    def latencies(self) -> None:
        cap = limits.KPI_LATENCY_ROWS_PER_DAY
        calls = Retrieval.objects.filter(team=self.team)
        if self.workspace_id:
            calls = calls.filter(workspace_id=self.workspace_id)
        for day, tally in self.days.items():
            if not tally.counts["calls"]:
                continue
            start = _start(day)
            rows = calls.filter(created_at__gte=start, created_at__lt=start + timedelta(days=1)).order_by("created_at", "pk")
            tally.latencies = list(rows.values_list("latency_ms", flat=True)[:cap])
            tally.latency_capped = tally.counts["calls"] > cap

    def relevant_hits(self) -> None:
        rows = per_day(RELEVANT_HITS, table=Retrieval._meta.db_table, window=self.window, params=(NOT_BLANK,))
        for day, count in rows:
            self.days[day].counts["hits"] += count

    def omitted(self) -> None:
        for day, reason, count in per_day(OMITTED_BY_REASON, table=Retrieval._meta.db_table, window=self.window):
            self.days[day].omitted[reason or "unknown"] += count

    def feedback(self) -> None:
        rows = (
            self._in_range(RetrievalFeedback.objects.all(), created="retrieval__created_at",
                           workspace="retrieval__workspace_id")
            .values("day")
            .annotate(n_feedback=Count("pk"), n_used=Sum(JSONArrayLength("used_node_ids")),
                      n_injected=Sum(JSONArrayLength("retrieval__used_node_ids")),
                      n_helpful=Count("pk", filter=Q(helpful=True)), n_not_helpful=Count("pk", filter=Q(helpful=False)))
            .order_by("day")
        )
        for row in rows:
            self.days[row["day"]].counts.update(
                {name: row[f"n_{name}"] or 0 for name in ("feedback", "used", "injected", "helpful", "not_helpful")})

    def proposals(self) -> None:
        rows = (self._in_range(ProposalOutcome.objects.all()).values("day", "source", "accepted", "reason")
                .annotate(n=Count("pk")).order_by("day"))
        for row in rows:
            tally = self.days[row["day"]]
            tally.proposals.setdefault((row["source"], row["accepted"]), Counter())[row["reason"]] += row["n"]

    def extraction(self) -> None:
        finished = Q(status__in=[JobStatus.DONE, JobStatus.FAILED])
        rows = (
            self._in_range(CaptureJob.objects.filter(finished)).values("day")
            .annotate(jobs_done=Count("pk", filter=Q(status=JobStatus.DONE)),
                      jobs_failed=Count("pk", filter=Q(status=JobStatus.FAILED)),
                      job_messages=Sum(json_int("result", "messages")),
                      job_proposals=Sum(json_int("result", "proposals")),
                      job_accepted=Sum(json_int("result", "outcomes", "accepted")))
            .order_by("day")
        )
        for row in rows:
            self.days[row["day"]].counts.update(
                {name: row[name] or 0 for name in ("jobs_done", "jobs_failed", "job_messages", "job_proposals",
                                                   "job_accepted")})
        outcomes = per_day(JOB_OUTCOMES, table=CaptureJob._meta.db_table, window=self.window, status=JobStatus.DONE)
        for day, outcome, count in outcomes:
            self.days[day].outcomes[outcome] += count or 0

    def nodes_created(self) -> None:
        nodes = Node.objects.all()
        if self.workspace_id:
            nodes = nodes.filter(Q(workspace_id=self.workspace_id) | Q(session__workspace_id=self.workspace_id))
        nodes = nodes.filter(team=self.team, created_at__gte=self.start, created_at__lt=self.end)
        rows = (nodes.annotate(day=TruncDate("created_at", tzinfo=UTC)).values("day", "type", "scope")
                .annotate(n=Count("pk")).order_by("day"))
        for row in rows:
            tally = self.days[row["day"]]
            tally.created_by_type[row["type"]] += row["n"]
            tally.created_by_scope[row["scope"]] += row["n"]


def node_counts(*, team: Team, workspace_id: str = "") -> dict[str, Any]:
    """The store as it is now: {total, by_type, by_scope, by_status}. With a workspace_id, its
    workspace memories and the memories of its sessions (user and global memories belong to
    no workspace)."""
    nodes = Node.objects.filter(team=team)
    if workspace_id:
        nodes = nodes.filter(Q(workspace_id=workspace_id) | Q(session__workspace_id=workspace_id))
    status_now = Case(When(status=NodeStatus.ACTIVE, expires_at__lte=timezone.now(), then=Value(NodeStatus.EXPIRED)),
                      default=F("status"), output_field=CharField())
    by_type: Counter = Counter()
    by_scope: Counter = Counter()
    by_status: Counter = Counter()
    for row in nodes.values("type", "scope", current=status_now).annotate(n=Count("pk")).order_by():
        by_type[row["type"]] += row["n"]
        by_scope[row["scope"]] += row["n"]
        by_status[row["current"]] += row["n"]
    return {"total": sum(by_type.values()), "by_type": dict(sorted(by_type.items())),
            "by_scope": dict(sorted(by_scope.items())), "by_status": dict(sorted(by_status.items()))}


def kpis(*, team: Team, workspace_id: str = "", since: date, until: date) -> dict[str, Any]:
    """The KPIs of `team` (one workspace, or all with "") for the UTC days since..until, both
    included (see the module doc for each figure):

    {team, workspace_id, since, until, days_basis: "UTC",
     latency_rows_per_day, totals: {…figures}, days: [{date, …figures}], nodes: {…now}}

    Raises InvalidInput when since is after until or the range is longer than
    limits.KPI_RANGE_DAYS_MAX days.
    """
    since, until = kpi_range(since=since, until=until, today=until)
    reader = _Reader(team, workspace_id, since, until)
    reader.retrievals()
    reader.relevant_hits()
    reader.latencies()
    reader.omitted()
    reader.feedback()
    reader.proposals()
    reader.extraction()
    reader.nodes_created()
    totals = _Tally()
    for tally in reader.days.values():
        totals.merge(tally)
    return {
        "team": team.slug,
        "workspace_id": workspace_id,
        "since": since.isoformat(),
        "until": until.isoformat(),
        "days_basis": "UTC",
        "latency_rows_per_day": limits.KPI_LATENCY_ROWS_PER_DAY,
        "totals": totals.as_dict(),
        "days": [{"date": day.isoformat(), **tally.as_dict()} for day, tally in reader.days.items()],
        "nodes": node_counts(team=team, workspace_id=workspace_id),
    }
