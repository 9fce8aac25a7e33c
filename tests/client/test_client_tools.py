"""MemoryClient against the live server: the four tools, extractions, nodes, sessions and
working memory (R-TOOLS, R-STORE, R-API)."""

import pytest

from memory.models import AuditEvent, Message, Node
from memory_client import Conflict, NotFound, ProposeResult, SearchResult
from tests.client.conftest import WHO

pytestmark = pytest.mark.django_db(transaction=True)


def test_search_finds_the_memory_by_key_and_by_a_chinese_word(memory, coriander):
    by_key = memory.search(key="avoid_ingredient", value_json="香菜", **WHO)
    assert isinstance(by_key, SearchResult) and [n.id for n in by_key.exact] == [coriander.node_id]
    by_word = memory.search(query_text="香菜", **WHO)
    hit = next(n for n in by_word.exact + by_word.relevant if n.id == coriander.node_id)
    assert (hit.title, hit.scope, hit.type, hit.value_json, hit.status) == ("用户不吃香菜", "user", "preference",
                                                                            "香菜", "active")


def test_get_reads_a_node_by_id_or_by_key_and_raises_not_found_for_an_unknown_key(memory, coriander, said):
    node = memory.get(id=coriander.node_id)
    assert (node.id, node.source_message_ids, node.explicit) == (coriander.node_id, (said,), True)
    assert memory.get(key="avoid_ingredient", type="preference", **WHO).id == coriander.node_id
    with pytest.raises(NotFound) as raised:
        memory.get(key="no_such_key", **WHO)
    assert (raised.value.status, raised.value.code) == (404, "not_found")


def test_propose_creates_refuses_and_supersedes(memory, coriander, said):
    assert isinstance(coriander, ProposeResult) and coriander.created and coriander.node.title == "用户不吃香菜"
    refused = memory.propose("create", session_id="s1", **WHO,
                             node={"scope": "user", "type": "fact", "title": "住在上海", "source_message_ids": [said]})
    assert (refused.accepted, refused.reason, refused.node_id) == (False, "explicit_intent_required", None)
    corrected = memory.propose("supersede", target_id=coriander.node_id, explicit_user_intent=True, session_id="s1",
                               reason="the user corrected it", node={"title": "用户不吃香菜和葱", "source_message_ids": [said]},
                               **WHO)
    assert corrected.accepted and corrected.superseded_id == coriander.node_id
    assert Node.objects.get(pk=coriander.node_id).status == "superseded"
    history = memory.node_history(corrected.node_id)
    assert [n.id for n in history.chain] == [coriander.node_id, corrected.node_id]
    assert {"memory.node.created", "memory.node.superseded"} <= {event["event_type"] for event in history.audit}


def test_forget_asks_for_confirmation_with_several_candidates_then_forgets_them(memory):
    ids = [memory.propose("create", session_id="s1", **WHO,
                          node={"scope": "session", "type": "task", "title": title}).node_id
           for title in ("买番茄", "买青椒")]
    asked = memory.forget(session_id="s1", scope="session", type="task", **WHO)
    assert (asked.requires_confirmation, asked.deleted_ids, asked.candidate_count) == (True, (), 2)
    assert sorted(candidate["id"] for candidate in asked.candidates) == sorted(ids)
    done = memory.forget(session_id="s1", scope="session", type="task", confirm=True, reason="user asked", **WHO)
    assert (done.mode, sorted(done.deleted_ids)) == ("soft", sorted(ids))
    assert set(Node.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"deleted"}


def test_extractions_apply_every_operation_in_one_batch(memory):
    result = memory.extractions([
        {"operation": "create", "node": {"scope": "session", "type": "fact", "key": "pot", "title": "用铁锅"}},
        {"operation": "create", "node": {"scope": "session", "type": "task", "title": "买鸡蛋"}},
    ], session_id="s1", **WHO)
    assert result.applied and [r.accepted for r in result.results] == [True, True]
    assert sorted(Node.objects.values_list("title", flat=True)) == sorted(["用铁锅", "买鸡蛋"])


def test_tools_lists_the_four_memory_tools_with_their_endpoints(memory):
    tools = memory.tools()
    assert [tool["function"]["name"] for tool in tools.tools] == [
        "memory_search", "memory_get", "memory_propose_update", "memory_forget"]
    assert tools.endpoints["memory_propose_update"] == "POST /api/v1/memory/propose"
    assert "input_schema" in memory.tools(provider="anthropic").tools[0]


def test_nodes_are_listed_read_deleted_and_restored(memory, coriander):
    page = memory.list_nodes(key="avoid_ingredient", status="active")
    assert [n.id for n in page.nodes] == [coriander.node_id] and page.next_cursor is None
    assert memory.get_node(coriander.node_id).key == "avoid_ingredient"
    deleted = memory.delete_node(coriander.node_id, reason="test", **WHO)
    assert deleted.deleted_ids == (coriander.node_id,)
    assert memory.get_node(coriander.node_id).status == "deleted"
    restored = memory.restore_node(coriander.node_id, reason="oops", workspace_id="home")
    assert (restored.id, restored.status) == (coriander.node_id, "active")


def test_list_nodes_pages_with_the_cursor(memory):
    for title in ("a", "b", "c"):
        memory.propose("create", session_id="s1", node={"scope": "session", "type": "fact", "title": title}, **WHO)
    first = memory.list_nodes(limit=2)
    second = memory.list_nodes(limit=2, cursor=first.next_cursor)
    assert [n.title for n in first.nodes + second.nodes] == ["c", "b", "a"] and second.next_cursor is None


def test_forget_session_soft_then_again_is_a_conflict(memory, said):
    result = memory.forget_session("s1", reason="user asked", **WHO)
    assert (result.session_id, result.mode, result.counts["messages"]) == ("s1", "soft", 1)
    with pytest.raises(Conflict) as raised:
        memory.forget_session("s1", **WHO)
    assert raised.value.status == 409 and raised.value.code
    hard = memory.forget_session("s1", mode="hard", **WHO)
    assert hard.mode == "hard" and Message.objects.count() == 0


def test_working_memory_is_read_replaced_and_merged_with_versions(memory, said):
    empty = memory.get_working_memory("s1", **WHO)
    assert (empty.version, empty.current_goal, empty.references) == (0, "", {})
    put = memory.put_working_memory("s1", current_goal="做晚饭", references={"它": "番茄炒蛋"},
                                    slots={"people": None}, expected_version=0, **WHO)
    assert (put.version, put.references, put.slots) == (1, {"它": "番茄炒蛋"}, {"people": None})
    patched = memory.patch_working_memory("s1", references={"它": None, "那个": "青椒"}, slots={"people": 2}, **WHO)
    assert (patched.version, patched.current_goal, patched.references, patched.slots) == (
        2, "做晚饭", {"那个": "青椒"}, {"people": 2})
    with pytest.raises(Conflict) as raised:
        memory.patch_working_memory("s1", scratchpad="late", expected_version=1, **WHO)
    assert raised.value.code == "version_conflict"
    assert AuditEvent.objects.filter(event_type__startswith="memory.working_memory").count() == 2
