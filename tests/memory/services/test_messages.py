from datetime import UTC, datetime, timedelta

import pytest

from memory.errors import AccessDenied, InvalidInput
from memory.models import AuditEvent, Message, Session
from memory.selectors.messages import messages_recent
from memory.services.messages import MessageInput, messages_append
from memory.services.sessions import SessionRef
from tests.helpers import append


def test_recent_messages_come_back_oldest_first_by_session(principal):
    append(principal, "m1", "m2", "m3")
    append(principal, "other session", session_id="s2")
    session = Session.objects.get(external_id="s1")
    assert [m.content for m in messages_recent(session=session, limit=2)] == ["m2", "m3"]


def test_order_follows_server_sequence_when_timestamps_tie_or_arrive_late(principal):
    early = datetime(2020, 1, 1, tzinfo=UTC)
    append(principal, "m1:你好", "m2:点一碗面", "m3:改成米饭")
    append(principal, "late", occurred_at=early)
    session = Session.objects.get(external_id="s1")
    contents = [m.content for m in messages_recent(session=session, limit=10)]
    assert contents == ["m1:你好", "m2:点一碗面", "m3:改成米饭", "late"]
    assert len({m.created_at for m in Message.objects.filter(content__startswith="m")}) == 1


def test_same_session_id_for_two_users_is_two_sessions(principal):
    append(principal, "my badge number is B1", user_id="u1")
    append(principal, "hello", user_id="u2")
    assert Session.objects.filter(external_id="s1").count() == 2
    u2 = Session.objects.get(external_id="s1", user_id="u2")
    assert [m.content for m in messages_recent(session=u2, limit=10)] == ["hello"]


def test_a_batch_with_one_bad_message_stores_nothing(principal):
    ref = SessionRef(session_id="s1", user_id="u1")
    with pytest.raises(InvalidInput) as error:
        messages_append(principal=principal, messages=[
            MessageInput(session=ref, role="user", content="fine"),
            MessageInput(session=ref, role="user", content="abc\x00def"),
            MessageInput(session=ref, role="user", content="also fine"),
        ])
    assert "messages[1].content" in error.value.fields
    assert Message.objects.count() == 0
    assert Session.objects.count() == 0


def test_lone_surrogate_is_rejected(principal):
    with pytest.raises(InvalidInput):
        append(principal, "bad \ud800 text")


def test_parent_must_belong_to_the_same_session(principal):
    other = append(principal, "elsewhere", session_id="s2")[0]
    with pytest.raises(InvalidInput):
        append(principal, "reply", parent_id=other.pk)
    first = append(principal, "first")[0]
    assert append(principal, "reply", parent_id=first.pk)[0].parent_id == first.pk


def test_naive_occurred_at_is_rejected(principal):
    with pytest.raises(InvalidInput):
        append(principal, "x", occurred_at=datetime(2025, 6, 1, 8, 0))


def test_append_is_audited_once_per_session(principal):
    messages = append(principal, "a", "b")
    event = AuditEvent.objects.get(event_type="memory.messages.appended")
    assert event.payload == {"message_ids": [m.pk for m in messages], "count": 2}
    assert event.actor == principal.actor


def test_content_over_the_limit_is_rejected_and_the_limit_itself_is_stored(principal):
    with pytest.raises(InvalidInput) as error:
        append(principal, "x" * 100_001)
    assert "100000" in error.value.message
    stored = append(principal, "字" * 99_988 + "END_MARKER_7")[0]
    assert len(stored.content) == 100_000


def test_key_limited_to_a_workspace_cannot_write_another(team):
    from accounts.principal import principal_for_key
    from accounts.services import agent_key_create

    limited = principal_for_key(agent_key_create(team=team, name="w1 only", workspace_ids=["w1"])[0])
    append(limited, "ok", workspace_id="w1")
    with pytest.raises(AccessDenied):
        append(limited, "no", workspace_id="w2")
    with pytest.raises(AccessDenied):
        append(limited, "no workspace")


def test_created_at_is_server_time(principal):
    before = datetime.now(UTC) - timedelta(seconds=5)
    message = append(principal, "x", occurred_at=datetime(2001, 1, 1, tzinfo=UTC))[0]
    assert message.created_at >= before
    assert message.occurred_at.year == 2001
