"""Scenarios S01–S07 of ../shared/cases/SCENARIOS.md through the agent API, and S05, S15,
S18, S19 again through every write path of the governance issue (proposal, extraction batch,
forget): the same limits and the same errors everywhere.

Mapping of the notional API: mem → POST /memory/propose (create); correct → propose
(supersede); search → POST /memory/search; inject → POST /context; list → GET /nodes;
DELETE /memories → DELETE /nodes/{id} or POST /memory/forget; GET /audit → AuditEvent rows.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.services import agent_key_create
from memory.models import AuditEvent, Node, NodeStatus
from memory.services.maintenance import nodes_expire_due
from tests.conftest import key_client
from tests.helpers import append

U1 = {"user_id": "u1", "session_id": "s1"}
PROPOSE, EXTRACT, FORGET = "/api/v1/memory/propose", "/api/v1/memory/extractions", "/api/v1/memory/forget"


@pytest.fixture
def said(principal):
    return append(principal, "please remember this", **U1)[0].pk


def mem(client, said, scope, node_type, key, value, title=None, **extra):
    node = {"scope": scope, "type": node_type, "key": key, "value_json": value, "title": title or f"{key} {value}",
            "source_message_ids": [said], **extra}
    return client.post(PROPOSE, {**U1, "operation": "create", "explicit_user_intent": True, "node": node},
                       format="json")


def correct(client, said, node_id, value, title):
    return client.post(PROPOSE, {**U1, "operation": "supersede", "target_id": node_id, "explicit_user_intent": True,
                                 "node": {"value_json": value, "title": title, "source_message_ids": [said]}},
                       format="json")


def search(client, text, **extra):
    body = client.post("/api/v1/memory/search", {**U1, "query_text": text, **extra}, format="json").json()
    return [node["id"] for node in body["exact"] + body["relevant"]]


def active(key):
    return list(Node.objects.filter(key=key, status=NodeStatus.ACTIVE).values_list("pk", flat=True))


def test_s01_re_adding_an_identical_fact_keeps_the_original(agent_client, said):
    first = mem(agent_client, said, "user", "fact", "health.allergy", {"item": "peanut"}, title="Peanut allergy")
    a = first.json()["node_id"]
    again = mem(agent_client, said, "user", "fact", "health.allergy", {"item": "peanut"}, title="Peanut allergy")
    spaced = mem(agent_client, said, "user", "fact", "health.allergy", {"item": "peanut"}, title="  PEANUT   allergy ")
    assert again.json()["node_id"] == spaced.json()["node_id"] == a
    assert active("health.allergy") == [a]
    listed = agent_client.get("/api/v1/nodes", {"user_id": "u1", "key": "health.allergy", "status": "active"}).json()
    assert [node["id"] for node in listed["results"]] == [a]
    assert list(AuditEvent.objects.filter(node_id=a).values_list("event_type", flat=True)) == ["memory.node.created"]


def test_s02_a_correction_replaces_the_fact_and_never_leaves_the_key_empty(agent_client, said):
    a = mem(agent_client, said, "user", "preference", "food.cuisine.sichuan", {"likes": True}, title="likes sichuan"
            ).json()["node_id"]
    b = correct(agent_client, said, a, {"likes": False}, "does not like sichuan").json()["node_id"]
    assert active("food.cuisine.sichuan") == [b]
    # the same correction as a separate correction-typed write: still exactly one active node
    c = mem(agent_client, said, "user", "correction", "food.cuisine.sichuan", {"likes": False},
            title="really does not like sichuan").json()
    assert c["reason"] == "corrected" and active("food.cuisine.sichuan") == [c["node_id"]]
    old = agent_client.get(f"/api/v1/nodes/{a}").json()
    assert (old["status"], old["superseded_by_id"]) == ("superseded", b)
    assert search(agent_client, "sichuan") == [c["node_id"]]


def test_s03_a_contradicting_plain_add_supersedes_the_old_value(agent_client, principal, said):
    a = mem(agent_client, said, "user", "fact", "diet.type", "vegetarian", title="diet vegetarian").json()["node_id"]
    Node.objects.filter(pk=a).update(updated_at=timezone.now() - timedelta(days=14))
    b = mem(agent_client, said, "user", "fact", "diet.type", "omnivore", title="diet omnivore").json()
    assert b["reason"] == "superseded" and b["superseded_id"] == a
    assert active("diet.type") == [b["node_id"]]
    block = agent_client.post("/api/v1/context", {**U1, "query": "plan dinner diet", "budget": {"max_chars": 500}},
                              format="json").json()["block"]
    assert "omnivore" in block and "vegetarian" not in block
    assert search(agent_client, "diet") == [b["node_id"]]
    history = agent_client.get("/api/v1/nodes", {"key": "diet.type", "user_id": "u1"}).json()["results"]
    assert {(node["id"], node["status"]) for node in history} == {(a, "superseded"), (b["node_id"], "active")}


def test_s04_a_chinese_correction_supersedes_and_a_second_one_is_409(agent_client, principal):
    w1 = {"workspace_id": "w1", "user_id": "u1", "session_id": "s1"}
    said = append(principal, "周会定在周二上午十点", **w1)[0].pk
    body = {**w1, "operation": "create", "node": {"scope": "workspace", "type": "decision", "key": "team.weekly_meeting",
                                                  "value_json": "周会定在周二上午十点", "title": "周会定在周二上午十点",
                                                  "source_message_ids": [said]}}
    a = agent_client.post(PROPOSE, body, format="json").json()["node_id"]
    b = agent_client.post(PROPOSE, {**w1, "operation": "supersede", "target_id": a, "node": {
        "value_json": "周会改到周四下午三点", "title": "周会改到周四下午三点"}}, format="json").json()["node_id"]
    found = agent_client.post("/api/v1/memory/search", {**w1, "query_text": "周会", "scopes": ["workspace"]},
                              format="json").json()
    assert [node["id"] for node in found["relevant"]] == [b]
    old = agent_client.get(f"/api/v1/nodes/{a}").json()
    assert (old["status"], old["superseded_by_id"]) == ("superseded", b)
    assert AuditEvent.objects.filter(node_id=a, event_type="memory.node.superseded").count() == 1
    again = agent_client.post(PROPOSE, {**w1, "operation": "supersede", "target_id": a, "node": {"title": "x"}},
                              format="json")
    assert again.status_code == 409  # documented: superseding a superseded node is a conflict, never a fork
    assert active("team.weekly_meeting") == [b]


def test_s06_forget_all_of_mine_leaves_everyone_else(agent_client, team, principal, said):
    admin = key_client(agent_key_create(team=team, name="admin", kind="admin")[1])
    said2 = append(principal, "u2 here", user_id="u2", session_id="s9")[0].pk
    mine = [mem(agent_client, said, "user", "fact", f"k{i}", i).json()["node_id"] for i in range(2)]
    for i in range(2):
        agent_client.post(PROPOSE, {"user_id": "u2", "session_id": "s9", "operation": "create",
                                    "explicit_user_intent": True, "node": {"scope": "user", "type": "fact",
                                                                           "key": f"k{i}", "title": f"u2 {i}",
                                                                           "source_message_ids": [said2]}},
                          format="json")
    admin.post(PROPOSE, {"operation": "create", "node": {"scope": "global", "type": "fact", "title": "global"}},
               format="json")
    body = agent_client.post(FORGET, {"user_id": "u1", "scope": "user", "mode": "hard", "confirm": True},
                             format="json").json()
    assert body["count"] == 2 and sorted(body["deleted_ids"]) == sorted(mine)
    assert Node.objects.filter(user_id="u1").count() == 0
    assert Node.objects.filter(user_id="u2", status="active").count() == 2
    assert Node.objects.filter(scope="global", status="active").count() == 1
    removed = set(AuditEvent.objects.filter(event_type="memory.node.hard_deleted").values_list("node_id", flat=True))
    assert removed == set(mine)


def test_s07_every_memory_that_leaves_the_active_set_has_one_audit_row(agent_client, principal, said):
    past = (timezone.now() + timedelta(seconds=1)).isoformat()
    expiring = mem(agent_client, said, "user", "fact", "trip", "paris", expires_at=past).json()["node_id"]
    first = mem(agent_client, said, "user", "fact", "city", "berlin").json()["node_id"]
    second = mem(agent_client, said, "user", "fact", "city", "munich").json()["node_id"]  # the conflict: latest wins
    soft = mem(agent_client, said, "user", "fact", "soft", 1).json()["node_id"]
    hard = mem(agent_client, said, "user", "fact", "hard", 1).json()["node_id"]
    assert nodes_expire_due(team=principal.team, now=timezone.now() + timedelta(seconds=5)) == [expiring]
    agent_client.delete(f"/api/v1/nodes/{soft}?mode=soft")
    agent_client.delete(f"/api/v1/nodes/{hard}?mode=hard")
    left = {expiring: ("memory.node.expired", "system:expiry"), first: ("memory.node.superseded", None),
            soft: ("memory.node.deleted", None), hard: ("memory.node.hard_deleted", None)}
    leaving = AuditEvent.objects.filter(user_id="u1", event_type__in=[
        "memory.node.expired", "memory.node.superseded", "memory.node.deleted", "memory.node.hard_deleted"])
    assert sorted(leaving.values_list("node_id", flat=True)) == sorted(left)
    for node_id, (event_type, actor) in left.items():
        event = leaving.get(node_id=node_id)
        assert event.event_type == event_type and event.created_at is not None
        assert event.actor == (actor or event.actor) and event.actor
    assert leaving.get(node_id=first).payload["superseded_by"] == second
    assert active("city") == [second]


# ---- S05, S15, S18, S19 through every governance write path ------------------------------


def _create_paths(client, said, node):
    """The same node through a proposal and through an extraction batch."""
    proposal = client.post(PROPOSE, {**U1, "operation": "create", "explicit_user_intent": True, "node": node},
                           format="json")
    batch = client.post(EXTRACT, {**U1, "operations": [
        {"operation": "create", "explicit_user_intent": True, "node": node}]}, format="json")
    return proposal, batch


@pytest.mark.parametrize("field,value", [
    ("title", "a\u0000b"), ("content", "x\u0000"), ("tags", ["t\u0000"]), ("entities", ["e\u0000"]),
    ("value_json", {"note": "x\u0000y"}), ("key", "k\u0000"),
])
def test_s18_nul_is_refused_on_every_write_path(agent_client, said, field, value):
    node = {"scope": "user", "type": "fact", "key": "k", "title": "t", "source_message_ids": [said], field: value}
    for response in _create_paths(agent_client, said, node):
        assert response.status_code == 400, response.content
    forget = agent_client.post(FORGET, {**U1, "key": "k\u0000"}, format="json")
    assert forget.status_code == 400
    assert Node.objects.count() == 0


def test_s18_lone_surrogates_are_refused_on_every_write_path(agent_client, said):
    raw = '{"user_id": "u1", "operation": "create", "node": {"scope": "session", "type": "fact", "title": "\\ud800"}}'
    assert agent_client.post(PROPOSE, raw, content_type="application/json").status_code == 400
    batch = '{"user_id": "u1", "operations": [{"operation": "create", "node": {"type": "fact", "title": "\\udfff"}}]}'
    assert agent_client.post(EXTRACT, batch, content_type="application/json").status_code == 400
    assert agent_client.post(FORGET, '{"key": "\\ud800"}', content_type="application/json").status_code == 400


def test_s19_oversized_values_are_refused_with_the_limit_and_nothing_stored(agent_client, said):
    node = {"scope": "user", "type": "fact", "key": "k.long", "title": "long", "source_message_ids": [said],
            "value_json": {"text": "长" * 50_000}}
    for response in _create_paths(agent_client, said, node):
        assert response.status_code == 400 and "8000" in response.content.decode()
    assert Node.objects.count() == 0
    follow = mem(agent_client, said, "user", "fact", "k.short", "short follow-up")
    assert follow.status_code == 201


def test_s15_null_versus_missing_through_the_proposal_and_extraction_paths(agent_client, said):
    base = {"scope": "user", "type": "fact", "source_message_ids": [said]}
    agent_client.post(PROPOSE, {**U1, "operation": "create", "explicit_user_intent": True, "node": {
        **base, "key": "level.a", "title": "A", "value_json": {"level": None}}}, format="json")
    agent_client.post(EXTRACT, {**U1, "operations": [
        {"operation": "create", "explicit_user_intent": True, "node": {**base, "key": "level.b", "title": "B",
                                                                       "value_json": {}}},
        {"operation": "create", "explicit_user_intent": True, "node": {**base, "key": "level.c", "title": "C",
                                                                       "value_json": {"level": "mild"}}}]},
        format="json")
    for op, expected in (("is_null", ["A"]), ("exists", ["A", "C"]), ("missing", ["B"]), ("not_null", ["B", "C"])):
        body = agent_client.post("/api/v1/memory/search", {**U1, "value_filters": [{"path": "level", "op": op}]},
                                 format="json").json()
        assert sorted(node["title"] for node in body["exact"]) == expected, op


def test_s05_bulk_soft_forget_frees_the_top_k(agent_client, principal, said):
    noise = [mem(agent_client, said, "user", "fact", f"noise.{i}", i, title=f"gadget noise {i}").json()["node_id"]
             for i in range(30)]
    keep = mem(agent_client, said, "user", "fact", "gadget.best", "x", title="gadget that matters").json()["node_id"]
    done = agent_client.post(FORGET, {**U1, "source_message_ids": [said], "type": "fact", "confirm": True},
                             format="json").json()
    assert done["count"] == 31  # the selector named every fact of that message; restore the one we keep
    agent_client.post(f"/api/v1/nodes/{keep}/restore", {}, format="json")
    found = agent_client.post("/api/v1/memory/search", {**U1, "query_text": "gadget", "limit": 5},
                              format="json").json()
    assert [node["id"] for node in found["relevant"]] == [keep]
    assert not set(noise) & {node["id"] for node in found["relevant"]}
