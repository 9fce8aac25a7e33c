"""Editing the controlled schema through memory.services.schema_edit: admins only, every bad
field reported, audited with the change, and applied by the next normalisation (R-TOOLS)."""

import pytest

from accounts.principal import principal_for_user_role
from memory.errors import AccessDenied, Conflict, InvalidInput, NotFound
from memory.models import AuditEvent, Category, KeySynonym, SchemaRule, ValueRule
from memory.schema_defaults import COOKING
from memory.services.schema import schema_normalize
from memory.services.schema_edit import (
    CategoryInput,
    KeySynonymInput,
    SchemaRuleInput,
    ValueRuleInput,
    category_delete,
    category_save,
    key_synonym_delete,
    key_synonym_save,
    schema_rule_delete,
    schema_rule_save,
    value_rule_save,
)


@pytest.fixture
def editor_principal(team, editor):
    return principal_for_user_role(team, editor, "editor")


def fields_of(error: InvalidInput) -> set[str]:
    return set(error.fields or {})


def test_an_agent_key_or_an_editor_may_not_edit_the_schema(principal, editor_principal):
    for who in (principal, editor_principal):
        with pytest.raises(AccessDenied):
            key_synonym_save(principal=who, data=KeySynonymInput(synonym="hates", key="avoid_ingredient"))
    assert not KeySynonym.objects.filter(synonym="hates").exists()


def test_a_new_synonym_is_audited_and_normalises_the_next_proposal(team, admin_principal):
    synonym = key_synonym_save(principal=admin_principal,
                               data=KeySynonymInput(domain=COOKING, synonym="hated_food", key="avoid_ingredient"))
    event = AuditEvent.objects.get(event_type="memory.schema.synonym.created")
    assert event.actor == admin_principal.actor and event.payload["before"] is None
    assert event.payload["after"] == {"id": synonym.pk, "domain": COOKING, "synonym": "hated_food",
                                      "key": "avoid_ingredient"}
    result = schema_normalize(team=team, node={"domain": COOKING, "type": "preference", "key": "hated_food"},
                              explicit=True)
    assert result.node["key"] == "avoid_ingredient"


def test_every_bad_field_of_a_rule_is_reported_at_once(admin_principal):
    with pytest.raises(InvalidInput) as caught:
        schema_rule_save(principal=admin_principal, data=SchemaRuleInput(
            domain="", type="nope", key="two words", value_shape="blob", default_scope="everywhere"))
    assert fields_of(caught.value) == {"domain", "type", "key", "value_shape", "default_scope"}


def test_a_duplicate_rule_is_refused_on_its_key(admin_principal):
    with pytest.raises(InvalidInput) as caught:
        schema_rule_save(principal=admin_principal, data=SchemaRuleInput(
            domain=COOKING, type="preference", key="avoid_ingredient", category_prefix=["生活技能", "做饭"]))
    assert fields_of(caught.value) == {"key"}


def test_a_rule_prefix_must_be_in_the_domains_taxonomy(admin_principal):
    with pytest.raises(InvalidInput) as caught:
        schema_rule_save(principal=admin_principal, data=SchemaRuleInput(
            domain=COOKING, type="preference", key="spice_rack", category_prefix=["厨房"]))
    assert fields_of(caught.value) == {"category_prefix"}


def test_updating_a_rule_replaces_its_fields_and_audits_before_and_after(admin_principal, team):
    rule = SchemaRule.objects.get(team=team, domain=COOKING, type="preference", key="preferred_cuisine")
    saved = schema_rule_save(principal=admin_principal, rule_id=rule.pk, data=SchemaRuleInput(
        domain=COOKING, type="preference", key="preferred_cuisine", value_shape="string", cardinality="one",
        default_scope="user", category_prefix="生活技能/做饭", description="菜系"))
    assert (saved.pk, saved.cardinality, saved.description) == (rule.pk, "one", "菜系")
    event = AuditEvent.objects.get(event_type="memory.schema.rule.updated")
    assert event.payload["before"]["cardinality"] == "many" and event.payload["after"]["cardinality"] == "one"


def test_saving_a_rule_unchanged_writes_no_event(admin_principal, team):
    rule = SchemaRule.objects.get(team=team, domain=COOKING, type="preference", key="preferred_cuisine")
    data = SchemaRuleInput(**{name: getattr(rule, name) for name in (
        "domain", "type", "key", "value_shape", "cardinality", "default_scope", "requires_explicit_intent",
        "on_conflict", "temporary", "category_prefix", "description")})
    schema_rule_save(principal=admin_principal, rule_id=rule.pk, data=data)
    assert not AuditEvent.objects.filter(event_type__startswith="memory.schema").exists()


def test_synonyms_do_not_chain_and_never_rename_a_controlled_key(admin_principal):
    cases = [
        (KeySynonymInput(domain=COOKING, synonym="hate", key="disliked_ingredient"), {"key"}),
        (KeySynonymInput(domain=COOKING, synonym="avoid_ingredient", key="allergy"), {"synonym"}),
        (KeySynonymInput(domain=COOKING, synonym="same", key="same"), {"synonym"}),
        (KeySynonymInput(domain=COOKING, synonym="disliked_ingredient", key="allergy"), {"synonym"}),
    ]
    for data, expected in cases:
        with pytest.raises(InvalidInput) as caught:
            key_synonym_save(principal=admin_principal, data=data)
        assert fields_of(caught.value) == expected, data


def test_a_value_rule_must_fit_its_keys_shape(admin_principal):
    with pytest.raises(InvalidInput) as caught:
        value_rule_save(principal=admin_principal, data=ValueRuleInput(
            domain=COOKING, key="flavor_profile", pattern="麻", value_json="numbing"))
    assert fields_of(caught.value) == {"value_json"}
    rule = value_rule_save(principal=admin_principal, data=ValueRuleInput(
        domain=COOKING, key="flavor_profile", pattern="麻", value_json={"numbing": "high"}))
    assert ValueRule.objects.get(pk=rule.pk).value_json == {"numbing": "high"}


def test_a_category_used_as_a_rule_prefix_can_be_neither_renamed_nor_deleted(admin_principal, team):
    used = Category.objects.get(team=team, domain=COOKING, path_text="生活技能/做饭")
    with pytest.raises(Conflict):
        category_delete(principal=admin_principal, category_id=used.pk)
    with pytest.raises(Conflict):
        category_save(principal=admin_principal, category_id=used.pk,
                      data=CategoryInput(domain=COOKING, path="生活技能/烹饪"))
    leaf = Category.objects.get(team=team, domain=COOKING, path_text="生活技能/做饭/厨具")
    category_delete(principal=admin_principal, category_id=leaf.pk)
    assert not Category.objects.filter(pk=leaf.pk).exists()
    assert AuditEvent.objects.get(event_type="memory.schema.category.deleted").payload["before"]["path_text"] == (
        "生活技能/做饭/厨具")


def test_category_paths_are_checked_level_by_level(admin_principal):
    for path in ("a//b", "", "/".join(["x"] * 40), "a/" + "b" * 65):
        with pytest.raises(InvalidInput) as caught:
            category_save(principal=admin_principal, data=CategoryInput(domain=COOKING, path=path))
        assert fields_of(caught.value) == {"path"}, path


def test_another_teams_rows_are_not_found(admin_principal, other_team):
    theirs = SchemaRule.objects.filter(team=other_team).first()
    with pytest.raises(NotFound):
        schema_rule_delete(principal=admin_principal, rule_id=theirs.pk)
    synonym = KeySynonym.objects.filter(team=other_team).first()
    with pytest.raises(NotFound):
        key_synonym_delete(principal=admin_principal, synonym_id=synonym.pk)
    assert SchemaRule.objects.filter(pk=theirs.pk).exists() and KeySynonym.objects.filter(pk=synonym.pk).exists()
