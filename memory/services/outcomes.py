"""The proposal-outcome ledger behind the KPIs (R-UI KPI page: proposals accepted and refused
by reason; seed 004 §7.3).

One ProposalOutcome per proposal that got an answer, written by memory.services.proposals:
accepted (with its ACCEPTED_REASONS code, or none) or refused (its REFUSALS code). A proposal
of an extraction batch that was refused as a whole because another one was refused is
recorded as refused with NOT_APPLIED. Malformed proposals (400) and errors (403, 404, 409)
are not outcomes. The source is "capture" for the background capture principal (role
"capture", memory.capture.jobs.capture_principal) and "api" for everyone else.
"""

import logging

from django.db import DatabaseError, transaction

from accounts.principal import Principal
from memory.kpi_models import OutcomeSource, ProposalOutcome

logger = logging.getLogger(__name__)

NOT_APPLIED = "batch_not_applied"  # accepted on its own, rolled back with a refused batch


def outcome_source(principal: Principal) -> str:
    return OutcomeSource.CAPTURE if principal.role == "capture" else OutcomeSource.API


def proposal_outcome_record(*, principal: Principal, operation: str, accepted: bool, reason: str | None,
                            workspace_id: str = "", user_id: str = "") -> ProposalOutcome | None:
    """Append one outcome row. A failure to write it is logged, never raised: the ledger must
    not fail (or, inside a caller's transaction, break) the write it counts, as the hit
    ledger does not fail a context call. Returns the row, or None when it could not be written."""
    try:
        with transaction.atomic():  # a savepoint inside a caller's transaction
            return ProposalOutcome.objects.create(
                team=principal.team, workspace_id=workspace_id, user_id=user_id, operation=operation,
                accepted=accepted, reason=reason or "", source=outcome_source(principal), actor=principal.actor,
            )
    except DatabaseError:
        logger.exception("proposals: could not record the outcome")
        return None
