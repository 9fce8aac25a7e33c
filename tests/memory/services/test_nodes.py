from datetime import timedelta

import pytest
from django.utils import timezone

from memory.errors import AccessDenied, Conflict, InvalidInput, NotFound
from memory.models import AuditEvent, Node, NodeSource, NodeStatus
from memory.selectors.nodes import Owner
from memory.selectors.query import MemoryQuery, memory_query
from memory.services.nodes import (
    NodeInput,
    node_create,
    node_delete,
    node_expire,
    node_supersede,
    node_update,
    supersede_input,
)
from memory.services.upsert import node_upsert
from tests.helpers import append, index_hits, make_node

U1 = Owner(user_id="u1")
COOKING = dict(
    scope="user", user_id="u1", domain="生活技能", category_path=["生活技能", "做饭", "饮食偏好"], type="preference",
    key="avoid_ingredient", value_json="香菜", title="用户不吃香菜", content="推荐菜谱时避免香菜。",
    confidence=0.98, importance=0.9, tags=["忌口", "菜谱推荐"], entities=["香菜"],
)


def test_a_created_node_is_found_by_an_active_query(principal):
    node = make_node(principal, **COOKING)
    result = memory_query(principal=principal, query=MemoryQuery(owner=U1, types=("preference",)))
    assert [n.pk for n in result.exact] == [node.pk]
    assert node.category_path_text == "生活技能/做饭/饮食偏好"


def test_key_and_value_exact_query_finds_the_cooking_preference(principal):
    node = make_node(principal, **COOKING)
    make_node(principal, **{**COOKING, "key": "flavor_profile", "value_json": {"spicy": "low", "oil": "low"},
                            "title": "少油少辣"})
    result = memory_query(principal=principal, query=MemoryQuery(
        owner=U1, domain="生活技能", category_path_prefix=("生活技能", "做饭"), key="avoid_ingredient",
        has_value=True, value_json="香菜"))
    assert [n.pk for n in result.exact] == [node.pk]
    by_object = memory_query(principal=principal, query=MemoryQuery(
        owner=U1, key="flavor_profile", has_value=True, value_json={"oil": "low", "spicy": "low"}))
    assert [n.title for n in by_object.exact] == ["少油少辣"]


def test_supersede_retires_the_old_node_and_links_the_new_one(principal):
    old = make_node(principal, **COOKING)
    new = node_supersede(principal=principal, old_node_id=old.pk, data=supersede_input(
        old, {"value_json": "少量香菜", "title": "用户可接受少量香菜", "content": "香菜可以放一点，但不要太多。"}, {}))
    old.refresh_from_db()
    assert old.status == NodeStatus.SUPERSEDED and new.supersedes_id == old.pk
    assert (new.user_id, new.scope, new.key) == ("u1", "user", "avoid_ingredient")
    events = list(AuditEvent.objects.filter(node_id__in=[old.pk, new.pk]).values_list("event_type", flat=True))
    assert events.count("memory.node.superseded") == 1


def test_superseding_a_superseded_node_is_a_conflict(principal):
    old = make_node(principal, **COOKING)
    node_supersede(principal=principal, old_node_id=old.pk, data=supersede_input(old, {"value_json": "a"}, {}))
    old.refresh_from_db()
    with pytest.raises(Conflict):
        node_supersede(principal=principal, old_node_id=old.pk, data=supersede_input(old, {"value_json": "b"}, {}))
    assert Node.objects.filter(status=NodeStatus.ACTIVE).count() == 1


def test_a_failed_supersede_leaves_no_half_write(principal):
    old = make_node(principal, **COOKING)
    data = supersede_input(old, {"value_json": "x", "source_message_ids": [999_999]}, {})
    with pytest.raises(InvalidInput):
        node_supersede(principal=principal, old_node_id=old.pk, data=data)
    old.refresh_from_db()
    assert old.status == NodeStatus.ACTIVE
    assert Node.objects.count() == 1
    assert not AuditEvent.objects.filter(event_type="memory.node.superseded").exists()


def test_expired_nodes_are_omitted_with_reason(principal):
    past = timezone.now() - timedelta(hours=1)
    stale = make_node(principal, title="今天胃不舒服", type="constraint", expires_at=past)
    node_expire(principal=principal, node_id=make_node(principal, title="old").pk)
    result = memory_query(principal=principal, query=MemoryQuery(owner=U1))
    assert result.exact == []
    assert {o.reason for o in result.omitted} == {"expired"}
    assert stale.pk in {o.node_id for o in result.omitted}


def test_soft_deleted_node_is_not_retrieved_or_reported(principal):
    node = make_node(principal, title="window seat", content="prefers a window seat")
    node_delete(principal=principal, node_id=node.pk, mode="soft", reason="user asked")
    result = memory_query(principal=principal, query=MemoryQuery(owner=U1, query_text="window"))
    assert result.exact == [] and result.relevant == [] and result.omitted == []
    assert Node.objects.get(pk=node.pk).status == NodeStatus.DELETED


def test_hard_delete_removes_node_links_index_rows_and_redacts_audit(principal):
    message = append(principal, "我不吃香菜")[0]
    node = make_node(principal, **{**COOKING, "source_message_ids": [message.pk]})
    assert index_hits(Node, "香菜") == 1
    node_delete(principal=principal, node_id=node.pk, mode="hard", reason="privacy request")
    assert not Node.objects.filter(pk=node.pk).exists()
    assert NodeSource.objects.count() == 0
    assert index_hits(Node, "香菜") == 0
    created = AuditEvent.objects.get(node_id=node.pk, event_type="memory.node.created")
    assert "香菜" not in str(created.payload) and created.payload["redacted"] is True
    deleted = AuditEvent.objects.get(node_id=node.pk, event_type="memory.node.hard_deleted")
    assert deleted.reason == "privacy request" and deleted.actor == principal.actor


def test_upsert_of_an_identical_node_changes_nothing(principal):
    first = node_upsert(principal=principal, data=NodeInput(**COOKING))
    spaced = {**COOKING, "title": "  用户不吃香菜 ", "content": "推荐菜谱时避免香菜。"}
    again = node_upsert(principal=principal, data=NodeInput(**spaced))
    assert first.created and not again.created and not again.changed
    assert again.node.pk == first.node.pk and again.node.version == 1
    assert Node.objects.count() == 1
    assert AuditEvent.objects.filter(event_type__startswith="memory.node").count() == 1


def test_upsert_with_new_descriptive_text_updates_in_place(principal):
    first = node_upsert(principal=principal, data=NodeInput(**COOKING))
    again = node_upsert(principal=principal, data=NodeInput(**{**COOKING, "content": "完全不要香菜"}))
    assert again.node.pk == first.node.pk and again.changed and again.node.version == 2
    assert AuditEvent.objects.filter(event_type="memory.node.updated").count() == 1


def test_update_refuses_identity_fields_and_stale_versions(principal):
    node = make_node(principal, **COOKING)
    with pytest.raises(InvalidInput):
        node_update(principal=principal, node_id=node.pk, changes={"value_json": "x"})
    node_update(principal=principal, node_id=node.pk, changes={"importance": 0.5}, expected_version=1)
    with pytest.raises(Conflict):
        node_update(principal=principal, node_id=node.pk, changes={"importance": 0.4}, expected_version=1)


def test_sources_must_exist_in_the_team(principal, other_principal):
    foreign = append(other_principal, "other team's message")[0]
    with pytest.raises(InvalidInput):
        make_node(principal, source_message_ids=[foreign.pk])


def test_sources_must_be_in_the_named_session(principal):
    elsewhere = append(principal, "x", session_id="s2")[0]
    with pytest.raises(InvalidInput):
        make_node(principal, scope="session", session_id="s1", source_message_ids=[elsewhere.pk])


def test_other_teams_node_is_not_found_for_writes(principal, other_principal):
    node = make_node(principal, **COOKING)
    with pytest.raises(NotFound):
        node_delete(principal=other_principal, node_id=node.pk, mode="soft")


def test_read_only_principal_cannot_write(team):
    from accounts.principal import principal_for_key
    from accounts.services import agent_key_create

    reader = principal_for_key(agent_key_create(team=team, name="r", writable_scopes=[])[0])
    with pytest.raises(AccessDenied):
        node_create(principal=reader, data=NodeInput(**COOKING))


@pytest.mark.parametrize("field,value", [
    ("confidence", 1.5), ("importance", -0.1), ("title", "x" * 201), ("content", "a\x00b"),
    ("tags", ["t\x00"]), ("value_json", {"note": "x\x00y"}), ("value_json", {"text": "y" * 50_000}),
    ("category_path", ["a/b"]), ("key", "has space"), ("scope", "planet"), ("type", "opinion"),
])
def test_invalid_fields_are_rejected_and_nothing_is_stored(principal, field, value):
    with pytest.raises(InvalidInput):
        make_node(principal, **{**COOKING, field: value})
    assert Node.objects.count() == 0


def test_a_successor_that_changes_the_value_renames_the_inherited_words_of_the_old_one(principal):
    """A newcomer's supersede of {"lives": "Munich"} by {"lives": "Hamburg"} with a new title kept
    the entity "Munich", so a search for Munich found the Hamburg memory (R-STORE)."""
    from memory.services.proposals import Proposal, proposal_apply

    old = make_node(principal, scope="user", user_id="u1", type="fact", key="home", value_json={"lives": "Munich"},
                    title="User lives in Munich", content="The user lives in Munich.", entities=["Munich"],
                    tags=["home", "Munich"], explicit=True)
    said = append(principal, "Remember, I moved: not Munich, Hamburg.", session_id="s1", user_id="u1")[0]
    result = proposal_apply(principal=principal, proposal=Proposal(
        operation="supersede", target_id=old.pk, user_id="u1", explicit_user_intent=True,
        node={"value_json": {"lives": "Hamburg"}, "title": "User lives in Hamburg", "source_message_ids": [said.pk]}))
    assert result.accepted, (result.reason, result.message)
    new = result.node
    assert (new.title, new.content, new.entities, new.tags) == (
        "User lives in Hamburg", "The user lives in Hamburg.", ["Hamburg"], ["home", "Hamburg"])
    hits = memory_query(principal=principal, query=MemoryQuery(owner=U1, query_text="Munich")).relevant
    assert new.pk not in [node.pk for node in hits]
    # words the successor gives are its own; a supersede that keeps the value changes nothing else
    again = proposal_apply(principal=principal, proposal=Proposal(
        operation="supersede", target_id=new.pk, user_id="u1", explicit_user_intent=True,
        node={"value_json": {"lives": "Berlin"}, "entities": ["Berlin", "Germany"], "source_message_ids": [said.pk]})).node
    assert (again.entities, again.tags, again.title) == (["Berlin", "Germany"], ["home", "Berlin"], "User lives in Berlin")
    kept = proposal_apply(principal=principal, proposal=Proposal(
        operation="supersede", target_id=again.pk, user_id="u1", explicit_user_intent=True,
        node={"importance": 0.9, "source_message_ids": [said.pk]})).node
    assert (kept.entities, kept.title) == (["Berlin", "Germany"], "User lives in Berlin")


@pytest.mark.parametrize(("old", "new", "title", "entities", "expected_title", "expected_entities"), [
    # a status or a code is no entity: its words stay
    ({"task": "open a bank account", "status": "open"}, {"task": "open a bank account", "status": "done"},
     "To do: open a bank account", [], "To do: open a bank account", []),
    ({"language": "en"}, {"language": "zh"}, "User prefers English answers", ["English"],
     "User prefers English answers", ["English"]),
    # only a word of its own
    ({"city": "Paris"}, {"city": "London"}, "Loves Parisian bistros in Paris", ["Paris"],
     "Loves Parisian bistros in London", ["London"]),
    ({"city": "北京"}, {"city": "南京"}, "用户北京大学毕业，住在北京", ["北京"], "用户北京大学毕业，住在南京", ["南京"]),
    # as written: "go deeper" is no Go, "apple" no Apple
    ({"language": "Go"}, {"language": "Rust"}, "Wants to go deeper in Go", ["Go"], "Wants to go deeper in Rust", ["Rust"]),
    # one old value that became two: nothing renamed
    ({"a": "Munich", "b": "Munich"}, {"a": "Hamburg", "b": "Berlin"}, "Munich and Munich", ["Munich"],
     "Munich and Munich", ["Munich"]),
])
def test_a_successor_renames_only_what_the_old_value_named_as_a_word(principal, old, new, title, entities,
                                                                       expected_title, expected_entities):
    """A review's garbles of the first version: "To do: done a bank account", "Londonian", "南京大学"."""
    node = make_node(principal, scope="user", user_id="u1", type="fact", key="", value_json=old, title=title,
                     entities=entities)
    data = supersede_input(node, {"value_json": new}, {})
    assert (data.title, list(data.entities)) == (expected_title, expected_entities)
