"""Budget policies admins set per team and per workspace (seed 004 §7 配置项 and §10
preInject; R-CTX). Imported by memory.models to register the model.

A row with workspace_id "" is the team-wide policy; any other row is one workspace's. Every
setting is nullable: None inherits from the level below (workspace → team → environment →
built-in default, memory.selectors.budget). Ranges are in memory.limits (POLICY_RANGES);
memory.services.policies checks them before anything is saved.
"""

from django.db import models
from django.utils import timezone
from django_scopes import ScopedManager

from accounts.models import Team

LAYER_NAMES = ("L0", "L1", "L2", "L3", "L4", "L5")
LAYER_SWITCHES = tuple(f"{layer.lower()}_enabled" for layer in LAYER_NAMES)
LAYER_CHARS = tuple(f"{layer.lower()}_chars" for layer in LAYER_NAMES)
# Every setting of a policy, in the order the API reports them.
POLICY_FIELDS = ("enabled", "top_n", "max_chars", "recent_messages", "min_confidence", "summary_enabled",
                 *LAYER_SWITCHES, *LAYER_CHARS)
BOOLEAN_FIELDS = frozenset({"enabled", "summary_enabled", *LAYER_SWITCHES})


class BudgetPolicy(models.Model):
    """The pre-injection budget an admin set for a team ("" workspace) or one workspace.

    Sizes are characters (Unicode code points). `lN_chars` caps layer LN's share of the
    block; None means no cap beyond max_chars. `summary_enabled` switches the conversation
    window's summary (L3) on or off. `updated_by` is the audit actor of the last change.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    workspace_id = models.CharField(max_length=128, blank=True, default="")

    enabled = models.BooleanField(null=True, blank=True)
    top_n = models.PositiveIntegerField(null=True, blank=True)
    max_chars = models.PositiveIntegerField(null=True, blank=True)
    recent_messages = models.PositiveIntegerField(null=True, blank=True)
    min_confidence = models.FloatField(null=True, blank=True)
    summary_enabled = models.BooleanField(null=True, blank=True)
    l0_enabled = models.BooleanField(null=True, blank=True)
    l1_enabled = models.BooleanField(null=True, blank=True)
    l2_enabled = models.BooleanField(null=True, blank=True)
    l3_enabled = models.BooleanField(null=True, blank=True)
    l4_enabled = models.BooleanField(null=True, blank=True)
    l5_enabled = models.BooleanField(null=True, blank=True)
    l0_chars = models.PositiveIntegerField(null=True, blank=True)
    l1_chars = models.PositiveIntegerField(null=True, blank=True)
    l2_chars = models.PositiveIntegerField(null=True, blank=True)
    l3_chars = models.PositiveIntegerField(null=True, blank=True)
    l4_chars = models.PositiveIntegerField(null=True, blank=True)
    l5_chars = models.PositiveIntegerField(null=True, blank=True)

    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.CharField(max_length=200, blank=True, default="")

    objects = ScopedManager(team="team")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "workspace_id"], name="budget_policy_team_workspace_unique"),
            models.CheckConstraint(
                condition=models.Q(min_confidence__isnull=True)
                | models.Q(min_confidence__gte=0, min_confidence__lte=1),
                name="budget_policy_min_confidence_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.team_id}:{self.workspace_id or '(team)'}"

    def settings(self) -> dict[str, bool | int | float | None]:
        """Every setting as stored, None where it inherits."""
        return {name: getattr(self, name) for name in POLICY_FIELDS}
