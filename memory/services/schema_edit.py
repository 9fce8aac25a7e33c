"""Editing a team's controlled schema (seed 000 受控 Schema; R-TOOLS, R-UI Administration):
schema rules, key synonyms, value rules and the category taxonomy.

Team admins only (an admin login or an admin key; R-TEN). Each save or delete is checked
here, written and audited in one transaction (`memory.schema.<kind>.created|updated|deleted`,
payload `{"before", "after"}` with the row's fields). Validation reports every bad field at
once: InvalidInput with `fields` (400). What is saved here is what memory.services.schema
applies to the next proposal, search or forget: there is no cache to refresh.

The rules that keep the schema usable:
- a rule's category prefix must be in the domain's taxonomy when the domain has one (else
  every node defaulting to it would be refused as `category_not_in_schema`);
- synonyms do not chain (schema_normalize follows one hop) and never rename a controlled key;
- a value rule's value must fit the shape of the rules of its key;
- a category a rule uses as its prefix can be neither renamed nor deleted (Conflict, 409).
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, models, transaction
from django.utils import timezone

from accounts.principal import Principal
from memory import limits
from memory.errors import AccessDenied, Conflict, InvalidInput, NotFound
from memory.models import Category, KeySynonym, NodeType, SchemaRule, Scope, ValueRule
from memory.schema_rules import Cardinality, OnConflict, ValueShape
from memory.search.text import normalize
from memory.services.audit import audit_record
from memory.services.schema import value_shape_ok
from memory.validation import first_json_problem, text_problem

DESCRIPTION_MAX = limits.SCHEMA_DESCRIPTION_MAX
PATH_TEXT_MAX = limits.CATEGORY_PREFIX_MAX


@dataclass(frozen=True)
class SchemaRuleInput:
    domain: str
    type: str
    key: str
    value_shape: str = ValueShape.ANY
    cardinality: str = Cardinality.ONE
    default_scope: str = Scope.USER
    requires_explicit_intent: bool = False
    on_conflict: str = OnConflict.SUPERSEDE
    temporary: bool = False
    category_prefix: Sequence[str] = ()
    description: str = ""


@dataclass(frozen=True)
class KeySynonymInput:
    synonym: str
    key: str
    domain: str = ""  # "": every domain of the team


@dataclass(frozen=True)
class ValueRuleInput:
    domain: str
    pattern: str
    value_json: Any
    key: str = ""  # "": every key of the domain


@dataclass(frozen=True)
class CategoryInput:
    domain: str
    path: Sequence[str]
    description: str = ""


@dataclass
class _Check:
    """Field problems gathered while validating one input; raise() reports them all."""

    fields: dict[str, list[str]] = field(default_factory=dict)

    def add(self, name: str, message: str) -> None:
        self.fields.setdefault(name, []).append(message)

    def text(self, value: Any, name: str, max_length: int, *, required: bool = True, token: bool = False) -> str:
        """`value` stripped, or "" after noting why it cannot be stored. `token`: printable, no spaces."""
        if not isinstance(value, str):
            self.add(name, "must be a string")
            return ""
        value = value.strip()
        problem = text_problem(value)
        if problem:
            self.add(name, problem)
        elif len(value) > max_length:
            self.add(name, f"at most {max_length} characters (got {len(value)})")
        elif required and not value:
            self.add(name, "required")
        elif token and value and (not value.isprintable() or any(ch.isspace() for ch in value)):
            self.add(name, "printable, no spaces")
        return value

    def choice(self, value: Any, name: str, choices: Sequence[str]) -> str:
        if value not in choices:
            self.add(name, f"one of {', '.join(choices)}")
        return value

    def path(self, value: Sequence[str] | str, name: str, *, required: bool) -> list[str]:
        """A category path from a list of levels or "a/b/c" text: levels stripped, none empty."""
        levels = value.split("/") if isinstance(value, str) else list(value)
        levels = [level.strip() if isinstance(level, str) else level for level in levels]
        if isinstance(value, str) and not value.strip():
            levels = []
        if required and not levels:
            self.add(name, "required")
        if len(levels) > limits.NODE_LIST_ITEMS_MAX:
            self.add(name, f"at most {limits.NODE_LIST_ITEMS_MAX} levels")
            return []
        for level in levels:
            if not isinstance(level, str) or not level:
                self.add(name, "no empty level (write a/b/c)")
                return []
            if "/" in level:
                self.add(name, "no '/' in a level")
                return []
            problem = text_problem(level)
            if problem or len(level) > limits.NODE_LIST_ITEM_MAX:
                self.add(name, problem or f"a level has at most {limits.NODE_LIST_ITEM_MAX} characters")
                return []
        if len("/".join(levels)) > PATH_TEXT_MAX:
            self.add(name, f"at most {PATH_TEXT_MAX} characters")
        return levels

    def raise_if_any(self, what: str) -> None:
        if self.fields:
            summary = "; ".join(f"{name}: {', '.join(messages)}" for name, messages in self.fields.items())
            raise InvalidInput(f"{what} not saved: {summary}", fields=self.fields)


def _require_admin(principal: Principal) -> None:
    if not principal.is_admin:
        raise AccessDenied("only team admins edit the controlled schema")


def _snapshot(row: models.Model, names: Sequence[str]) -> dict[str, Any]:
    return {"id": row.pk, **{name: getattr(row, name) for name in names}}


_FIELDS = {
    SchemaRule: ("domain", "type", "key", "value_shape", "cardinality", "default_scope", "requires_explicit_intent",
                 "on_conflict", "temporary", "category_prefix", "description"),
    KeySynonym: ("domain", "synonym", "key"),
    ValueRule: ("domain", "key", "pattern", "value_json"),
    Category: ("domain", "path", "path_text", "description"),
}
_EVENT = {SchemaRule: "rule", KeySynonym: "synonym", ValueRule: "value_rule", Category: "category"}


def _get(principal: Principal, model: type[models.Model], row_id: int) -> models.Model:
    row = model.objects.filter(team=principal.team, pk=row_id).first()
    if row is None:
        raise NotFound(f"no such {model._meta.verbose_name} in this team")
    return row


def _save(principal: Principal, model: type[models.Model], row_id: int | None, values: dict[str, Any],
          unique_field: str, duplicate: str) -> models.Model:
    """Create (row_id None) or update one row with `values` and audit it, in one transaction.
    A row that would duplicate another is refused on `unique_field`; an update that changes
    nothing is neither written nor audited."""
    names = _FIELDS[model]
    with transaction.atomic():
        row = None if row_id is None else _get(principal, model, row_id)
        before = None if row is None else _snapshot(row, names)
        if row is not None and all(getattr(row, name) == values[name] for name in values):
            return row
        if row is None:
            row = model(team=principal.team)
        for name, value in values.items():
            setattr(row, name, value)
        if model is SchemaRule:
            row.updated_at = timezone.now()
        try:
            with transaction.atomic():
                row.save()
        except IntegrityError:
            raise InvalidInput(duplicate, fields={unique_field: [duplicate]}) from None
        audit_record(principal=principal, event_type=f"memory.schema.{_EVENT[model]}.{'updated' if before else 'created'}",
                     payload={"before": before, "after": _snapshot(row, names)})
    return row


def _delete(principal: Principal, model: type[models.Model], row_id: int) -> None:
    with transaction.atomic():
        row = _get(principal, model, row_id)
        if model is Category:
            _check_category_unused(principal, row)
        before = _snapshot(row, _FIELDS[model])
        row.delete()
        audit_record(principal=principal, event_type=f"memory.schema.{_EVENT[model]}.deleted",
                     payload={"before": before, "after": None})


def _taxonomy(principal: Principal, domain: str) -> set[str]:
    return set(Category.objects.filter(team=principal.team, domain=domain).values_list("path_text", flat=True))


def schema_rule_save(*, principal: Principal, data: SchemaRuleInput, rule_id: int | None = None) -> SchemaRule:
    """Create a schema rule, or replace every field of rule `rule_id`. Raises AccessDenied (not
    an admin), NotFound (not this team's rule) or InvalidInput with every bad field (a duplicate
    domain + type + key is reported on `key`)."""
    _require_admin(principal)
    check = _Check()
    values = {
        "domain": check.text(data.domain, "domain", limits.NODE_DOMAIN_MAX),
        "type": check.choice(data.type, "type", NodeType.values),
        "key": check.text(data.key, "key", limits.NODE_KEY_MAX, token=True),
        "value_shape": check.choice(data.value_shape, "value_shape", ValueShape.values),
        "cardinality": check.choice(data.cardinality, "cardinality", Cardinality.values),
        "default_scope": check.choice(data.default_scope, "default_scope", Scope.values),
        "requires_explicit_intent": bool(data.requires_explicit_intent),
        "on_conflict": check.choice(data.on_conflict, "on_conflict", OnConflict.values),
        "temporary": bool(data.temporary),
        "category_prefix": check.path(data.category_prefix, "category_prefix", required=False),
        "description": check.text(data.description, "description", DESCRIPTION_MAX, required=False),
    }
    if values["category_prefix"] and "category_prefix" not in check.fields:
        known = _taxonomy(principal, values["domain"])
        if known and "/".join(values["category_prefix"]) not in known:
            check.add("category_prefix", f"not in the {values['domain']} taxonomy: add the category first")
    check.raise_if_any("schema rule")
    return _save(principal, SchemaRule, rule_id, values, "key",
                 f"{values['domain']} has a {values['type']} rule for {values['key']} already")


def schema_rule_delete(*, principal: Principal, rule_id: int) -> None:
    """Delete one schema rule (a domain with no rule left for a type accepts any key of it)."""
    _require_admin(principal)
    _delete(principal, SchemaRule, rule_id)


def key_synonym_save(*, principal: Principal, data: KeySynonymInput, synonym_id: int | None = None) -> KeySynonym:
    """Create or replace a key synonym (`synonym` is written as `key`; an empty domain applies
    to every domain). Refused on `synonym` when it equals the key, is itself a target of another
    synonym or a controlled key; on `key` when that is itself a synonym (no chains)."""
    _require_admin(principal)
    check = _Check()
    values = {
        "domain": check.text(data.domain, "domain", limits.NODE_DOMAIN_MAX, required=False),
        "synonym": check.text(data.synonym, "synonym", limits.NODE_KEY_MAX, token=True),
        "key": check.text(data.key, "key", limits.NODE_KEY_MAX, token=True),
    }
    if not check.fields:
        domain, synonym, key = values["domain"], values["synonym"], values["key"]
        if synonym == key:
            check.add("synonym", "differs from the key it stands for")
        others = KeySynonym.objects.filter(team=principal.team).exclude(pk=synonym_id)
        rules = SchemaRule.objects.filter(team=principal.team)
        if domain:
            others, rules = others.filter(domain__in=[domain, ""]), rules.filter(domain=domain)
        if others.filter(key=synonym).exists():
            check.add("synonym", "is the key of another synonym: synonyms do not chain")
        elif rules.filter(key=synonym).exists():
            check.add("synonym", "is a controlled key of a schema rule")
        if others.filter(synonym=key).exists():
            check.add("key", "is itself a synonym: name the key it stands for")
    check.raise_if_any("key synonym")
    return _save(principal, KeySynonym, synonym_id, values, "synonym",
                 f"{values['synonym']} is a synonym in {values['domain'] or 'every domain'} already")


def key_synonym_delete(*, principal: Principal, synonym_id: int) -> None:
    _require_admin(principal)
    _delete(principal, KeySynonym, synonym_id)


def value_rule_save(*, principal: Principal, data: ValueRuleInput, value_rule_id: int | None = None) -> ValueRule:
    """Create or replace a value rule: a string value equal to `pattern` (compared normalised)
    is stored as `value_json`. The value must be storable JSON of at most NODE_VALUE_JSON_MAX
    characters and fit the value shape of at least one rule of its key."""
    _require_admin(principal)
    check = _Check()
    values = {
        "domain": check.text(data.domain, "domain", limits.NODE_DOMAIN_MAX),
        "key": check.text(data.key, "key", limits.NODE_KEY_MAX, required=False, token=True),
        "pattern": check.text(data.pattern, "pattern", limits.NODE_KEY_MAX),
        "value_json": data.value_json,
    }
    if values["pattern"] and not normalize(values["pattern"]).strip():
        check.add("pattern", "has nothing left to compare once normalised")
    problem = first_json_problem(data.value_json)
    if problem:
        check.add("value_json", f"{problem[0]} {problem[1]}")
    elif len(json.dumps(data.value_json, ensure_ascii=False)) > limits.NODE_VALUE_JSON_MAX:
        check.add("value_json", f"at most {limits.NODE_VALUE_JSON_MAX} characters of JSON")
    elif data.value_json is None:
        check.add("value_json", "required")
    if values["key"] and "value_json" not in check.fields:
        shapes = set(SchemaRule.objects.filter(team=principal.team, domain=values["domain"], key=values["key"])
                     .values_list("value_shape", flat=True))
        if shapes and not any(value_shape_ok(data.value_json, shape) for shape in shapes):
            check.add("value_json", f"does not fit {values['key']}'s value shape ({', '.join(sorted(shapes))})")
    check.raise_if_any("value rule")
    return _save(principal, ValueRule, value_rule_id, values, "pattern",
                 f"{values['domain']} maps {values['pattern']} for {values['key'] or 'every key'} already")


def value_rule_delete(*, principal: Principal, value_rule_id: int) -> None:
    _require_admin(principal)
    _delete(principal, ValueRule, value_rule_id)


def _rules_using(principal: Principal, category: Category) -> list[SchemaRule]:
    rules = SchemaRule.objects.filter(team=principal.team, domain=category.domain).order_by("type", "key")
    return [rule for rule in rules if list(rule.category_prefix) == list(category.path)]


def _check_category_unused(principal: Principal, category: Category) -> None:
    using = _rules_using(principal, category)
    if using:
        names = ", ".join(f"{rule.type}/{rule.key}" for rule in using[:5])
        raise Conflict(f"{category.path_text} is the category prefix of {names}: change those rules first",
                       code="category_in_use")


def category_save(*, principal: Principal, data: CategoryInput, category_id: int | None = None) -> Category:
    """Create or replace one category path (生活技能/做饭/饮食偏好) of a domain's taxonomy.
    Nodes already stored keep their path. Raises Conflict when renaming a category that a
    rule uses as its prefix."""
    _require_admin(principal)
    check = _Check()
    path = check.path(data.path, "path", required=True)
    values = {
        "domain": check.text(data.domain, "domain", limits.NODE_DOMAIN_MAX),
        "path": path,
        "path_text": "/".join(path),
        "description": check.text(data.description, "description", DESCRIPTION_MAX, required=False),
    }
    check.raise_if_any("category")
    if category_id is not None:
        with transaction.atomic():
            current = _get(principal, Category, category_id)
            if (current.domain, list(current.path)) != (values["domain"], path):
                _check_category_unused(principal, current)
            return _save(principal, Category, category_id, values, "path",
                         f"{values['path_text']} is in the {values['domain']} taxonomy already")
    return _save(principal, Category, None, values, "path",
                 f"{values['path_text']} is in the {values['domain']} taxonomy already")


def category_delete(*, principal: Principal, category_id: int) -> None:
    """Delete one category path. Raises Conflict while a rule uses it as its prefix."""
    _require_admin(principal)
    _delete(principal, Category, category_id)

