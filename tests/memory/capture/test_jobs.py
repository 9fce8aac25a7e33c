"""Capture jobs: triggers, exactly-once runs, retries with backoff, broker outages, the
sweeps and the stats (issue 4; R-EXTRACT)."""

import time
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from config.celery import app as celery_app
from memory.capture import tasks
from memory.capture.base import Extraction, ExtractorError, SummaryDraft
from memory.capture.jobs import backoff, job_run, jobs_stats, jobs_sweep
from memory.capture.rules import RuleExtractor
from memory.capture_models import CaptureJob, JobStatus
from memory.models import AuditEvent, Node, Summary
from memory.services.forget import session_forget
from memory.services.sessions import SessionRef
from tests.helpers import append, celery_broker, make_node, stored_before

CTX = {"session_id": "s1", "user_id": "u1", "workspace_id": "w1"}


class Remember:
    """A test double extractor: proposes one user preference from every message that says 'remember X'."""

    name = "test"

    def __init__(self):
        self.calls = []

    def extract(self, context):
        self.calls.append([m.id for m in context.messages])
        operations = [
            {"operation": "create", "explicit_user_intent": True, "reason": "said so",
             "node": {"scope": "user", "type": "preference", "key": f"k{m.id}", "value_json": m.content,
                      "title": m.content, "source_message_ids": [m.id]}}
            for m in context.messages if m.content.startswith("remember")
        ]
        return Extraction(operations=operations, extractor=self.name)


class Failing:
    name = "failing"

    def extract(self, context):
        raise ExtractorError("endpoint down")


class Echo:
    name = "echo"

    def summarize(self, previous, messages, *, max_chars):
        text = " / ".join(m.content for m in messages)
        return SummaryDraft(summary=((previous.summary + " | ") if previous else "") + text)


def test_every_n_messages_records_one_job_for_the_range(principal, settings):
    settings.MEMORY_CAPTURE_EVERY = 3
    first = append(principal, "hi", "how are you", **CTX)
    assert CaptureJob.objects.count() == 0
    third = append(principal, "fine", **CTX)[0]
    job = CaptureJob.objects.get()
    assert (job.trigger, job.after_message_id, job.to_message_id) == ("every_n", 0, third.pk)
    assert job.status == JobStatus.PENDING and first[0].pk > job.after_message_id


@pytest.mark.parametrize("text,trigger", [
    ("记住，我以后做饭不要香菜", "explicit"), ("From now on, no cilantro please", "explicit"),
    ("不是周二，是周四", "correction"), ("Actually I meant Thursday", "correction"),
    ("报告已完成了", "task"), ("I'm done with the report", "task"),
    # a change of what held (a newcomer's move waited for the eighth message)
    ("其实我不住杭州了，我搬到上海了", "correction"), ("I no longer eat meat", "correction"),
    ("We moved to Lisbon last month", "correction"),
    ("不对，我最喜欢的颜色是绿色", "correction"), ("我现在不吃素了", "correction"),
])
def test_explicit_intent_corrections_and_task_changes_trigger_at_once(principal, text, trigger):
    message = append(principal, text, **CTX)[0]
    job = CaptureJob.objects.get()
    assert (job.trigger, job.to_message_id) == (trigger, message.pk)


@pytest.mark.parametrize("text", ["其实我挺好的", "我现在不饿", "对不对？", "The weather is nice"])
def test_chat_lines_wait_for_the_nth_message(text):
    from memory.capture.triggers import trigger_for

    assert trigger_for([text]) == ""


def test_assistant_messages_do_not_trigger_by_their_words(principal):
    append(principal, "I will remember that", role="assistant", **CTX)
    assert CaptureJob.objects.count() == 0


def test_a_job_applies_its_proposals_and_summary_once(principal, settings):
    said = append(principal, "remember tea", "remember jazz", **CTX)
    job = CaptureJob.objects.get()
    extractor = Remember()
    done = job_run(job.pk, extractor=extractor, summarizer=Echo())
    assert done.status == JobStatus.DONE and done.result["outcomes"] == {"accepted": 2}
    assert extractor.calls == [[m.pk for m in said]]
    nodes = Node.objects.filter(scope="user").order_by("pk")
    assert [(n.value_json, n.source_message_ids) for n in nodes] == [("remember tea", [said[0].pk]),
                                                                        ("remember jazz", [said[1].pk])]
    assert {e.actor for e in AuditEvent.objects.filter(event_type="memory.node.created")} == {"system:capture"}
    summary = Summary.objects.get()
    assert (summary.from_message_id, summary.to_message_id) == (said[0].pk, said[1].pk)
    again = job_run(job.pk, extractor=extractor, summarizer=Echo())  # done: never applied twice
    assert again.status == JobStatus.DONE and again.attempts == 1
    assert Node.objects.filter(scope="user").count() == 2 and len(extractor.calls) == 1


def test_a_failing_extractor_is_retried_with_backoff_and_given_up_after_the_limit(principal):
    append(principal, "remember tea", **CTX)
    job = CaptureJob.objects.get()
    now = timezone.now()
    for attempt in range(1, 7):
        job = job_run(job.pk, extractor=Failing(), summarizer=Echo(), now=now)
        assert job.attempts == attempt and "endpoint down" in job.last_error
        assert job.next_attempt_at == now + backoff(attempt)
    assert job.status == JobStatus.FAILED
    assert Node.objects.count() == 0 and Summary.objects.count() == 0  # the failed work left nothing
    assert backoff(1) == timedelta(seconds=30) and backoff(20) == timedelta(hours=1)


@pytest.fixture
def unreachable_broker():
    with celery_broker("redis://127.0.0.1:1/0", eager=False):
        yield


def test_a_worker_outlives_a_broker_restart_while_a_publish_still_fails_fast(unreachable_broker):
    from memory.capture.triggers import enqueue

    assert celery_app.conf.broker_connection_max_retries is None  # the worker's consumer reconnects for ever
    started = time.monotonic()
    assert enqueue(12345) is False  # the agent's call is not held up: the job waits for the sweep
    assert time.monotonic() - started < 2


def test_a_broker_outage_loses_nothing_and_every_job_runs_exactly_once(principal, unreachable_broker, monkeypatch,
                                                                        django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        append(principal, "remember tea", **CTX)
    with django_capture_on_commit_callbacks(execute=True):
        append(principal, "remember jazz", **{**CTX, "session_id": "s2"})
    assert CaptureJob.objects.filter(status=JobStatus.PENDING).count() == 2  # recorded though nothing was sent
    celery_app.conf.update(task_always_eager=True)  # the broker is back (in-process here)
    monkeypatch.setattr("memory.capture.jobs._default_workers", lambda: (Remember(), Echo()))
    runs = []
    real = tasks.job_run
    monkeypatch.setattr(tasks, "job_run", lambda job_id: runs.append(job_id) or real(job_id))
    first = jobs_sweep(now=timezone.now() + timedelta(seconds=1), idle_seconds=10**6)
    second = jobs_sweep(now=timezone.now() + timedelta(seconds=1), idle_seconds=10**6)
    assert first["due"] == 2 and second["due"] == 0
    assert sorted(runs) == sorted(CaptureJob.objects.values_list("pk", flat=True))
    assert CaptureJob.objects.filter(status=JobStatus.DONE).count() == 2
    assert Node.objects.filter(scope="user").count() == 2


def test_the_sweep_captures_the_tail_of_a_quiet_session(principal):
    said = append(principal, "hello", "bye", **CTX)
    assert CaptureJob.objects.count() == 0
    counts = jobs_sweep(now=timezone.now() + timedelta(hours=1), idle_seconds=600)
    assert counts["created"] == 1
    job = CaptureJob.objects.get()
    assert (job.trigger, job.after_message_id, job.to_message_id) == ("idle", 0, said[-1].pk)
    assert jobs_sweep(now=timezone.now() + timedelta(hours=1), idle_seconds=600)["created"] == 0


def test_stats_count_jobs_and_yield(principal):
    append(principal, "remember tea", **CTX)
    job_run(CaptureJob.objects.get().pk, extractor=Remember(), summarizer=Echo())
    append(principal, "remember x", **{**CTX, "session_id": "s9"})
    stats = jobs_stats(team=principal.team)
    assert stats["jobs"] == {"pending": 1, "done": 1, "failed": 0}
    assert (stats["proposals"], stats["accepted"]) == (1, 1)


class Says:
    """Proposes the one-valued user fact `city` from every 'remember city X' message, in order."""

    name = "says"

    def extract(self, context):
        return Extraction(extractor=self.name, operations=[
            {"operation": "create", "explicit_user_intent": True,
             "node": {"scope": "user", "type": "fact", "key": "city", "value_json": m.content.split("city ")[1],
                      "title": m.content, "source_message_ids": [m.id]}}
            for m in context.messages if m.content.startswith("remember city ")])


def _active_city():
    return list(Node.objects.filter(key="city", status="active").values_list("value_json", flat=True))


def test_a_late_job_never_undoes_what_the_user_said_after_it(principal):
    append(principal, "remember city berlin", **CTX)
    older = CaptureJob.objects.get()
    now = timezone.now()
    job_run(older.pk, extractor=Failing(), summarizer=Echo(), now=now)  # fails: waits for its retry
    append(principal, "remember city munich", **CTX)
    newer = CaptureJob.objects.exclude(pk=older.pk).get()
    assert job_run(newer.pk, extractor=Says(), summarizer=Echo(), now=now).status == JobStatus.PENDING  # waits
    assert _active_city() == []
    later = now + timedelta(minutes=5)
    job_run(newer.pk, extractor=Says(), summarizer=Echo(), now=later)  # runs the older first, then itself
    assert CaptureJob.objects.filter(status=JobStatus.DONE).count() == 2
    assert _active_city() == ["munich"]


def test_the_sweep_reaches_every_uncaptured_session_however_many_are_captured(principal, settings):
    settings.MEMORY_CAPTURE_EVERY = 1
    for index in range(5):
        append(principal, f"hello {index}", **{**CTX, "session_id": f"done{index}"})  # each captured at once
    settings.MEMORY_CAPTURE_EVERY = 100
    tail = append(principal, "still here", **{**CTX, "session_id": "tail"})[0]
    counts = jobs_sweep(now=timezone.now() + timedelta(hours=1), idle_seconds=600, limit=2)
    assert counts["created"] == 1
    assert CaptureJob.objects.get(session__external_id="tail").to_message_id == tail.pk


class Overreaching:
    """An extractor that tries what extractors may not: delete, cite the assistant, flood."""

    name = "overreaching"

    def __init__(self, target_id):
        self.target_id = target_id

    def extract(self, context):
        assistant = next(m.id for m in context.messages if m.role == "assistant")
        flood = [{"operation": "create", "node": {"scope": "session", "type": "fact", "title": f"note {i}"}}
                 for i in range(60)]
        return Extraction(extractor=self.name, operations=[
            {"operation": "delete", "target_id": self.target_id},
            {"operation": "create", "explicit_user_intent": True, "reason": "the user said: SECRET-REASON",
             "node": {"scope": "user", "type": "fact", "title": "User is an admin", "source_message_ids": [assistant]}},
            *flood])


def test_an_extractor_may_not_delete_cite_the_assistant_flood_or_write_its_reasons(principal):
    from tests.helpers import make_node

    keep = make_node(principal, scope="workspace", workspace_id="w1", type="fact", title="we use postgres")
    append(principal, "ok", **CTX)
    append(principal, "You are an admin now", role="assistant", **CTX)
    append(principal, "remember this", **CTX)
    job = CaptureJob.objects.order_by("-pk").first()
    done = job_run(job.pk, extractor=Overreaching(keep.pk), summarizer=Echo())
    outcomes = done.result["outcomes"]
    assert outcomes["invalid"] == 1 and outcomes["source_required"] == 1
    assert outcomes["accepted"] == 48 and outcomes["over_limit"] == 12
    keep.refresh_from_db()
    assert keep.status == "active" and not Node.objects.filter(title="User is an admin").exists()
    assert not AuditEvent.objects.filter(reason__contains="SECRET").exists()
    assert set(AuditEvent.objects.filter(event_type="memory.node.created", actor="system:capture")
               .values_list("reason", flat=True)) == {"extracted by overreaching"}


def test_without_a_broker_a_job_never_holds_up_the_agents_call(monkeypatch, settings):
    from memory.capture import triggers

    settings.MEMORY_CAPTURE_THREADS = True
    started = []

    class FakeThread:
        def __init__(self, target, args, daemon, name):
            started.append((target, args, daemon))

        def start(self):
            started.append("started")

    monkeypatch.setattr(triggers.threading, "Thread", FakeThread)
    ran = []
    monkeypatch.setattr(tasks.run_capture_job, "delay", lambda job_id: ran.append(job_id))
    assert triggers.enqueue(8, background=True) and ran == []  # the agent's request: on a thread
    assert started == [(triggers._run_detached, (8,), True), "started"]
    assert triggers.enqueue(9) and ran == [9]  # the sweep's own runs stay in its process
    with celery_broker("redis://127.0.0.1:1/0", eager=False):
        assert triggers.enqueue(10, background=True) and ran == [9, 10]  # with a broker: published, never a thread
    assert len(started) == 2


def test_capture_run_waits_for_the_capture_threads_of_its_process():
    """`make run`'s demo reported "0 done, 1 pending" on a loaded machine: the replay's request had
    started the sweep on a thread, which held a job's lease when the command exited, so the job
    waited out the lease's 5 minutes. capture_run joins such threads first (background_join)."""
    import threading
    import time

    from memory.capture import triggers

    finished = []
    thread = threading.Thread(target=lambda: (time.sleep(0.3), finished.append(True)), name="capture-sweep")
    other = threading.Thread(target=time.sleep, args=(5,), name="not-capture", daemon=True)
    thread.start()
    other.start()
    started = time.monotonic()
    triggers.background_join(timeout=3)
    assert finished == [True] and time.monotonic() - started < 3  # its own threads only
    late = threading.Thread(target=time.sleep, args=(5,), name="capture-9", daemon=True)
    late.start()
    started = time.monotonic()
    triggers.background_join(timeout=0.2)
    assert time.monotonic() - started < 1  # bounded


def test_a_job_merges_the_twins_in_its_conversations_own_memory(principal):
    here = {"scope": "session", "type": "task", **CTX}
    kept = make_node(principal, **here, title="Book the dentist")
    twin = stored_before(principal, **here, title="book the dentist.")
    append(principal, "remember tea", **CTX)
    done = job_run(CaptureJob.objects.get().pk, extractor=Remember(), summarizer=Echo())
    assert done.status == JobStatus.DONE and done.result["merged"] == 1
    assert Node.objects.get(pk=twin.pk).status == "deleted" and Node.objects.get(pk=kept.pk).status == "active"


def test_a_fact_said_again_in_another_conversation_is_linked_to_the_memory_it_repeats(principal):
    """Found by a newcomer: capture dropped the repeat, so forgetting the first conversation
    forgot a fact the user had said again in the second."""
    first, = append(principal, "记住，我对芒果过敏", **{**CTX, "session_id": "c1"})
    job_run(CaptureJob.objects.get().pk, extractor=RuleExtractor(), summarizer=Echo())
    node = Node.objects.get(status="active")
    assert node.source_message_ids == [first.pk]
    again, = append(principal, "记住哦，我对芒果过敏。", **{**CTX, "session_id": "c2"})
    done = job_run(CaptureJob.objects.exclude(status=JobStatus.DONE).get().pk, extractor=RuleExtractor(),
                   summarizer=Echo())
    assert done.result["cited"] == 1 and done.result["outcomes"] == {}
    node.refresh_from_db()
    assert node.source_message_ids == [first.pk, again.pk] and Node.objects.filter(status="active").count() == 1
    assert AuditEvent.objects.get(event_type="memory.node.cited").actor == "system:capture"
    session_forget(principal=principal, ref=SessionRef("c1", "w1", "u1"), mode="hard")
    assert Node.objects.get(pk=node.pk).source_message_ids == [again.pk]


def test_without_a_broker_the_jobs_queued_behind_a_running_one_run_after_it(principal):
    """A newcomer's second "记住，…", sent while the first one's job ran on its thread, stayed
    pending: its own runner gave up on the session the first held, and no sweep comes without a
    broker. The first runner now runs the session's due jobs after its own."""
    from memory.capture import triggers

    first, = append(principal, "记住，我叫小芳，住在成都。", **CTX)
    second, = append(principal, "记住，我对虾过敏。", **CTX)
    older, newer = CaptureJob.objects.order_by("to_message_id")
    CaptureJob.objects.filter(pk=older.pk).update(next_attempt_at=timezone.now() + timedelta(minutes=5))  # its lease
    assert job_run(newer.pk).status == JobStatus.PENDING  # the newer runner gives up behind the lease
    CaptureJob.objects.filter(pk=older.pk).update(next_attempt_at=timezone.now())
    job_run(older.pk)
    triggers._run_queued_behind(older.pk)
    assert set(CaptureJob.objects.values_list("status", flat=True)) == {JobStatus.DONE}
    assert set(Node.objects.filter(user_id="u1").values_list("title", flat=True)) >= {"用户叫小芳", "用户对虾过敏"}


def test_a_forget_made_while_the_extractor_reads_the_window_is_not_undone(principal, settings):
    """The extractor runs outside the job's transaction: the user asked to remember an allergy and
    then to forget it while the worker read an earlier turn saying it; the forget hid that turn,
    and the job still applied what the turn said, bringing the hard-forgotten allergy back as a
    session memory. What only hidden turns said is now left out ("forgotten")."""
    from memory.selectors.nodes import Owner
    from memory.services.forgetting import ForgetSelector, memory_forget
    from tests.memory.capture.test_rules_apply import capture

    settings.MEMORY_CAPTURE_THREADS = False
    turn, = append(principal, "我对花生过敏，吃了会起疹子", session_id="first", workspace_id="w1", user_id="u1")
    job = CaptureJob.objects.create(team=principal.team, session_id=turn.session_id, to_message_id=turn.pk, trigger="t")

    class ForgetMeanwhile(RuleExtractor):
        def extract(self, context):
            extraction = super().extract(context)
            capture(principal, "记住，我对花生过敏", owner={"session_id": "second", "workspace_id": "w1", "user_id": "u1"})
            asked = Node.objects.get(team=principal.team, key="allergy")
            memory_forget(principal=principal, mode="hard", reason="the user asked", confirm=True,
                          selector=ForgetSelector(owner=Owner(workspace_id="w1", user_id="u1"), node_id=asked.pk))
            return extraction

    job_run(job.pk, extractor=ForgetMeanwhile())
    job.refresh_from_db()
    assert (job.status, job.result["proposals"], job.result["outcomes"]) == (JobStatus.DONE, 1, {"forgotten": 1})
    assert not Node.objects.filter(team=principal.team, key="allergy").exists()


@pytest.mark.parametrize("cites", ["the turn and the next", "the turn and the question", "none", "nothing said"])
def test_a_proposal_citing_a_turn_hidden_meanwhile_or_none_is_left_out(principal, settings, cites):
    """A review's find: a proposal citing the hidden turn beside another message of the window, or
    citing none (an LLM extractor's), was still applied, its sources cut to what was left."""
    from memory.selectors.nodes import Owner
    from memory.services.forgetting import ForgetSelector, memory_forget
    from tests.memory.capture.test_rules_apply import capture

    settings.MEMORY_CAPTURE_THREADS = False
    owner = {"session_id": "first", "workspace_id": "w1", "user_id": "u1"}
    question, = append(principal, "你有什么忌口吗？", role="assistant", **owner)
    turn, after = append(principal, "我对花生过敏，吃了会起疹子", "对，就这个", **owner)
    sources = {"the turn and the next": [turn.pk, after.pk], "the turn and the question": [turn.pk, question.pk],
               "none": [], "nothing said": None}[cites]
    job = CaptureJob.objects.create(team=principal.team, session_id=turn.session_id, to_message_id=after.pk, trigger="t")

    class ForgetMeanwhile:
        name = "stub"

        def extract(self, context):
            node = {"scope": "session", "type": "constraint", "domain": "生活技能", "key": "allergy", "value_json": "花生",
                    "title": "用户对花生过敏"}
            if sources is not None:
                node["source_message_ids"] = sources
            capture(principal, "记住，我对花生过敏", owner={**owner, "session_id": "second"})
            asked = Node.objects.get(team=principal.team, key="allergy")
            memory_forget(principal=principal, mode="hard", reason="the user asked", confirm=True,
                          selector=ForgetSelector(owner=Owner(workspace_id="w1", user_id="u1"), node_id=asked.pk))
            return Extraction(operations=[{"operation": "create", "node": node}], extractor="stub")

    job_run(job.pk, extractor=ForgetMeanwhile())
    job.refresh_from_db()
    assert (job.status, job.result["outcomes"]) == (JobStatus.DONE, {"forgotten": 1})
    assert not Node.objects.filter(team=principal.team, key="allergy").exists()


def test_without_a_beat_a_request_sweeps_now_and_then_on_a_thread(principal, monkeypatch, settings,
                                                                  django_capture_on_commit_callbacks):
    """A quiet conversation's few messages (no trigger word) were never captured without a broker
    until someone ran capture_run: an agent's request now starts the sweep, at most once a
    MEMORY_CAPTURE_SWEEP_EVERY seconds a process."""
    from memory.capture import triggers

    settings.MEMORY_CAPTURE_THREADS = True
    started = []

    class FakeThread:
        def __init__(self, target, daemon, name):
            started.append(target)

        def start(self):
            pass

    clock = [1000.0]
    monkeypatch.setattr(triggers.threading, "Thread", FakeThread)
    monkeypatch.setattr(triggers.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(triggers, "_swept_at", None)
    with django_capture_on_commit_callbacks(execute=True):
        said = append(principal, "我叫小红，住在杭州", **CTX)
    assert started == [triggers._sweep_detached] and CaptureJob.objects.count() == 0
    with django_capture_on_commit_callbacks(execute=True):
        append(principal, "嗯", **{**CTX, "session_id": "s-other"})
    assert len(started) == 1  # within the minute: no second sweep
    clock[0] += settings.MEMORY_CAPTURE_SWEEP_EVERY
    with django_capture_on_commit_callbacks(execute=True):
        append(principal, "好的", **{**CTX, "session_id": "s-third"})
    assert len(started) == 2
    # what the thread runs: the sweep, which captures the quiet session's tail
    monkeypatch.setattr(triggers.connection, "close", lambda: None)  # the test's own connection
    with mock.patch("memory.capture.jobs.timezone.now", return_value=timezone.now() + timedelta(hours=1)):
        triggers._sweep_detached()
    job = CaptureJob.objects.get(session_id=said[0].session_id)
    assert (job.trigger, job.to_message_id) == ("idle", said[-1].pk)
    # with a broker the beat sweeps: no thread
    with celery_broker("redis://127.0.0.1:1/0", eager=False):
        clock[0] += 10 * settings.MEMORY_CAPTURE_SWEEP_EVERY
        triggers.sweep_without_a_beat()
    assert len(started) == 2


@pytest.mark.parametrize("first,then,titles", [
    ("Remember that my favorite color is blue.", "Actually, my favorite color is green now.",
     ["User's favorite color is green"]),
    ("记住，我最喜欢的颜色是蓝色。", "不对，我最喜欢的颜色是绿色", ["用户最喜欢的颜色是绿色"]),
    ("Remember that I'm vegetarian.", "I'm no longer vegetarian, I eat meat again.", ["User is no longer vegetarian"]),
    ("记住，我吃素", "我现在不吃素了", ["用户不再吃素"]),
])
def test_a_changed_preference_leaves_one_active_memory_with_the_old_in_its_chain(principal, first, then, titles):
    """A newcomer's "favorite color is blue", then "green now": both stayed active and the context
    injected both; "I'm no longer vegetarian" changed nothing."""
    append(principal, first, **{**CTX, "session_id": "c1"})
    job_run(CaptureJob.objects.get().pk, extractor=RuleExtractor(), summarizer=Echo())
    old = Node.objects.get(status="active")
    append(principal, then, **{**CTX, "session_id": "c2"})
    job_run(CaptureJob.objects.exclude(status=JobStatus.DONE).get().pk, extractor=RuleExtractor(), summarizer=Echo())
    assert [node.title for node in Node.objects.filter(status="active")] == titles
    new = Node.objects.get(status="active")
    old.refresh_from_db()
    assert (old.status, new.supersedes_id, new.scope) == ("superseded", old.pk, "user")


def _captured_allergy(principal):
    turn, = append(principal, "记住，我对花生过敏", **CTX)
    job_run(CaptureJob.objects.get().pk, extractor=RuleExtractor(), summarizer=Echo())
    return turn, Node.objects.get(status="active", key="allergy")


def test_an_agents_note_saying_what_capture_keyed_is_that_memory_not_a_second(principal):
    """The README's agent loop: capture keyed 用户对花生过敏 (allergy 花生); the agent's tool call
    then wrote the note 用户对花生过敏 citing the same turn, and both were injected side by side."""
    from memory.services.proposals import Proposal, proposal_apply

    turn, allergy = _captured_allergy(principal)
    result = proposal_apply(principal=principal, proposal=Proposal(
        operation="create", node={"scope": "user", "type": "constraint", "title": "用户对花生过敏",
                                  "source_message_ids": [turn.pk]}, explicit_user_intent=True, **CTX))
    assert (result.accepted, result.reason, result.node.pk) == (True, "duplicate", allergy.pk)
    assert list(Node.objects.filter(status="active").values_list("pk", flat=True)) == [allergy.pk]
    # Another type, or another title, is another memory.
    other = proposal_apply(principal=principal, proposal=Proposal(
        operation="create", node={"scope": "user", "type": "fact", "title": "用户对花生过敏", "source_message_ids": [turn.pk]},
        explicit_user_intent=True, **CTX))
    assert other.node.pk != allergy.pk and other.node.key == ""


def test_an_agents_repeat_with_fewer_fields_keeps_what_capture_stored(principal):
    """The README's step 2 after capture: the repeat's empty tags and entities and its shorter
    category wiped capture's ("updated", version 2). Only what tells more changes."""
    from memory.services.proposals import Proposal, proposal_apply

    turn, allergy = _captured_allergy(principal)
    kept = {name: getattr(allergy, name) for name in ("tags", "entities", "category_path")}
    assert all(kept.values())
    result = proposal_apply(principal=principal, proposal=Proposal(
        operation="create", node={"scope": "user", "type": "constraint", "domain": "生活技能", "key": "allergy",
                                  "value_json": "花生", "title": "用户对花生过敏", "content": "推荐菜谱时不要用花生。",
                                  "category_path": ["生活技能", "做饭"], "source_message_ids": [turn.pk]},
        explicit_user_intent=True, **CTX))
    assert result.node.pk == allergy.pk
    allergy.refresh_from_db()
    assert {name: getattr(allergy, name) for name in kept} == kept
    assert allergy.content == "推荐菜谱时不要用花生。"  # new words for the content are still taken


def test_a_run_that_fails_before_counting_its_attempt_leaves_no_lease(principal, monkeypatch):
    """A newcomer's job sat five minutes with attempts 0: the sweep had leased it, and its run
    failed before it counted an attempt, so nothing took it until the lease ran out."""
    from django.db import OperationalError

    from memory.capture import tasks as capture_tasks

    append(principal, "remember tea", **CTX)
    job = CaptureJob.objects.get()

    def busy(job_id, **options):
        raise OperationalError("database is locked")

    monkeypatch.setattr(capture_tasks, "job_run", busy)
    assert jobs_sweep(now=timezone.now(), idle_seconds=0)["due"] == 1
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.PENDING, 0) and job.next_attempt_at <= timezone.now()
    monkeypatch.undo()
    assert jobs_sweep(now=timezone.now(), idle_seconds=0)["due"] == 1
    assert CaptureJob.objects.get().status == JobStatus.DONE


@pytest.mark.parametrize("note,same", [
    ({}, True),
    ({"value_json": "bob"}, False),  # a breaker's: "Release owner" = bob came back as the keyed alice
    ({"domain": "project-b"}, False),
    ({"importance": 1.0}, False),  # would have lost its weight (a critical constraint's, in a budget)
    ({"confidence": 1.0}, False),
])
def test_a_note_is_the_keyed_memory_only_when_that_holds_all_it_says(principal, note, same):
    from memory.services.proposals import Proposal, proposal_apply

    def propose(node):
        return proposal_apply(principal=principal, proposal=Proposal(
            operation="create", node={"scope": "workspace", "type": "fact", "title": "Release owner", **node},
            explicit_user_intent=True, **CTX))

    keyed = propose({"key": "owner", "value_json": "alice", "domain": "project-a", "importance": 0.5, "confidence": 0.8})
    result = propose(note)
    assert (result.node.pk == keyed.node.pk, result.reason == "duplicate") == (same, same)


def test_a_note_that_lasts_is_not_the_keyed_memory_that_expires(principal):
    from memory.services.proposals import Proposal, proposal_apply

    soon = timezone.now() + timedelta(hours=1)
    node = {"scope": "workspace", "type": "fact", "title": "Project uses Postgres"}
    keyed = proposal_apply(principal=principal, proposal=Proposal(
        operation="create", node={**node, "key": "db", "value_json": "postgres", "expires_at": soon}, **CTX))
    lasting = proposal_apply(principal=principal, proposal=Proposal(operation="create", node=node, **CTX))
    assert lasting.node.pk != keyed.node.pk and lasting.node.expires_at is None
