"""Budget policies: admins set them per team and per workspace (seed 004 §7, §10; R-CTX, R-TEN).

A policy holds the settings of memory.policy_models.POLICY_FIELDS; None inherits (workspace
→ team → environment → default, memory.selectors.budget). A change is partial: the
settings named are set, a None clears one back to inherit, the others stay. Every change is
audited as `memory.policy.updated` with the settings before and after, in its transaction.

Team.min_confidence is kept as a copy of the team policy's min_confidence (0.0 when it
inherits), written here in the same transaction, because search and conflict resolution
(memory.selectors.query, memory.selectors.conflicts) read the floor from the team.
"""

import math
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.principal import AccessDenied, Principal
from memory import limits
from memory.errors import InvalidInput
from memory.policy_models import BOOLEAN_FIELDS, POLICY_FIELDS, BudgetPolicy
from memory.services.audit import audit_record
from memory.validation import clean_identity

POLICY_UPDATED = "memory.policy.updated"


def range_message(name: str) -> str:
    low, high = limits.POLICY_RANGES[name]
    return f"must be between {low} and {high}, or null to inherit"


def _problem(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if name in BOOLEAN_FIELDS:
        return None if isinstance(value, bool) else "must be true, false or null"
    if name == "min_confidence":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return "must be a number, or null to inherit"
    elif isinstance(value, bool) or not isinstance(value, int):
        return "must be a whole number, or null to inherit"
    low, high = limits.POLICY_RANGES[name]
    return None if low <= value <= high else range_message(name)


def policy_changes_clean(changes: dict[str, Any]) -> dict[str, Any]:
    """`changes` checked: known settings, right types, in range (limits.POLICY_RANGES).

    Raises InvalidInput naming every bad setting in `fields` ({"top_n": ["must be …"]}).
    """
    if not isinstance(changes, dict):
        raise InvalidInput("the changes must be an object of settings", fields={"body": ["must be an object"]})
    problems = {name: ["unknown setting"] for name in sorted(set(changes) - set(POLICY_FIELDS))}
    for name in POLICY_FIELDS:
        if name in changes:
            problem = _problem(name, changes[name])
            if problem:
                problems[name] = [problem]
    if problems:
        first = next(iter(problems))
        raise InvalidInput(f"{first}: {problems[first][0]}", fields=problems)
    return {name: float(value) if name == "min_confidence" and value is not None else value
            for name, value in changes.items()}


def _check_reach(principal: Principal, workspace_id: str) -> None:
    """A key limited to workspaces reaches only their policies, never the team's."""
    if not workspace_id and principal.workspace_ids is not None:
        raise AccessDenied("this key is limited to workspaces; it may only reach their policies")
    principal.check_workspace(workspace_id)


def policy_get(*, principal: Principal, workspace_id: str = "") -> BudgetPolicy:
    """The policy stored for the team (workspace_id "") or for one workspace; an unsaved one
    with every setting None when none was set.

    Raises InvalidInput (bad workspace_id) and AccessDenied (a key limited to other
    workspaces, or limited at all when asking for the team's).
    """
    workspace_id = clean_identity(workspace_id, field="workspace_id")
    _check_reach(principal, workspace_id)
    found = BudgetPolicy.objects.filter(team=principal.team, workspace_id=workspace_id).first()
    return found or BudgetPolicy(team=principal.team, workspace_id=workspace_id)


def policy_set(*, principal: Principal, workspace_id: str = "", changes: dict[str, Any]) -> BudgetPolicy:
    """Change the team's policy (workspace_id "") or one workspace's; returns it as stored.

    `changes` maps setting names (POLICY_FIELDS) to values, None to inherit again; settings
    not named stay as they are. Nothing is written when nothing changes. Audited as
    `memory.policy.updated` with payload {workspace_id, level, changed, before, after}.

    Raises AccessDenied (not a team admin; a key limited to other workspaces) and
    InvalidInput (bad workspace_id; unknown settings, wrong types or out-of-range values,
    each named in `fields`).
    """
    if not principal.is_admin:
        raise AccessDenied("only team admins may change budget policies")
    workspace_id = clean_identity(workspace_id, field="workspace_id")
    _check_reach(principal, workspace_id)
    cleaned = policy_changes_clean(changes)
    team = principal.team
    with transaction.atomic():
        policy = BudgetPolicy.objects.select_for_update().filter(team=team, workspace_id=workspace_id).first()
        if policy is None:
            if all(value is None for value in cleaned.values()):
                return BudgetPolicy(team=team, workspace_id=workspace_id)
            # Another admin's first change may be committing now: get_or_create then finds it.
            created, _ = BudgetPolicy.objects.get_or_create(team=team, workspace_id=workspace_id)
            policy = BudgetPolicy.objects.select_for_update().get(pk=created.pk)
        before = policy.settings()
        for name, value in cleaned.items():
            setattr(policy, name, value)
        after = policy.settings()
        changed = [name for name in POLICY_FIELDS if before[name] != after[name]]
        if not changed:
            return policy
        policy.updated_at = timezone.now()
        policy.updated_by = principal.actor
        policy.save()
        if not workspace_id and "min_confidence" in changed:
            team.min_confidence = after["min_confidence"] or 0.0
            team.save(update_fields=["min_confidence"])
        audit_record(
            principal=principal,
            event_type=POLICY_UPDATED,
            workspace_id=workspace_id,
            payload={"workspace_id": workspace_id, "level": "workspace" if workspace_id else "team",
                     "changed": changed, "before": before, "after": after},
        )
    return policy
