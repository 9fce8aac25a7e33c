"""memory_propose_update governance through the API: the controlled schema, every refusal
reason, conflicts and confirmation, corrections, expire and delete (issue 3; R-TOOLS)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import AuditEvent, KeySynonym, Node, NodeStatus, SchemaRule, ValueRule
from memory.services.proposals import ACCEPTED_REASONS, REFUSALS
from tests.helpers import append

URL = "/api/v1/memory/propose"
CTX = {"workspace_id": "home", "user_id": "xiaoming", "session_id": "cook-1"}
COOKING = {"domain": "生活技能", "type": "preference"}


def propose(client, **body):
    return client.post(URL, {**CTX, **body}, format="json")


@pytest.fixture
def said(principal):
    """A user message to bind memories to."""
    return append(principal, "记住，我以后做饭不要香菜，我喜欢少油少辣", **CTX)[0].pk


def create(client, said, node, **extra):
    body = {"operation": "create", "explicit_user_intent": True, "node": {"source_message_ids": [said], **node}}
    return propose(client, **{**body, **extra})


def test_the_seed_example_is_normalised_and_bound_to_its_source(agent_client, said):
    response = create(agent_client, said, {**COOKING, "key": "disliked_ingredient", "value_json": "香菜",
                                            "title": "用户不吃香菜"})
    body = response.json()
    assert response.status_code == 201 and body["accepted"] is True
    node = Node.objects.get(pk=body["node_id"])
    # synonym key → controlled key; default scope and category from the schema rule
    assert (node.key, node.scope, node.user_id, node.category_path) == ("avoid_ingredient", "user", "xiaoming",
                                                                         ["生活技能", "做饭"])
    assert node.source_message_ids == [said] and node.explicit is True
    assert "key disliked_ingredient → avoid_ingredient" in body["notes"]
    event = AuditEvent.objects.get(node_id=node.pk)
    assert event.event_type == "memory.node.created" and event.payload["source_message_ids"] == [said]


def test_value_rules_map_chinese_phrases_to_controlled_values(agent_client, said):
    body = create(agent_client, said, {**COOKING, "key": "flavor_profile", "value_json": "少油少辣",
                                       "title": "少油少辣"}).json()
    assert Node.objects.get(pk=body["node_id"]).value_json == {"oil": "low", "spicy": "low"}
    # a one-valued key: the next value supersedes (latest wins) and the old one stays in history
    second = create(agent_client, said, {**COOKING, "key": "taste", "value_json": "不辣", "title": "不辣"}).json()
    assert second["reason"] == "superseded" and second["superseded_id"] == body["node_id"]
    active = Node.objects.filter(key="flavor_profile", status=NodeStatus.ACTIVE)
    assert [n.value_json for n in active] == [{"spicy": "none"}]
    assert Node.objects.get(pk=body["node_id"]).status == NodeStatus.SUPERSEDED


def test_many_valued_keys_keep_one_node_per_value(agent_client, said):
    for item in ("香菜", "花生", "香菜"):
        create(agent_client, said, {**COOKING, "key": "avoid_ingredient", "value_json": item, "title": f"不吃{item}"})
    assert sorted(Node.objects.filter(key="avoid_ingredient", status="active").values_list("value_json", flat=True)) == [
        "花生", "香菜"]


@pytest.mark.parametrize("node,extra,reason", [
    ({**COOKING, "key": "favourite_color", "value_json": "red", "title": "x"}, {}, "key_not_in_schema"),
    ({**COOKING, "key": "flavor_profile", "value_json": 3, "title": "x"}, {}, "value_shape_mismatch"),
    ({**COOKING, "key": "avoid_ingredient", "value_json": "香菜", "title": "x", "category_path": ["旅行"]}, {},
     "category_not_in_schema"),
    ({"type": "fact", "scope": "user", "key": "mood", "title": "今天胃不舒服"}, {}, "temporary_needs_expiry"),
    ({"type": "constraint", "scope": "user", "key": "mood", "title": "I am tired today"}, {}, "temporary_needs_expiry"),
    ({**COOKING, "key": "avoid_ingredient", "value_json": "香菜", "title": "x"}, {"explicit_user_intent": False},
     "explicit_intent_required"),
    ({"type": "fact", "scope": "user", "key": "k", "title": "x", "source_message_ids": []}, {}, "source_required"),
    ({"type": "preference", "scope": "workspace", "key": "k", "title": "x"}, {}, "type_not_allowed_in_scope"),
    ({"type": "fact", "scope": "global", "key": "k", "title": "x"}, {}, "global_admin_only"),
])
def test_every_refusal_says_why_and_stores_nothing(agent_client, said, node, extra, reason):
    before = AuditEvent.objects.count()
    response = create(agent_client, said, node, **extra)
    assert response.status_code == 200, response.content
    assert (response.json()["accepted"], response.json()["reason"]) == (False, reason)
    assert reason in REFUSALS
    assert Node.objects.count() == 0 and AuditEvent.objects.count() == before


def test_a_key_without_user_scope_is_refused_with_scope_not_allowed(team, said):
    from accounts.services import agent_key_create
    from tests.conftest import key_client

    client = key_client(agent_key_create(team=team, name="session only", writable_scopes=["session"])[1])
    response = create(client, said, {"type": "fact", "scope": "user", "key": "k", "title": "x"})
    assert response.json()["reason"] == "scope_not_allowed" and Node.objects.count() == 0


def test_a_non_conforming_node_can_be_demoted_to_session_memory(agent_client, said):
    response = create(agent_client, said, {**COOKING, "key": "favourite_color", "value_json": "red", "title": "red"},
                      on_nonconforming="demote")
    body = response.json()
    assert body["accepted"] is True and body["reason"] == "demoted_to_session"
    node = Node.objects.get(pk=body["node_id"])
    assert node.scope == "session" and node.session.external_id == "cook-1"
    assert "demoted_to_session" in ACCEPTED_REASONS


def test_a_temporary_state_with_an_expiry_is_a_temporary_user_constraint(agent_client, said):
    expires = (timezone.now() + timedelta(hours=12)).isoformat()
    response = create(agent_client, said, {"domain": "生活技能", "type": "constraint", "key": "flavor_profile",
                                           "scope": "user", "value_json": "少辣", "title": "今天胃不舒服，少辣",
                                           "expires_at": expires})
    assert response.json()["accepted"] is True
    assert Node.objects.get().value_json == {"spicy": "low"}


def test_an_inferred_project_constraint_goes_to_the_workspace(principal, agent_client):
    source = append(principal, "we only deploy on Fridays", **CTX)[0].pk
    body = propose(agent_client, operation="create", node={
        "type": "constraint", "scope": "user", "key": "deploy_day", "value_json": "friday", "title": "deploy Fridays",
        "source_message_ids": [source]}).json()
    assert body["accepted"] is True
    node = Node.objects.get(pk=body["node_id"])
    assert (node.scope, node.workspace_id) == ("workspace", "home")
    assert any("workspace" in note for note in body["notes"])


def test_replacing_a_stated_high_confidence_value_with_an_inferred_one_needs_confirmation(agent_client, said):
    stated = create(agent_client, said, {"type": "fact", "scope": "user", "key": "diet", "value_json": "vegetarian",
                                         "title": "vegetarian", "confidence": 0.95}).json()
    guess = {"type": "fact", "scope": "session", "key": "diet", "value_json": "omnivore", "title": "omnivore"}
    # a session-scope guess may sit beside it (another owner), and loses at read time
    assert create(agent_client, said, guess, explicit_user_intent=False).json()["accepted"] is True
    # an inferred user-scope change cannot even be written without explicit intent; with a
    # rule asking for confirmation, a stated change must be confirmed
    SchemaRule.objects.create(team=Node.objects.get(pk=stated["node_id"]).team, domain="general", type="fact",
                              key="diet", on_conflict="confirm", default_scope="user")
    ask = create(agent_client, said, {"type": "fact", "scope": "user", "key": "diet", "value_json": "vegan",
                                      "title": "vegan"}).json()
    assert (ask["accepted"], ask["reason"], ask["requires_confirmation"]) == (False, "conflict", True)
    assert ask["conflict_node_id"] == stated["node_id"]
    assert Node.objects.get(pk=stated["node_id"]).status == "active"
    confirmed = create(agent_client, said, {"type": "fact", "scope": "user", "key": "diet", "value_json": "vegan",
                                            "title": "vegan"}, confirm=True).json()
    assert confirmed["accepted"] is True and confirmed["superseded_id"] == stated["node_id"]
    assert Node.objects.filter(scope="user", key="diet", status="active").get().value_json == "vegan"


def test_a_correction_supersedes_the_active_node_with_the_same_key(agent_client, said):
    first = create(agent_client, said, {"type": "preference", "scope": "user", "domain": "food",
                                        "key": "food.cuisine.sichuan", "value_json": {"likes": True},
                                        "title": "likes Sichuan"}).json()
    fix = create(agent_client, said, {"type": "correction", "scope": "user", "domain": "food",
                                      "key": "food.cuisine.sichuan", "value_json": {"likes": False},
                                      "title": "does not like Sichuan"}).json()
    assert fix["reason"] == "corrected" and fix["superseded_id"] == first["node_id"]
    new = Node.objects.get(pk=fix["node_id"])
    assert (new.type, new.value_json, new.supersedes_id) == ("preference", {"likes": False}, first["node_id"])


def test_synonyms_and_value_rules_are_per_team(agent_client, principal, other_principal, said):
    KeySynonym.objects.create(team=other_principal.team, domain="生活技能", synonym="hates", key="avoid_ingredient")
    ValueRule.objects.create(team=other_principal.team, domain="生活技能", key="flavor_profile", pattern="火辣",
                             value_json={"spicy": "high"})
    hates = create(agent_client, said, {**COOKING, "key": "hates", "value_json": "香菜", "title": "x"}).json()
    assert hates["reason"] == "key_not_in_schema"  # another team's synonym does not apply here


def test_expire_and_delete_operations(agent_client, said):
    node_id = create(agent_client, said, {"type": "fact", "scope": "user", "key": "k", "title": "x"}).json()["node_id"]
    expired = propose(agent_client, operation="expire", target_id=node_id, explicit_user_intent=True).json()
    assert expired["accepted"] is True and Node.objects.get(pk=node_id).status == "expired"
    other = create(agent_client, said, {"type": "fact", "scope": "user", "key": "k2", "title": "y"}).json()["node_id"]
    deleted = propose(agent_client, operation="delete", target_id=other, reason="user asked").json()
    assert deleted["accepted"] is True and deleted["node"]["status"] == "deleted"
    events = list(AuditEvent.objects.filter(node_id__in=[node_id, other]).values_list("event_type", flat=True))
    assert events.count("memory.node.expired") == 1 and events.count("memory.node.deleted") == 1
    assert propose(agent_client, operation="expire", target_id=node_id).status_code == 409
    assert propose(agent_client, operation="delete", target_id=node_id, node={"title": "x"}).status_code == 400


def test_an_identical_proposal_writes_nothing_at_all(agent_client, said):
    node = {"type": "fact", "scope": "user", "key": "health.allergy", "value_json": {"item": "peanut"},
            "title": "Peanut allergy", "content": "Allergic to peanuts."}
    first = create(agent_client, said, node).json()
    events = AuditEvent.objects.count()
    again = create(agent_client, said, {**node, "title": "  peanut   ALLERGY ", "content": "allergic to peanuts. "})
    assert again.json()["node_id"] == first["node_id"] and again.json()["reason"] == "duplicate"
    assert AuditEvent.objects.count() == events and Node.objects.get().version == 1
