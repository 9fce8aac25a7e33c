"""Pinning L0 instructions (seed 004 L0; R-CTX): team admins set the text injected first in
every context call, for the team (workspace_id "") or one workspace. Audited."""

from django.db import transaction
from django.utils import timezone

from accounts.principal import AccessDenied, Principal
from memory import limits
from memory.instruction_models import PinnedInstructions
from memory.services.audit import audit_record
from memory.validation import clean_identity, clean_text


def instructions_set(*, principal: Principal, workspace_id: str = "", text: str) -> PinnedInstructions | None:
    """Pin `text` (at most limits.INSTRUCTIONS_MAX characters; "" removes the pin). Returns
    the row, or None once removed. Raises AccessDenied (not a team admin, or a workspace
    outside a key's limit) and InvalidInput. Audited as memory.instructions.updated (the
    text's length, not the text)."""
    if not principal.is_admin:
        raise AccessDenied("team admins only")
    workspace_id = clean_identity(workspace_id, field="workspace_id")
    principal.check_workspace(workspace_id)
    text = clean_text(text, field="text", max_length=limits.INSTRUCTIONS_MAX).strip()
    with transaction.atomic():
        row = PinnedInstructions.objects.select_for_update().filter(team=principal.team,
                                                                     workspace_id=workspace_id).first()
        before = len(row.text) if row is not None else 0
        if not text:
            if row is not None:
                row.delete()
            row = None
        else:
            row = row or PinnedInstructions(team=principal.team, workspace_id=workspace_id)
            row.text, row.updated_at, row.updated_by = text, timezone.now(), principal.actor
            row.save()
        audit_record(principal=principal, event_type="memory.instructions.updated", workspace_id=workspace_id,
                     payload={"chars_before": before, "chars_after": len(text)})
    return row
