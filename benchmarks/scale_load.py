"""Bulk loading of teams for the scale bench with PostgreSQL COPY (call after django.setup()).

Rows are built as model instances by the same rules as benchmarks/seed.py (scope, status and
supersede mix, real LoCoMo / MADial text through benchmarks/corpus.py) and their
`search_tokens` come from the product's own functions (node_search_tokens,
message_search_tokens), so the keyword index is the real one. They are then written with
`COPY … FROM STDIN` (psycopg 3 `cursor.copy`), each value prepared by its Django field, with
ids allocated here so owner tokens (which name session pks) and links need no round trip.

Loading is fast because, for the duration of a load:
- the secondary indexes of the loaded tables are dropped and rebuilt afterwards (their
  definitions are read from pg_indexes, so migrations stay the one source of truth);
- foreign-key triggers are off (`session_replication_role = replica`, superuser only; without
  it the load still works, slower). Every id written is one this loader allocated.

Population of a team (Shape): `users` end users, `workspaces` workspaces, `sessions`
sessions whose traffic is skewed (log-normal weights); messages are spread over the sessions in
time order; nodes follow seed.py (session 30 % / workspace 25 % / user 40 % / global 5 %,
~6 % superseded with an active successor, expired, deleted and temporary ones, ~30 % of session
nodes with source messages); a session with 20+ new messages in a load gets a summary.
PostgreSQL only.
"""

from __future__ import annotations

import random
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from types import SimpleNamespace

import corpus
from corpus import CATEGORY_OF_DOMAIN, DOMAIN_OF_FAMILY, ConversationStream, chat_line, memory_text
from django.db import connection, transaction
from seed import _keep_identity_unique, _status, owner_roll

from memory.models import Message, Node, NodeSource, NodeStatus, Session, Summary
from memory.services.messages import message_search_tokens
from memory.services.node_input import node_search_tokens

NOW = datetime.now(UTC).replace(microsecond=0)
SPAN = timedelta(days=360)
CHUNK = 20_000  # rows per COPY statement (instances are built per chunk)
LOADED_TABLES = ("memory_node", "memory_message", "memory_nodesource", "memory_summary", "memory_session")


@dataclass(frozen=True)
class Shape:
    users: int
    workspaces: int
    sessions: int


def shape_for(nodes: int, messages: int) -> Shape:
    """The population of a team holding `nodes` nodes and `messages` messages: about 500 nodes
    per end user, 25,000 per workspace and 100 messages per session (at least 5 / 2 / 5)."""
    return Shape(users=max(5, nodes // 500), workspaces=max(2, nodes // 25_000), sessions=max(5, messages // 100))


class Ids:
    """Primary keys handed out by the loader (the sequences are moved past them at the end)."""

    def __init__(self) -> None:
        self.next: dict[str, int] = {}
        self.refresh()

    def refresh(self) -> None:
        """Start after the highest id of each table (call before each load)."""
        with connection.cursor() as cursor:
            for table in LOADED_TABLES:
                cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}")
                self.next[table] = cursor.fetchone()[0] + 1

    def take(self, table: str) -> int:
        value = self.next[table]
        self.next[table] = value + 1
        return value

    def sync_sequences(self) -> None:
        with connection.cursor() as cursor:
            for table in LOADED_TABLES:
                cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                               f"GREATEST((SELECT COALESCE(MAX(id), 0) FROM {table}), 1))")


def copy_rows(model, instances: list) -> int:
    """COPY `instances` of `model` (every concrete column, values prepared by their fields); rows."""
    if not instances:
        return 0
    fields = model._meta.concrete_fields
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    with connection.cursor() as cursor, cursor.cursor.copy(
            f"COPY {model._meta.db_table} ({columns}) FROM STDIN") as copy:
        for instance in instances:
            copy.write_row([f.get_db_prep_save(getattr(instance, f.attname), connection) for f in fields])
    return len(instances)


class DroppedIndexes:
    """Drop the secondary indexes of LOADED_TABLES on enter, rebuild them on exit (same definitions)."""

    def __enter__(self):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
                "JOIN pg_class t ON t.oid = x.indrelid LEFT JOIN pg_constraint c ON c.conindid = x.indexrelid "
                "WHERE t.relname = ANY(%s) AND c.oid IS NULL", [list(LOADED_TABLES)])
            self.definitions = cursor.fetchall()
            for name, _ in self.definitions:
                cursor.execute(f'DROP INDEX "{name}"')
        return self

    def __exit__(self, *exc):
        with connection.cursor() as cursor:
            cursor.execute("SET maintenance_work_mem = '512MB'")
            for _, definition in self.definitions:
                cursor.execute(definition)
            cursor.execute("RESET maintenance_work_mem")


def _fk_triggers(*, on: bool) -> None:
    """Inside a transaction: skip (or check again) foreign keys — a superuser's privilege; for
    anyone else nothing changes and they are checked as usual."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        if cursor.fetchone()[0]:
            cursor.execute(f"SET LOCAL session_replication_role = {'DEFAULT' if on else 'replica'}")


@dataclass
class SessionState:
    session: Session
    profile: str
    stream: ConversationStream
    message_pks: list[int] = field(default_factory=list)
    summary_pk: int | None = None
    last_at: datetime | None = None


class TeamLoad:
    """One team's population, growing by `add(nodes=…, messages=…)` calls."""

    def __init__(self, team, shape: Shape, real: corpus.RealText, ids: Ids, *, seed: int = 20261130):
        self.team, self.shape, self.real, self.ids = team, shape, real, ids
        self.rng = rng = random.Random(seed)
        self.workspaces = [f"ws-{index:03d}" for index in range(1, shape.workspaces + 1)]
        self.users = [f"u-{index:05d}" for index in range(1, shape.users + 1)]
        home = {user: rng.choice(self.workspaces) for user in self.users}
        self.identities = SimpleNamespace(active_identities=set())  # seed._keep_identity_unique's state
        self.sessions: list[SessionState] = []
        rows = []
        for index in range(shape.sessions):
            user = rng.choice(self.users)
            workspace = home[user] if rng.random() < 0.8 else rng.choice(self.workspaces)
            profile = rng.choices(["en", "zh", "mixed"], weights=[45, 30, 25])[0]
            session = Session(id=ids.take("memory_session"), team=team, workspace_id=workspace, user_id=user,
                              external_id=f"s-{index:06d}", created_at=NOW - SPAN)
            rows.append(session)
            self.sessions.append(SessionState(session, profile, ConversationStream(rng, real, profile)))
        weights = [rng.lognormvariate(0, 1.0) for _ in self.sessions]
        self.traffic = list(accumulate(weights))  # cumulative weights: who talks next
        self.node_session_weights = list(accumulate(weight ** 0.5 for weight in weights))
        self.pending_sessions = rows
        self.messages = 0
        self.nodes = 0

    def _pick(self, cumulative: list[float]) -> SessionState:
        return self.sessions[min(len(self.sessions) - 1, bisect_left(cumulative, self.rng.random() * cumulative[-1]))]

    # --- messages ------------------------------------------------------------------------------

    def add_messages(self, count: int, total: int) -> None:
        """Append `count` messages; message number i of `total` over the team's life happens at
        NOW - SPAN + SPAN * i / total, so ids and times grow together across loads."""
        copy_rows(Session, self.pending_sessions)
        self.pending_sessions = []
        rng, start = self.rng, NOW - SPAN
        fresh: dict[int, list[int]] = {}
        for begin in range(0, count, CHUNK):
            batch = []
            for _ in range(min(CHUNK, count - begin)):
                state = self._pick(self.traffic)
                role, text = state.stream.next()
                if rng.random() < 0.05:
                    text = text + " " + chat_line(rng, chinese=state.profile == "zh")
                when = start + SPAN * (self.messages / max(1, total))
                self.messages += 1
                pk = self.ids.take("memory_message")
                batch.append(Message(id=pk, team=self.team, session=state.session, role=role, content=text,
                                     created_at=when, occurred_at=when,
                                     search_tokens=message_search_tokens(text, state.session)))
                state.message_pks.append(pk)
                state.last_at = when
                fresh.setdefault(id(state), []).append(pk)
            copy_rows(Message, batch)
        self._summaries(fresh)
        touched = [state for state in self.sessions if id(state) in fresh]
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memory_session s SET last_message_at = v.last FROM unnest(%s::bigint[], %s::timestamptz[]) "
                "AS v(id, last) WHERE s.id = v.id",
                [[state.session.pk for state in touched], [state.last_at for state in touched]])

    def _summaries(self, fresh: dict[int, list[int]]) -> None:
        rng, rows = self.rng, []
        for state in self.sessions:
            pks = fresh.get(id(state), [])
            if len(pks) < 20:
                continue
            if state.profile == "zh":
                text = f"用户在会话中聊到了{rng.choice(self.real.zh_memories)} 目前的目标：{chat_line(rng, chinese=True)}"
            else:
                text = rng.choice(self.real.en_summaries)
            pk = self.ids.take("memory_summary")
            rows.append(Summary(id=pk, team=self.team, session=state.session, parent_id=state.summary_pk,
                                from_message_id=pks[0], to_message_id=pks[-1], summary=text,
                                current_goal=chat_line(rng, chinese=state.profile != "en"),
                                constraints=[chat_line(rng, chinese=True)], created_at=NOW))
            state.summary_pk = pk
        copy_rows(Summary, rows)

    # --- nodes ---------------------------------------------------------------------------------

    def _node(self, *, superseded: bool = False, old: Node | None = None) -> Node:
        rng = self.rng
        text = memory_text(rng, self.real)
        if old is not None:
            scope, session, workspace_id, user_id = old.scope, old.session, old.workspace_id, old.user_id
        else:
            scope, session, workspace_id, user_id = owner_roll(
                rng, lambda: self._pick(self.node_session_weights).session, self.workspaces, self.users)
        status, expiry = (NodeStatus.SUPERSEDED, "") if superseded else _status(rng)
        if old is not None:
            status, expiry = NodeStatus.ACTIVE, ""
        domain = old.domain if old is not None else DOMAIN_OF_FAMILY[text.family]
        category = old.category_path if old is not None else rng.choice(CATEGORY_OF_DOMAIN[domain])
        updated = NOW - timedelta(seconds=rng.uniform(0, SPAN.total_seconds()))
        if old is not None:
            updated = min(NOW, old.updated_at + timedelta(days=rng.uniform(1, 20)))
        expires_at = None
        if expiry == "past":
            expires_at = min(updated + timedelta(days=rng.uniform(1, 10)), NOW - timedelta(hours=1))
        elif expiry == "future":
            expires_at = NOW + timedelta(days=rng.uniform(1, 60))
        key = old.key if old is not None else (text.key if text.key and rng.random() < 0.75 else "")
        node = Node(
            id=self.ids.take("memory_node"), team=self.team, session=session, workspace_id=workspace_id,
            user_id=user_id, scope=scope, domain=domain, category_path=list(category),
            category_path_text="/".join(category), type=old.type if old is not None else text.type, key=key,
            value_json=text.value if key else None, title=text.title[:200], content=text.content, status=status,
            confidence=round(rng.uniform(0.5, 1.0), 2), importance=round(rng.uniform(0.1, 1.0), 2),
            tags=list(text.tags), entities=list(text.entities), explicit=rng.random() < 0.3,
            created_at=updated - timedelta(days=rng.uniform(0, 5)), updated_at=updated, expires_at=expires_at,
            supersedes_id=old.pk if old is not None else None,
        )
        _keep_identity_unique(self.identities, node)
        node.search_tokens = node_search_tokens(node)
        return node

    def add_nodes(self, count: int) -> None:
        """Add `count` nodes (with source links to messages already loaded)."""
        rng, added = self.rng, 0
        while added < count:
            room = min(CHUNK, count - added)
            batch: list[Node] = []
            while len(batch) < room:
                if room - len(batch) >= 2 and rng.random() < 0.06:
                    old = self._node(superseded=True)
                    batch += [old, self._node(old=old)]
                else:
                    batch.append(self._node())
            links = []
            for node in batch:
                if node.session_id and rng.random() < 0.3:
                    pks = self._session_state(node.session_id).message_pks
                    if pks:
                        for position, pk in enumerate(dict.fromkeys(rng.sample(pks, min(len(pks), rng.randint(1, 2))))):
                            links.append(NodeSource(id=self.ids.take("memory_nodesource"), node_id=node.pk,
                                                    message_id=pk, position=position))
            copy_rows(Node, batch)
            copy_rows(NodeSource, links)
            added += len(batch)
        self.nodes += added

    def _session_state(self, session_pk: int) -> SessionState:
        if not hasattr(self, "_by_pk"):
            self._by_pk = {state.session.pk: state for state in self.sessions}
        return self._by_pk[session_pk]


def load(steps, *, log=print) -> None:
    """Run each `(team_load, nodes, messages, messages_total)` step in one transaction with the
    indexes dropped and foreign-key triggers off, then rebuild the indexes and move the sequences."""
    with DroppedIndexes():
        for team_load, nodes, messages, total in steps:
            with transaction.atomic():
                _fk_triggers(on=False)
                team_load.add_messages(messages, total)
                team_load.add_nodes(nodes)
                _fk_triggers(on=True)
        log("  rows written; rebuilding indexes")
    for ids in {id(step[0].ids): step[0].ids for step in steps}.values():
        ids.sync_sequences()


def vacuum_analyze(*, log=print) -> None:
    """VACUUM ANALYZE the loaded tables (outside a transaction), then CHECKPOINT."""
    with connection.cursor() as cursor:
        for table in (*LOADED_TABLES, "accounts_team", "accounts_agentkey", "memory_retrieval"):
            cursor.execute(f"VACUUM ANALYZE {table}")
        cursor.execute("CHECKPOINT")
    log("  VACUUM ANALYZE and CHECKPOINT done")
