"""The record types of an export file and how one record maps to one row (docs/export.md).

Each record type names a model, the plain fields copied as they are, and the references
that point at other records of the file (`<name>_id` holding the source id). Ids in a file
are the source instance's; the importer gives every row a new id and rewrites each
reference through the ids it has seen (memory.services.portability.import_).

Values are checked against the model's own fields (type, length, choices, NUL and lone
surrogates, times with an offset), so a record that would not store cleanly is refused with
its line number before anything is written.
"""

import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import models
from django.utils import timezone

from memory.capture_models import CaptureJob
from memory.errors import InvalidInput
from memory.instruction_models import PinnedInstructions
from memory.lexicon_models import LexiconSet
from memory.limits import ID_MAX, IMPORT_LIST_MAX, IMPORT_TEXT_MAX, NODE_SOURCES_MAX
from memory.models import AuditEvent, Message, Node, Session, Summary
from memory.policy_models import BudgetPolicy
from memory.profile_models import UserProfile, UserProfileVersion
from memory.schema_rules import Category, KeySynonym, SchemaRule, ValueRule
from memory.validation import first_json_problem, parse_utc_datetime, text_problem
from memory.working_models import WorkingMemory

FORMAT = "memory-export"
MARKS_NOT_AHEAD = frozenset({"memory_forgotten_at"})  # times a file may not set after its import
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Spec:
    """One record type: `model`, the `fields` copied as they are, and `refs` (reference name →
    record type it points at; the column is `<name>_id`). `keyed`: the record carries its
    source `id` because other records refer to it."""

    name: str
    model: type[models.Model]
    fields: tuple[str, ...]
    refs: tuple[tuple[str, str], ...] = ()
    keyed: bool = False
    nullable_refs: frozenset[str] = frozenset()
    zero_refs: frozenset[str] = frozenset()  # plain integer columns where 0 means "none" (written as null)
    list_refs: tuple[tuple[str, str], ...] = ()  # (name, record type): a list of references
    optional: frozenset[str] = frozenset()  # fields a file written before they existed may leave out (null)


SUMMARY_FIELDS = ("summary", "current_goal", "constraints", "preferences", "decisions", "completed_work",
                  "pending_work", "known_issues", "created_at")
NODE_FIELDS = ("workspace_id", "user_id", "scope", "domain", "category_path", "category_path_text", "type", "key",
               "value_json", "value_hash", "slot", "title", "content", "status", "confidence", "importance", "tags",
               "entities", "explicit", "version", "created_at", "updated_at", "expires_at")
POLICY_FIELDS = tuple(field.name for field in BudgetPolicy._meta.concrete_fields if field.name not in ("id", "team"))

# In file order: every record comes after the records it refers to, except node → node and
# message → message links (parent, supersedes), which may point either way and are resolved last.
SPECS: dict[str, Spec] = {spec.name: spec for spec in (
    Spec("schema_rule", SchemaRule, ("domain", "category_prefix", "type", "key", "value_shape", "cardinality",
                                     "default_scope", "requires_explicit_intent", "on_conflict", "temporary",
                                     "description", "updated_at")),
    Spec("key_synonym", KeySynonym, ("domain", "synonym", "key")),
    Spec("value_rule", ValueRule, ("domain", "key", "pattern", "value_json")),
    Spec("category", Category, ("domain", "path", "path_text", "description")),
    Spec("budget_policy", BudgetPolicy, POLICY_FIELDS),
    Spec("instructions", PinnedInstructions, ("workspace_id", "text", "updated_at", "updated_by")),
    # terms_key is not in the file: the importer normalises the terms again and derives it.
    Spec("lexicon_set", LexiconSet, ("workspace_id", "terms", "created_at", "updated_at", "updated_by")),
    Spec("session", Session, ("workspace_id", "user_id", "external_id", "created_at", "last_message_at",
                              "deleted_at"), keyed=True),
    # memory_forgotten_at: a turn a forgotten memory was taken from stays out of recall after an
    # import too (memory.services.forgotten_turns).
    Spec("message", Message, ("role", "content", "metadata", "created_at", "occurred_at", "memory_forgotten_at"),
         refs=(("session", "session"), ("parent", "message")), keyed=True, nullable_refs=frozenset({"parent"}),
         optional=frozenset({"memory_forgotten_at"})),
    Spec("summary", Summary, SUMMARY_FIELDS,
         refs=(("session", "session"), ("parent", "summary"), ("from_message", "message"), ("to_message", "message")),
         keyed=True, nullable_refs=frozenset({"parent"})),
    Spec("working_memory", WorkingMemory, ("current_goal", "references", "slots", "scratchpad", "version",
                                           "updated_at", "updated_by"), refs=(("session", "session"),)),
    Spec("capture_job", CaptureJob, ("workspace_id", "user_id", "kind", "trigger", "status", "attempts",
                                     "next_attempt_at", "last_error", "result", "created_at", "updated_at"),
         refs=(("session", "session"), ("after_message", "message"), ("to_message", "message")),
         nullable_refs=frozenset({"after_message"}), zero_refs=frozenset({"after_message"})),
    Spec("node", Node, NODE_FIELDS, refs=(("session", "session"), ("parent", "node"), ("supersedes", "node")),
         keyed=True, nullable_refs=frozenset({"session", "parent", "supersedes"}),
         list_refs=(("source_messages", "message"),)),
    Spec("profile", UserProfile, ("user_id", "current_version", "last_consolidated_at", "updated_at")),
    Spec("profile_version", UserProfileVersion, ("user_id", "version", "summary", "content", "lines",
                                                 "source_node_ids", "reason", "generator", "rolled_back_from",
                                                 "actor", "created_at", "redacted_at")),
    Spec("audit", AuditEvent, ("event_type", "node_id", "session_id", "workspace_id", "user_id", "actor", "reason",
                               "payload", "created_at"), keyed=True),
)}
RECORD_TYPES = tuple(SPECS)


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def columns(spec: Spec) -> list[str]:
    """The database columns an exporter reads for `spec` (for QuerySet.values)."""
    return (["id"] if spec.keyed else []) + list(spec.fields) + [f"{name}_id" for name, _ in spec.refs]


def to_record(spec: Spec, row: dict[str, Any]) -> dict[str, Any]:
    """One exported record from a `values()` row of `columns(spec)`:
    {"type", "id"? (keyed types), "fields": {column: value}, "refs": {name: source id | null}}."""
    record: dict[str, Any] = {"type": spec.name}
    if spec.keyed:
        record["id"] = row["id"]
    record["fields"] = {name: _jsonable(row[name]) for name in spec.fields}
    refs: dict[str, Any] = {}
    for name, _ in spec.refs:
        value = row[f"{name}_id"]
        refs[name] = None if name in spec.zero_refs and value == 0 else value
    record["refs"] = refs
    return record


def _problem(field: models.Field, value: Any) -> str | None:
    """Why `value` cannot be stored in `field`, or None."""
    if value is None:
        return None if field.null else "may not be null"
    if isinstance(field, models.JSONField):
        found = first_json_problem(value)
        return f"{found[0]} {found[1]}" if found else None
    if isinstance(field, models.BooleanField):
        return None if isinstance(value, bool) else "must be true or false"
    if isinstance(field, models.FloatField):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        return None if ok else "must be a finite number"
    if isinstance(field, models.IntegerField):
        if not isinstance(value, int) or isinstance(value, bool):
            return "must be an integer"
        low = 0 if isinstance(field, (models.PositiveIntegerField, models.PositiveSmallIntegerField)) else -ID_MAX
        return None if low <= value <= ID_MAX else "is out of range"
    if isinstance(field, models.DateTimeField):
        parsed, problem = parse_utc_datetime(value)
        if problem == "range":
            return "is out of range"
        return None if parsed is not None else "must be an ISO 8601 time with a UTC offset"
    if isinstance(field, (models.CharField, models.TextField)):
        if not isinstance(value, str):
            return "must be a string"
        problem = text_problem(value)
        if problem:
            return problem
        if field.max_length is not None and len(value) > field.max_length:
            return f"is longer than {field.max_length} characters"
        if field.choices and value not in {choice[0] for choice in field.choices}:
            return "is not one of " + ", ".join(str(choice[0]) for choice in field.choices)
        return None
    return f"has a type the importer does not know ({type(field).__name__})"


def _limit_problem(where: str, value: Any) -> str | None:
    """Why `value` of "record.field" `where` exceeds its write path's limit (memory.limits
    IMPORT_TEXT_MAX, IMPORT_LIST_MAX), or None."""
    if value is None:
        return None
    if where in IMPORT_TEXT_MAX:
        size = len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False))
        if size > IMPORT_TEXT_MAX[where]:
            return f"is {size} characters; at most {IMPORT_TEXT_MAX[where]}" + ("" if isinstance(value, str) else " as JSON")
    if where in IMPORT_LIST_MAX:
        items, item_max = IMPORT_LIST_MAX[where]
        if not isinstance(value, list) or len(value) > items:
            return f"must be a list of at most {items} strings"
        if not all(isinstance(item, str) and len(item) <= item_max for item in value):
            return f"items must be strings of at most {item_max} characters"
    return None


def _reference(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= ID_MAX


def _shape_problem(spec: Spec, record: dict[str, Any]) -> str | None:
    top = {"type", "fields", "refs"} | ({"id"} if spec.keyed else set())
    if set(record) != top:
        return f"needs exactly the keys {', '.join(sorted(top))}"
    fields, refs = record["fields"], record["refs"]
    if not isinstance(fields, dict) or not isinstance(refs, dict):
        return "fields and refs must be objects"
    for what, have, expected in (("field", set(fields) | spec.optional, set(spec.fields)),
                                 ("reference", refs, {name for name, _ in spec.refs + spec.list_refs})):
        unknown, missing = sorted(set(have) - expected), sorted(expected - set(have))
        if unknown or missing:
            return "; ".join(part for part in (f"unknown {what}(s) {', '.join(unknown)}" if unknown else "",
                                               f"missing {what}(s) {', '.join(missing)}" if missing else "") if part)
    if spec.keyed and not _reference(record["id"]):
        return "id must be a positive integer"
    return None


def check_record(spec: Spec, record: dict[str, Any], where: str) -> dict[str, Any]:
    """The row values of a parsed `record` (datetimes parsed; references stay in record["refs"]).

    Raises InvalidInput naming `where` (the line) and the field: unknown or missing keys,
    a value the field cannot store, an id or reference that is not a positive integer.
    """
    def bad(problem: str) -> InvalidInput:
        return InvalidInput(f"{where}: {spec.name} record: {problem}", fields={"file": [f"{where}: {problem}"]})

    problem = _shape_problem(spec, record)
    if problem:
        raise bad(problem)
    values: dict[str, Any] = {}
    for name in spec.fields:
        field = spec.model._meta.get_field(name)
        value = record["fields"].get(name)  # only an optional field may be missing (_shape_problem)
        problem = _problem(field, value) or _limit_problem(f"{spec.name}.{name}", value)
        if problem:
            raise bad(f"{name} {problem}")
        values[name] = parse_utc_datetime(value)[0] if isinstance(field, models.DateTimeField) and value else value
        if name in MARKS_NOT_AHEAD and values[name] is not None and values[name] > timezone.now() + timedelta(minutes=5):
            raise bad(f"{name} is in the future")  # a turn hidden for good, with no forget to restore
    for name, _ in spec.refs:
        value = record["refs"][name]
        if not (value is None and name in spec.nullable_refs) and not _reference(value):
            raise bad(f"reference {name} must be a positive integer" + (" or null" if name in spec.nullable_refs else ""))
    for name, _ in spec.list_refs:
        value = record["refs"][name]
        if not isinstance(value, list) or len(value) > NODE_SOURCES_MAX or not all(map(_reference, value)):
            raise bad(f"reference {name} must be a list of at most {NODE_SOURCES_MAX} positive integers")
    return values
