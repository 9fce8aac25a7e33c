"""Capture writes nothing from a turn beyond the writable scopes of the key that appended it
(R-TEN keys limited to writable scopes; R-EXTRACT; memory.capture.key_scopes)."""

import json

import pytest

from accounts.services import agent_key_create, agent_key_revoke
from memory.capture.jobs import job_run
from memory.capture.rules import RuleExtractor
from memory.capture_models import CaptureJob, JobStatus
from memory.models import AuditEvent, Message, Node
from tests.conftest import key_client
from tests.helpers import append
from tests.memory.capture.test_jobs import Echo

URL = "/api/v1/messages"
ALLERGY = "Remember that I am allergic to peanuts."
OWNER = {"session_id": "s1", "user_id": "u1", "workspace_id": "w1"}


def say(client, content: str = ALLERGY) -> int:
    response = client.post(URL, data=json.dumps({**OWNER, "role": "user", "content": content}),
                           content_type="application/json")
    assert response.status_code == 201
    return response.json()["ids"][0]


def capture() -> CaptureJob:
    job = CaptureJob.objects.get()
    done = job_run(job.pk, extractor=RuleExtractor(), summarizer=Echo())
    assert done.status == JobStatus.DONE
    return done


def scopes_of_nodes() -> set[str]:
    return set(Node.objects.filter(status="active").values_list("scope", flat=True))


def test_a_session_only_keys_turn_is_captured_as_session_memory_only(team):
    key, raw = agent_key_create(team=team, name="session only", writable_scopes=["session"])
    said = say(key_client(raw))
    assert Message.objects.get(pk=said).agent_key == key
    job = capture()
    node = Node.objects.get(status="active")
    assert (node.scope, node.type, node.source_message_ids) == ("session", "constraint", [said])
    assert node.session.external_id == "s1"
    assert job.result["outcomes"] == {"accepted": 1}
    assert job.result["notes"] == [f"proposal 0: narrowed user → session (key {key.prefix} may write session)"]
    created = AuditEvent.objects.get(event_type="memory.node.created", node_id=node.pk)
    assert created.actor == "system:capture"
    assert created.reason.endswith(f"; narrowed user → session: key {key.prefix} may write session")


def test_an_unrestricted_keys_turn_is_still_captured_as_user_memory(team, agent_client):
    say(agent_client)
    job = capture()
    node = Node.objects.get(status="active")
    assert (node.scope, node.user_id, node.type) == ("user", "u1", "constraint")
    assert "notes" not in job.result and "narrowed" not in AuditEvent.objects.get(
        event_type="memory.node.created").reason


def test_a_workspace_and_session_keys_turn_gives_no_user_memory(team):
    key, raw = agent_key_create(team=team, name="project", writable_scopes=["workspace", "session"])
    say(key_client(raw))
    job = capture()
    assert scopes_of_nodes() == {"session"}
    assert not Node.objects.filter(scope="user").exists()
    assert job.result["notes"] == [f"proposal 0: narrowed user → session (key {key.prefix} may write session, workspace)"]


def test_a_key_without_session_scope_has_the_proposal_refused_and_noted(team):
    key, raw = agent_key_create(team=team, name="workspace only", writable_scopes=["workspace"])
    say(key_client(raw))
    job = capture()
    assert Node.objects.count() == 0
    assert job.result["outcomes"] == {"scope_not_allowed": 1}
    assert job.result["notes"] == [f"proposal 0: not written (key {key.prefix} may write workspace)"]


def test_a_dashboard_logins_turn_is_captured_as_user_memory(team, editor):
    from accounts.principal import principal_for_user_role

    said = append(principal_for_user_role(team, editor, "editor"), ALLERGY, **OWNER)[0]
    assert said.agent_key is None
    capture()
    assert scopes_of_nodes() == {"user"}


def test_a_key_revoked_after_it_appended_still_limits_what_capture_takes(team):
    key, raw = agent_key_create(team=team, name="session only", writable_scopes=["session"])
    say(key_client(raw))
    agent_key_revoke(key=key)
    capture()
    assert scopes_of_nodes() == {"session"}


@pytest.mark.parametrize("first_scopes,expected", [(["session"], {"session"}), (None, {"user"})])
def test_a_proposal_is_held_to_the_key_of_the_turn_it_cites(team, first_scopes, expected):
    """Two keys in one window: the allergy said through the first key is held to it alone."""
    _, first = agent_key_create(team=team, name="first", writable_scopes=first_scopes)
    _, other = agent_key_create(team=team, name="other", writable_scopes=["session"] if first_scopes is None else None)
    say(key_client(other), "hello there")
    say(key_client(first))
    capture()
    assert scopes_of_nodes() == expected


def test_linking_a_repeat_to_user_memory_is_held_to_the_key_of_the_turn(team, agent_client):
    say(agent_client)
    capture()
    allergy = Node.objects.get(scope="user")
    _, raw = agent_key_create(team=team, name="session only", writable_scopes=["session"])
    again = say(key_client(raw), "Remember, I'm allergic to peanuts.")
    capture_again = CaptureJob.objects.filter(status=JobStatus.PENDING).get()
    job_run(capture_again.pk, extractor=RuleExtractor(), summarizer=Echo())
    allergy.refresh_from_db()
    assert again not in allergy.source_message_ids
    assert not AuditEvent.objects.filter(event_type="memory.node.cited", node_id=allergy.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_migration_0028_fills_in_the_key_of_earlier_turns_from_their_audit_events(team, editor):
    from accounts.principal import principal_for_key, principal_for_user_role
    from tests.helpers import latest_migrations, migrate_to

    key, _ = agent_key_create(team=team, name="session only", writable_scopes=["session"])
    by_key = append(principal_for_key(key), "one", "two", **OWNER)
    by_login = append(principal_for_user_role(team, editor, "editor"), "three", **OWNER)
    latest = latest_migrations()
    try:
        migrate_to([("memory", "0027_message_unshown_index")])
        migrate_to([("memory", "0028_message_agent_key")])
        keys = dict(Message.objects.values_list("pk", "agent_key"))
        assert keys == {by_key[0].pk: key.pk, by_key[1].pk: key.pk, by_login[0].pk: None}
    finally:
        migrate_to(latest)
