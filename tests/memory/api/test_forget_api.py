"""memory_forget, DELETE /nodes/{id} and restore (issue 3; R-TOOLS, R-STORE provable forgetting)."""

import json

import pytest
from django.db import connection

from memory.models import AuditEvent, Message, Node, NodeSource, NodeStatus
from tests.helpers import append, make_node

FORGET = "/api/v1/memory/forget"
U1 = {"user_id": "u1"}
SECRET = "ZEBRA-MARKER-7 斑马标记"


def forget(client, **body):
    return client.post(FORGET, body, format="json")


def search(client, text, **owner):
    return client.post("/api/v1/memory/search", {**owner, "query_text": text}, format="json").json()


def titles(found):
    return [node["title"] for node in found["exact"] + found["relevant"]]


@pytest.fixture
def cilantro(principal):
    said = append(principal, "记住，我以后做饭不要香菜", session_id="s1", user_id="u1")[0]
    return make_node(principal, scope="user", type="preference", domain="生活技能", key="avoid_ingredient",
                     cardinality="many", value_json="香菜", title="用户不吃香菜", content=SECRET,
                     source_message_ids=[said.pk], explicit=True)


def test_forget_one_exact_match_softly_without_confirmation(agent_client, cilantro):
    body = forget(agent_client, **U1, scope="user", domain="生活技能", category_path_prefix=[], key="avoid_ingredient",
                  value_json="香菜", reason="用户要求忘记").json()
    assert (body["deleted_ids"], body["mode"], body["requires_confirmation"]) == ([cilantro.pk], "soft", False)
    cilantro.refresh_from_db()
    assert cilantro.status == NodeStatus.DELETED
    assert titles(search(agent_client, "香菜", **U1)) == []
    events = AuditEvent.objects.filter(node_id=cilantro.pk, event_type="memory.node.deleted")
    assert events.count() == 1 and events.get().reason == "用户要求忘记"
    summary = AuditEvent.objects.get(event_type="memory.forget")
    assert summary.payload == {"mode": "soft", "count": 1, "node_ids": [cilantro.pk], "kept_memories": 0, "by": "selector"}


def test_several_candidates_need_confirmation_and_nothing_changes_until_then(agent_client, principal):
    nodes = [make_node(principal, key="avoid", cardinality="many", value_json=v, title=v) for v in ("a", "b", "c")]
    ask = forget(agent_client, **U1, key="avoid").json()
    assert ask["requires_confirmation"] is True and ask["deleted_ids"] == []
    assert ask["candidate_count"] == 3 and {c["id"] for c in ask["candidates"]} == {n.pk for n in nodes}
    assert Node.objects.filter(status="active").count() == 3
    assert not AuditEvent.objects.filter(event_type__in=["memory.node.deleted", "memory.forget"]).exists()
    done = forget(agent_client, **U1, key="avoid", confirm=True).json()
    assert sorted(done["deleted_ids"]) == sorted(n.pk for n in nodes) and done["count"] == 3
    assert Node.objects.filter(status="active").count() == 0


def test_hard_forget_needs_confirmation_then_leaves_nothing_findable(agent_client, principal, cilantro):
    newer = agent_client.post("/api/v1/memory/propose", {
        **U1, "operation": "supersede", "target_id": cilantro.pk, "explicit_user_intent": True,
        "node": {"key": "limit_ingredient", "value_json": {"ingredient": "香菜", "amount": "少量"},
                 "title": "香菜少量可以", "content": SECRET, "source_message_ids": cilantro.source_message_ids}},
        format="json").json()["node_id"]
    ask = forget(agent_client, **U1, id=newer, mode="hard").json()
    assert ask["requires_confirmation"] is True and Node.objects.filter(pk=newer).exists()
    done = forget(agent_client, **U1, id=newer, mode="hard", confirm=True, reason="privacy request").json()
    # the node and the version it superseded (the same fact) are both erased
    assert sorted(done["deleted_ids"]) == sorted([newer, cilantro.pk])
    assert not Node.objects.filter(pk__in=[newer, cilantro.pk]).exists()
    assert not NodeSource.objects.filter(node_id__in=[newer, cilantro.pk]).exists()
    assert agent_client.get(f"/api/v1/nodes/{newer}").status_code == 404
    assert titles(search(agent_client, "香菜", **U1)) == [] and titles(search(agent_client, "ZEBRA", **U1)) == []
    leftovers = [event.payload for event in AuditEvent.objects.all() if SECRET in json.dumps(event.payload,
                                                                                          ensure_ascii=False)]
    assert leftovers == []
    hard = AuditEvent.objects.filter(event_type="memory.node.hard_deleted")
    assert sorted(hard.values_list("node_id", flat=True)) == sorted([newer, cilantro.pk])
    assert {event.reason for event in hard} == {"privacy request"}
    # the source message is conversation, not memory: it stays (DELETE /sessions forgets it)
    assert append(principal, "x", session_id="s1", user_id="u1")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the tsvector column exists on PostgreSQL only")
def test_hard_forget_leaves_no_full_text_row_on_postgresql(agent_client, cilantro):
    forget(agent_client, **U1, id=cilantro.pk, mode="hard", confirm=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memory_node WHERE search_tokens LIKE %s", ["%zebra%"])
        assert cursor.fetchone()[0] == 0


def test_s06_forget_everything_of_mine_touches_only_my_memories(agent_client, principal, admin_principal):
    mine = [make_node(principal, user_id="u1", title=f"u1 {i}", key=f"k{i}") for i in range(2)]
    theirs = [make_node(principal, user_id="u2", title=f"u2 {i}", key=f"k{i}") for i in range(2)]
    shared = make_node(admin_principal, scope="global", type="fact", title="global fact")
    body = forget(agent_client, user_id="u1", scope="user", mode="hard", confirm=True).json()
    assert sorted(body["deleted_ids"]) == sorted(n.pk for n in mine) and body["count"] == 2
    assert Node.objects.filter(user_id="u1").count() == 0
    assert sorted(Node.objects.filter(user_id="u2").values_list("pk", flat=True)) == sorted(n.pk for n in theirs)
    assert Node.objects.filter(pk=shared.pk, status="active").exists()
    audited = set(AuditEvent.objects.filter(event_type="memory.node.hard_deleted").values_list("node_id", flat=True))
    assert audited == {n.pk for n in mine}


def test_a_selector_reaches_only_the_callers_owner(agent_client, principal):
    make_node(principal, user_id="u2", title="u2 only", key="k")
    assert forget(agent_client, user_id="u1", key="k", confirm=True).json()["deleted_ids"] == []
    assert forget(agent_client, key="k", confirm=True).json()["deleted_ids"] == []  # no owner named: nothing reached


@pytest.mark.parametrize("body,field", [
    ({}, "id"), ({"user_id": "u1"}, "id"), ({"id": 1, "mode": "erase"}, "mode"), ({"id": "1"}, "id"),
    ({"key": "a\u0000"}, "key"), ({"scope": "planet"}, "scope"), ({"id": 1, "unknown": 1}, "unknown"),
])
def test_bad_forget_requests_are_400(agent_client, body, field):
    response = forget(agent_client, **body)
    assert response.status_code == 400, response.content
    assert field in json.dumps(response.json())


def test_forgetting_another_teams_node_is_404_and_changes_nothing(other_agent_client, cilantro):
    assert forget(other_agent_client, id=cilantro.pk, mode="hard", confirm=True).status_code == 404
    assert other_agent_client.delete(f"/api/v1/nodes/{cilantro.pk}?mode=hard").status_code == 404
    cilantro.refresh_from_db()
    assert cilantro.status == "active"


def test_read_only_keys_cannot_forget(readonly_agent_client, cilantro):
    assert forget(readonly_agent_client, id=cilantro.pk).status_code == 403
    assert readonly_agent_client.delete(f"/api/v1/nodes/{cilantro.pk}").status_code == 403


def test_s05_delete_soft_then_hard_through_rest(agent_client, principal):
    seat = make_node(principal, key="travel.seat", value_json="window seat", title="window seat")
    assert titles(search(agent_client, "window", **U1)) == ["window seat"]
    soft = agent_client.delete(f"/api/v1/nodes/{seat.pk}?mode=soft&user_id=u1")
    assert soft.status_code == 200 and soft.json()["deleted_ids"] == [seat.pk]
    assert titles(search(agent_client, "window", **U1)) == []
    assert agent_client.get(f"/api/v1/nodes/{seat.pk}").json()["status"] == "deleted"
    assert agent_client.get("/api/v1/nodes", U1).json()["results"] == []
    again = agent_client.delete(f"/api/v1/nodes/{seat.pk}?mode=soft")
    assert again.status_code == 200 and again.json()["deleted_ids"] == []  # already forgotten: nothing to do
    hard = agent_client.delete(f"/api/v1/nodes/{seat.pk}?mode=hard")
    assert hard.json()["deleted_ids"] == [seat.pk]
    assert agent_client.get(f"/api/v1/nodes/{seat.pk}").status_code == 404
    assert not NodeSource.objects.filter(node_id=seat.pk).exists()
    assert agent_client.delete(f"/api/v1/nodes/{seat.pk}?mode=hard").status_code == 404
    assert agent_client.delete(f"/api/v1/nodes/{seat.pk + 1}?mode=wipe").status_code == 400


def test_restore_undoes_a_soft_delete(agent_client, principal):
    node = make_node(principal, key="k", value_json="v", title="v")
    agent_client.delete(f"/api/v1/nodes/{node.pk}")
    restored = agent_client.post(f"/api/v1/nodes/{node.pk}/restore", {"reason": "deleted by mistake"}, format="json")
    assert restored.status_code == 200 and restored.json()["status"] == "active"
    event = AuditEvent.objects.get(node_id=node.pk, event_type="memory.node.restored")
    assert (event.reason, event.payload["previous_status"]) == ("deleted by mistake", "deleted")
    assert agent_client.post(f"/api/v1/nodes/{node.pk}/restore", {}, format="json").status_code == 409


def test_restore_undoes_a_supersede(agent_client, principal):
    old = make_node(principal, key="diet", value_json="vegetarian", title="vegetarian")
    said = append(principal, "I eat meat now", session_id="s1", user_id="u1")[0].pk
    new = agent_client.post("/api/v1/memory/propose", {**U1, "operation": "supersede", "target_id": old.pk,
                                                       "explicit_user_intent": True,
                                                       "node": {"value_json": "omnivore", "title": "omnivore",
                                                                "source_message_ids": [said]}},
                            format="json").json()["node_id"]
    body = agent_client.post(f"/api/v1/nodes/{old.pk}/restore", {}, format="json").json()
    # the current version is superseded by a copy of the old one: old → new → copy, one active
    assert (body["status"], body["value_json"], body["supersedes_id"]) == ("active", "vegetarian", new)
    assert Node.objects.get(pk=new).status == NodeStatus.SUPERSEDED
    assert Node.objects.get(pk=old.pk).status == NodeStatus.SUPERSEDED
    assert [n.pk for n in Node.objects.filter(key="diet", status="active")] == [body["id"]]
    event = AuditEvent.objects.get(event_type="memory.node.restored")
    assert (event.node_id, event.payload["restored_from"], event.payload["superseded"]) == (body["id"], old.pk, new)
    # and the key can change again afterwards (the chain did not fork or jam)
    again = agent_client.post("/api/v1/memory/propose", {**U1, "operation": "create", "explicit_user_intent": True,
                                                         "node": {"scope": "user", "type": "preference", "key": "diet",
                                                                  "value_json": "vegan", "title": "vegan",
                                                                  "source_message_ids": [said]}}, format="json")
    assert again.status_code == 201 and again.json()["superseded_id"] == body["id"]
    assert agent_client.post(f"/api/v1/nodes/{new}/restore", {}, format="json").status_code == 409


def test_hard_forgetting_drops_stored_idempotent_answers_that_quote_it(agent_client, principal):
    from memory.models import IdempotencyRecord

    said = agent_client.post("/api/v1/messages", {"session_id": "s1", "user_id": "u1", "role": "user",
                                                  "content": SECRET}, format="json",
                             HTTP_IDEMPOTENCY_KEY="m-1").json()["ids"][0]
    created = agent_client.post("/api/v1/memory/propose", {
        "session_id": "s1", "user_id": "u1", "operation": "create", "explicit_user_intent": True,
        "node": {"scope": "user", "type": "fact", "key": "zebra", "title": SECRET, "source_message_ids": [said]}},
        format="json", HTTP_IDEMPOTENCY_KEY="p-1").json()
    assert any(SECRET in record.response_body for record in IdempotencyRecord.objects.all())
    forget(agent_client, **U1, id=created["node_id"], mode="hard", confirm=True)
    assert not any(SECRET in record.response_body for record in IdempotencyRecord.objects.all())
    assert Node.objects.count() == 0
    # a retry still runs nothing twice: it is told its answer was forgotten
    retry = agent_client.post("/api/v1/messages", {"session_id": "s1", "user_id": "u1", "role": "user",
                                                   "content": SECRET}, format="json", HTTP_IDEMPOTENCY_KEY="m-1")
    assert retry.status_code == 409 and retry.json()["error"]["code"] == "answer_forgotten"
    assert Message.objects.filter(content=SECRET).count() == 1
    agent_client.delete("/api/v1/sessions/s1?user_id=u1&mode=hard")
    assert not any(SECRET in record.response_body for record in IdempotencyRecord.objects.all())
