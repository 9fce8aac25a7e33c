"""A session's working memory (seed 004 L4 临时工作记忆, §5.2; R-CTX). Imported by
memory.models to register the model.

The structured state of one conversation that the agent reads and writes between turns,
instead of flattening it into the question: the current goal, resolved references
({"它": "番茄炒蛋"}), clarification slots ({"cuisine": null, "people": 2}) and a scratchpad.
It lives and dies with its session: hidden while the session is soft-deleted, removed by a
hard forget (memory.services.forget). Writes: memory.services.working_memory; reads:
memory.selectors.working_memory.
"""

from django.db import models
from django.utils import timezone
from django_scopes import ScopedManager

from accounts.models import Team


class WorkingMemory(models.Model):
    """One session's working state; at most one row per session, created by the first write.

    `current_goal` ≤ limits.WORKING_GOAL_MAX and `scratchpad` ≤ limits.WORKING_SCRATCHPAD_MAX
    characters; `references` and `slots` are JSON objects of at most limits.WORKING_KEYS_MAX
    keys each. `version` counts the writes that changed something, from 1 (optimistic
    concurrency: a write may name the version it read). `updated_by` is the audit actor.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    session = models.OneToOneField("memory.Session", on_delete=models.CASCADE, related_name="working_memory")
    current_goal = models.TextField(blank=True, default="")
    references = models.JSONField(default=dict, blank=True)
    slots = models.JSONField(default=dict, blank=True)
    scratchpad = models.TextField(blank=True, default="")
    version = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.CharField(max_length=200, blank=True, default="")

    objects = ScopedManager(team="team")

    def __str__(self) -> str:
        return f"working memory of session {self.session_id} v{self.version}"

    @property
    def is_empty(self) -> bool:
        return not (self.current_goal or self.references or self.slots or self.scratchpad)
