"""The team synonym lexicon (seed 004 BusinessLexicon 同义词; R-QUERY): sets of equivalent terms
that expand a query deterministically. Imported by memory.models."""

from django.db import models
from django.utils import timezone
from django_scopes import ScopedManager

from accounts.models import Team


class LexiconSet(models.Model):
    """One set of equivalent terms (过敏 / 敏感 / allergy) of the team (workspace_id "") or of
    one workspace. `terms` is a list of distinct terms, each as memory.search.text.normalize
    gives it; `terms_key` (sha256 of the sorted terms) keeps a set from being stored twice at
    one level. Written by memory.services.lexicon only."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    workspace_id = models.CharField(max_length=128, blank=True, default="")
    terms = models.JSONField(default=list)
    terms_key = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.CharField(max_length=200, blank=True, default="")

    objects = ScopedManager(team="team")

    class Meta:
        verbose_name = "synonym set"
        constraints = [
            models.UniqueConstraint(fields=["team", "workspace_id", "terms_key"], name="lexicon_set_unique"),
        ]
        indexes = [models.Index(fields=["team", "workspace_id"], name="lexicon_set_team_ws_idx")]

    def __str__(self) -> str:
        return " / ".join(self.terms)


class LexiconVersion(models.Model):
    """How often the team's synonym sets changed: bumped in the transaction of every change
    (memory.services.lexicon, the importer), so a search checks for changes by one primary-key
    read instead of scanning the sets (memory.selectors.lexicon). No row: the team never had a set."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, primary_key=True, related_name="+")
    version = models.BigIntegerField(default=0)

    objects = ScopedManager(team="team")
