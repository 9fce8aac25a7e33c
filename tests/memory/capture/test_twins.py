"""Capture and an agent remembering the same message keep one memory (memory.services.twins;
R-STORE, R-EXTRACT). Found by a newcomer: with capture on, every "remember …" that the agent
also proposed became two memories, and superseding or forgetting the agent's copy left the
capture's copy injected."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.capture.jobs import job_run
from memory.capture.rules import RuleExtractor
from memory.capture_models import CaptureJob, JobStatus
from memory.errors import Conflict
from memory.models import AuditEvent, Node
from memory.services.forgetting import ForgetSelector, memory_forget, node_restore
from memory.services.proposals import Proposal, proposal_apply
from memory.services.twins import adds_nothing, agrees, fact_of, says
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
    assert Node.objects.get(pk=captured).key == "home"
    # Capture keyed it (home): the agent's note saying it, and nothing more, is that memory.
    result = propose(principal, said.pk, "User lives in Berlin", "The user lives in Berlin.")
    assert (result.reason, result.node_id, result.message) == ("duplicate", captured, "already remembered")
    assert active() == [(captured, "User lives in Berlin")]
    # A keyless note of capture's is absorbed by the agent's that says it.
    Node.objects.filter(pk=captured).update(key="", value_json=None)
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
    assert capture()["outcomes"] == {"duplicate": 1}  # answered "already remembered", nothing written
    assert active() == [(agents.node_id, event)]


def test_only_a_note_that_says_the_same_thing_is_absorbed(principal):
    said, = append(principal, "I live in Berlin and I work as a nurse. Remember that.", **CTX)
    capture()
    assert [title for _, title in active()] == ["User lives in Berlin", "User is a nurse"]
    result = propose(principal, said.pk, "Home city: Berlin")  # too few words in common: both stay
    assert len(active()) == 3 and "merged" not in result.message
    result = propose(principal, said.pk, "Lives in Berlin", "The user lives in Berlin")
    assert [title for _, title in active()] == ["User is a nurse", "Home city: Berlin", "Lives in Berlin"]


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


def test_a_second_fact_in_the_message_is_never_lost(principal, settings):
    """A second newcomer's find: capture's note of the whole sentence was absorbed by the agent's
    note of its first half (or, agent first, never written), and the daughter's egg allergy was
    lost."""
    settings.MEMORY_CAPTURE_THREADS = False
    text = "Remember that I'm allergic to peanuts and my daughter Emma is allergic to eggs."
    said, = append(principal, text, **CTX)
    capture()
    captured = active()
    assert len(captured) == 1 and "egg" in captured[0][1]
    result = propose(principal, said.pk, "User is allergic to peanuts", "The user is allergic to peanuts.")
    assert "merged" not in result.message and len(active()) == 2
    # agent first
    again, = append(principal, text, **{**CTX, "session_id": "s2", "user_id": "u2"})
    first = proposal_apply(principal=principal, proposal=Proposal(
        operation="create", explicit_user_intent=True, session_id="s2", user_id="u2", workspace_id="w1",
        node={"scope": "user", "type": "fact", "title": "User is allergic to peanuts",
              "source_message_ids": [again.pk]}))
    capture()
    assert Node.objects.filter(pk=first.node_id, status="active").exists()
    assert Node.objects.filter(user_id="u2", status="active", title__icontains="egg").exists()


def test_a_keyed_note_of_the_agent_absorbs_capture_s_keyless_note(principal):
    """The README's agent writes keyed notes (`allergy = 花生`); capture had written a keyless one."""
    said, = append(principal, "Remember: I live in Berlin.", **CTX)
    capture()
    (captured, _), = active()
    result = propose(principal, said.pk, "User lives in Berlin", key="residence_city", value_json="Berlin")
    assert "merged" in result.message and active() == [(result.node_id, "User lives in Berlin")]
    # A merged note cannot be restored beside the one it was merged into, superseded or not.
    moved, = append(principal, "I moved to Lisbon.", **CTX)
    propose(principal, moved.pk, "User lives in Lisbon", key="residence_city", value_json="Lisbon")
    with pytest.raises(Conflict, match=f"merged into node {result.node_id}"):
        node_restore(principal=principal, node_id=captured, reason="oops")
    assert [value for value in Node.objects.filter(status="active").values_list("value_json", flat=True)] == ["Lisbon"]


def test_the_readme_example_keeps_one_memory(principal):
    said, = append(principal, "记住，我对花生过敏", **{**CTX, "workspace_id": "home"})
    capture()
    result = proposal_apply(principal=principal, proposal=Proposal(
        operation="create", explicit_user_intent=True, reason="the user asked to remember it",
        **{**CTX, "workspace_id": "home"},
        node={"scope": "user", "type": "constraint", "domain": "生活技能", "key": "allergy", "value_json": "花生",
              "title": "用户对花生过敏", "content": "推荐菜谱时不要用花生。", "source_message_ids": [said.pk]}))
    assert result.accepted and active() == [(result.node_id, "用户对花生过敏")]


def test_a_late_capture_does_not_bring_back_what_the_agent_changed_since(principal, settings):
    """A third newcomer's find: capture's job for a message ran after the agent had superseded
    (or forgotten) its note of it, and wrote the old fact again beside the new one."""
    settings.MEMORY_CAPTURE_THREADS = False
    said, = append(principal, "Remember: I live in Berlin.", **CTX)
    berlin = propose(principal, said.pk, "Lives in Berlin", "The user lives in Berlin.")
    moved, = append(principal, "Remember: I moved to Lisbon.", **CTX)
    proposal_apply(principal=principal, proposal=Proposal(
        operation="supersede", target_id=berlin.node_id, explicit_user_intent=True, **CTX,
        node={"title": "Lives in Lisbon", "content": "The user lives in Lisbon.", "source_message_ids": [moved.pk]}))
    while CaptureJob.objects.exclude(status=JobStatus.DONE).exists():
        capture()
    titles = [title for _, title in active()]
    assert "Lives in Lisbon" in titles and not [title for title in titles if "Berlin" in title]


def test_only_a_note_of_the_same_type_that_lasts_as_long_absorbs(principal):
    """A third newcomer's finds: a fact absorbed capture's allergy constraint, and it left the
    always-injected preferences; a note expiring in a second absorbed a lasting one."""
    said, = append(principal, "记住，我对花生过敏", **CTX)
    capture()
    (constraint, _), = active()
    assert Node.objects.get(pk=constraint).type == "constraint"
    fact = propose(principal, said.pk, "用户对花生过敏")
    assert "merged" not in fact.message and len(active()) == 2
    again, = append(principal, "Remember: I live in Berlin.", **{**CTX, "session_id": "s2"})
    capture()
    soon = timezone.now() + timedelta(days=1)
    expiring = proposal_apply(principal=principal, proposal=Proposal(
        operation="create", explicit_user_intent=True, **{**CTX, "session_id": "s2"},
        node={"scope": "user", "type": "fact", "title": "User lives in Berlin", "expires_at": soon,
              "source_message_ids": [again.pk]}))
    assert expiring.accepted and "merged" not in expiring.message


def test_a_users_note_absorbs_capture_s_session_note_of_the_same_message(principal):
    said, = append(principal, "Remember: I live in Berlin.", **CTX)
    session_note = make_node(principal, scope="session", type="fact", **CTX, title="User lives in Berlin",
                             source_message_ids=[said.pk])
    AuditEvent.objects.filter(node_id=session_note.pk, event_type="memory.node.created").update(
        actor="system:capture")  # as capture writes it
    Node.objects.filter(status="active").exclude(pk=session_note.pk).update(status="deleted")
    result = propose(principal, said.pk, "User lives in Berlin")
    assert f"node {session_note.pk} that capture wrote" in result.message
    assert active() == [(result.node_id, "User lives in Berlin")]


def test_capture_keeps_what_its_note_says_beyond_the_agents(principal):
    """A fourth newcomer's finds: a model's content with details (an EpiPen, cashews) was merged
    away, and so were a person's edits to capture's note."""
    said, = append(principal, "Remember: I'm allergic to peanuts.", **CTX)
    capture()
    (captured, _), = active()
    assert Node.objects.get(pk=captured).title == "User is allergic to peanuts"
    Node.objects.filter(pk=captured).update(content="Severe: carries an EpiPen; also allergic to cashews.")
    result = propose(principal, said.pk, "User is allergic to peanuts", "Avoid peanuts in recipes.",
                     type="constraint")
    assert "merged" not in result.message and len(active()) == 2

@pytest.mark.parametrize(("content", "title", "nothing"), [
    ("The user said they are allergic to peanuts.", "User is allergic to peanuts", True),
    ("用户说自己对花生过敏。", "用户对花生过敏", True),
    ("用户要求记住：Bart在圣诞节晚会上跳舞,感觉非常开心", "Bart在圣诞节晚会上跳舞,感觉非常开心", True),
    ("The user said they live in Berlin.", "User lives in Berlin", True),
    ("", "User lives in Berlin", True),
    ("Severe: carries an EpiPen", "User is allergic to peanuts", False),
    # a fifth newcomer's: details the agent's note names elsewhere, stop words that qualify
    ("The user is allergic to peanuts and eggs.", "User is allergic to peanuts", False),
    ("The user only eats fish.", "User eats fish", False),
    ("The user said they are not vegan any more", "User is vegan", False),
])
def test_capture_s_content_adds_nothing_only_when_it_restates_the_title(content, title, nothing):
    assert adds_nothing(content, fact_of(title)) is nothing


def test_a_note_a_person_edited_is_not_capture_s_any_more(principal):
    from memory.services.nodes import node_update

    said, = append(principal, "Remember: I live in Berlin.", **CTX)
    capture()
    (captured, _), = active()
    node_update(principal=principal, node_id=captured, changes={"importance": 0.9}, reason="reviewed")
    result = propose(principal, said.pk, "User lives in Berlin", "Lives in Berlin since 2020.")
    assert "merged" not in result.message and len(active()) == 2
    # (a note saying no more than the keyed memory, as reviewed, is that memory: nothing merged either)
    assert propose(principal, said.pk, "User lives in Berlin").node_id == captured and len(active()) == 2


def test_an_expiring_note_does_not_stop_capture_s_lasting_one(principal, settings):
    settings.MEMORY_CAPTURE_THREADS = False
    said, = append(principal, "Remember: I live in Berlin.", **CTX)
    proposal_apply(principal=principal, proposal=Proposal(
        operation="create", explicit_user_intent=True, **CTX,
        node={"scope": "user", "type": "fact", "title": "User lives in Berlin",
              "expires_at": timezone.now() + timedelta(days=1), "source_message_ids": [said.pk]}))
    assert capture()["outcomes"] == {"accepted": 1} and len(active()) == 2


@pytest.mark.parametrize(("fact", "title", "content", "said"), [
    ("User lives in Berlin", "User lives in Berlin", "The user lives in Berlin.", True),
    ("User lives in Berlin", "Lives in Berlin", "", False),  # the subject too: a twin survives
    ("用户对花生过敏", "用户的女儿对花生过敏", "", False),
    ("User lives in Berlin", "Superuser lives in Berlin", "", False),
    ("User is vegetarian", "User is vegetarian", "", True),  # one word of its own is enough
    ("用户住在台北", "用户住在臺北", "", True),
    ("Bart在圣诞节晚会上跳舞,感觉非常开心", "Bart在圣诞节晚会上跳舞，感觉非常开心。", "", True),
    ("User lives in Berlin", "Home city", "Berlin", False),  # "lives in" is not said
    ("User is allergic to peanuts and my daughter Emma is allergic to eggs", "User is allergic to peanuts", "",
     False),
    # a third newcomer's losses under a share of words
    ("User's son Tom is allergic to peanuts, milk, eggs and soy", "User's son Tom is allergic to peanuts, milk and eggs",
     "", False),
    ("Tom is allergic to peanuts and Emma is allergic to eggs", "Tom is allergic to eggs and Emma is allergic to peanuts",
     "", False),
    ("用户老婆的生日是5月3日", "用户老婆的生日是3月5日", "", False),
    ("My PIN is 1234", "My PIN is 12345", "", False),
    ("User likes tea", "User likes teas and coffee", "", False),  # not inside a longer word
    ("User", "User", "", False),  # nothing of its own
    # a fourth newcomer's: a longer text that holds the fact but changes it
    ("User is allergic to peanuts", "User's daughter is allergic to peanuts", "", False),
    ("用户对花生过敏", "用户女儿对花生过敏", "", False),
    ("User is vegetarian", "User's son is vegetarian", "", False),
    ("User likes tea", "User hates that her husband likes tea", "", False),
    ("我的预算是5万", "我的预算是5万5", "", False),
    ("I weigh 5 kg", "I weigh 5 kg more than last year", "", False),
    ("会议在下午3点", "会议在下午3点半", "", False),
    ("5 kg carry-on limit", "2.5 kg carry-on limit", "", False),
    ("5°C in the fridge", "-5°C in the fridge", "", False),
    ("User lives in Berlin", "Home", "The user moved in 2020. The user lives in Berlin!", True),  # one sentence
])
def test_a_note_says_a_fact_word_for_word(fact, title, content, said):
    assert says(fact_of(fact), title, content) is said


@pytest.mark.parametrize(("fact", "title", "content", "same"), [
    ("User lives in Berlin", "User lives in Berlin", "", True),
    ("User does not eat pork", "User eats pork", "", False),
    ("User eats pork", "User doesn't eat pork", "", False),
    ("User does not eat pork", "Diet", "The user doesn't eat pork.", True),
    ("User is vegetarian", "User is never vegetarian", "", False),
    ("用户对花生过敏", "用户对花生过敏", "推荐菜谱时不要用花生。", True),
    ("用户不吃香菜", "用户吃香菜", "", False),
    ("用户没有孩子", "用户沒有孩子", "", True),
])
def test_a_note_says_a_fact_only_with_the_same_polarity(fact, title, content, same):
    assert agrees(fact, title, content) is same



def test_capture_restating_an_agents_keyed_note_cites_the_message_and_keeps_its_words(principal, settings):
    # A newcomer's race: the capture job looked for twins before the agent's write committed,
    # then its upsert found the agent's note of the same key and value and replaced its words.
    from accounts.principal import system_principal
    from memory.services.node_input import NodeInput
    from memory.services.upsert import node_upsert

    settings.MEMORY_CAPTURE_THREADS = False
    said, = append(principal, "记住，我对花生过敏，吃了会休克。", **CTX)
    agents = propose(principal, said.pk, "用户对花生过敏", "会休克，随身带肾上腺素笔。", type="constraint",
                     domain="生活技能", key="allergy", value_json="花生", importance=1.0, confidence=1.0)
    before = Node.objects.get(pk=agents.node_id)
    again, = append(principal, "对了，花生我是真的不能吃。", **CTX)
    restated = NodeInput(scope="user", user_id="u1", type="constraint", domain="生活技能",
                         key="allergy", value_json="花生", cardinality="many", title="用户对花生过敏",
                         content="推荐菜谱时绝对避免花生。", importance=0.95, source_message_ids=(again.pk,))
    result = node_upsert(principal=system_principal(principal.team, "capture"), data=restated)
    node = Node.objects.get(pk=agents.node_id)
    assert (result.node.pk, result.changed) == (node.pk, False)
    assert (node.content, node.importance, node.version) == ("会休克，随身带肾上腺素笔。", 1.0, before.version)
    assert again.pk in node.source_message_ids  # the restatement is evidence of it all the same
    # Capture's own note is still refreshed by capture.
    mine = node_upsert(principal=system_principal(principal.team, "capture"), data=NodeInput(
        scope="user", user_id="u1", type="fact", title="用户住在上海", content="用户说自己住在上海"))
    refreshed = node_upsert(principal=system_principal(principal.team, "capture"), data=NodeInput(
        scope="user", user_id="u1", type="fact", title="用户住在上海", content="用户说自己住在上海", importance=0.9))
    assert refreshed.node.pk == mine.node.pk and refreshed.changed
