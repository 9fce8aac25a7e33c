"""Scenarios from ../shared/cases/SCENARIOS.md that the spine reaches, mapped to tests.

S01 identical re-add ................. tests/test_scenarios_governance.py (and S02–S04, S06, S07 there)
S05 delete leaves index entry ......... tests/memory/services/test_nodes.py (hard delete, index rows),
                                        tests/memory/selectors/test_query.py (deleted rows take no top-k slot),
                                        tests/memory/api/test_forget_api.py (REST and memory_forget)
S05, S15, S18, S19 again through proposals, extraction batches and forget: tests/test_scenarios_governance.py
S08 scope filter on every section ..... tests/memory/api/test_isolation.py::test_search_scoped_to_a_workspace…
S09 empty allow-list fails open ....... tests/memory/api/test_isolation.py::test_a_key_with_an_empty_workspace…
S10 session id reused by another user . tests/memory/api/test_messages_api.py, tests/memory/services/test_messages.py
S11 naive vs aware timestamps ......... below, and the naive-datetime cases in the API tests
S12 Chinese clause as one token ....... tests/memory/api/test_search_api.py::test_chinese_words_inside_a_clause…
S13 English inside Chinese ............ tests/memory/api/test_search_api.py::test_english_inside_chinese_is_found
S14 full- and half-width .............. tests/memory/api/test_search_api.py::test_full_and_half_width_forms_match
S15 JSON null versus missing .......... tests/memory/selectors/test_query.py::TestValueFilters (run on both databases)
S16 summary outside the budget ........ tests/memory/selectors/test_context.py, tests/memory/api/test_context_api.py
S17 budget below the overhead ......... tests/memory/api/test_context_api.py
S18 NUL bytes ......................... below, and tests/memory/api/test_messages_api.py
S19 very long input ................... tests/memory/api/test_messages_api.py, test_propose_api.py (50k value)
S20 summary chain order ............... below, and tests/memory/services/test_summaries.py
"""

from datetime import UTC, datetime

from django.urls import reverse

from memory.models import Message, Node


def test_s11_offset_times_are_compared_as_instants_and_naive_ones_refused(agent_client):
    source = agent_client.post(reverse("api-messages"), {"session_id": "s1", "user_id": "u1", "role": "user",
                                                         "content": "k is v"}, format="json").json()["ids"]
    base = {"operation": "create", "user_id": "u1", "explicit_user_intent": True}
    node = {"scope": "user", "type": "fact", "key": "k", "source_message_ids": source}
    utc = agent_client.post(reverse("api-memory-propose"), {**base, "node": {
        **node, "title": "v1", "expires_at": "2035-06-01T00:00:00Z"}}, format="json")
    shanghai = agent_client.post(reverse("api-memory-propose"), {**base, "node": {
        **node, "key": "k2", "title": "v2", "expires_at": "2035-06-01T08:00:00+08:00"}}, format="json")
    naive = agent_client.post(reverse("api-memory-propose"), {**base, "node": {
        **node, "key": "k3", "title": "v3", "expires_at": "2035-06-01T08:00:00"}}, format="json")
    assert utc.status_code == shanghai.status_code == 201
    assert naive.status_code == 400 and "offset" in naive.json()["error"]["message"].lower()
    first, second = Node.objects.order_by("pk")
    assert first.expires_at == second.expires_at == datetime(2035, 6, 1, tzinfo=UTC)
    assert shanghai.json()["node"]["expires_at"] == "2035-06-01T00:00:00Z"


def test_s18_nul_is_refused_on_every_text_path(agent_client):
    propose = {"operation": "create", "user_id": "u1", "explicit_user_intent": True,
               "node": {"scope": "user", "type": "fact", "key": "k", "title": "x", "tags": ["t\u0000"]}}
    assert agent_client.post(reverse("api-memory-propose"), propose, format="json").status_code == 400
    search = agent_client.post(reverse("api-memory-search"), {"user_id": "u1", "query_text": "a\u0000"}, format="json")
    assert search.status_code == 400
    assert agent_client.get(reverse("api-nodes") + "?q=%00").status_code == 400
    context = agent_client.post(reverse("api-context"), {"session_id": "s1", "query": "a\u0000"}, format="json")
    assert context.status_code == 400
    assert Node.objects.count() == 0


def test_s20_summaries_follow_server_order_even_with_a_late_client_timestamp(agent_client):
    contents = ["m1:你好", "m2:点一碗面", "m3:改成米饭", "m4", "m5", "m6"]
    ids = agent_client.post(reverse("api-messages"), {"messages": [
        {"session_id": "s1", "role": "user", "content": c} for c in contents]}, format="json").json()["ids"]
    late = agent_client.post(reverse("api-messages"), {"session_id": "s1", "role": "user", "content": "late",
                                                       "occurred_at": "2001-01-01T00:00:00Z"}, format="json")
    s1 = agent_client.post(reverse("api-summaries"), {"session_id": "s1", "summary": "|".join(contents[:3]),
                                                      "to_message_id": ids[2]}, format="json").json()
    s2 = agent_client.post(reverse("api-summaries"), {"session_id": "s1", "summary": "S2",
                                                      "to_message_id": ids[5]}, format="json").json()
    assert (s1["from_message_id"], s1["to_message_id"]) == (ids[0], ids[2])
    assert (s2["from_message_id"], s2["to_message_id"], s2["parent_summary_id"]) == (ids[3], ids[5], s1["id"])
    recent = agent_client.get(reverse("api-messages"), {"session_id": "s1"}).json()["results"]
    assert [m["content"] for m in recent] == contents + ["late"]
    assert Message.objects.get(pk=late.json()["ids"][0]).pk > ids[5]
