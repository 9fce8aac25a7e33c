"""What the KPIs count beside the hit ledger (R-CTX, R-UI KPI page; seed 004 §7.3): the
agents' feedback on what a context call injected, and the outcome of every memory proposal.
Imported by memory.models to register the models.

Neither holds memory text: feedback keeps node ids and the agent's short note, an outcome
keeps the operation and its reason code, so forgetting a node leaves no copy of it here.
"""

from django.db import models
from django.utils import timezone
from django_scopes import ScopedManager

from accounts.models import AgentKey, Team


class RetrievalFeedback(models.Model):
    """An agent's report on one context call: which of the injected nodes its answer used
    (a subset of the retrieval's `used_node_ids`), whether the memory helped, and a note.
    One per retrieval; a repeated report replaces it (memory.services.feedback)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    retrieval = models.OneToOneField("memory.Retrieval", on_delete=models.CASCADE, related_name="feedback")
    used_node_ids = models.JSONField(default=list)
    helpful = models.BooleanField(null=True, blank=True)  # None: the agent did not say
    note = models.TextField(blank=True, default="")
    actor = models.CharField(max_length=200)
    agent_key = models.ForeignKey(AgentKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = ScopedManager(team="team")

    def __str__(self) -> str:
        return f"feedback on retrieval {self.retrieval_id}"


class OutcomeSource(models.TextChoices):
    API = "api", "An agent or user through memory_propose_update or an extraction batch"
    CAPTURE = "capture", "Background capture (the extractor's proposals)"


class ProposalOutcome(models.Model):
    """The outcome of one memory proposal (memory.services.proposals): accepted or refused,
    with the reason code (REFUSALS / ACCEPTED_REASONS; "" for a plain accepted write).
    Malformed proposals (400) and errors (403, 404, 409) are not outcomes and leave no row."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    workspace_id = models.CharField(max_length=128, blank=True, default="")
    user_id = models.CharField(max_length=128, blank=True, default="")
    operation = models.CharField(max_length=16)
    accepted = models.BooleanField()
    reason = models.CharField(max_length=64, blank=True, default="")
    source = models.CharField(max_length=16, choices=OutcomeSource.choices)
    actor = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    objects = ScopedManager(team="team")

    class Meta:
        indexes = [
            models.Index(fields=["team", "created_at"], name="proposal_outcome_team_idx"),
            models.Index(fields=["team", "workspace_id", "created_at"], name="proposal_outcome_ws_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.operation}:{'accepted' if self.accepted else 'refused'}:{self.reason}"
