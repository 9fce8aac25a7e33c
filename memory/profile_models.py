"""The user profile document (seed 004 L2 长期用户记忆: the distiller's per-user summary and
content, versioned, with rollback; R-EXTRACT consolidation). Imported by memory.models to
register the models.

A version is built from the user's active user-scope nodes, one line per node. `lines`
keeps, for every line, the node it came from, so that forgetting a node for good can take
its line out of every version (memory.services.profiles.profile_forget_nodes); versions
are never deleted.
"""

from django.db import models
from django.utils import timezone
from django_scopes import ScopedManager

from accounts.models import Team


class ProfileReason(models.TextChoices):
    CONSOLIDATE = "consolidate", "Rebuilt from the user's memories"
    COMPACT = "compact", "Rebuilt, and compacted to the content budget"
    ROLLBACK = "rollback", "A copy of an earlier version"


class ProfileGenerator(models.TextChoices):
    RULES = "rules", "Laid out deterministically, one line per memory"
    LLM = "llm", "Written by the configured language model from the same lines"


class UserProfile(models.Model):
    """One end user's profile document: which version is current and when it was last
    consolidated. `last_consolidated_at` moves on every consolidation that looked at the
    user's memories, also when it found nothing new to write; the nodes changed after it
    are the notes that count towards limits.PROFILE_CONSOLIDATE_AT."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    user_id = models.CharField(max_length=128)
    current_version = models.PositiveIntegerField(default=0)  # 0: no version yet
    last_consolidated_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = ScopedManager(team="team")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user_id"], name="user_profile_unique")]

    def __str__(self) -> str:
        return f"{self.user_id} v{self.current_version}"


class UserProfileVersion(models.Model):
    """One version of a user's profile document; numbered from 1 per user, append-only.

    `summary` (≤ limits.PROFILE_SUMMARY_MAX characters) is the short form to inject;
    `content` (≤ limits.PROFILE_CONTENT_MAX characters) the full document, grouped by
    domain and category. `lines` is [{node_id, group, title, text, rank}] in document
    order; `source_node_ids` the nodes it was built from. `rolled_back_from` names the
    version a rollback copied.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    user_id = models.CharField(max_length=128)
    version = models.PositiveIntegerField()
    summary = models.TextField(blank=True, default="")
    content = models.TextField(blank=True, default="")
    lines = models.JSONField(default=list, blank=True)
    source_node_ids = models.JSONField(default=list, blank=True)
    reason = models.CharField(max_length=16, choices=ProfileReason.choices)
    generator = models.CharField(max_length=8, choices=ProfileGenerator.choices, default=ProfileGenerator.RULES)
    rolled_back_from = models.PositiveIntegerField(null=True, blank=True)
    actor = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)
    redacted_at = models.DateTimeField(null=True, blank=True)  # when a forgotten node's line was taken out

    objects = ScopedManager(team="team")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "user_id", "version"], name="user_profile_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user_id} v{self.version}"
