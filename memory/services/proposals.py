"""memory_propose_update: create, update, supersede, expire or delete a node, validated by
the service before anything is written (seed 000 按需 Memory Tool, 明确记忆写入, 受控 Schema,
权限和确认策略; R-TOOLS, R-TEN).

A proposal passes, in order:
1. schema normalisation (memory.services.schema): key synonyms, value rules, default scope
   and category, the project-scope rule;
2. field validation (400 on malformed input, before any policy);
3. the schema checks; a non-conforming node is refused, or with on_nonconforming="demote"
   kept as session memory of the caller's session;
4. the scope write policy: session always; workspace for facts, constraints, decisions,
   tasks and skills; user only with the end user's explicit intent and the source message;
   global only for team admins; the principal's own writable scopes and workspaces on top;
5. conflicts (memory.services.upsert): an identical node is returned as is; another value of
   a one-valued key is superseded (latest wins) or needs confirmation.

A refusal is an answer, not an error: accepted=false with a reason code (REFUSALS). An
accepted write may carry a reason too (ACCEPTED_REASONS). Malformed input raises
InvalidInput (400), an unknown target NotFound (404), a target no longer active Conflict (409).
Every answer, accepted or refused, is counted in the proposal-outcome ledger for the KPIs
(memory.services.outcomes); a refusal writes nothing else.
"""

import json
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.principal import AccessDenied, Principal
from memory import limits
from memory.errors import InvalidInput, MemoryError
from memory.models import Node, NodeStatus, NodeType, Scope
from memory.selectors.nodes import Owner, node_get, node_of_owner
from memory.services.nodes import (
    DESCRIPTIVE_FIELDS,
    NodeInput,
    canonical_json,
    node_delete,
    node_expire,
    node_supersede,
    node_update,
    supersede_input,
    validate_node_input,
)
from memory.services.outcomes import NOT_APPLIED, proposal_outcome_record
from memory.services.schema import Normalized, Problem, schema_normalize
from memory.services.twins import absorb_capture_twins, twin_of
from memory.services.upsert import node_upsert

WORKSPACE_TYPES = frozenset({NodeType.FACT, NodeType.CONSTRAINT, NodeType.DECISION, NodeType.TASK, NodeType.SKILL})
IDENTITY_FIELDS = ("scope", "type", "domain", "key", "value_json")
OPERATIONS = ("create", "update", "supersede", "expire", "delete")
REFUSALS = {
    "scope_not_allowed": "the caller may not write this scope or workspace",
    "global_admin_only": "global memory is written by team admins only",
    "type_not_allowed_in_scope": "workspace memory holds facts, constraints, decisions, tasks and skills",
    "explicit_intent_required": "user memory needs the end user's explicit words",
    "source_required": "user memory must name the message the user said it in",
    "key_not_in_schema": "the domain's controlled schema does not have this key",
    "value_shape_mismatch": "the value does not have the shape the schema gives the key",
    "category_not_in_schema": "the category path is not in the schema or taxonomy",
    "temporary_needs_expiry": "a temporary state needs expires_at beyond the session",
    "conflict": "another value is active for this key; confirm to replace it",
    "correction_ambiguous": "a correction names a key holding several values; supersede one by target_id",
    "sensitive_needs_confirmation": "looks like a secret or an identifier (card, id, phone, password); confirm to keep it",
}
ACCEPTED_REASONS = {
    "duplicate": "already remembered; the existing node is returned",
    "superseded": "the new value superseded the active one (latest wins)",
    "corrected": "a correction superseded the active node with the same key",
    "demoted_to_session": "non-conforming, kept as session memory instead",
}


@dataclass(frozen=True)
class Proposal:
    operation: str  # one of OPERATIONS
    node: dict[str, Any]
    reason: str = ""
    target_id: int | None = None
    workspace_id: str = ""
    user_id: str = ""
    session_id: str = ""
    explicit_user_intent: bool = False
    expected_version: int | None = None
    confirm: bool = False  # replace a conflicting value that would otherwise need confirmation
    on_nonconforming: str = "reject"  # or "demote": keep a non-conforming node as session memory


@dataclass
class ProposalResult:
    accepted: bool
    operation: str
    node: Node | None = None
    created: bool = False
    reason: str | None = None
    message: str = ""
    requires_confirmation: bool = False
    notes: list[str] = field(default_factory=list)
    superseded_id: int | None = None
    conflict_node_id: int | None = None

    @property
    def node_id(self) -> int | None:
        return self.node.pk if self.node is not None else None


class _Refused(Exception):
    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


def _check_policy(principal: Principal, data: NodeInput) -> None:
    scope = data.scope
    if scope == Scope.GLOBAL and not principal.is_admin:
        raise _Refused("global_admin_only", "global memory is written by team admins only")
    try:
        principal.check_write_scope(scope)
    except AccessDenied as denied:
        raise _Refused("scope_not_allowed", str(denied)) from None
    if scope == Scope.WORKSPACE and data.type not in WORKSPACE_TYPES:
        raise _Refused(
            "type_not_allowed_in_scope",
            f"workspace memory holds facts, constraints, decisions, tasks and skills, not {data.type}s",
        )
    if scope == Scope.USER and principal.kind == "agent" and not data.explicit:
        raise _Refused(
            "explicit_intent_required",
            "user memory needs the end user's explicit words; set explicit_user_intent, or use session scope",
        )
    if scope == Scope.USER and principal.kind == "agent" and not data.source_message_ids:
        raise _Refused("source_required", "user memory must name the message the user said it in (source_message_ids)")


# Secrets and identifiers are not kept beyond the session without confirmation (seed 000
# 权限和确认策略: 写入或删除敏感信息 needs confirmation).
_SENSITIVE = re.compile(
    r"(?<!\d)(?:\d[ -]?){13,19}(?!\d)|(?<!\d)1[3-9]\d{9}(?!\d)|(?<!\d)\d{17}[\dXx](?!\d)"
    r"|密码|口令|验证码|身份证|银行卡|信用卡|\b(password|passcode|pin code|credit card|ssn|social security|api key)\b",
    re.IGNORECASE,
)


def _check_sensitive(proposal: Proposal, data: NodeInput) -> None:
    if data.scope == Scope.SESSION or proposal.confirm:
        return
    text = " ".join([data.title, data.content, json.dumps(data.value_json, ensure_ascii=False)])
    if _SENSITIVE.search(text):
        raise _Refused("sensitive_needs_confirmation",
                       "this looks like a secret or an identifier; ask the user, then repeat with confirm=true")


def _check_target(principal: Principal, target: Node) -> None:
    """The caller may change this node at all (its scope, under the same rules as a write)."""
    if target.scope == Scope.GLOBAL and not principal.is_admin:
        raise _Refused("global_admin_only", "global memory is changed by team admins only")
    try:
        principal.check_write_scope(target.scope)
    except AccessDenied as denied:
        raise _Refused("scope_not_allowed", str(denied)) from None


def _normalised_input(principal: Principal, proposal: Proposal, fields: dict[str, Any], *,
                      confirmed: bool = False) -> tuple[NodeInput, Normalized]:
    """Normalise, then validate (400), then apply the schema verdict (refuse or demote).
    `confirmed`: a person confirmed the write, which stands for the user's explicit words in the
    schema's check (seed 000 权限和确认策略); the node's `explicit` stays the proposal's."""
    normalized = schema_normalize(team=principal.team, node=fields, explicit=proposal.explicit_user_intent or confirmed,
                                  workspace_id=proposal.workspace_id)
    known = set(NodeInput.__dataclass_fields__) - {"explicit", "cardinality"}
    owner = {"workspace_id": proposal.workspace_id, "user_id": proposal.user_id, "session_id": proposal.session_id}
    values = {**owner, **{name: value for name, value in normalized.node.items() if name in known}}
    if values.get("type") == NodeType.CONSTRAINT:
        # A constraint said without an importance is one to respect (an allergy): it goes into a
        # tight block first (limits.CRITICAL_IMPORTANCE); a newcomer's allergy proposed without
        # one was injected third, behind two likes.
        values.setdefault("importance", limits.CRITICAL_IMPORTANCE)
    data = validate_node_input(NodeInput(**values, explicit=proposal.explicit_user_intent,
                                         cardinality=normalized.cardinality))
    if data.expires_at is not None and data.expires_at <= timezone.now():
        raise InvalidInput("expires_at is in the past: an expired memory would replace nothing but the current one",
                           fields={"node.expires_at": ["must be in the future"]})
    if normalized.problem is not None:
        data = _demote(proposal, data, normalized.problem)
        normalized.notes.append(f"demoted to session scope: {normalized.problem.message}")
    return data, normalized


def _demote(proposal: Proposal, data: NodeInput, problem: Problem) -> NodeInput:
    if proposal.on_nonconforming != "demote":
        raise _Refused(problem.reason, problem.message)
    if data.scope == Scope.SESSION:
        return data
    if not data.session_id:
        raise _Refused(problem.reason, f"{problem.message} (demotion to session scope needs session_id)")
    return replace(data, scope=Scope.SESSION)


def _corrected(principal: Principal, data: NodeInput) -> list[Node]:
    """For a node of type correction: the active nodes of the same owner, domain and key it may
    correct (looked up without creating anything)."""
    if data.type != NodeType.CORRECTION or not data.key:
        return []
    nodes = Node.objects.filter(team=principal.team, status=NodeStatus.ACTIVE, scope=data.scope, domain=data.domain,
                                key=data.key).exclude(type=NodeType.CORRECTION)
    if data.scope == Scope.SESSION:
        nodes = nodes.filter(session__external_id=data.session_id, session__workspace_id=data.workspace_id,
                             session__user_id=data.user_id)
    else:
        nodes = nodes.filter(session=None, workspace_id=data.workspace_id if data.scope == Scope.WORKSPACE else "",
                             user_id=data.user_id if data.scope == Scope.USER else "")
    return list(nodes.order_by("-updated_at", "-pk")[:2])


def _correct(principal: Principal, proposal: Proposal, data: NodeInput, targets: list[Node]) -> ProposalResult:
    """A correction supersedes the one active node of its key, as a node of that node's type
    (normalised and checked again as such)."""
    if len(targets) > 1:
        raise _Refused("correction_ambiguous", f"{data.key} holds several values; supersede one by target_id")
    target = targets[0]
    _check_target(principal, target)
    fields = {**proposal.node, "type": target.type, "scope": data.scope}
    corrected, normalized = _normalised_input(principal, proposal, fields)
    _check_policy(principal, corrected)
    new = node_supersede(principal=principal, old_node_id=target.pk, data=corrected,
                         reason=proposal.reason or "correction", workspace_id=proposal.workspace_id)
    return ProposalResult(accepted=True, operation="create", node=new, created=True, reason="corrected",
                          message=f"corrected node {target.pk}", notes=[*normalized.notes, f"type correction → {target.type}"],
                          superseded_id=target.pk)


def _create(principal: Principal, proposal: Proposal) -> ProposalResult:
    if proposal.target_id is not None:
        raise InvalidInput("target_id is for update and supersede, not create", fields={"target_id": ["not for create"]})
    data, normalized = _normalised_input(principal, proposal, dict(proposal.node))
    demoted = normalized.problem is not None
    _check_policy(principal, data)
    _check_sensitive(proposal, data)
    targets = _corrected(principal, data)
    if targets:
        return _correct(principal, proposal, data, targets)
    twin = twin_of(principal, data)
    if twin is not None:
        return ProposalResult(accepted=True, operation="create", node=twin, reason="duplicate", notes=normalized.notes,
                              message=f"already remembered as node {twin.pk}, from the same message")
    with transaction.atomic():
        result = node_upsert(principal=principal, data=data, reason=proposal.reason,
                             on_conflict=normalized.on_conflict, confirm=proposal.confirm)
        absorbed = absorb_capture_twins(principal, result.node) if result.created else []
    if result.conflict is not None:
        return ProposalResult(
            accepted=False, operation="create", reason="conflict", requires_confirmation=True,
            conflict_node_id=result.conflict.pk, notes=normalized.notes,
            message=f"node {result.conflict.pk} holds another value for {data.key}; confirm to supersede it",
        )
    if demoted:
        reason = "demoted_to_session"
    elif result.superseded is not None:
        reason = "superseded"
    else:
        reason = None if result.created or result.changed else "duplicate"
    message = "created" if result.created else ("updated" if result.changed else "already remembered")
    if result.cited:
        message += f"; now also cites message{'s' if len(result.cited) > 1 else ''} {', '.join(map(str, result.cited))}"
    if not result.created and data.source_message_ids:  # a repeat: linked, or the cap held it back
        held = set(result.node.source_message_ids)
        if any(message_id not in held for message_id in data.source_message_ids):
            message += f"; it cites {len(held)} messages, the most a memory keeps: the others were not linked"
    if result.superseded is not None:
        message = f"superseded node {result.superseded.pk}"
    if absorbed:
        message += f"; node{'s' if len(absorbed) > 1 else ''} {', '.join(map(str, absorbed))} that capture wrote " \
                   f"from the same message merged into it"
    return ProposalResult(accepted=True, operation="create", node=result.node, created=result.created, reason=reason,
                          message=message, notes=normalized.notes,
                          superseded_id=result.superseded.pk if result.superseded is not None else None)


def _identity_changes(node: Node, fields: dict[str, Any]) -> list[str]:
    current = {"scope": node.scope, "type": node.type, "domain": node.domain, "key": node.key,
               "value_json": node.value_json}
    changed = []
    for name in IDENTITY_FIELDS:
        if name in fields:
            value = canonical_json(fields[name]) if name == "value_json" and fields[name] is not None else fields[name]
            if value != current[name]:
                changed.append(name)
    return changed


def _update(principal: Principal, proposal: Proposal, target: Node) -> ProposalResult:
    changed = _identity_changes(target, proposal.node)
    if changed:
        raise InvalidInput(
            f"update cannot change {', '.join(changed)}; use operation 'supersede'",
            fields={f"node.{name}": ["use supersede"] for name in changed},
        )
    fixed = sorted(set(proposal.node) - set(DESCRIPTIVE_FIELDS) - set(IDENTITY_FIELDS))
    if fixed:
        raise InvalidInput(f"update cannot change {', '.join(fixed)}",
                           fields={f"node.{name}": ["cannot be updated"] for name in fixed})
    if not set(proposal.node) & set(DESCRIPTIVE_FIELDS):
        raise InvalidInput(f"nothing to update: give one of {', '.join(DESCRIPTIVE_FIELDS)}",
                           fields={"node": ["nothing to update"]})
    if target.scope == Scope.USER and principal.kind == "agent" and not (proposal.explicit_user_intent or target.explicit):
        raise _Refused("explicit_intent_required", "user memory changes need the end user's explicit words")
    changes = {name: value for name, value in proposal.node.items() if name in DESCRIPTIVE_FIELDS}
    node = node_update(principal=principal, node_id=target.pk, changes=changes, reason=proposal.reason,
                       expected_version=proposal.expected_version, workspace_id=proposal.workspace_id)
    return ProposalResult(accepted=True, operation="update", node=node, message="updated")


def _supersede(principal: Principal, proposal: Proposal, target: Node, *, confirmed: bool = False) -> ProposalResult:
    overrides = {name: value for name, value in proposal.node.items() if name in NodeInput.__dataclass_fields__}
    context = {"workspace_id": proposal.workspace_id, "user_id": proposal.user_id, "session_id": proposal.session_id}
    merged = asdict(supersede_input(target, overrides, context))
    owner = {name: merged.pop(name) for name in ("workspace_id", "user_id", "session_id")}
    data, normalized = _normalised_input(principal, replace(proposal, **owner), merged, confirmed=confirmed)
    _check_policy(principal, data)
    _check_sensitive(proposal, data)
    node = node_supersede(principal=principal, old_node_id=target.pk, data=data, reason=proposal.reason,
                          workspace_id=proposal.workspace_id)
    return ProposalResult(accepted=True, operation="supersede", node=node, created=True, notes=normalized.notes,
                          message=f"superseded node {target.pk}", superseded_id=target.pk)


def proposal_apply(*, principal: Principal, proposal: Proposal) -> ProposalResult:
    """Validate a proposed memory write and apply it, or say why not (R-TOOLS; see module doc),
    and record the outcome for the KPIs (memory.services.outcomes).

    Returns ProposalResult; raises InvalidInput, NotFound, Conflict, AccessDenied (a workspace
    outside the key's limit, before anything else), which leave no outcome.
    """
    result = _proposal_apply(principal, proposal)
    _record_outcome(principal, proposal, result)
    return result


def _record_outcome(principal: Principal, proposal: Proposal, result: ProposalResult, *,
                    applied: bool = True) -> None:
    accepted, reason = result.accepted, result.reason
    if accepted and not applied:
        accepted, reason = False, NOT_APPLIED
    workspace_id = proposal.workspace_id or (result.node.workspace_id if result.node is not None else "")
    proposal_outcome_record(principal=principal, operation=result.operation, accepted=accepted, reason=reason,
                            workspace_id=workspace_id, user_id=proposal.user_id)


def _proposal_apply(principal: Principal, proposal: Proposal) -> ProposalResult:
    if proposal.operation not in OPERATIONS:
        raise InvalidInput(f"unknown operation {proposal.operation!r}", fields={"operation": ["invalid choice"]})
    principal.check_workspace(proposal.workspace_id)
    try:
        if proposal.operation == "create":
            return _create(principal, proposal)
        target = node_of_owner(principal=principal, node_id=proposal.target_id, owner=Owner(
            workspace_id=proposal.workspace_id, user_id=proposal.user_id, session_id=proposal.session_id))
        _check_target(principal, target)
        if proposal.operation == "update":
            return _update(principal, proposal, target)
        if proposal.operation == "supersede":
            return _supersede(principal, proposal, target)
        if proposal.operation == "expire":
            node = node_expire(principal=principal, node_id=target.pk, reason=proposal.reason,
                               workspace_id=proposal.workspace_id)
            return ProposalResult(accepted=True, operation="expire", node=node, message=f"node {target.pk} expired")
        node_delete(principal=principal, node_id=target.pk, mode="soft", reason=proposal.reason,
                    workspace_id=proposal.workspace_id)
        return ProposalResult(accepted=True, operation="delete", node=node_get(principal=principal, node_id=target.pk),
                              message=f"node {target.pk} forgotten (soft); memory_forget can erase it")
    except _Refused as refused:
        return ProposalResult(accepted=False, operation=proposal.operation, reason=refused.reason,
                              message=refused.message)


class _NotApplied(Exception):
    """Rolls the batch's transaction back after a refusal."""


def extraction_apply(*, principal: Principal, proposals: list[Proposal]) -> tuple[bool, list[ProposalResult]]:
    """Apply a MemoryExtraction: every proposal validated like memory_propose_update, all in one
    transaction, all or nothing (R-EXTRACT, R-TOOLS).

    Returns (applied, results), one result per proposal in order. When any proposal is
    refused or needs confirmation, nothing is written: applied is False and the accepted
    results lose their node. Malformed input raises InvalidInput with field paths
    `operations[i].…`; NotFound, Conflict and AccessDenied name the operation in the message.
    Each proposal's outcome is recorded once the batch is decided; a proposal accepted on its
    own in a batch that was not applied counts as refused with NOT_APPLIED.
    """
    results: list[ProposalResult] = []
    try:
        with transaction.atomic():
            for index, proposal in enumerate(proposals):
                try:
                    results.append(_proposal_apply(principal, proposal))
                except MemoryError as error:
                    fields = {f"operations[{index}].{name}": problems for name, problems in (error.fields or {}).items()}
                    raise type(error)(f"operations[{index}]: {error.message}", fields=fields or None) from None
                except AccessDenied as denied:
                    raise AccessDenied(f"operations[{index}]: {denied}") from None
            if not all(result.accepted for result in results):
                raise _NotApplied
    except _NotApplied:
        # Outcomes are recorded after the rollback, so that the refusals are counted.
        for proposal, result in zip(proposals, results, strict=True):
            _record_outcome(principal, proposal, result, applied=False)
            if result.accepted:
                result.node = None
                result.message = f"not applied: {result.message}"
        return False, results
    for proposal, result in zip(proposals, results, strict=True):
        _record_outcome(principal, proposal, result)
    return True, results
