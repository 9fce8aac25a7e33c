"""Policy simulation (R-CTX, R-UI; seed 004 §7): before an admin saves a budget change, the
last recorded context calls are built again — same store, same queries, same requests —
under the policy in force and under the draft, and the differences are returned.

Nothing is written: no ledger row, no audit event. The recorded calls are read from the hit
ledger (query, owner, domain, what the request asked for); a call whose session has since
been forgotten is rebuilt without it. Sizes are characters (code points).
"""

from dataclasses import dataclass
from typing import Any

from accounts.principal import Principal
from memory import limits
from memory.errors import InvalidInput
from memory.models import Retrieval
from memory.policy_models import POLICY_FIELDS
from memory.selectors.budget import budget_resolve
from memory.selectors.context import ContextRequest, MemoryContext, context_build
from memory.selectors.nodes import Owner
from memory.services.policies import policy_changes_clean, policy_get


@dataclass(frozen=True)
class CallOutcome:
    chars: int
    used_ids: tuple[int, ...]
    hit: bool  # a query call that injected at least one relevant memory (a node of L5)
    l5_hit: bool  # … or anything of L5: an earlier message of the user's (episodic recall) too
    omitted: dict[str, int]


def _outcome(context: MemoryContext) -> CallOutcome:
    omitted: dict[str, int] = {}
    for item in context.omitted:
        omitted[item.reason] = omitted.get(item.reason, 0) + 1
    return CallOutcome(chars=len(context.block), used_ids=tuple(context.used_memory_ids),
                       hit=any(item.section == "relevant" for item in context.items),
                       l5_hit=any(item.layer == "L5" for item in context.items), omitted=omitted)


def _asked(row: Retrieval) -> dict[str, Any]:
    """What the recorded request asked for itself: the ledger keeps it under "requested" (also
    what a policy held back); older rows only show the settings whose source was the request."""
    policy = row.policy or {}
    requested = policy.get("requested")
    if isinstance(requested, dict):
        return {name: value for name, value in requested.items() if name in POLICY_FIELDS and value is not None}
    return {name: entry["value"] for name, entry in policy.items()
            if isinstance(entry, dict) and entry.get("source") == "request" and name in POLICY_FIELDS}


def _totals(outcomes: list[CallOutcome], queried: list[bool]) -> dict[str, Any]:
    query_calls = sum(queried)
    hits = sum(1 for outcome, asked in zip(outcomes, queried, strict=True) if asked and outcome.hit)
    l5_hits = sum(1 for outcome, asked in zip(outcomes, queried, strict=True) if asked and outcome.l5_hit)
    omitted: dict[str, int] = {}
    for outcome in outcomes:
        for reason, count in outcome.omitted.items():
            omitted[reason] = omitted.get(reason, 0) + count
    return {
        "calls": len(outcomes),
        "hit_rate": round(hits / query_calls, 4) if query_calls else None,
        "l5_hit_rate": round(l5_hits / query_calls, 4) if query_calls else None,
        "injected_chars_mean": round(sum(o.chars for o in outcomes) / len(outcomes), 2) if outcomes else None,
        "memories_per_call": round(sum(len(o.used_ids) for o in outcomes) / len(outcomes), 2) if outcomes else None,
        "omitted_by_reason": dict(sorted(omitted.items())),
    }


def policy_simulate(*, principal: Principal, workspace_id: str = "", changes: dict[str, Any],
                    last: int = limits.SIMULATION_CALLS_DEFAULT) -> dict[str, Any]:
    """Rebuild the last `last` recorded context calls of the team (or of `workspace_id`) under
    the policy in force and under it with `changes` applied to that level (PATCH semantics:
    null clears a setting). Returns {"level", "draft", "calls", "before", "after", "per_call"};
    before/after hold hit_rate (query calls that injected a relevant memory), l5_hit_rate (…
    anything of L5, earlier messages too: what KPIs call l5_hit_rate), injected_chars_mean,
    memories_per_call, omitted_by_reason.

    Raises InvalidInput (bad settings, `last` out of 1–limits.SIMULATION_CALLS_MAX) and
    AccessDenied (a key limited to other workspaces).
    """
    if isinstance(last, bool) or not isinstance(last, int) or not 1 <= last <= limits.SIMULATION_CALLS_MAX:
        raise InvalidInput(f"last must be 1–{limits.SIMULATION_CALLS_MAX}", fields={"last": ["out of range"]})
    changes = policy_changes_clean(changes)
    stored = policy_get(principal=principal, workspace_id=workspace_id)
    draft = {name: getattr(stored, name) for name in POLICY_FIELDS}
    draft.update(changes)
    level = "workspace" if workspace_id else "team"
    rows = Retrieval.objects.filter(team=principal.team).select_related("session")
    if workspace_id:
        rows = rows.filter(workspace_id=workspace_id)
    before: list[CallOutcome] = []
    after: list[CallOutcome] = []
    queried: list[bool] = []
    per_call = []
    for row in rows.order_by("-pk")[:last]:
        session = row.session.external_id if row.session is not None and row.session.deleted_at is None else ""
        request = ContextRequest(owner=Owner(workspace_id=row.workspace_id, user_id=row.user_id, session_id=session),
                                 query=row.query, domain=row.domain)
        asked = _asked(row)
        now = budget_resolve(asked, team=principal.team, workspace_id=row.workspace_id)
        then = budget_resolve(asked, team=principal.team, workspace_id=row.workspace_id, draft=(level, draft))
        reads: dict = {}  # a draft that changes only what fits reuses the reads of the policy in force
        old = _outcome(context_build(principal=principal, request=request, budget=now, record=False, reads=reads))
        new = old if then == now else _outcome(context_build(principal=principal, request=request, budget=then,
                                                             record=False, reads=reads))
        before.append(old)
        after.append(new)
        queried.append(bool(row.query.strip()))
        per_call.append({
            "retrieval_id": row.pk, "query": row.query, "workspace_id": row.workspace_id,
            "before": {"chars": old.chars, "memories": len(old.used_ids), "hit": old.hit, "l5_hit": old.l5_hit},
            "after": {"chars": new.chars, "memories": len(new.used_ids), "hit": new.hit, "l5_hit": new.l5_hit},
            "added_ids": sorted(set(new.used_ids) - set(old.used_ids)),
            "removed_ids": sorted(set(old.used_ids) - set(new.used_ids)),
        })
    return {"level": level, "workspace_id": workspace_id, "draft": draft, "calls": len(per_call),
            "before": _totals(before, queried), "after": _totals(after, queried), "per_call": per_call}
