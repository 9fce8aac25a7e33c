"""MemoryClient against the live server: conversation, context and the hit ledger (R-API, R-CTX)."""

from datetime import UTC, datetime

import pytest

from memory.models import Message, RetrievalFeedback, Summary
from memory_client import AppendResult, Context, ValidationError
from memory_client import Message as ClientMessage
from tests.client.conftest import WHO

pytestmark = pytest.mark.django_db(transaction=True)


def test_append_message_returns_its_id_and_the_stored_message(memory):
    result = memory.append_message("s1", "user", "你好", occurred_at=datetime(2026, 1, 2, 3, 4, tzinfo=UTC),
                                   metadata={"speaker": "小明"}, **WHO)
    stored = Message.objects.get()
    assert isinstance(result, AppendResult) and result.ids == (stored.pk,)
    message = result.messages[0]
    assert isinstance(message, ClientMessage)
    assert (message.session_id, message.workspace_id, message.user_id, message.role, message.content) == (
        "s1", "home", "xiaoming", "user", "你好")
    assert message.metadata == {"speaker": "小明"}
    assert message.occurred_at == datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
    assert message.created_at is not None and message.created_at.tzinfo is not None


def test_a_batch_is_appended_in_order(memory):
    result = memory.append_messages([
        {"session_id": "s1", "role": "user", "content": "one", **WHO},
        {"session_id": "s1", "role": "assistant", "content": "two", **WHO},
    ])
    assert list(result.ids) == list(Message.objects.order_by("pk").values_list("pk", flat=True))
    assert [m.content for m in result.messages] == ["one", "two"]


def test_a_batch_with_one_bad_message_stores_nothing_and_names_the_field(memory):
    with pytest.raises(ValidationError) as raised:
        memory.append_messages([
            {"session_id": "s1", "role": "user", "content": "fine", **WHO},
            {"session_id": "s1", "role": "robot", "content": "bad", **WHO},
        ])
    assert (raised.value.status, raised.value.code) == (400, "invalid")
    assert "messages[1].role" in raised.value.details
    assert Message.objects.count() == 0


def test_list_messages_pages_from_the_newest_oldest_first(memory):
    ids = memory.append_messages([{"session_id": "s1", "role": "user", "content": f"m{i}", **WHO}
                                  for i in range(3)]).ids
    page = memory.list_messages("s1", limit=2, **WHO)
    assert [m.id for m in page.messages] == list(ids[1:])
    assert page.next_before == ids[1]
    older = memory.list_messages("s1", limit=2, before=page.next_before, **WHO)
    assert [m.id for m in older.messages] == [ids[0]] and older.next_before is None


def test_the_summary_chain_is_appended_listed_and_read_latest(memory):
    ids = memory.append_messages([{"session_id": "s1", "role": "user", "content": f"m{i}", **WHO}
                                  for i in range(4)]).ids
    assert memory.latest_summary("s1", **WHO) is None
    first = memory.append_summary("s1", "开始做饭", from_message_id=ids[0], to_message_id=ids[1],
                                  current_goal="做晚饭", decisions=["做番茄炒蛋"], **WHO)
    second = memory.append_summary("s1", "做好了", from_message_id=ids[2], to_message_id=ids[3], **WHO)
    assert (first.parent_summary_id, second.parent_summary_id) == (None, first.id)
    assert (first.current_goal, first.decisions) == ("做晚饭", ("做番茄炒蛋",))
    assert Summary.objects.count() == 2
    page = memory.list_summaries("s1", limit=1, **WHO)
    assert [s.id for s in page.summaries] == [first.id] and page.next_cursor
    rest = memory.list_summaries("s1", limit=1, cursor=page.next_cursor, **WHO)
    assert [s.id for s in rest.summaries] == [second.id] and rest.next_cursor is None
    latest = memory.latest_summary("s1", **WHO)
    assert latest is not None and latest.id == second.id and latest.summary == "做好了"


def test_context_injects_the_memory_and_records_the_call(memory, coriander):
    context = memory.context("s1", query="香菜", budget={"max_chars": 800}, **WHO)
    assert isinstance(context, Context)
    assert "用户不吃香菜" in context.block and len(context.block) <= 800
    assert coriander.node_id in context.used_memory_ids
    assert any(item.kind == "node" and item.id == coriander.node_id and item.layer in ("L2", "L5")
               for item in context.items)
    assert context.recent_messages[0].content == "我不吃香菜"
    assert context.budget["max_chars"]["value"] == 800
    assert context.diagnostics["store_status"] == "ok"
    retrieval = memory.get_retrieval(context.retrieval_id)
    assert (retrieval.id, retrieval.query, retrieval.session_id) == (context.retrieval_id, "香菜", "s1")
    assert retrieval.total_chars == len(context.block) and retrieval.feedback is None


def test_context_dates_earlier_messages_in_the_time_zone_given(memory):
    memory.append_message("s-old", "user", "我们在香山爬山了", occurred_at=datetime(2024, 2, 29, 23, 30, tzinfo=UTC), **WHO)
    memory.append_message("s1", "user", "你好", **WHO)
    shanghai = memory.context("s1", query="香山爬山", timezone="Asia/Shanghai", **WHO).block
    utc = memory.context("s1", query="香山爬山", **WHO).block
    assert "- [2024-03-01] user: 我们在香山爬山了" in shanghai.splitlines()
    assert "- [2024-02-29] user: 我们在香山爬山了" in utc.splitlines()
    with pytest.raises(ValidationError) as raised:
        memory.context("s1", query="x", timezone="Mars/Olympus", **WHO)
    assert "timezone" in raised.value.details


def test_retrieval_feedback_is_recorded_and_shown_on_the_retrieval(memory, coriander):
    context = memory.context("s1", query="香菜", **WHO)
    feedback = memory.retrieval_feedback(context.retrieval_id, [coriander.node_id], helpful=True, note="used it")
    assert (feedback.retrieval_id, feedback.used_node_ids, feedback.helpful) == (
        context.retrieval_id, (coriander.node_id,), True)
    assert coriander.node_id in feedback.injected_node_ids
    stored = RetrievalFeedback.objects.get()
    assert (stored.retrieval_id, stored.used_node_ids, stored.note) == (context.retrieval_id, [coriander.node_id],
                                                                      "used it")
    assert memory.get_retrieval(context.retrieval_id).feedback.used_node_ids == (coriander.node_id,)


def test_health_and_any_other_endpoint_answer_as_json(memory):
    assert memory.health() == {"status": "ok", "database": "ok"}
    kpis = memory.request("GET", "kpis", params={"since": "2026-01-01", "until": "2026-01-02"})
    assert (kpis["since"], kpis["until"]) == ("2026-01-01", "2026-01-02")
