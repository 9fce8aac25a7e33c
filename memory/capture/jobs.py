"""Running capture jobs exactly once, and the sweeps that keep them moving (R-EXTRACT).

job_run counts the attempt, reads the job's window and runs the extractor and the
summarizer outside any transaction (a slow model holds no lock an agent's append would wait
for; the next summary of the session's chain is appended on its own, its range checks keep
the chain whole), then locks the session and the job row and applies the rest in one
transaction: the extraction's proposals (each validated by memory.services.proposals like an
agent's, as the capture principal), the user's profile consolidation, and the job's own
`done`. Two runners of one job may both extract, but only the first to lock
it applies: the second finds it done and does nothing. An error rolls the work back and leaves the job pending with a later
next_attempt_at (exponential backoff), or failed after limits.CAPTURE_ATTEMPTS_MAX attempts;
it never reaches the agent's API call.
"""

import hashlib
import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from django_scopes import scope, scopes_disabled

from accounts.models import Team
from accounts.principal import AccessDenied, Principal
from memory import limits
from memory.capture.base import Extraction, ExtractionContext, Extractor, MessageView, NodeView, Summarizer
from memory.capture.key_scopes import CAPTURE_SCOPES, key_scopes, limit_note, narrowed_to_session
from memory.capture.triggers import capture_after_append, enqueue
from memory.capture_models import CaptureJob, JobStatus
from memory.errors import InvalidInput, MemoryError
from memory.models import Message, MessageRole, Node, NodeStatus, Session
from memory.selectors.nodes import Owner, reach, unexpired
from memory.services.proposals import proposal_apply

logger = logging.getLogger(__name__)


def capture_principal(team: Team) -> Principal:
    """Background extraction writes like an agent key (the same policy: user memory only on the
    user's explicit words with a source message, never global), audited as system:capture.
    What it writes from a turn is narrowed further to the scopes of the key that appended the
    turn (memory.capture.key_scopes)."""
    return Principal(team=team, kind="agent", role="capture", writable_scopes=CAPTURE_SCOPES)


def _context(job: CaptureJob, session: Session, now: datetime) -> ExtractionContext:
    # A turn a forgotten memory was taken from is not read again (it would bring the memory back).
    messages = Message.objects.filter(session=session, pk__gt=job.after_message_id, pk__lte=job.to_message_id,
                                      memory_forgotten_at__isnull=True)
    views = tuple(
        MessageView(id=m.pk, role=m.role, content=m.content[: limits.CAPTURE_MESSAGE_CHARS], created_at=m.created_at,
                    speaker=str((m.metadata or {}).get("speaker", "")))
        for m in messages.order_by("pk")[: limits.CAPTURE_WINDOW_MAX]
    )
    return ExtractionContext(messages=views, existing=_existing(job.team, session, now), workspace_id=session.workspace_id,
                             user_id=session.user_id, session_id=session.external_id, now=now)


def _existing(team: Team, session: Session, now: datetime, exclude: frozenset[int] = frozenset()) -> tuple[NodeView, ...]:
    """The active memories the extractor is shown for `session` (the newest 200 in its reach), less `exclude`."""
    owner = Owner(workspace_id=session.workspace_id, user_id=session.user_id, session_id=session.external_id)
    existing = Node.objects.filter(team=team, status=NodeStatus.ACTIVE).filter(unexpired(now)).filter(
        reach(owner=owner, session=session)).exclude(pk__in=exclude).order_by("-updated_at")[:200]
    return tuple(
        NodeView(id=n.pk, scope=n.scope, type=n.type, domain=n.domain, key=n.key, value_json=n.value_json,
                 title=n.title, content=n.content, category_path=tuple(n.category_path))
        for n in existing
    )


def _apply(principal: Principal, session: Session, context: ExtractionContext, extraction: Extraction,
           reason: str = "", hidden: frozenset[int] = frozenset(), notes: list[str] | None = None) -> dict[str, int]:
    """Apply each extracted proposal on its own, checked by the propose endpoint's serializer
    and then by the proposal service like an agent's; a refusal or a malformed item does not
    stop the others. Returns counts by outcome: accepted, the refusal reason, invalid, or an
    error code; "forgotten", once a forget has hidden turns of the window since it was read
    (`hidden`), for a proposal citing one of them or citing none: applied, it could bring the
    forgotten memory back.

    Each proposal is written with no more than the scopes of the keys that appended the turns
    it cites (or, citing none, the window's): one for a scope they do not allow is narrowed to
    the session, said in its reason, or refused as scope_not_allowed (memory.capture.key_scopes).
    Each narrowing or refusal by a key's limit adds a line to `notes` (ids, scopes and key
    prefixes, never message text).

    What an extractor may not do, whatever it answers: update, expire or delete (forgetting
    is the user's call through memory_forget), cite anything but the user's own messages of
    this window, or put its own words into the audit trail (the reason names the extractor
    only, so a hard forget leaves nothing of the content there).
    """
    from memory.capture.extractors import proposal_from_operation

    owner = {"workspace_id": session.workspace_id, "user_id": session.user_id, "session_id": session.external_id}
    said_by_user = {message.id for message in context.messages if message.role == MessageRole.USER}
    window = [message.id for message in context.messages]
    keys = key_scopes(team=principal.team, message_ids=window)
    counts: dict[str, int] = {}
    for index, operation in enumerate(extraction.operations[: limits.CAPTURE_PROPOSALS_MAX]):
        limited = ""
        try:
            if not isinstance(operation, dict) or operation.get("operation") not in ("create", "supersede"):
                raise InvalidInput("extractors may only create or supersede")
            node = dict(operation.get("node") or {})
            cited = node.get("source_message_ids") if isinstance(node.get("source_message_ids"), list) else None
            if hidden and (not cited or hidden.intersection(cited)):
                counts["forgotten"] = counts.get("forgotten", 0) + 1
                continue
            if cited is not None:
                node["source_message_ids"] = [i for i in cited if i in said_by_user]
            said = reason or f"extracted by {extraction.extractor or 'capture'}"
            allowed, limiting = keys.allowed((cited is not None and node["source_message_ids"]) or window)
            acting = replace(principal, writable_scopes=principal.writable_scopes & allowed)
            if limiting:
                limited = limit_note(limiting, allowed)
                wanted = narrowed_to_session(node, allowed)
                if wanted is not None:
                    node["scope"] = "session"
                    said += f"; narrowed {wanted} → session: {limited}"
                    if notes is not None:
                        notes.append(f"proposal {index}: narrowed {wanted} → session ({limited})")
            body = {**operation, "node": node, "reason": said}
            proposal = proposal_from_operation(body, **owner)
            with transaction.atomic():
                result = proposal_apply(principal=acting, proposal=proposal)
            # A repeat writes nothing: counted as such, not as a write (a newcomer's find).
            outcome = "duplicate" if result.reason == "duplicate" else (
                "accepted" if result.accepted else (result.reason or "refused"))
        except MemoryError as error:
            outcome = "invalid" if error.status == 400 else error.code
        except AccessDenied:
            outcome = "access_denied"
        if limited and outcome == "scope_not_allowed" and notes is not None:
            notes.append(f"proposal {index}: not written ({limited})")
        counts[outcome] = counts.get(outcome, 0) + 1
    dropped = len(extraction.operations) - limits.CAPTURE_PROPOSALS_MAX
    if dropped > 0:
        counts["over_limit"] = dropped
    return counts


def capture_turn(*, team: Team, session: Session, message: MessageView, drop: Callable[[dict], bool], reason: str,
                 forgotten: frozenset[int] = frozenset()) -> dict[str, int]:
    """Capture one user turn of `session` now, as a capture job would have when it was said (the
    rule extractor at the turn's time, shown the memories in the session's reach less
    `forgotten`; _apply: each proposal checked and audited on its own, as capture's principal,
    with `reason`), inside the caller's transaction, leaving out the operations `drop` takes
    (given the operation) and the passing states already over (expires_at before now).
    memory.services.forgotten_repeats calls it for a turn a forget is about to hide before
    capture read it (R-STORE, R-EXTRACT). Returns counts by outcome (accepted, duplicate, …)."""
    from memory.capture.rules import RuleExtractor

    now = timezone.now()
    context = ExtractionContext(messages=(message,), existing=_existing(team, session, now, forgotten),
                                workspace_id=session.workspace_id, user_id=session.user_id,
                                session_id=session.external_id, now=message.created_at)
    extraction = RuleExtractor().extract(context)
    kept = [operation for operation in extraction.operations
            if isinstance(operation.get("node"), dict) and not drop(operation)
            and not (operation["node"].get("expires_at") and datetime.fromisoformat(operation["node"]["expires_at"]) <= now)]
    return _apply(capture_principal(team), session, context, Extraction(operations=kept, extractor=extraction.extractor),
                  reason=reason)


def _cite_repeats(principal: Principal, context: ExtractionContext, extraction: Extraction) -> int:
    """Link the user's own messages of the window that say an active memory again to it
    (Extraction.repeats; memory.services.upsert.node_cite), each memory on its own: a refusal
    does not stop the others. Only memories the extractor was shown. Returns the links made."""
    from memory.services.upsert import node_cite

    said_by_user = {message.id for message in context.messages if message.role == MessageRole.USER}
    shown = {node.id for node in context.existing}
    keys = key_scopes(team=principal.team, message_ids=said_by_user)
    linked = 0
    for node_id, message_ids in extraction.repeats[: limits.CAPTURE_PROPOSALS_MAX]:
        sources = [message_id for message_id in message_ids if message_id in said_by_user]
        if node_id not in shown or not sources:
            continue
        # Linking writes to the memory: held to the keys of the turns linked, like a proposal.
        acting = replace(principal, writable_scopes=principal.writable_scopes & keys.allowed(sources)[0])
        try:
            linked += len(node_cite(principal=acting, node_id=node_id, message_ids=sources,
                                    reason=f"said again; found by {extraction.extractor or 'capture'}"))
        except (MemoryError, AccessDenied):
            logger.info("capture: could not link messages %s to node %s", sources, node_id, exc_info=True)
    return linked


def _extract(job: CaptureJob, extractor: Extractor, now: datetime) -> tuple[ExtractionContext, Extraction]:
    """Read the job's window (a short transaction of its own) and run the extractor outside any
    transaction, so a slow model holds no lock that an agent's append would wait for."""
    with transaction.atomic():
        session = Session.objects.get(pk=job.session_id)
        context = _context(job, session, now)
    return context, extractor.extract(context)


def _roll_summary(job: CaptureJob, summarizer: Summarizer) -> int | None:
    """The session's next summary, written outside the job's transaction (a slow summarizer
    holds no lock); summary_append's range checks keep the chain gap-free and never doubled,
    whoever rolls it. Returns the new summary's id, or None."""
    from memory.capture.summary_roll import summary_roll

    session = Session.objects.filter(pk=job.session_id).first()
    if session is None:
        return None
    summary = summary_roll(principal=capture_principal(job.team), session=session, summarizer=summarizer,
                           max_chars=settings.MEMORY_SUMMARY_MAX_CHARS)
    return summary.pk if summary is not None else None


def _capture(job: CaptureJob, *, extracted: tuple[ExtractionContext, Extraction], extractor: Extractor,
             summary_id: int | None, now: datetime) -> dict:
    from memory.capture.consolidate import consolidation_run
    from memory.services.forgotten_turns import hidden_among

    session = Session.objects.get(pk=job.session_id)
    principal = capture_principal(job.team)
    context, extraction = extracted
    # A forget may have hidden turns of the window since it was read (the extractor runs outside
    # this transaction): what only they said is not applied, nor are they cited.
    hidden = hidden_among(job.team, [message.id for message in context.messages])
    if hidden:
        context = replace(context, messages=tuple(message for message in context.messages if message.id not in hidden))
    notes: list[str] = []
    counts = _apply(principal, session, context, extraction, hidden=frozenset(hidden), notes=notes)
    cited = _cite_repeats(principal, context, extraction)
    _lock_user(job.team_id, session.user_id)
    report = consolidation_run(team=job.team, user_id=session.user_id, workspace_id=session.workspace_id,
                               session_id=session.pk, now=now)
    version = report.profile.version if report.profile is not None else None
    return {
        "extractor": extractor.name, "messages": len(context.messages), "proposals": len(extraction.operations),
        "outcomes": counts, "cited": cited, "summary_id": summary_id,
        "merged": sum(len(merge.merged_ids) for merge in report.merges),
        "profile_version": version.version if version is not None else None,
        **({"notes": notes} if notes else {}),
    }


def _default_workers() -> tuple[Extractor, Summarizer]:
    from memory.capture.extractors import extractor_for_settings
    from memory.capture.summarize import summarizer_for_settings

    return extractor_for_settings(), summarizer_for_settings()


def backoff(attempts: int) -> timedelta:
    seconds = limits.CAPTURE_BACKOFF_SECONDS * 2 ** max(attempts - 1, 0)
    return timedelta(seconds=min(seconds, limits.CAPTURE_BACKOFF_MAX_SECONDS))


def _lock_user(team_id: int, user_id: str) -> None:
    """Consolidation of one user's memory runs one job at a time (PostgreSQL advisory lock
    until the transaction ends; SQLite serialises writers already)."""
    if connection.vendor == "postgresql" and user_id:
        digest = hashlib.sha256(f"consolidate\x00{team_id}\x00{user_id}".encode()).digest()
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [int.from_bytes(digest[:8], "big", signed=True)])


def _run_one(job: CaptureJob, *, extracted: tuple[ExtractionContext, Extraction] | Exception, extractor: Extractor,
             summary_id: int | None, now: datetime) -> bool:
    """Apply a locked pending job's extraction in the current transaction (or record the
    extractor's or summarizer's failure); returns whether it is done."""
    try:
        if isinstance(extracted, Exception):
            raise extracted
        with transaction.atomic():
            job.result = _capture(job, extracted=extracted, extractor=extractor, summary_id=summary_id, now=now)
        job.status = JobStatus.DONE
        job.last_error = ""
    except Exception as error:  # noqa: BLE001 - recorded and retried, never raised to the agent (R-EXTRACT)
        logger.warning("capture job %s failed: %s", job.pk, error, exc_info=True)
        job.last_error = f"{type(error).__name__}: {error}"[:500]
        job.next_attempt_at = now + backoff(job.attempts)
        if job.attempts >= limits.CAPTURE_ATTEMPTS_MAX:
            job.status = JobStatus.FAILED
    job.updated_at = now
    job.save()
    return job.status == JobStatus.DONE


def job_run(job_id: int, *, extractor: Extractor | None = None, summarizer: Summarizer | None = None,
            now: datetime | None = None) -> CaptureJob | None:
    """Run job `job_id`, after every older pending job of its session, in order (see module
    doc); returns the job as left, or None when it is not pending.

    Jobs of one session run one at a time (the session row is locked, as appends and forgets
    lock it) and oldest first, so a retried or late job never undoes what the user said after
    it: while an older job waits for its retry, the newer ones wait too. An attempt is
    counted before the work starts, so a job that kills its worker is still given up after
    limits.CAPTURE_ATTEMPTS_MAX attempts.
    """
    if extractor is None or summarizer is None:
        default_extractor, default_summarizer = _default_workers()
        extractor, summarizer = extractor or default_extractor, summarizer or default_summarizer
    now = now or timezone.now()
    with scopes_disabled():  # the job names its team
        target = CaptureJob.objects.filter(pk=job_id).values("team", "session", "to_message_id").first()
    if target is None:
        return None
    with scope(team=target["team"]):
        for _ in range(limits.CAPTURE_ATTEMPTS_MAX * 50):
            with transaction.atomic():
                Session.objects.select_for_update().filter(pk=target["session"]).first()
                job = (CaptureJob.objects.select_for_update(of=("self",)).select_related("team")
                       .filter(session=target["session"], status=JobStatus.PENDING,
                               to_message_id__lte=target["to_message_id"]).order_by("to_message_id").first())
                if job is None or (job.pk != job_id and job.next_attempt_at > now):
                    break  # nothing pending up to the target, or an older job waits for its retry
                job.attempts += 1
                # A lease: while this runner extracts, no sweep hands the job out again and a
                # runner of a newer job of the session waits for it.
                job.next_attempt_at = now + timedelta(seconds=settings.MEMORY_CAPTURE_LEASE_SECONDS)
                job.save(update_fields=["attempts", "next_attempt_at"])
            summary_id = None
            try:
                extracted = _extract(job, extractor, now)
                summary_id = _roll_summary(job, summarizer)
            except Exception as error:  # noqa: BLE001 - recorded below as the job's failure
                extracted = error
            with transaction.atomic():
                Session.objects.select_for_update().filter(pk=target["session"]).first()
                job = (CaptureJob.objects.select_for_update(of=("self",)).select_related("team")
                       .filter(pk=job.pk).first())
                if job is None:
                    break  # its conversation was forgotten meanwhile
                if job.status != JobStatus.PENDING:
                    continue
                done = _run_one(job, extracted=extracted, extractor=extractor, summary_id=summary_id, now=now)
            if not done or job.pk == job_id:
                break
        return CaptureJob.objects.filter(pk=job_id).first()


def lease_release(job_id: int) -> None:
    """Make job `job_id` due again at once if it is still pending: for a run that failed before it
    counted its attempt (a database error; SQLite busy while another process wrote), so the sweep's
    lease does not hold it back for MEMORY_CAPTURE_LEASE_SECONDS (a newcomer saw one job wait five
    minutes while `capture_run` ran beside the server). Its attempts still count toward the limit."""
    with scopes_disabled():
        CaptureJob.objects.filter(pk=job_id, status=JobStatus.PENDING).update(next_attempt_at=timezone.now())


def _uncaptured_quiet_sessions(now: datetime, idle_seconds: int, limit: int) -> list[Session]:
    """Sessions quiet for `idle_seconds` whose newest message no capture job covers yet."""
    last_job = CaptureJob.objects.filter(session=OuterRef("pk")).order_by("-to_message_id").values("to_message_id")[:1]
    last_message = Message.objects.filter(session=OuterRef("pk")).order_by("-pk").values("pk")[:1]
    return list(
        Session.objects.filter(deleted_at__isnull=True, last_message_at__lte=now - timedelta(seconds=idle_seconds))
        .annotate(covered=Coalesce(Subquery(last_job), Value(0)), newest=Subquery(last_message))
        .filter(newest__gt=F("covered"))
        .order_by("last_message_at")[:limit]
    )


def jobs_sweep(*, now: datetime | None = None, idle_seconds: int = limits.CAPTURE_IDLE_SECONDS,
               limit: int = 100) -> dict[str, int]:
    """The beat's capture sweep: record jobs for quiet sessions whose last messages no job
    covers yet, then hand every due pending job to Celery again (without a broker, run it).
    A job handed over is not handed again for settings.MEMORY_CAPTURE_LEASE_SECONDS. Returns counts."""
    now = now or timezone.now()
    created = 0
    with scopes_disabled():  # the sweep serves every team; each job then runs in its own team's scope
        quiet = _uncaptured_quiet_sessions(now, idle_seconds, limit)
    for session in quiet:
        with scope(team=session.team_id), transaction.atomic():
            locked = Session.objects.select_for_update().get(pk=session.pk)  # as appends do: ranges never overlap
            if capture_after_append(session=locked, messages=[], force="idle") is not None:
                created += 1
    with scopes_disabled():
        due = list(CaptureJob.objects.filter(status=JobStatus.PENDING, next_attempt_at__lte=now)
                   .order_by("to_message_id").values_list("pk", flat=True)[:limit])
        CaptureJob.objects.filter(pk__in=due).update(
            next_attempt_at=now + timedelta(seconds=settings.MEMORY_CAPTURE_LEASE_SECONDS))
    handed = sum(1 for job_id in due if enqueue(job_id))
    return {"created": created, "due": len(due), "queued": handed}


def jobs_stats(*, team: Team, workspace_id: str | None = None) -> dict:
    """Job counts by status and extraction yield (proposals, accepted, by refusal reason) for
    the KPI page (R-EXTRACT visibility): the team's, or with `workspace_id` that workspace's
    ("" = conversations named in no workspace)."""
    with scope(team=team):
        jobs = CaptureJob.objects.filter(team=team)
        if workspace_id is not None:
            jobs = jobs.filter(workspace_id=workspace_id)
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

