"""L0 foundation (seed 004 L0 基础层): instructions an admin pins for the whole team or one
workspace, injected first in every context call. Imported by memory.models."""

from django.db import models
from django.utils import timezone
from django_scopes import ScopedManager

from accounts.models import Team


class PinnedInstructions(models.Model):
    """The pinned text of the team (workspace_id "") or of one workspace."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    workspace_id = models.CharField(max_length=128, blank=True, default="")
    text = models.TextField()
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.CharField(max_length=200, blank=True, default="")

    objects = ScopedManager(team="team")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "workspace_id"], name="pinned_instructions_unique")]
