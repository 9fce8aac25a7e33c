"""Importing an export file into a team (docs/export.md): all or nothing, ids remapped,
audit preserved.

Every record gets a new id; every reference (session, message parent, summary chain and
range, node parent and supersede chain, source messages, capture job range, profile lines,
audit node ids and the ids inside audit payloads) is rewritten through the ids seen so far,
and node → node, message → message and summary → summary links once their whole type is in.
A reference to a record that is not in the file is an error. Keyword-index text is rebuilt
for the new ids and team (memory.search), so imported rows are found exactly as the originals.

Collisions are refused, not merged (409, nothing stored): a team import needs a team with no
conversations, memories or profiles yet; a workspace import, no session or node of that
workspace; a user import, no session, node or profile of that user. Configuration rows of the
file (schema rules, synonyms, value rules, categories, budget policies, pinned instructions,
synonym sets) replace the target's rows with the same key; the team's other configuration
stays. A synonym set's terms are checked and normalised again as the lexicon service does.

Preserved audit events keep their type, owner ids, actor name, reason and time, lose their
links to the source instance's logins and keys, and carry `payload.imported` = {event_id,
node_id (the source ids), import_event_id}. The import itself is one `memory.<kind>.imported`
event with the counts, written first, so every preserved event can name it.
"""

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from django.db import DataError, IntegrityError, transaction

from accounts.models import Team
from accounts.principal import AccessDenied, Principal
from memory import limits
from memory.errors import Conflict, InvalidInput, MemoryError
from memory.lexicon_models import LexiconSet
from memory.models import Node, NodeSource, NodeStatus, Session
from memory.profile_models import UserProfile
from memory.selectors.portability import KINDS, ExportRequest, record_types
from memory.services.audit import audit_record, node_words
from memory.services.forgotten_turns import forget_turns
from memory.services.lexicon import lexicon_lock, lexicon_terms_clean, lexicon_touch, terms_key
from memory.services.messages import message_search_tokens
from memory.services.node_input import conflict_slot, node_search_tokens, value_hash
from memory.services.portability.checks import (
    bad_line,
    check_chains,
    check_owner,
    check_rights,
    check_same_session,
)
from memory.services.portability.payloads import remap_payload, remap_profile_lines
from memory.services.portability.records import FORMAT, RECORD_TYPES, SCHEMA_VERSION, SPECS, Spec, check_record

IMPORT_CHUNK = 1000
LINE_MAX_BYTES = limits.IMPORT_LINE_MAX_BYTES
# Configuration rows: the fields that identify one within a team (the file's row replaces it).
CONFIG_KEYS = {
    "schema_rule": ("domain", "type", "key"),
    "key_synonym": ("domain", "synonym"),
    "value_rule": ("domain", "key", "pattern"),
    "category": ("domain", "path_text"),
    "budget_policy": ("workspace_id",),
    "instructions": ("workspace_id",),
}


class FileTooLarge(MemoryError):
    """413: the file is larger than the import's byte limit."""

    status = 413
    code = "payload_too_large"


@dataclass
class ImportResult:
    kind: str
    source_team: str
    counts: dict[str, int]
    import_event_id: int
    ids: dict[str, dict[int, int]] = field(default_factory=dict, repr=False)  # type → source id → new id




class _Reader:
    """Lines of a binary stream, each at most LINE_MAX_BYTES, the whole at most `max_bytes`; a
    running SHA-256 of the lines read before the current one."""

    def __init__(self, stream: IO[bytes], max_bytes: int | None):
        self.stream, self.max_bytes = stream, max_bytes
        self.number, self.size = 0, 0
        self.digest = hashlib.sha256()
        self._previous = b""

    def next(self) -> dict[str, Any] | None:
        self.digest.update(self._previous)
        raw = self.stream.readline(LINE_MAX_BYTES + 1)
        if not raw:
            return None
        self.number += 1
        self.size += len(raw)
        if self.max_bytes is not None and self.size > self.max_bytes:
            raise FileTooLarge(f"the file is larger than {self.max_bytes} bytes, the import limit")
        if len(raw) > LINE_MAX_BYTES:
            raise bad_line(self.number, f"longer than {LINE_MAX_BYTES} bytes")
        self._previous = raw
        try:
            record = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
        except ValueError as error:  # also UnicodeDecodeError
            raise bad_line(self.number, f"not a JSON object on one line ({error})") from None
        except RecursionError:
            raise bad_line(self.number, "nested too deeply") from None
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            raise bad_line(self.number, 'not a record: a JSON object with a "type" is expected')
        return record


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _check_manifest(record: dict[str, Any] | None) -> tuple[ExportRequest, dict[str, Any]]:
    if record is None:
        raise InvalidInput("the file is empty", fields={"file": ["empty"]})
    if record.get("type") != "manifest" or record.get("format") != FORMAT:
        raise bad_line(1, f'the first line must be the manifest of a "{FORMAT}" file')
    if record.get("schema_version") != SCHEMA_VERSION:
        raise bad_line(1, f"schema_version {record.get('schema_version')!r} is not supported; this instance reads "
                      f"version {SCHEMA_VERSION}")
    filters = record.get("filters")
    if record.get("kind") not in KINDS or not isinstance(filters, dict) or not isinstance(record.get("source_team"), str):
        raise bad_line(1, "the manifest needs kind (team, workspace or user), filters and source_team")
    try:
        request = ExportRequest.of(kind=record["kind"], workspace_id=filters.get("workspace_id"),
                                   user_id=filters.get("user_id"))
    except InvalidInput as error:
        raise bad_line(1, f"manifest filters: {error.message}") from None
    return request, record


def _rights_check(principal: Principal, request: ExportRequest) -> None:
    if not (principal.is_admin or principal.kind == "system"):  # system: the import_memories command
        raise AccessDenied("team admins only")
    if principal.workspace_ids is not None and not (request.kind == "workspace"
                                                    and principal.can_read_workspace(request.workspace_id)):
        raise AccessDenied("this key is limited to some workspaces: it may import those workspaces only")


def _collision_check(principal: Principal, request: ExportRequest) -> None:
    team, owner = principal.team, request.owner_q()
    taken = [name for name, model in (("sessions", Session), ("memories", Node))
             if model.objects.filter(owner, team=team).exists()]
    if request.kind != "workspace" and UserProfile.objects.filter(owner, team=team).exists():
        taken.append("profiles")
    if taken:
        what, where = {"team": ("the team", "a team that has none"),
                       "workspace": (f"workspace {request.workspace_id!r}", "a team where that workspace has none"),
                       "user": (f"user {request.user_id!r}", "a team where that user has none")}[request.kind]
        raise Conflict(f"{what} already has {' and '.join(taken)} in team {team.slug!r}: import into {where}",
                       code="import_collision")


class _Importer:
    """One import's state: id maps, buffered rows of the current type, deferred self-links."""

    def __init__(self, principal: Principal, request: ExportRequest, event_id: int, source_team: str):
        self.principal, self.request, self.event_id, self.source_team = principal, request, event_id, source_team
        self.ids: dict[str, dict[int, int]] = {name: {} for name in RECORD_TYPES}
        self.counts: dict[str, int] = {name: 0 for name in RECORD_TYPES}
        self.sessions: dict[int, Session] = {}
        self.buffer: list[tuple[int, int | None, Any, list[int]]] = []  # (line, source id, row, source messages)
        self.deferred: list[tuple[int, int, Any, str, int]] = []  # (line, source id, row, reference name, target)
        # The new session of each message and summary, by source id (links must stay in one session).
        self.session_of: dict[str, dict[int, int]] = {"message": {}, "summary": {}}
        self.spec: Spec | None = None
        self.pending: set[int] = set()  # source ids of the buffered rows
        self.note_slots: set[tuple] = set()  # owner, domain, type and slot of the active keyless notes
        self.unmarked = False  # a message record came without memory_forgotten_at (a file older than the mark)

    def resolve(self, line: int, target: str, source_id: int) -> int:
        new = self.ids[target].get(source_id)
        if new is None:
            raise bad_line(line, f"refers to {target} {source_id}, which is not in the file before it")
        return new

    def add(self, line: int, spec: Spec, record: dict[str, Any]) -> None:
        values = check_record(spec, record, f"line {line}")
        if spec.name == "message" and "memory_forgotten_at" not in record["fields"]:
            self.unmarked = True
        self._check_owner(line, spec, values)
        check_rights(self.principal, line, spec.name, values)
        if spec.keyed:
            if record["id"] in self.ids[spec.name] or record["id"] in self.pending:
                raise bad_line(line, f"{spec.name} {record['id']} appears twice")
            self.pending.add(record["id"])
        row = spec.model(team=self.principal.team, **values)
        for name, target in spec.refs:
            source = record["refs"][name]
            if source is None:
                if name in spec.zero_refs:
                    setattr(row, f"{name}_id", 0)
                continue
            if target == spec.name:
                self.deferred.append((line, record["id"], row, name, source))
            else:
                setattr(row, f"{name}_id", self.resolve(line, target, source))
        sources = [self.resolve(line, "message", pk) for pk in record["refs"].get("source_messages", [])]
        self._check_links(line, spec, row, record)
        self._prepare(line, spec, row, record.get("id"))
        self.buffer.append((line, record.get("id"), row, sources))
        if len(self.buffer) >= IMPORT_CHUNK:
            self.flush()

    def _check_owner(self, line: int, spec: Spec, values: dict[str, Any]) -> None:
        """A workspace or user file holds only that owner's rows (the collision check relies on it)."""
        column = {"workspace": "workspace_id", "user": "user_id"}.get(self.request.kind)
        if column and column in values and values[column] != getattr(self.request, column):
            raise bad_line(line, f"{spec.name} of {column} {values[column]!r} in an export of "
                             f"{self.request.kind} {getattr(self.request, column)!r}")

    def _check_links(self, line: int, spec: Spec, row: Any, record: dict[str, Any]) -> None:
        """Owner columns against scope and session; links that must stay inside the row's session."""
        session_pk = getattr(row, "session_id", None) if any(name == "session" for name, _ in spec.refs) else None
        check_owner(line, spec.name, row, self.sessions.get(session_pk) if session_pk else None)
        in_session = self.session_of["message"]
        refs = record["refs"]
        if spec.name in self.session_of:
            self.session_of[spec.name][record["id"]] = session_pk
        if spec.name in ("summary", "capture_job"):
            ends = [name for name in ("from_message", "after_message", "to_message") if refs.get(name) is not None]
            check_same_session(line, f"{spec.name} record", session_pk,
                               [(f"{name} {refs[name]}", in_session[refs[name]]) for name in ends])
            if spec.name == "summary" and row.from_message_id > row.to_message_id:
                raise bad_line(line, f"summary record: from_message {refs['from_message']} comes after to_message "
                                 f"{refs['to_message']}")
        if spec.name == "node" and row.scope == "session":
            check_same_session(line, "node record (session scope)", session_pk,
                               [(f"source message {pk}", in_session[pk]) for pk in refs["source_messages"]])

    def _prepare(self, line: int, spec: Spec, row: Any, source_id: int | None) -> None:
        if spec.name == "message":
            row.search_tokens = message_search_tokens(row.content, self.sessions[row.session_id], row.metadata)
        elif spec.name == "node":
            row.search_tokens = node_search_tokens(row)
            row.value_hash = value_hash(row.value_json)
            row.slot = self._slot(line, row)
        elif spec.name == "profile_version":
            row.lines = remap_profile_lines(row.lines, self.ids["node"])
            if not isinstance(row.source_node_ids, list) or not all(
                    isinstance(pk, int) and not isinstance(pk, bool) for pk in row.source_node_ids):
                raise bad_line(line, "profile_version record: source_node_ids must be a list of integers")
            row.source_node_ids = [self.ids["node"][pk] for pk in row.source_node_ids if pk in self.ids["node"]]
        elif spec.name == "audit":
            source_node = row.node_id
            row.node_id = self.ids["node"].get(source_node) if source_node is not None else None
            row.payload = remap_payload(row.payload, self.ids)
            marker = {"event_id": source_id, "node_id": source_node, "import_event_id": self.event_id,
                      "source_team": self.source_team}
            row.payload = {**(row.payload if isinstance(row.payload, dict) else {"payload": row.payload}),
                           "imported": marker}
        elif spec.name == "lexicon_set":
            try:
                row.terms = lexicon_terms_clean(row.terms)
            except InvalidInput as error:
                raise bad_line(line, f"lexicon_set record: {error.message}") from None
            row.terms_key = terms_key(row.terms)
            LexiconSet.objects.filter(team=self.principal.team, workspace_id=row.workspace_id,
                                      terms_key=row.terms_key).delete()
        elif spec.name in CONFIG_KEYS:
            keys = {name: getattr(row, name) for name in CONFIG_KEYS[spec.name]}
            spec.model.objects.filter(team=self.principal.team, **keys).delete()

    def _slot(self, line: int, row: Any) -> str:
        """The node's conflict slot as this store computes it (node_input.conflict_slot), not as
        the file says: a keyed node's from its value (the file tells only whether its key took
        one value, slot ""), a keyless note's from its text. An active note whose slot an earlier
        active note of the file took — twins an older store held (migration 0021) — takes one
        of its own; consolidation merges such twins."""
        if row.key:
            return "" if row.slot == "" else value_hash(row.value_json)
        slot = conflict_slot(key="", value=None, cardinality="one", title=row.title, content=row.content)
        if row.status != "active":
            return slot
        identity = (row.session_id or 0, row.scope, row.workspace_id, row.user_id, row.domain, row.type, slot)
        if identity in self.note_slots:
            return f"legacy:{self.event_id}.{line}"
        self.note_slots.add(identity)
        return slot

    def flush(self) -> None:
        """Insert the buffered rows of the current type, in file order, and record their new ids."""
        if not self.buffer or self.spec is None:
            return
        spec = self.spec
        for _, _, row, _ in self.buffer:
            row.pk = None
        created = spec.model.objects.bulk_create([row for _, _, row, _ in self.buffer])
        links = []
        for (_, source_id, _, sources), row in zip(self.buffer, created, strict=True):
            if source_id is not None:
                self.ids[spec.name][source_id] = row.pk
            if spec.name == "session":
                self.sessions[row.pk] = row
            links += [NodeSource(node_id=row.pk, message_id=pk, position=index) for index, pk in enumerate(sources)]
        NodeSource.objects.bulk_create(links)
        self.counts[spec.name] += len(created)
        self.buffer = []
        self.pending = set()

    def finish_type(self) -> None:
        """Flush, then set the links of this type to rows of the same type."""
        self.flush()
        if not self.deferred or self.spec is None:
            return
        names: set[str] = set()
        rows = []
        sessions = self.session_of.get(self.spec.name)
        for line, source_id, row, name, target in self.deferred:
            setattr(row, f"{name}_id", self.resolve(line, self.spec.name, target))
            if sessions is not None:
                check_same_session(line, f"{self.spec.name} record", sessions[source_id],
                                   [(f"{name} {target}", sessions[target])])
            names.add(name)
            rows.append(row)
        check_chains(self.spec.name, [(line, source_id, name, target)
                                      for line, source_id, _, name, target in self.deferred])
        self.spec.model.objects.bulk_update(rows, [f"{name}" for name in sorted(names)], batch_size=IMPORT_CHUNK)
        self.deferred = []

    def start(self, line: int, name: str) -> Spec:
        spec = SPECS.get(name)
        if spec is None:
            raise bad_line(line, f"unknown record type {name!r}")
        if name not in record_types(self.request.kind):
            raise bad_line(line, f"{name} records do not belong in an export of kind {self.request.kind}")
        if self.spec is not None and RECORD_TYPES.index(name) < RECORD_TYPES.index(self.spec.name):
            raise bad_line(line, f"{name} records must come before {self.spec.name} records")
        if spec is not self.spec:
            self.finish_type()
            self.spec = spec
            if name == "lexicon_set":  # before any set's row is touched, as every lexicon change
                lexicon_lock(team=self.principal.team)
        return spec


def import_file(*, principal: Principal, stream: IO[bytes], reason: str = "",
                max_bytes: int | None = None, on_line: Callable[[int], None] | None = None) -> ImportResult:
    """Import the export file read from `stream` (binary, line by line) into the principal's team.

    All or nothing, in one transaction. Returns the counts per record type and the id maps.
    Raises InvalidInput (a bad file: the message names the line and field), FileTooLarge (past
    `max_bytes`), AccessDenied (not an admin), Conflict (collision).
    """
    reader = _Reader(stream, max_bytes)
    request, manifest = _check_manifest(reader.next())
    _rights_check(principal, request)
    try:
        with transaction.atomic():
            # One import into a team at a time: a second waits for the first's lock (a row lock on
            # PostgreSQL; SQLite's IMMEDIATE transactions serialise writers), then sees its rows (409).
            Team.objects.select_for_update().filter(pk=principal.team.pk).first()
            _collision_check(principal, request)
            return _import(principal, request, manifest, reader, reason, on_line)
    except (IntegrityError, DataError) as error:
        first = (str(error).splitlines() or [type(error).__name__])[0][:300]
        raise InvalidInput(f"the file's records break a rule of the store ({first})",
                           fields={"file": ["breaks a database constraint"]}) from None


def _mark_forgotten_turns(principal: Principal, importer: "_Importer") -> int:
    """A file written before messages carried their forgotten mark (and before a forget took
    what it says out of summaries): the turns each imported soft-forgotten node was taken from,
    and the answers to them, are marked as its forget would have marked them, at the node's
    last change, and the summaries of those conversations lose what says it
    (memory.services.forgotten_turns). Returns how many turns were marked."""
    deleted = Node.objects.filter(team=principal.team, pk__in=list(importer.ids["node"].values()),
                                  status=NodeStatus.DELETED)
    # (Repeats are not looked for: their links, if the forget found any, came with the file.)
    return sum(forget_turns(principal=principal, node=node, now=node.updated_at, words=node_words(node),
                            repeats=0)[0] for node in deleted)


def _import(principal: Principal, request: ExportRequest, manifest: dict[str, Any], reader: _Reader, reason: str,
            on_line: Callable[[int], None] | None) -> ImportResult:
    team = principal.team
    source_team = manifest["source_team"][:200]
    event = audit_record(principal=principal, event_type=f"memory.{request.kind}.imported", reason=reason,
                         workspace_id=request.workspace_id, user_id=request.user_id, payload={})
    importer = _Importer(principal, request, event.pk, source_team)
    end: dict[str, Any] | None = None
    while True:
        record = reader.next()
        if record is None:
            break
        if end is not None:
            raise bad_line(reader.number, "nothing may follow the end record")
        if record["type"] == "end":
            importer.finish_type()
            end, digest = record, reader.digest.hexdigest()
            continue
        if record["type"] == "manifest":
            raise bad_line(reader.number, "a second manifest")
        importer.add(reader.number, importer.start(reader.number, record["type"]), record)
        if on_line is not None:
            on_line(reader.number)
    if end is None:
        raise bad_line(reader.number + 1, "the file ends before its end record (truncated?)")
    written = {name: count for name, count in importer.counts.items() if count}
    if {k: v for k, v in (end.get("counts") or {}).items() if v} != written:
        raise bad_line(reader.number, f"the end record's counts {end.get('counts')} differ from the records read {written}")
    if end.get("sha256") != digest:
        raise bad_line(reader.number, "the checksum does not match: the file was changed or cut after export")
    if "lexicon_set" in written:
        if LexiconSet.objects.filter(team=team).count() > limits.LEXICON_SETS_MAX:
            raise InvalidInput(f"the import would leave the team more than {limits.LEXICON_SETS_MAX} synonym sets",
                               fields={"file": ["too many synonym sets"]})
        lexicon_touch(team=team)
    if any(name == "budget_policy" for name in written):
        policy = SPECS["budget_policy"].model.objects.filter(team=team, workspace_id="").first()
        if policy is not None:
            team.min_confidence = policy.min_confidence or 0.0
            team.save(update_fields=["min_confidence"])
    marked = _mark_forgotten_turns(principal, importer) if importer.unmarked else 0
    event.payload = {"filters": request.filters, "counts": written, "schema_version": SCHEMA_VERSION,
                     "source_team": source_team, "exported_at": str(manifest.get("exported_at", ""))[:40],
                     "lines": reader.number, **({"marked_messages": marked} if importer.unmarked else {})}
    event.save(update_fields=["payload"])
    return ImportResult(kind=request.kind, source_team=source_team, counts=written, import_event_id=event.pk,
                        ids=importer.ids)
