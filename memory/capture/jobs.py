"""Running capture jobs exactly once, and the sweeps that keep them moving (R-EXTRACT).

job_run locks the job row and does all its work in that one transaction: the extraction's
proposals (each validated by memory.services.proposals like an agent's, as the capture
principal), the next summary of the session's chain, the user's profile consolidation, and
the job's own `done`. Two runners of one job: the second finds it locked or done and does
nothing. An error rolls the work back and leaves the job pending with a later
next_attempt_at (exponential backoff), or failed after limits.CAPTURE_ATTEMPTS_MAX attempts;
it never reaches the agent's API call.
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_scopes import scope, scopes_disabled

from accounts.models import Team
from accounts.principal import AccessDenied, Principal
from memory import limits
from memory.capture.base import ExtractionContext, Extractor, MessageView, NodeView, Summarizer
from memory.capture.triggers import capture_after_append, enqueue, last_captured
from memory.capture_models import CaptureJob, JobStatus
from memory.errors import MemoryError
from memory.models import Message, Node, NodeStatus, Session
from memory.selectors.nodes import Owner, reach, unexpired
from memory.services.proposals import proposal_apply

logger = logging.getLogger(__name__)


def capture_principal(team: Team) -> Principal:
    """Background extraction writes like an agent key (the same policy: user memory only on the
    user's explicit words with a source message, never global), audited as system:capture."""
    return Principal(team=team, kind="agent", role="capture", writable_scopes=frozenset({"session", "workspace", "user"}))


def _context(job: CaptureJob, session: Session, now: datetime) -> ExtractionContext:
    messages = Message.objects.filter(session=session, pk__gt=job.after_message_id, pk__lte=job.to_message_id)
    views = tuple(
        MessageView(id=m.pk, role=m.role, content=m.content, created_at=m.created_at,
                    speaker=str((m.metadata or {}).get("speaker", "")))
        for m in messages.order_by("pk")[: limits.CAPTURE_WINDOW_MAX]
    )
    owner = Owner(workspace_id=session.workspace_id, user_id=session.user_id, session_id=session.external_id)
    existing = Node.objects.filter(team=job.team, status=NodeStatus.ACTIVE).filter(unexpired(now)).filter(
        reach(owner=owner, session=session)).order_by("-updated_at")[:200]
    nodes = tuple(
        NodeView(id=n.pk, scope=n.scope, type=n.type, domain=n.domain, key=n.key, value_json=n.value_json,
                 title=n.title, content=n.content, category_path=tuple(n.category_path))
        for n in existing
    )
    return ExtractionContext(messages=views, existing=nodes, workspace_id=session.workspace_id,
                             user_id=session.user_id, session_id=session.external_id, now=now)


def _apply(principal: Principal, session: Session, operations: list[dict]) -> dict[str, int]:
    """Apply each proposal on its own, checked by the propose endpoint's serializer and then
    by the proposal service like an agent's (a refusal or a malformed item does not stop the
    others); returns counts by outcome: accepted, the refusal reason, invalid, or an error code."""
    from memory.capture.extractors import proposal_from_operation

    owner = {"workspace_id": session.workspace_id, "user_id": session.user_id, "session_id": session.external_id}
    counts: dict[str, int] = {}
    for operation in operations:
        try:
            proposal = proposal_from_operation(operation, **owner)
            with transaction.atomic():
                result = proposal_apply(principal=principal, proposal=proposal)
            outcome = "accepted" if result.accepted else (result.reason or "refused")
        except MemoryError as error:
            outcome = "invalid" if error.status == 400 else error.code
        except AccessDenied:
            outcome = "access_denied"
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def _capture(job: CaptureJob, *, extractor: Extractor, summarizer: Summarizer, now: datetime) -> dict:
    from memory.capture.consolidate import consolidation_run
    from memory.capture.summary_roll import summary_roll

    session = Session.objects.get(pk=job.session_id)
    principal = capture_principal(job.team)
    context = _context(job, session, now)
    extraction = extractor.extract(context)
    counts = _apply(principal, session, extraction.operations)
    summary = summary_roll(principal=principal, session=session, summarizer=summarizer,
                           max_chars=settings.MEMORY_SUMMARY_MAX_CHARS)
    report = consolidation_run(team=job.team, user_id=session.user_id, workspace_id=session.workspace_id, now=now)
    version = report.profile.version if report.profile is not None else None
    return {
        "extractor": extractor.name, "messages": len(context.messages), "proposals": len(extraction.operations),
        "outcomes": counts, "summary_id": summary.pk if summary is not None else None,
        "merged": sum(len(merge.merged_ids) for merge in report.merges),
        "profile_version": version.version if version is not None else None,
    }


def _default_workers() -> tuple[Extractor, Summarizer]:
    from memory.capture.extractors import extractor_for_settings
    from memory.capture.summarize import summarizer_for_settings

    return extractor_for_settings(), summarizer_for_settings()


def session_last_message(session: Session) -> int | None:
    return Message.objects.filter(session=session).order_by("-pk").values_list("pk", flat=True).first()


def backoff(attempts: int) -> timedelta:
    seconds = limits.CAPTURE_BACKOFF_SECONDS * 2 ** max(attempts - 1, 0)
    return timedelta(seconds=min(seconds, limits.CAPTURE_BACKOFF_MAX_SECONDS))


def job_run(job_id: int, *, extractor: Extractor | None = None, summarizer: Summarizer | None = None,
            now: datetime | None = None) -> CaptureJob | None:
    """Run one pending job (see module doc); returns it as left, or None when another runner
    holds it or it is not pending (done, failed, or not due yet is still run when asked)."""
    if extractor is None or summarizer is None:
        default_extractor, default_summarizer = _default_workers()
        extractor, summarizer = extractor or default_extractor, summarizer or default_summarizer
    now = now or timezone.now()
    with scopes_disabled():  # the job names its team
        team = CaptureJob.objects.filter(pk=job_id).values_list("team", flat=True).first()
    if team is None:
        return None
    with scope(team=team), transaction.atomic():
        job = (CaptureJob.objects.select_for_update(skip_locked=True, of=("self",)).select_related("team")
               .filter(pk=job_id, status=JobStatus.PENDING).first())
        if job is None:
            return None
        try:
            with transaction.atomic():
                job.result = _capture(job, extractor=extractor, summarizer=summarizer, now=now)
            job.status = JobStatus.DONE
            job.last_error = ""
        except Exception as error:  # noqa: BLE001 - recorded and retried, never raised to the agent (R-EXTRACT)
            logger.warning("capture job %s failed: %s", job_id, error, exc_info=True)
            job.attempts += 1
            job.last_error = f"{type(error).__name__}: {error}"[:500]
            job.next_attempt_at = now + backoff(job.attempts)
            if job.attempts >= limits.CAPTURE_ATTEMPTS_MAX:
                job.status = JobStatus.FAILED
        job.updated_at = now
        job.save()
    return job


def jobs_sweep(*, now: datetime | None = None, idle_seconds: int = limits.CAPTURE_IDLE_SECONDS,
               limit: int = 100) -> dict[str, int]:
    """The beat's capture sweep: record jobs for sessions quiet for `idle_seconds` whose last
    messages no job covers yet, then hand every due pending job to Celery again (or run it,
    without a broker). Returns counts."""
    now = now or timezone.now()
    created = 0
    with scopes_disabled():  # the sweep serves every team; each job then runs in its own team's scope
        quiet = list(Session.objects.filter(deleted_at__isnull=True, last_message_at__lte=now - timedelta(
            seconds=idle_seconds)).order_by("last_message_at")[:limit])
        due = list(CaptureJob.objects.filter(status=JobStatus.PENDING, next_attempt_at__lte=now)
                   .order_by("next_attempt_at").values_list("pk", flat=True)[:limit])
    for session in quiet:
        with scope(team=session.team_id), transaction.atomic():
            if last_captured(session) < (session_last_message(session) or 0):
                if capture_after_append(session=session, messages=[], force="idle") is not None:
                    created += 1
    handed = sum(1 for job_id in due if enqueue(job_id))
    return {"created": created, "due": len(due), "queued": handed}


def jobs_stats(*, team: Team) -> dict:
    """Job counts by status and extraction yield (proposals, accepted, by refusal reason) for
    the KPI page (R-EXTRACT visibility)."""
    with scope(team=team):
        jobs = CaptureJob.objects.filter(team=team)
        by_status = {status: 0 for status in JobStatus.values}
        for status in jobs.values_list("status", flat=True):
            by_status[status] += 1
        outcomes: dict[str, int] = {}
        proposals = 0
        for result in jobs.filter(status=JobStatus.DONE).values_list("result", flat=True):
            proposals += result.get("proposals", 0)
            for outcome, count in result.get("outcomes", {}).items():
                outcomes[outcome] = outcomes.get(outcome, 0) + count
    return {"jobs": by_status, "proposals": proposals, "outcomes": outcomes,
            "accepted": outcomes.get("accepted", 0)}

