"""AsyncMemoryClient against the live server: one agent turn, the tools, and its errors (R-API).

Each test drives its coroutine with asyncio.run; the database is only touched outside it (the
ORM refuses to run inside an event loop), before and after."""

import asyncio

import pytest

from memory.models import Message, Node, RetrievalFeedback
from memory_client import AsyncMemoryClient, NotFound, ValidationError
from tests.client.conftest import NO_WAIT, WHO

pytestmark = pytest.mark.django_db(transaction=True)


def run(live_server, agent_key, steps):
    async def main():
        async with AsyncMemoryClient(live_server.url, agent_key[1], retry=NO_WAIT) as memory:
            return await steps(memory)

    return asyncio.run(main())


def test_an_agent_turn_appends_proposes_reads_context_and_reports_feedback(live_server, agent_key):
    async def turn(memory):
        said = await memory.append_message("s1", "user", "我对花生过敏", **WHO)
        proposed = await memory.propose(
            "create", session_id="s1", explicit_user_intent=True, reason="the user said so", **WHO,
            node={"scope": "user", "type": "constraint", "key": "allergy", "value_json": "花生", "title": "用户对花生过敏",
                  "source_message_ids": [said.ids[0]]})
        context = await memory.context("s1", query="花生", **WHO)
        feedback = await memory.retrieval_feedback(context.retrieval_id, [proposed.node_id])
        await memory.append_message("s1", "assistant", "好的，不放花生。", **WHO)
        return said, proposed, context, feedback

    said, proposed, context, feedback = run(live_server, agent_key, turn)
    assert proposed.accepted and Node.objects.get(pk=proposed.node_id).source_message_ids == [said.ids[0]]
    assert "用户对花生过敏" in context.block and proposed.node_id in context.used_memory_ids
    assert feedback.used_node_ids == (proposed.node_id,)
    assert RetrievalFeedback.objects.get().used_node_ids == [proposed.node_id]
    assert list(Message.objects.order_by("pk").values_list("role", flat=True)) == ["user", "assistant"]


def test_search_get_forget_and_tools_work_awaited(live_server, agent_key):
    async def steps(memory):
        created = await memory.propose("create", session_id="s1", **WHO,
                                       node={"scope": "session", "type": "fact", "key": "stove", "title": "家里用燃气灶"})
        found = await memory.search(query_text="燃气灶", session_id="s1", **WHO)
        got = await memory.get(id=created.node_id)
        tools = await memory.tools()
        forgotten = await memory.forget(id=created.node_id, session_id="s1", **WHO)
        return created, found, got, tools, forgotten

    created, found, got, tools, forgotten = run(live_server, agent_key, steps)
    assert created.node_id in [node.id for node in found.exact + found.relevant]
    assert got.title == "家里用燃气灶" and len(tools.tools) == 4
    assert forgotten.deleted_ids == (created.node_id,)
    assert Node.objects.get(pk=created.node_id).status == "deleted"


def test_async_errors_are_the_same_typed_errors(live_server, agent_key):
    async def steps(memory):
        errors = []
        for call in (memory.get_node(999_999), memory.context("s1", budget={"top_n": -1}, **WHO)):
            try:
                await call
            except (NotFound, ValidationError) as raised:
                errors.append(raised)
        return errors

    not_found, invalid = run(live_server, agent_key, steps)
    assert isinstance(not_found, NotFound) and not_found.code == "not_found"
    assert isinstance(invalid, ValidationError) and "budget.top_n" in invalid.details
