"""memory_propose_update, first form: create, update and supersede with field validation,
the scope write policy and source binding (seed 000 按需 Memory Tool, 权限和确认策略; R-TOOLS, R-TEN).

Write policy by scope (R-TEN):
- session: always;
- workspace: facts, constraints, decisions, tasks and skills;
- user: only what the end user stated explicitly (`explicit_user_intent`), for agents;
- global: team admins only (a login admin or an admin key), never an agent key.
A principal's own limits (writable scopes, workspaces) apply on top.

An agent's user-scope write must also name the message(s) the user said it in
(`source_message_ids`). A policy refusal is an answer, not an error: `accepted=false` with a
reason code — `scope_not_allowed`, `global_admin_only`, `type_not_allowed_in_scope`,
`explicit_intent_required`, `source_required`. The target of an update or supersede must be
writable by the caller under the same rules. Malformed input raises InvalidInput (400); an unknown target
raises NotFound (404); a target that is no longer active raises Conflict (409).
"""

from dataclasses import dataclass, field
from typing import Any

from accounts.principal import AccessDenied, Principal
from memory.errors import InvalidInput
from memory.models import Node, NodeType, Scope
from memory.selectors.nodes import node_get
from memory.services.nodes import (
    DESCRIPTIVE_FIELDS,
    NodeInput,
    canonical_json,
    node_supersede,
    node_update,
    node_upsert,
    supersede_input,
    validate_node_input,
)

WORKSPACE_TYPES = frozenset({NodeType.FACT, NodeType.CONSTRAINT, NodeType.DECISION, NodeType.TASK, NodeType.SKILL})
IDENTITY_FIELDS = ("scope", "type", "domain", "key", "value_json")


@dataclass(frozen=True)
class Proposal:
    operation: str  # create | update | supersede
    node: dict[str, Any]
    reason: str = ""
    target_id: int | None = None
    workspace_id: str = ""
    user_id: str = ""
    session_id: str = ""
    explicit_user_intent: bool = False
    expected_version: int | None = None


@dataclass
class ProposalResult:
    accepted: bool
    operation: str
    node: Node | None = None
    created: bool = False
    reason: str | None = None
    message: str = ""
    requires_confirmation: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def node_id(self) -> int | None:
        return self.node.pk if self.node is not None else None


class _Refused(Exception):
    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


def _check_policy(
    principal: Principal, *, scope: str, node_type: str, explicit: bool, sources: bool = True
) -> None:
    if scope == Scope.GLOBAL and not principal.is_admin:
        raise _Refused("global_admin_only", "global memory is written by team admins only")
    try:
        principal.check_write_scope(scope)
    except AccessDenied as denied:
        raise _Refused("scope_not_allowed", str(denied)) from None
    if scope == Scope.WORKSPACE and node_type not in WORKSPACE_TYPES:
        raise _Refused(
            "type_not_allowed_in_scope",
            f"workspace memory holds facts, constraints, decisions, tasks and skills, not {node_type}s",
        )
    if scope == Scope.USER and principal.kind == "agent" and not explicit:
        raise _Refused(
            "explicit_intent_required",
            "user memory needs the end user's explicit words; set explicit_user_intent, or use session scope",
        )
    if scope == Scope.USER and principal.kind == "agent" and not sources:
        raise _Refused(
            "source_required",
            "user memory must name the message the user said it in (source_message_ids)",
        )


def _check_target(principal: Principal, target: Node) -> None:
    """The caller may change this node at all (its scope, under the same rules as a write)."""
    if target.scope == Scope.GLOBAL and not principal.is_admin:
        raise _Refused("global_admin_only", "global memory is changed by team admins only")
    try:
        principal.check_write_scope(target.scope)
    except AccessDenied as denied:
        raise _Refused("scope_not_allowed", str(denied)) from None


def _node_input(proposal: Proposal) -> NodeInput:
    known = set(NodeInput.__dataclass_fields__)
    data = {name: value for name, value in proposal.node.items() if name in known}
    return NodeInput(
        **data,
        explicit=proposal.explicit_user_intent,
        workspace_id=proposal.workspace_id,
        user_id=proposal.user_id,
        session_id=proposal.session_id,
    )


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


def proposal_apply(*, principal: Principal, proposal: Proposal) -> ProposalResult:
    """Validate a proposed memory write and apply it, or say why not (R-TOOLS).

    Returns ProposalResult; raises InvalidInput, NotFound, Conflict, AccessDenied (a workspace
    outside the key's limit, before anything else).
    """
    principal.check_workspace(proposal.workspace_id)
    try:
        if proposal.operation == "create":
            if proposal.target_id is not None:
                raise InvalidInput("target_id is for update and supersede, not create", fields={"target_id": ["not for create"]})
            data = validate_node_input(_node_input(proposal))  # malformed input is a 400 before any policy
            _check_policy(principal, scope=data.scope, node_type=data.type, explicit=proposal.explicit_user_intent,
                          sources=bool(data.source_message_ids))
            result = node_upsert(principal=principal, data=data, reason=proposal.reason)
            message = "created" if result.created else ("updated" if result.changed else "already remembered")
            return ProposalResult(
                accepted=True, operation="create", node=result.node, created=result.created,
                reason=None if result.created or result.changed else "duplicate", message=message,
            )
        target = node_get(principal=principal, node_id=proposal.target_id)
        _check_target(principal, target)
        if proposal.operation == "update":
            changed = _identity_changes(target, proposal.node)
            if changed:
                raise InvalidInput(
                    f"update cannot change {', '.join(changed)}; use operation 'supersede'",
                    fields={f"node.{name}": ["use supersede"] for name in changed},
                )
            fixed = sorted(set(proposal.node) - set(DESCRIPTIVE_FIELDS) - set(IDENTITY_FIELDS))
            if fixed:
                raise InvalidInput(
                    f"update cannot change {', '.join(fixed)}", fields={f"node.{name}": ["cannot be updated"] for name in fixed}
                )
            if not set(proposal.node) & set(DESCRIPTIVE_FIELDS):
                raise InvalidInput(
                    f"nothing to update: give one of {', '.join(DESCRIPTIVE_FIELDS)}", fields={"node": ["nothing to update"]}
                )
            _check_policy(principal, scope=target.scope, node_type=target.type,
                          explicit=proposal.explicit_user_intent or target.explicit, sources=True)
            changes = {name: value for name, value in proposal.node.items() if name in DESCRIPTIVE_FIELDS}
            node = node_update(
                principal=principal, node_id=target.pk, changes=changes, reason=proposal.reason,
                expected_version=proposal.expected_version, workspace_id=proposal.workspace_id,
            )
            return ProposalResult(accepted=True, operation="update", node=node, message="updated")
        if proposal.operation == "supersede":
            overrides = {name: value for name, value in proposal.node.items() if name in NodeInput.__dataclass_fields__}
            overrides["explicit"] = proposal.explicit_user_intent
            data = validate_node_input(supersede_input(
                target, overrides,
                {"workspace_id": proposal.workspace_id, "user_id": proposal.user_id, "session_id": proposal.session_id},
            ))
            _check_policy(principal, scope=data.scope, node_type=data.type, explicit=proposal.explicit_user_intent,
                          sources=bool(data.source_message_ids))
            node = node_supersede(
                principal=principal, old_node_id=target.pk, data=data, reason=proposal.reason,
                workspace_id=proposal.workspace_id,
            )
            return ProposalResult(accepted=True, operation="supersede", node=node, created=True,
                                  message=f"superseded node {target.pk}")
    except _Refused as refused:
        return ProposalResult(accepted=False, operation=proposal.operation, reason=refused.reason,
                              message=refused.message)
    raise InvalidInput(f"unknown operation {proposal.operation!r}", fields={"operation": ["invalid choice"]})
