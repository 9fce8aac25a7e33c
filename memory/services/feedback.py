"""An agent's feedback on a context call: which injected memories its answer used (R-CTX hit
ledger; issue 5 item 4; seed 004 §7.3 — the used-rate KPI)."""

from django.db import transaction
from django.utils import timezone

from accounts.principal import Principal
from memory import limits
from memory.errors import InvalidInput
from memory.kpi_models import RetrievalFeedback
from memory.models import Retrieval
from memory.selectors.retrievals import retrieval_get
from memory.services.audit import audit_record
from memory.validation import clean_text


def retrieval_feedback_set(*, principal: Principal, retrieval_id: int, used_node_ids: list[int],
                           helpful: bool | None = None, note: str = "") -> tuple[RetrievalFeedback, bool]:
    """Store the feedback on retrieval `retrieval_id`, replacing an earlier one; returns
    (feedback, created). `used_node_ids` must be nodes that call injected (its used_node_ids;
    repeats are dropped, order kept); `note` at most limits.FEEDBACK_NOTE_MAX characters.

    Audited as `memory.retrieval.feedback` (payload: retrieval id, used ids, helpful, whether it
    replaced one; the note stays on the row only). Raises NotFound as GET /retrievals/{id}
    does (another team's, or outside a key's workspaces), InvalidInput naming the ids that
    were not injected.
    """
    clean_text(note, field="note", max_length=limits.FEEDBACK_NOTE_MAX)
    used = list(dict.fromkeys(used_node_ids))
    retrieval = retrieval_get(principal=principal, retrieval_id=retrieval_id)
    injected = set(retrieval.used_node_ids)
    stray = [pk for pk in used if pk not in injected]
    if stray:
        listed = ", ".join(str(pk) for pk in stray)
        message = f"not injected by retrieval {retrieval.pk}: {listed}"
        raise InvalidInput(f"used_node_ids {message}", fields={"used_node_ids": [message]})
    now = timezone.now()
    with transaction.atomic():
        Retrieval.objects.select_for_update().filter(pk=retrieval.pk).first()  # one report at a time per call
        feedback, created = RetrievalFeedback.objects.update_or_create(
            retrieval=retrieval,
            defaults={"used_node_ids": used, "helpful": helpful, "note": note, "actor": principal.actor,
                      "agent_key": principal.agent_key, "updated_at": now},
            create_defaults={"team": principal.team, "used_node_ids": used, "helpful": helpful, "note": note,
                             "actor": principal.actor, "agent_key": principal.agent_key, "created_at": now,
                             "updated_at": now},
        )
        audit_record(principal=principal, event_type="memory.retrieval.feedback", session=retrieval.session,
                     workspace_id=retrieval.workspace_id, user_id=retrieval.user_id,
                     payload={"retrieval_id": retrieval.pk, "used_node_ids": used, "helpful": helpful,
                              "replaced": not created})
    return feedback, created
