"""Keeping what a user said in one conversation as the user's own memory (R-UI review; seed 000
权限和确认策略): a person confirms in place of the user's explicit words. The supersede goes
through memory.services.proposals like an agent's, with its checks and its outcome ledger.
"""

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.principal import AccessDenied, Principal
from memory.errors import Conflict
from memory.models import Message, MessageRole, Node, NodeStatus, Scope
from memory.selectors.conflicts import conflict_losers
from memory.selectors.nodes import Owner, node_get
from memory.services.maintenance import nodes_expire_due
from memory.services.proposals import (
    Proposal,
    ProposalResult,
    _check_target,
    _record_outcome,
    _Refused,
    _supersede,
)


def keep_for_user(*, principal: Principal, node_id: int, reason: str = "", confirm: bool = False) -> ProposalResult:
    """Keep what a user said in one conversation as the user's own memory, which all their
    conversations reach: a person's confirmation in place of the user's explicit words (seed 000
    权限和确认策略: user memory the user did not ask to keep — no 记住, 以后都 — needs
    confirmation; R-UI review). Capture keeps such a statement ("我对虾过敏") in its session.

    The active session memory `node_id` is superseded by a user-scope copy (the same fields,
    sources and `explicit`; owner: the conversation's user, no session), audited as a supersede
    with `reason`. Every other check of a supersede holds: the schema (the confirmation answers
    its explicit-intent rule), the scope policy, secrets and identifiers (sensitive_needs_confirmation
    until `confirm`), slots. Only a login confirms: an agent asks the user, then proposes the
    memory with explicit_user_intent and the user's answer as its source. Counted in the
    proposal-outcome ledger like a supersede. Forgetting the conversation's version by its id
    takes the kept copy along (memory.services.forgetting).

    Returns the ProposalResult (accepted false with a REFUSALS reason when the schema, the policy
    or the sensitive check refuses). Raises NotFound (no such node in the team), AccessDenied (an
    agent; a login that may not write user memory), Conflict (409, nothing written): not an
    active session memory of a user; a passing state (expires_at: it stays in its conversation);
    no message of the user among its sources; the user's memory already says it (unexpired) or
    holds the slot; or another memory would win over the kept one in the conversation it was said
    in, one that did not already win over the conversation's version (memory.selectors.conflicts:
    correct that one instead).
    """
    if principal.kind != "user":
        raise AccessDenied("a person confirms this: an agent asks the user, then proposes the memory "
                           "with explicit_user_intent and the user's answer as its source")
    target = node_get(principal=principal, node_id=node_id)
    session = target.session
    if target.scope != Scope.SESSION or target.status != NodeStatus.ACTIVE or session is None:
        raise Conflict(f"node {target.pk} is {target.status} {target.scope} memory: "
                       "only an active memory of one conversation can be kept for its user")
    if not session.user_id:
        raise Conflict(f"node {target.pk} is from a conversation without a user_id: there is no user to keep it for")
    principal.check_workspace(session.workspace_id)  # before anything is written, the expiry sweep included
    if target.expires_at is not None:
        raise Conflict(f"node {target.pk} is a passing state (until {target.expires_at:%Y-%m-%d %H:%M %Z}): "
                       "it stays in its conversation")
    if not Message.objects.filter(pk__in=target.source_message_ids, role=MessageRole.USER).exists():
        raise Conflict(f"node {target.pk} names no message the user said it in, which user memory must")
    now = timezone.now()
    nodes_expire_due(team=principal.team, now=now)  # a user memory over but not yet swept holds its slot
    if target.key:
        said = Node.objects.filter(team=principal.team, scope=Scope.USER, user_id=session.user_id,
                                   status=NodeStatus.ACTIVE, domain=target.domain, key=target.key,
                                   value_hash=target.value_hash).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)).values_list("pk", flat=True).first()
        if said is not None:
            raise Conflict(f"{session.user_id}'s memory {said} already says this: nothing to keep")
    node = {"scope": Scope.USER, "source_message_ids": target.source_message_ids}
    proposal = Proposal(operation="supersede", target_id=target.pk, node=node,
                        reason=reason or "kept for the user: confirmed in review", workspace_id=session.workspace_id,
                        user_id=session.user_id, explicit_user_intent=target.explicit, confirm=confirm)
    owner = Owner(workspace_id=session.workspace_id, user_id=session.user_id, session_id=session.external_id)
    try:
        _check_target(principal, target)
        with transaction.atomic():
            # What outranks it in its conversation now (a passing constraint) may outrank the copy too.
            before = conflict_losers(principal=principal, nodes=[target], owner=owner, session=session, now=now)
            result = _supersede(principal, proposal, target, confirmed=True)
            _check_kept_wins(principal, result.node, owner, session, already=before.get(target.pk))
    except _Refused as refused:
        result = ProposalResult(accepted=False, operation="supersede", reason=refused.reason, message=refused.message)
    _record_outcome(principal, proposal, result)
    return result


def _check_kept_wins(principal: Principal, kept: Node, owner: Owner, session, *, already: int | None) -> None:
    """Conflict (rolling the keep back) when another memory the conversation reaches would win
    over `kept` there — a workspace's value of the key, the user's own stated one — unless it
    already won over the conversation's version (`already`: a passing constraint, say)."""
    winner = conflict_losers(principal=principal, nodes=[kept], owner=owner, session=session,
                             now=timezone.now()).get(kept.pk)
    if winner is not None and winner != already:
        rival = Node.objects.get(team=principal.team, pk=winner)
        raise Conflict(f"{rival.scope} memory {winner} ({rival.title}) would still win over it in the conversation it "
                       f"was said in: correct that one instead")
