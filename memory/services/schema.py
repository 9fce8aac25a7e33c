"""Controlled-schema normalisation before a memory write (seed 000 受控 Schema; R-TOOLS).

schema_normalize takes the node fields an agent proposed (a dict, as sent) and returns them
normalised, with notes saying what changed and, if the node does not conform, a problem:

1. key spelling and synonyms: fav_colour → favorite_color (memory.key_spelling), disliked_ingredient →
   avoid_ingredient, home_city → home (KeySynonym);
2. value rules: 少辣 → {"spicy": "low"}; several parts merge, 少油少辣 → {"oil": "low", "spicy": "low"};
3. default scope and category path from the key's SchemaRule, else from the type;
4. scope rule: an inferred project constraint, decision or task goes to the workspace, not the user;
5. checks: a controlled domain (one with any rule) allows only the keys its rules give each
   type (`key_not_in_schema`; session memory, being temporary, may use any key), the value must
   have the rule's shape (`value_shape_mismatch`), the category must be in the taxonomy
   (`category_not_in_schema`), a temporary state may not be stored beyond the session
   without expires_at (`temporary_needs_expiry`), and a rule may ask for the user's
   explicit intent (`explicit_intent_required`).

Fields of the wrong type are left alone: validation reports them as 400 afterwards.
"""

import json
import re
from dataclasses import dataclass, field
from typing import Any

from django_scopes import scope

from accounts.models import Team
from memory import schema_defaults
from memory.key_spelling import key_spelling
from memory.models import Category, KeySynonym, NodeType, SchemaRule, Scope, ValueRule
from memory.search.text import normalize

_SEPARATORS = re.compile(r"[,，、;；/|+＋和及与]+|\band\b")
# A passing state ("today I…"): not a long-term memory without an expiry (seed 000 status 归一).
_TEMPORARY = re.compile(
    r"今天|今晚|今早|明天|这几天|这两天|最近几天|暂时|这周|本周|\b(today|tonight|tomorrow|this week|for now|right now)\b"
)
# ...unless the passing moment is where a lasting change starts ("from today on").
_FROM_NOW_ON = re.compile(
    r"(从|自)?(今天|今晚|明天|本周|这周)(开始|起)|从现在(开始|起)|以后|\b(from|starting|as of) (today|tomorrow|now)( on)?\b"
)
_PROJECT_TYPES = (NodeType.CONSTRAINT, NodeType.DECISION, NodeType.TASK)


@dataclass(frozen=True)
class Problem:
    reason: str
    message: str


@dataclass
class Normalized:
    node: dict[str, Any]
    rule: SchemaRule | None = None
    notes: list[str] = field(default_factory=list)
    problem: Problem | None = None

    @property
    def cardinality(self) -> str:
        return self.rule.cardinality if self.rule is not None else "one"

    @property
    def on_conflict(self) -> str:
        return self.rule.on_conflict if self.rule is not None else "supersede"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _default_scope(node_type: str, *, explicit: bool, workspace_id: str) -> str:
    """What the user states about themselves is theirs; a project's decisions, tasks and
    skills (and, inferred, its facts and constraints) belong to the workspace; anything else
    inferred stays in the session."""
    if workspace_id and node_type in (NodeType.DECISION, NodeType.TASK, NodeType.SKILL):
        return Scope.WORKSPACE
    if explicit:
        return Scope.USER
    if workspace_id and node_type in (NodeType.CONSTRAINT, NodeType.FACT):
        return Scope.WORKSPACE
    return Scope.SESSION


def _map_value(text: str, rules: list[ValueRule]) -> Any:
    """The controlled value for `text`, or None. Every part must match a rule; parts that map
    to objects merge."""
    if not rules:
        return None
    patterns = sorted(((normalize(rule.pattern), rule.value_json) for rule in rules), key=lambda item: -len(item[0]))
    values = []
    for chunk in (part.strip() for part in _SEPARATORS.split(normalize(text)) if part and part.strip()):
        while chunk:
            match = next(((pattern, value) for pattern, value in patterns if pattern and chunk.startswith(pattern)), None)
            if match is None:
                return None
            values.append(match[1])
            chunk = chunk[len(match[0]):].lstrip()
    if len(values) == 1:
        return values[0]
    if values and all(isinstance(value, dict) for value in values):
        merged: dict[str, Any] = {}
        for value in values:
            merged.update(value)
        return merged
    return None


def value_shape_ok(value: Any, shape: str) -> bool:
    """Whether `value` (parsed JSON) has the SchemaRule value shape `shape` ("any" takes anything)."""
    if shape == "string":
        return isinstance(value, str)
    if shape == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if shape == "boolean":
        return isinstance(value, bool)
    if shape == "string[]":
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    if shape == "object":
        return isinstance(value, dict)
    return True


def schema_normalize(
    *, team: Team, node: dict[str, Any], explicit: bool, workspace_id: str = ""
) -> Normalized:
    """Normalise proposed node fields against the team's controlled schema (see module doc).

    `node` holds NodeInput field names (scope may be missing). Returns Normalized; never
    raises for bad types (validation does that afterwards).
    """
    node = dict(node)
    result = Normalized(node=node)
    domain = node.get("domain") or "general"
    node_type = node.get("type")
    key = node.get("key")
    rules = list(SchemaRule.objects.filter(team=team, domain=domain)) if isinstance(domain, str) else []
    controlled = {item.key for item in rules}  # never renamed: an admin's rule for `employer` keeps it
    if isinstance(key, str) and key and key not in controlled and isinstance(domain, str):
        synonym = _write_synonym(team, domain, key)
        if synonym is None and key_spelling(key) != key:  # the team's own synonym of the key as sent comes first
            node["key"] = key_spelling(key)
            result.notes.append(f"key {key} → {node['key']}")
            key = node["key"]
            synonym = None if key in controlled else _write_synonym(team, domain, key)
        if synonym is not None:
            node["key"] = key = synonym.key
            result.notes.append(f"key {synonym.synonym} → {synonym.key}")
    rule = next((item for item in rules if item.key == key and item.type == node_type), None)
    result.rule = rule
    value = node.get("value_json")
    if isinstance(value, str) and key and isinstance(domain, str):
        mapped = _map_value(value, list(ValueRule.objects.filter(team=team, domain=domain, key__in=[key, ""])))
        if mapped is not None and mapped != value:
            result.notes.append(f"value {_json(value)} → {_json(mapped)}")
            node["value_json"] = value = mapped
    if rule is not None and rule.value_shape == "string[]" and isinstance(value, str):
        node["value_json"] = value = [value]
    if rule is not None and rule.category_prefix and not node.get("category_path"):
        node["category_path"] = list(rule.category_prefix)
        result.notes.append(f"category_path set to {'/'.join(rule.category_prefix)}")
    if not node.get("scope") and isinstance(node_type, str):
        node["scope"] = rule.default_scope if rule is not None else _default_scope(
            node_type, explicit=explicit, workspace_id=workspace_id)
        result.notes.append(f"scope defaulted to {node['scope']}")
    if node.get("scope") == Scope.USER and node_type in _PROJECT_TYPES and workspace_id and not explicit and rule is None:
        node["scope"] = Scope.WORKSPACE
        result.notes.append(f"scope user → workspace (an inferred {node_type} belongs to the project)")
    result.problem = _problem(team, node, rules, rule, explicit=explicit)
    return result


def _write_synonym(team: Team, domain: str, key: str) -> KeySynonym | None:
    """The synonym a write of `key` in `domain` follows: the domain's own, else every domain's."""
    return KeySynonym.objects.filter(team=team, domain__in=[domain, ""], synonym=key).order_by("-domain").first()


def _read_synonym(team: Team, domain: str, key: str) -> str | None:
    """The key a lookup of `key` follows: the domain's synonym (or every domain's); without a
    domain, the one key every domain that has a synonym `key` agrees on."""
    synonyms = KeySynonym.objects.filter(team=team, synonym=key)
    targets = {item.domain: item.key for item in (synonyms.filter(domain__in=[domain, ""]) if domain else synonyms)}
    if domain and domain in targets:
        return targets[domain]
    return next(iter(targets.values())) if len(set(targets.values())) == 1 else None


def _problem(team: Team, node: dict[str, Any], rules: list[SchemaRule], rule: SchemaRule | None, *, explicit: bool):
    key = node.get("key")
    domain = node.get("domain") or "general"
    scope_name = node.get("scope")
    if rules and key and rule is None and scope_name != Scope.SESSION:  # session memory is free-form
        node_type = node.get("type")
        if node_type == NodeType.CORRECTION and any(item.key == key for item in rules):
            return None  # checked again as the type of the node it corrects
        allowed = ", ".join(sorted(item.key for item in rules if item.type == node_type)) or "no keys"
        return Problem("key_not_in_schema", f"{domain} is a controlled domain: {node_type} allows {allowed}, not {key!r}")
    if rule is not None and "value_json" in node and not value_shape_ok(node["value_json"], rule.value_shape):
        return Problem("value_shape_mismatch", f"{rule.key} takes a value of shape {rule.value_shape}")
    path = node.get("category_path")
    if isinstance(path, list) and path and all(isinstance(level, str) for level in path):
        if rule is not None and rule.category_prefix and path[: len(rule.category_prefix)] != rule.category_prefix:
            return Problem("category_not_in_schema", f"{rule.key} belongs under {'/'.join(rule.category_prefix)}")
        known = set(Category.objects.filter(team=team, domain=domain).values_list("path_text", flat=True))
        if known and "/".join(path) not in known and scope_name != Scope.SESSION:
            return Problem("category_not_in_schema", f"{'/'.join(path)} is not in the {domain} taxonomy")
    if scope_name in (Scope.USER, Scope.WORKSPACE, Scope.GLOBAL) and not node.get("expires_at"):
        text = " ".join(str(node.get(name) or "") for name in ("title", "content") if isinstance(node.get(name), str))
        text = _FROM_NOW_ON.sub(" ", normalize(text))
        if (rule is not None and rule.temporary) or _TEMPORARY.search(text):
            return Problem("temporary_needs_expiry",
                           f"a temporary state needs expires_at to be kept beyond the session (scope {scope_name})")
    if rule is not None and rule.requires_explicit_intent and scope_name != Scope.SESSION and not explicit:
        return Problem("explicit_intent_required", f"{rule.key} is remembered only when the user asks explicitly")
    return None


def schema_seed_rows(team_id: int, models: dict[str, Any]) -> None:
    """Create the default schema rows (memory.schema_defaults) for a team with the given model
    classes (real or, in a migration, historical). Existing rows are left as they are."""
    rules, synonyms, values, categories = (models[name] for name in ("SchemaRule", "KeySynonym", "ValueRule", "Category"))
    rules.objects.bulk_create([
        rules(team_id=team_id, domain=domain, category_prefix=prefix, type=node_type, key=key, value_shape=shape,
              cardinality=cardinality, default_scope=default_scope, requires_explicit_intent=explicit,
              temporary=temporary, description=description)
        for domain, prefix, node_type, key, shape, cardinality, default_scope, explicit, temporary, description
        in schema_defaults.SCHEMA_RULES
    ], ignore_conflicts=True)
    synonyms.objects.bulk_create([
        synonyms(team_id=team_id, domain=domain, synonym=synonym, key=key)
        for domain, synonym, key in schema_defaults.KEY_SYNONYMS
    ], ignore_conflicts=True)
    values.objects.bulk_create([
        values(team_id=team_id, domain=domain, key=key, pattern=pattern, value_json=value)
        for domain, key, pattern, value in schema_defaults.VALUE_RULES
    ], ignore_conflicts=True)
    categories.objects.bulk_create([
        categories(team_id=team_id, domain=domain, path=path, path_text="/".join(path), description=description)
        for domain, path, description in schema_defaults.CATEGORIES
    ], ignore_conflicts=True)


def schema_seed_defaults(team: Team) -> None:
    """Give `team` the default controlled schema (called when a team is created)."""
    with scope(team=team):
        schema_seed_rows(team.pk, {"SchemaRule": SchemaRule, "KeySynonym": KeySynonym, "ValueRule": ValueRule,
                                   "Category": Category})


def schema_terms(*, team: Team, domain: str, key: str, value: Any = None, has_value: bool = False) -> tuple[str, Any]:
    """The controlled key and value for a lookup (get, search, forget) in the words a
    proposal would use: fav_colour → favorite_color, disliked_ingredient → avoid_ingredient,
    少辣 → {"spicy": "low"}.
    Without a domain, a synonym applies when every domain that has it agrees. A key a schema rule
    controls (in `domain`, or without one in any domain) is looked up as it is: an admin's
    `residence` in a tax domain is not the `home` a default synonym makes of it elsewhere."""
    if not key:
        return key, value
    rules = SchemaRule.objects.filter(team=team, **({"domain": domain} if domain else {}))
    if not rules.filter(key=key).exists():
        target = _read_synonym(team, domain, key)
        if target is None and key_spelling(key) != key and not rules.filter(key=key_spelling(key)).exists():
            key = key_spelling(key)
            target = _read_synonym(team, domain, key)
        key = target or key
    if has_value and isinstance(value, str):
        rules = ValueRule.objects.filter(team=team, key__in=[key, ""])
        mapped = _map_value(value, list(rules.filter(domain=domain) if domain else rules))
        if mapped is not None:
            value = mapped
    return key, value


def schema_summary(*, team: Team) -> str:
    """The team's controlled keys in one line for an agent: domain, type, key, value shape,
    many-valued or not, default scope (e.g. for the tool descriptions)."""
    parts: dict[str, list[str]] = {}
    for rule in SchemaRule.objects.filter(team=team).order_by("domain", "type", "key"):
        many = ", many" if rule.cardinality == "many" else ""
        parts.setdefault(f"{rule.domain}/{rule.type}", []).append(f"{rule.key} ({rule.value_shape}{many})")
    if not parts:
        return ""
    listed = "; ".join(f"{name}: {', '.join(keys)}" for name, keys in parts.items())
    return f"Controlled keys (a domain listed here accepts only these keys outside session scope): {listed}."
