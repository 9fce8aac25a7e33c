"""Capture jobs: the background work a turn leaves behind, recorded in the database in the
same transaction as the messages that call for it, so a broker outage loses nothing
(R-EXTRACT; seed 000 失败和降级). Imported by memory.models to register the model."""

from django.db import models
from django.utils import timezone
from django_scopes import ScopedManager

from accounts.models import Team


class JobKind(models.TextChoices):
    CAPTURE = "capture", "Extract memories, roll the summary chain and consolidate, for a range of messages"


class JobStatus(models.TextChoices):
    # A job runs inside one transaction that holds its row: it is seen pending until its work
    # commits with it (done), so a crash mid-run leaves it pending for the sweep.
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"  # gave up after limits.CAPTURE_ATTEMPTS_MAX attempts; kept for the KPI page


class CaptureJob(models.Model):
    """One unit of background work. A capture job covers the session's messages
    (from_message_id, to_message_id]; ranges of one session never overlap. `attempts` and
    `next_attempt_at` drive the beat sweep's retries with backoff; `result` keeps counts
    (proposals accepted / refused by reason, nodes created, summary id) and `notes` when a key's
    writable scopes narrowed or held back a proposal (memory.capture.key_scopes), never message text."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=JobKind.choices, default=JobKind.CAPTURE)
    session = models.ForeignKey("memory.Session", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    workspace_id = models.CharField(max_length=128, blank=True, default="")
    user_id = models.CharField(max_length=128, blank=True, default="")
    trigger = models.CharField(max_length=32, default="")
    after_message_id = models.BigIntegerField(default=0)  # exclusive start of the range
    to_message_id = models.BigIntegerField(default=0)  # inclusive end of the range
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    last_error = models.CharField(max_length=500, blank=True, default="")
    result = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = ScopedManager(team="team")

    class Meta:
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="capture_job_due_idx"),
            models.Index(fields=["team", "status", "created_at"], name="capture_job_team_idx"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["session", "kind", "to_message_id"], name="capture_job_range_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.pk}:{self.status}"
