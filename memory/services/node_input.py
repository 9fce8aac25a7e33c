"""What a caller asks to remember, checked and normalised before any write (R-STORE, R-API).

NodeInput is the one shape every write path (API proposals, the dashboard, background jobs)
hands to memory.services.nodes; validate_node_input applies the limits of memory.limits and
returns a cleaned copy; node_search_tokens computes the keyword index text of a node.
"""

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.utils import timezone

from memory import limits
from memory.errors import InvalidInput
from memory.models import Node, NodeType, Scope
from memory.search.concepts import concept_tokens
from memory.search.text import document_tokens, json_strings, normalize, note_words, owner_token
from memory.validation import clean_identity, clean_text, first_json_problem

DEFAULT_DOMAIN = "general"
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class NodeInput:
    """What a caller asks to remember. Owner ids come from the caller's context; which of
    them the node keeps depends on `scope` (session → the session, workspace → workspace_id,
    user → user_id, global → none)."""

    scope: str
    type: str
    title: str = ""
    content: str = ""
    domain: str = DEFAULT_DOMAIN
    category_path: Sequence[str] = ()
    key: str = ""
    value_json: Any = None
    confidence: float = 0.8
    importance: float = 0.5
    tags: Sequence[str] = ()
    entities: Sequence[str] = ()
    expires_at: datetime | None = None
    explicit: bool = False
    cardinality: str = "one"  # "one" active value per key, or "many" (one per value); see conflict_slot
    source_message_ids: Sequence[int] = ()
    parent_id: int | None = None
    workspace_id: str = ""
    user_id: str = ""
    session_id: str = ""


def value_hash(value: Any) -> str:
    """SHA-1 of the canonical JSON of a value ("" for no value): equal values, equal hashes."""
    if value is None:
        return ""
    return hashlib.sha1(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def conflict_slot(*, key: str, value: Any, cardinality: str, title: str, content: str) -> str:
    """The slot a node takes among the active nodes of its owner, domain, type and key; the
    database allows one active node per slot (node_active_slot_unique).

    A one-valued key has a single slot (""), so two values cannot both be active; a
    many-valued key has one slot per value; a keyless node one per text as note_text reads it,
    so the same note is not stored twice.
    """
    if key:
        return value_hash(value) if cardinality == "many" else ""
    text = "\x00".join(note_text(part) for part in (title, content))
    return "t" + hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def note_text(text: str) -> str:
    """A keyless note's text as notes are compared (R-STORE): memory.search.text.note_words —
    case, width, script (traditional/simplified), spacing and the marks that only punctuate
    it aside. A text of nothing but such marks is compared by its normal form with spacing
    folded."""
    return note_words(text) or " ".join(normalize(text).split())


def canonical_json(value: Any) -> Any:
    """The same JSON value with object keys sorted, so equal values compare equal on SQLite too."""
    return json.loads(json.dumps(value, sort_keys=True, ensure_ascii=False))


def _string_list(values: Sequence[str], *, field_name: str) -> list[str]:
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise InvalidInput(f"{field_name} must be a list of strings", fields={field_name: ["must be a list"]})
    if len(values) > limits.NODE_LIST_ITEMS_MAX:
        raise InvalidInput(
            f"{field_name}: at most {limits.NODE_LIST_ITEMS_MAX} items", fields={field_name: ["too many items"]}
        )
    cleaned: dict[str, None] = {}
    for value in values:
        text = clean_text(value, field=field_name, max_length=limits.NODE_LIST_ITEM_MAX, allow_empty=False).strip()
        cleaned.setdefault(text)
    return list(cleaned)


def _unit_interval(value: Any, *, field_name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidInput(f"{field_name} must be a number from 0 to 1", fields={field_name: ["must be in [0, 1]"]})
    return float(value)


def validate_node_input(data: NodeInput) -> NodeInput:
    """Check every field against the limits and choices; returns a cleaned copy.

    Raises InvalidInput naming the first bad field.
    """
    if data.scope not in Scope.values:
        raise InvalidInput(f"scope must be one of {', '.join(Scope.values)}", fields={"scope": ["invalid choice"]})
    if data.type not in NodeType.values:
        raise InvalidInput(f"type must be one of {', '.join(NodeType.values)}", fields={"type": ["invalid choice"]})
    content = clean_text(data.content, field="content", max_length=limits.NODE_CONTENT_MAX).strip()
    title = clean_text(data.title, field="title", max_length=limits.NODE_TITLE_MAX).strip()
    if not title:
        if not content:
            raise InvalidInput("a node needs a title or content", fields={"title": ["title or content is required"]})
        title = _SPACE.sub(" ", content)[: limits.NODE_TITLE_MAX]
    domain = clean_text(data.domain or DEFAULT_DOMAIN, field="domain", max_length=limits.NODE_DOMAIN_MAX).strip()
    if not domain:
        domain = DEFAULT_DOMAIN
    category_path = _string_list(data.category_path, field_name="category_path")
    if any("/" in level for level in category_path):
        raise InvalidInput("category_path levels may not contain '/'", fields={"category_path": ["no '/' in a level"]})
    key = clean_text(data.key or "", field="key", max_length=limits.NODE_KEY_MAX)
    if key and (not key.isprintable() or any(ch.isspace() for ch in key)):
        raise InvalidInput("key must be printable with no spaces", fields={"key": ["printable, no spaces"]})
    value = data.value_json
    if value is not None:
        problem = first_json_problem(value)
        if problem:
            raise InvalidInput(f"value_json{'.' + problem[0] if problem[0] != 'body' else ''} {problem[1]}",
                               fields={"value_json": [problem[1]]})
        if len(json.dumps(value, ensure_ascii=False)) > limits.NODE_VALUE_JSON_MAX:
            raise InvalidInput(
                f"value_json is too large: at most {limits.NODE_VALUE_JSON_MAX} characters as JSON",
                fields={"value_json": ["too large"]},
            )
        value = canonical_json(value)
    if data.cardinality not in ("one", "many"):
        raise InvalidInput("cardinality must be 'one' or 'many'", fields={"cardinality": ["invalid choice"]})
    if data.expires_at is not None and timezone.is_naive(data.expires_at):
        raise InvalidInput("expires_at needs a UTC offset", fields={"expires_at": ["needs a UTC offset"]})
    sources = list(dict.fromkeys(data.source_message_ids))
    if len(sources) > limits.NODE_SOURCES_MAX:
        raise InvalidInput(
            f"at most {limits.NODE_SOURCES_MAX} source messages", fields={"source_message_ids": ["too many"]}
        )
    if any(isinstance(item, bool) or not isinstance(item, int) for item in sources):
        raise InvalidInput("source_message_ids must be integers", fields={"source_message_ids": ["integers only"]})
    return replace(
        data,
        title=title,
        content=content,
        domain=domain,
        category_path=category_path,
        key=key,
        value_json=value,
        confidence=_unit_interval(data.confidence, field_name="confidence"),
        importance=_unit_interval(data.importance, field_name="importance"),
        tags=_string_list(data.tags, field_name="tags"),
        entities=_string_list(data.entities, field_name="entities"),
        source_message_ids=sources,
        workspace_id=clean_identity(data.workspace_id, field="workspace_id"),
        user_id=clean_identity(data.user_id, field="user_id"),
        session_id=clean_identity(data.session_id, field="session_id"),
    )


def node_owner_tokens(node: Node) -> list[str]:
    """The team's token and the token of the node's owner for its scope."""
    team = node.team_id
    if node.scope == Scope.SESSION:
        owner = owner_token(team, "s", node.session_id)
    elif node.scope == Scope.WORKSPACE:
        owner = owner_token(team, "w", node.workspace_id)
    elif node.scope == Scope.USER:
        owner = owner_token(team, "u", node.user_id)
    else:
        owner = owner_token(team, "g")
    return [owner_token(team, "t"), owner]


def node_search_tokens(node: Node) -> str:
    """Fields, in weight order: title | content | tags | entities | key and value strings |
    the concept tokens of title, content and tags (memory.search.concepts; empty with
    concepts off), then the owner tokens (node_owner_tokens)."""
    key_and_value = " ".join([node.key.replace("_", " ").replace(".", " "), *json_strings(node.value_json)])
    tags = " ".join(node.tags)
    return document_tokens(
        [node.title, node.content, tags, " ".join(node.entities), key_and_value],
        owners=node_owner_tokens(node),
        concepts=concept_tokens("\n".join((node.title, node.content, tags))),
    )


def _changed_strings(old: Any, new: Any) -> list[tuple[str, str]]:
    """(old, new) pairs of the strings a value change replaced: {"lives": "Munich"} →
    {"lives": "Hamburg"} gives [("Munich", "Hamburg")]; a string for a string, field by field, in
    the order of the fields' names."""
    if isinstance(old, str) and isinstance(new, str):
        return [(old, new)] if old.strip() and new.strip() and old != new else []
    if isinstance(old, dict) and isinstance(new, dict):
        return [pair for name in sorted(old.keys() & new.keys()) for pair in _changed_strings(old[name], new[name])]
    return []


def _renamed(old: Node, overrides: dict[str, Any]) -> dict[str, Any]:
    """The inherited words that name the old value, said of the new one, for the fields the
    successor does not give (R-STORE): a supersede of {"lives": "Munich"} by {"lives":
    "Hamburg"} with a new title only kept the entity "Munich", so a search for Munich found the
    Hamburg memory. Only a value the old node named as an entity is renamed (not a status, "open"
    → "done", nor a code, "en" → "zh"), one the change replaces by one new value, as written (not
    "go deeper" for Go, "apple" for Apple), and in a title or content only where it stands as a word
    of its own (not Parisian, JavaScript, 北京大学); a field the renaming would make too long keeps
    its words."""
    if "value_json" not in overrides:
        return {}
    named = set(old.entities)
    targets: dict[str, set[str]] = {}
    for before, after in _changed_strings(old.value_json, overrides["value_json"]):
        if before in named:
            targets.setdefault(before, set()).add(after)
    pairs = [(before, next(iter(after))) for before, after in targets.items() if len(after) == 1]
    if not pairs:
        return {}
    renamed: dict[str, Any] = {}
    for name in ("entities", "tags"):
        if name not in overrides:
            words = list(getattr(old, name))
            for before, after in pairs:
                words = [after if word == before else word for word in words]
            renamed[name] = list(dict.fromkeys(words))
    for name, most in (("title", limits.NODE_TITLE_MAX), ("content", limits.NODE_CONTENT_MAX)):
        if name not in overrides:
            text = getattr(old, name)
            for before, after in pairs:
                text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(before)}(?![A-Za-z0-9\u4e00-\u9fff])",
                              lambda _, after=after: after, text)
            if len(text) <= most:
                renamed[name] = text
    return renamed


def supersede_input(old: Node, overrides: dict[str, Any], context: dict[str, str]) -> NodeInput:
    """A NodeInput for the successor of `old`: fields not in `overrides` are inherited, and the
    owner stays the same unless the scope changes (then it comes from the caller's `context`)."""
    inherited = {
        "scope": old.scope,
        "type": old.type,
        "title": old.title,
        "content": old.content,
        "domain": old.domain,
        "category_path": list(old.category_path),
        "key": old.key,
        "value_json": old.value_json,
        "confidence": old.confidence,
        "importance": old.importance,
        "tags": list(old.tags),
        "entities": list(old.entities),
        "expires_at": old.expires_at,
        "explicit": old.explicit,
        "cardinality": "many" if old.key and old.slot else "one",
        "parent_id": old.parent_id,
    }
    for name, said in _renamed(old, overrides).items():
        inherited[name] = said
    inherited.update(overrides)
    if inherited["scope"] == old.scope:
        owner = {
            "workspace_id": old.workspace_id,
            "user_id": old.user_id,
            "session_id": old.session.external_id if old.session_id else "",
        }
        if old.session_id:
            owner["workspace_id"] = old.session.workspace_id
            owner["user_id"] = old.session.user_id
        elif not owner["workspace_id"]:
            # User and global memory belong to no workspace; the caller's workspace still
            # decides access for a key limited to workspaces.
            owner["workspace_id"] = context.get("workspace_id", "")
    else:
        owner = {name: context.get(name, "") for name in ("workspace_id", "user_id", "session_id")}
    return NodeInput(**inherited, **owner)


# What a repeat leaves as stored: an empty list or text, or a category it only begins, tells less, not
# otherwise (an agent's repeat of capture's allergy without tags had wiped its tags, entities and
# category; a newcomer's find). An update operation still sets any of them.
def tells_less(name: str, current: Any, value: Any) -> bool:
    if name in ("tags", "entities", "content"):
        return bool(current) and not value
    if name == "category_path":
        return list(current[: len(value)]) == list(value) and len(value) < len(current)
    return False
