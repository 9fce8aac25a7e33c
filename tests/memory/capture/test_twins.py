"""Capture and an agent remembering the same message keep one memory (memory.services.twins;
R-STORE, R-EXTRACT). Found by a newcomer: with capture on, every "remember …" that the agent
also proposed became two memories, and superseding or forgetting the agent's copy left the
capture's copy injected."""

import pytest

from memory.capture.jobs import job_run
from memory.capture.rules import RuleExtractor
from memory.capture_models import CaptureJob, JobStatus
from memory.models import AuditEvent, Node
from memory.services.forgetting import ForgetSelector, memory_forget
from memory.services.proposals import Proposal, proposal_apply
from memory.services.twins import same_subject, subject_words
from tests.helpers import append, make_node
from tests.memory.capture.test_jobs import Echo

CTX = {"session_id": "s1", "user_id": "u1", "workspace_id": "w1"}


def capture() -> dict:
    job = CaptureJob.objects.exclude(status=JobStatus.DONE).order_by("pk").last()
    return job_run(job.pk, extractor=RuleExtractor(), summarizer=Echo()).result


def propose(principal, message_id: int, title: str, content: str = "", **node):
    return proposal_apply(principal=principal, proposal=Proposal(
        operation="create", explicit_user_intent=True, reason="the user asked", **CTX,
        node={"scope": "user", "type": "fact", "title": title, "content": content,
              "source_message_ids": [message_id], **node}))


def active() -> list[tuple[int, str]]:
    return list(Node.objects.filter(status="active").order_by("pk").values_list("pk", "title"))


def test_the_agents_note_absorbs_the_note_capture_wrote_from_the_same_message(principal):
    said, = append(principal, "Remember: I live in Berlin.", **CTX)
    assert capture()["outcomes"] == {"accepted": 1}
    (captured, _), = active()
    result = propose(principal, said.pk, "User lives in Berlin", "The user lives in Berlin.")
    assert result.message == f"created; node {captured} that capture wrote from the same message merged into it"
    assert active() == [(result.node_id, "User lives in Berlin")]
    merged = AuditEvent.objects.get(event_type="memory.node.merged")
    assert (merged.node_id, merged.payload["merged_into"], merged.actor) == (captured, result.node_id, "key:" +
                                                                             principal.agent_key.prefix)
    # Superseding the agent's note leaves nothing of Berlin active; forgetting it for good takes the twin.
    moved, = append(principal, "I moved to Lisbon.", **CTX)
    proposal_apply(principal=principal, proposal=Proposal(
        operation="supersede", target_id=result.node_id, explicit_user_intent=True, **CTX,
        node={"title": "User lives in Lisbon", "content": "The user lives in Lisbon.",
              "source_message_ids": [moved.pk]}))
    assert [title for _, title in active()] == ["User lives in Lisbon"]
    memory_forget(principal=principal, selector=ForgetSelector(node_id=result.node_id), mode="hard", confirm=True)
    assert not Node.objects.filter(pk__in=[captured, result.node_id]).exists()


def test_capture_does_not_repeat_what_the_agent_already_wrote_from_the_message(principal, settings):
    settings.MEMORY_CAPTURE_THREADS = False
    said, = append(principal, "记住：Bart在圣诞节晚会上跳舞，感觉非常开心。", **CTX)
    event = "Bart在圣诞节晚会上跳舞，感觉非常开心。"
    agents = propose(principal, said.pk, event, event, domain="生活")
    assert capture()["outcomes"] == {"accepted": 1}  # answered "already remembered", nothing written
    assert active() == [(agents.node_id, event)]


def test_only_a_note_that_says_the_same_thing_is_absorbed(principal):
    said, = append(principal, "I live in Berlin and I work as a nurse. Remember that.", **CTX)
    capture()
    assert [title for _, title in active()] == ["User lives in Berlin", "User works as/at nurse"]
    result = propose(principal, said.pk, "Home city: Berlin")  # too few words in common: both stay
    assert len(active()) == 3 and "merged" not in result.message
    result = propose(principal, said.pk, "Lives in Berlin", "The user lives in Berlin")
    assert [title for _, title in active()] == ["User works as/at nurse", "Home city: Berlin", "Lives in Berlin"]


def test_an_agents_own_notes_and_other_owners_notes_are_never_absorbed(principal):
    said, = append(principal, "Remember: I live in Berlin.", **CTX)
    other, = append(principal, "Remember: I live in Berlin.", **{**CTX, "user_id": "u2"})
    mine = propose(principal, said.pk, "User lives in Berlin", "The user lives in Berlin.")
    session_note = make_node(principal, scope="session", **CTX, title="User lives in Berlin",
                             content="said in this conversation", source_message_ids=[said.pk])
    theirs = make_node(principal, scope="user", user_id="u2", title="User lives in Berlin",
                       source_message_ids=[other.pk])
    again = propose(principal, said.pk, "Lives in Berlin", "The user lives in Berlin")
    assert "merged" not in again.message
    assert {pk for pk, _ in active()} == {mine.node_id, session_note.pk, theirs.pk, again.node_id}


@pytest.mark.parametrize(("one", "other", "same"), [
    (("User lives in Berlin", "The user said they live in Berlin."), ("User lives in Berlin", ""), True),
    (("User likes tea", ""), ("User likes coffee", ""), False),
    (("用户喜欢喝绿茶", ""), ("用户喜欢喝红茶", ""), False),
    (("Bart在圣诞节晚会上跳舞,感觉非常开心", "用户要求记住：Bart在圣诞节晚会上跳舞,感觉非常开心"),
     ("Bart在圣诞节晚会上跳舞，感觉非常开心。", ""), True),
    (("User", ""), ("User", ""), False),  # no word of its own
])
def test_same_subject_needs_most_of_the_shorter_notes_words(one, other, same):
    assert same_subject(subject_words(*one), subject_words(*other)) is same
