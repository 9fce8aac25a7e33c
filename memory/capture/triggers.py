"""When a turn calls for background capture (R-EXTRACT; seed 000 抽取流程 触发条件).

`capture_after_append` runs inside messages_append's transaction: when the session's
uncaptured messages reach MEMORY_CAPTURE_EVERY (default 8) or MEMORY_CAPTURE_TOKENS
estimated tokens, or a new user message states explicit intent (记住, 以后都, remember, from
now on…), a correction (不是…是, 改成, actually, I meant…) or a task state change (完成了,
done, to-do…), it records a CaptureJob for the range in the same transaction and queues it
once the transaction commits. The job row is what guarantees the work: if the broker is down,
the beat sweep finds it later.
"""

import logging
import re
import threading
import time

from django.conf import settings
from django.db import connection, transaction

from memory.capture_models import CaptureJob, JobKind
from memory.models import Message, MessageRole, Session
from memory.search.text import normalize
from memory.selectors.budget import estimate_tokens

logger = logging.getLogger(__name__)
EXPLICIT = re.compile(r"记住|记一下|帮我记|以后都|以后|别再|不要再|\b(remember|from now on|don'?t ever|never again|always)\b")
# (a change of what held: 其实我不住杭州了，我搬到上海了 waited for the eighth message, and the old home
# was injected until then; a newcomer's finding. Not 其实 or 现在不 alone: every other chat line says them)
# 不对， opening a sentence and 现在不…了 say a change too (不对，我最喜欢的颜色是绿色; 我现在不吃素了).
CORRECTION = re.compile(r"不是.{0,30}(而)?是|改成|改为|更正|说错了|搬到|搬去|我搬家|不再|已经不"
                        r"|(?:^|[,.!?;。])\s*不对[,，]|现在不\S{1,6}了"
                        r"|\b(actually|i meant|correction|not .{1,30} but|no longer|not any ?more|moved to|changed my mind)\b")
TASK = re.compile(r"完成了|做完了|搞定了|待办|已完成|\b(todo|to-do|done with|finished|task)\b")


def trigger_for(contents: list[str]) -> str:
    """The strongest reason among new user messages: explicit, correction, task, or ""."""
    for name, pattern in (("explicit", EXPLICIT), ("correction", CORRECTION), ("task", TASK)):
        if any(pattern.search(normalize(text)) for text in contents):
            return name
    return ""


def last_captured(session: Session) -> int:
    """The last message id already covered by a capture job of this session (0: none)."""
    job = CaptureJob.objects.filter(session=session, kind=JobKind.CAPTURE).order_by("-to_message_id").first()
    return job.to_message_id if job is not None else 0


def capture_after_append(*, session: Session, messages: list[Message], force: str = "") -> CaptureJob | None:
    """Record (and queue on commit) a capture job for `session` when a trigger fires; must run
    in the transaction that stored `messages`. `force` names a trigger to fire regardless
    (the idle sweep). Returns the job, or None."""
    transaction.on_commit(sweep_without_a_beat)
    after = last_captured(session)
    pending = Message.objects.filter(session=session, pk__gt=after)
    reason = force or trigger_for([m.content for m in messages if m.role == MessageRole.USER])
    if not reason:
        texts = list(pending.values_list("content", flat=True)[: settings.MEMORY_CAPTURE_EVERY])
        if len(texts) >= settings.MEMORY_CAPTURE_EVERY:
            reason = "every_n"
        elif sum(estimate_tokens(text) for text in texts) >= settings.MEMORY_CAPTURE_TOKENS:
            reason = "tokens"
    if not reason:
        return None
    to_message = pending.order_by("-pk").values_list("pk", flat=True).first()
    if to_message is None:
        return None
    job = CaptureJob.objects.create(
        team_id=session.team_id, kind=JobKind.CAPTURE, session=session, workspace_id=session.workspace_id,
        user_id=session.user_id, trigger=reason, after_message_id=after, to_message_id=to_message,
    )
    transaction.on_commit(lambda: enqueue(job.pk, background=True))
    return job


def _run_queued_behind(job_id: int) -> None:
    """Run the due pending jobs of `job_id`'s session, oldest first. A newer job's runner gives
    up while this one holds the session (memory.capture.jobs.job_run), and without a broker no
    sweep comes: a newcomer's second "记住，…" sent a moment after the first was never captured
    until the next trigger. Stops at a job its run leaves pending (a failure waits for its retry)."""
    from django.utils import timezone
    from django_scopes import scopes_disabled

    from memory import limits
    from memory.capture.jobs import job_run
    from memory.capture_models import JobStatus

    with scopes_disabled():
        session_id = CaptureJob.objects.filter(pk=job_id).values_list("session_id", flat=True).first()
    if session_id is None:
        return  # its conversation was forgotten
    for _ in range(limits.CAPTURE_ATTEMPTS_MAX * 50):
        with scopes_disabled():
            due = (CaptureJob.objects.filter(session_id=session_id, status=JobStatus.PENDING,
                                             next_attempt_at__lte=timezone.now())
                   .order_by("to_message_id").values_list("pk", flat=True).first())
        if due is None:
            return
        ran = job_run(due)
        if ran is None or ran.status == JobStatus.PENDING:
            return


def enqueue(job_id: int, *, background: bool = False) -> bool:
    """Hand the job to Celery. Without a broker it runs in-process: for an agent's request
    (`background`) on a thread of its own, so the agent's call does not wait for it; for the
    sweep, at once. A broker that cannot be reached is not an error here: the job stays
    pending and the sweep retries it. Returns whether it was handed over."""
    from config.celery import app
    from memory.capture.tasks import run_capture_job

    if background and app.conf.task_always_eager and settings.MEMORY_CAPTURE_THREADS:
        threading.Thread(target=_run_detached, args=(job_id,), daemon=True, name=f"capture-{job_id}").start()
        return True
    try:
        run_capture_job.delay(job_id)
    except Exception:  # noqa: BLE001 - an unreachable broker must never fail the agent's call (R-EXTRACT)
        return False
    return True


_swept_at: float | None = None  # time.monotonic() of this process's last sweep without a beat
_sweep_lock = threading.Lock()


def sweep_without_a_beat() -> None:
    """Without a broker no beat runs the capture sweep, so a quiet conversation's last messages
    (fewer than MEMORY_CAPTURE_EVERY, no trigger word: "我叫小红，住在杭州") were never captured
    until someone ran `capture_run`. In that setup an agent's request starts the sweep
    (memory.capture.jobs.jobs_sweep: sessions quiet for CAPTURE_IDLE_SECONDS) on a thread of its
    own, at most once every MEMORY_CAPTURE_SWEEP_EVERY seconds a process, as the beat would."""
    global _swept_at
    from config.celery import app

    if not (app.conf.task_always_eager and settings.MEMORY_CAPTURE_THREADS):
        return
    with _sweep_lock:
        now = time.monotonic()
        if _swept_at is not None and now - _swept_at < settings.MEMORY_CAPTURE_SWEEP_EVERY:
            return
        _swept_at = now
    threading.Thread(target=_sweep_detached, daemon=True, name="capture-sweep").start()


def background_join(timeout: float = 60.0) -> None:
    """Wait, at most `timeout` seconds in all, for this process's capture threads (enqueue's and
    the sweep's) to finish. A command that exits while one holds a job's lease leaves the job
    pending for the lease's 5 minutes: `make run`'s demo reported "0 done, 1 pending"."""
    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread.name.startswith("capture-") and thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))


def _sweep_detached() -> None:
    from memory.capture.jobs import jobs_sweep

    try:
        jobs_sweep()
    except Exception:  # noqa: BLE001 - the next request's sweep tries again
        logger.exception("the capture sweep without a beat failed")
    finally:
        connection.close()


def _run_detached(job_id: int) -> None:
    from memory.capture.jobs import job_run
    from memory.services.maintenance import statistics_refresh_if_stale

    try:
        job_run(job_id)
        _run_queued_behind(job_id)
    except Exception:  # noqa: BLE001 - a background job's failure is logged; the sweep retries it
        logger.exception("capture job %s failed on its thread", job_id)
    try:
        statistics_refresh_if_stale()  # without a broker no beat runs the sweep that refreshes them
    except Exception:  # noqa: BLE001 - the next job tries again
        logger.exception("refreshing SQLite's statistics after capture job %s failed", job_id)
    finally:
        connection.close()
