"""Seeding one benchmark team with bulk_create (call after django.setup()).

Rows get their `search_tokens` from the same helpers the services use
(node_search_tokens / message_search_tokens), so the keyword index is the real one.
Everything runs inside django_scopes.scopes_disabled().

Population (fixed for a run; see Population):
- workspaces ws-01..ws-08, users u-001..u-060 (each with a home workspace), sessions spread
  over users with a skewed number of messages per session (a few long conversations);
- messages interleaved across sessions in time order (as live traffic would be);
- nodes: scope session 30 % / workspace 25 % / user 40 % / global 5 %; ~30 % carry key and
  value_json; ~6 % superseded (with an active successor linked by `supersedes`), ~4 % expired,
  ~2 % soft-deleted, ~2 % active but past expires_at, ~5 % temporary (future expires_at);
  ~30 % of session nodes have source messages; sessions with 20+ messages have 1–3 summaries;
- the seeded history counts as captured (a done capture job per session at its last message).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from corpus import CATEGORY_OF_DOMAIN, DOMAIN_OF_FAMILY, ConversationStream, RealText, chat_line, memory_text
from django.db import transaction
from django_scopes import scopes_disabled

from accounts.services import agent_key_create, team_create
from memory.capture_models import CaptureJob, JobKind, JobStatus
from memory.models import Message, Node, NodeSource, NodeStatus, Scope, Session, Summary
from memory.services.messages import message_search_tokens
from memory.services.node_input import conflict_slot, node_search_tokens, value_hash

BATCH = 2000
NOW = datetime.now(UTC).replace(microsecond=0)
SPAN = timedelta(days=180)


@dataclass
class SessionInfo:
    pk: int
    external_id: str
    workspace_id: str
    user_id: str
    profile: str
    messages: int
    message_pks: list[int] = field(default_factory=list)


@dataclass
class Population:
    team: object
    raw_key: str
    workspaces: list[str]
    users: list[str]
    home: dict[str, str]
    sessions: list[SessionInfo]
    rng: random.Random
    real: RealText
    nodes_seeded: int = 0
    messages_seeded: int = 0
    _session_weights: list[float] = field(default_factory=list)
    active_identities: set[tuple] = field(default_factory=set)  # see _keep_identity_unique


def create_population(real: RealText, *, sessions: int, seed: int = 20261129) -> Population:
    rng = random.Random(seed)
    with scopes_disabled():
        team = team_create(slug="bench", name="Benchmark team")
        _, raw_key = agent_key_create(team=team, name="bench agent")
    workspaces = [f"ws-{index:02d}" for index in range(1, 9)]
    users = [f"u-{index:03d}" for index in range(1, 61)]
    home = {user: rng.choice(workspaces) for user in users}
    return Population(team=team, raw_key=raw_key, workspaces=workspaces, users=users, home=home, sessions=[],
                      rng=rng, real=real)


def _session_sizes(rng: random.Random, sessions: int, messages: int) -> list[int]:
    weights = [rng.lognormvariate(0, 1.0) for _ in range(sessions)]
    total = sum(weights)
    sizes = [max(2, int(messages * weight / total)) for weight in weights]
    sizes[0] += messages - sum(sizes)  # the longest-running session absorbs rounding
    if sizes[0] < 2:
        sizes[0] = 2
    return sizes


def seed_messages(pop: Population, *, sessions: int, messages: int, log=print) -> None:
    """Create `sessions` sessions and `messages` messages (interleaved in time), then summaries."""
    rng, real = pop.rng, pop.real
    sizes = _session_sizes(rng, sessions, messages)
    rows = []
    with scopes_disabled():
        for index, size in enumerate(sizes):
            user = rng.choice(pop.users)
            workspace = pop.home[user] if rng.random() < 0.8 else rng.choice(pop.workspaces)
            profile = rng.choices(["en", "zh", "mixed"], weights=[45, 30, 25])[0]
            rows.append((Session(team=pop.team, workspace_id=workspace, user_id=user, external_id=f"s-{index:04d}",
                                 created_at=NOW - SPAN), profile, size))
        created = Session.objects.bulk_create([row[0] for row in rows], batch_size=BATCH)
        pop.sessions = [SessionInfo(session.pk, session.external_id, session.workspace_id, session.user_id, profile, size)
                        for session, (_, profile, size) in zip(created, rows, strict=True)]

        # Each session talks over a window of the last 180 days; merge all turns by time.
        events: list[tuple[datetime, int, str, str]] = []
        for position, info in enumerate(pop.sessions):
            stream = ConversationStream(rng, real, info.profile)
            start = NOW - SPAN + timedelta(seconds=rng.uniform(0, SPAN.total_seconds() * 0.5))
            step = (NOW - start).total_seconds() / max(1, info.messages)
            for turn in range(info.messages):
                role, text = stream.next()
                if rng.random() < 0.05:
                    text = text + " " + chat_line(rng, chinese=info.profile == "zh")
                events.append((start + timedelta(seconds=step * turn + rng.uniform(0, step * 0.9)), position, role, text))
        events.sort(key=lambda event: event[0])
        log(f"  messages: {len(events)} generated, inserting…")
        last_at: dict[int, datetime] = {}
        owners = {
            position: Session(pk=info.pk, team=pop.team, workspace_id=info.workspace_id, user_id=info.user_id)
            for position, info in enumerate(pop.sessions)
        }
        for begin in range(0, len(events), BATCH):
            chunk = events[begin : begin + BATCH]
            batch = [
                Message(team=pop.team, session_id=pop.sessions[position].pk, role=role, content=text, created_at=when,
                        occurred_at=when, search_tokens=message_search_tokens(text, owners[position]))
                for when, position, role, text in chunk
            ]
            with transaction.atomic():
                Message.objects.bulk_create(batch)
            for message, (when, position, _, _) in zip(batch, chunk, strict=True):
                pop.sessions[position].message_pks.append(message.pk)
                last_at[position] = when
        for position, when in last_at.items():
            Session.objects.filter(pk=pop.sessions[position].pk).update(last_message_at=when)
        pop.messages_seeded += len(events)
        # The seeded history counts as captured already (one done capture job per session up to
        # its last message), as in a store that has been running: an append then measures the
        # agent's call in steady state, not a first capture of hundreds of old turns.
        CaptureJob.objects.bulk_create([
            CaptureJob(team=pop.team, kind=JobKind.CAPTURE, session_id=info.pk, workspace_id=info.workspace_id,
                       user_id=info.user_id, trigger="seed", to_message_id=info.message_pks[-1],
                       status=JobStatus.DONE, result={"seeded": True})
            for info in pop.sessions if info.message_pks
        ], batch_size=BATCH)

        summaries = 0
        for info in pop.sessions:
            if len(info.message_pks) < 20:
                continue
            parent = None
            links = rng.randint(1, 3)
            cut = len(info.message_pks) // (links + 1)
            for link in range(links):
                if info.profile == "zh":
                    text = f"用户在会话中聊到了{rng.choice(real.zh_memories)} 目前的目标：{chat_line(rng, chinese=True)}"
                else:
                    text = rng.choice(real.en_summaries)
                parent = Summary.objects.create(
                    team=pop.team, session_id=info.pk, parent=parent,
                    from_message_id=info.message_pks[link * cut], to_message_id=info.message_pks[(link + 1) * cut - 1],
                    summary=text, current_goal=chat_line(rng, chinese=info.profile != "en"),
                    constraints=[chat_line(rng, chinese=True)], preferences=[], decisions=[],
                )
                summaries += 1
        log(f"  sessions: {len(pop.sessions)}, messages: {pop.messages_seeded}, summaries: {summaries}")


def _status(rng: random.Random) -> tuple[str, str]:
    """(status, expiry) where expiry is '', 'past' or 'future'."""
    roll = rng.random()
    if roll < 0.04:
        return NodeStatus.EXPIRED, "past"
    if roll < 0.06:
        return NodeStatus.DELETED, ""
    if roll < 0.08:
        return NodeStatus.ACTIVE, "past"  # not yet swept to expired
    if roll < 0.13:
        return NodeStatus.ACTIVE, "future"
    return NodeStatus.ACTIVE, ""


def owner_roll(rng: random.Random, pick_session, workspaces: list[str], users: list[str]) -> tuple:
    """A new node's owner by the population's shares: session 30 %, workspace 25 %, user 40 %,
    global 5 %. `pick_session()` gives the session (anything with workspace_id and user_id),
    called only for the session share. Returns (scope, session or None, workspace_id, user_id)."""
    roll = rng.random()
    if roll < 0.30:
        session = pick_session()
        return Scope.SESSION, session, session.workspace_id, session.user_id
    if roll < 0.55:
        return Scope.WORKSPACE, None, rng.choice(workspaces), ""
    if roll < 0.95:
        return Scope.USER, None, "", rng.choice(users)
    return Scope.GLOBAL, None, "", ""


def _node(pop: Population, *, superseded: bool = False) -> Node:
    rng = pop.rng
    text = memory_text(rng, pop.real)
    scope, info, workspace_id, user_id = owner_roll(
        rng, lambda: rng.choices(pop.sessions, weights=pop._session_weights)[0], pop.workspaces, pop.users)
    session_id = info.pk if info is not None else None
    status, expiry = (NodeStatus.SUPERSEDED, "") if superseded else _status(rng)
    domain = DOMAIN_OF_FAMILY[text.family]
    category = rng.choice(CATEGORY_OF_DOMAIN[domain])
    updated = NOW - timedelta(seconds=rng.uniform(0, SPAN.total_seconds()))
    expires_at = None
    if expiry == "past":
        expires_at = updated + timedelta(days=rng.uniform(1, 10))
        expires_at = min(expires_at, NOW - timedelta(hours=1))
    elif expiry == "future":
        expires_at = NOW + timedelta(days=rng.uniform(1, 60))
    keyed = bool(text.key) and rng.random() < 0.75
    node = Node(
        team=pop.team, session_id=session_id, workspace_id=workspace_id, user_id=user_id, scope=scope, domain=domain,
        category_path=category, category_path_text="/".join(category), type=text.type,
        key=text.key if keyed else "", value_json=text.value if keyed else None,
        title=text.title[:200], content=text.content, status=status,
        confidence=round(rng.uniform(0.5, 1.0), 2), importance=round(rng.uniform(0.1, 1.0), 2),
        tags=list(text.tags), entities=list(text.entities), explicit=rng.random() < 0.3,
        created_at=updated - timedelta(days=rng.uniform(0, 5)), updated_at=updated, expires_at=expires_at,
    )
    _keep_identity_unique(pop, node)
    node.search_tokens = node_search_tokens(node)
    return node


def _keep_identity_unique(pop: Population, node: Node) -> None:
    """Set value_hash and the conflict slot (keyed nodes as many-valued: one active node per
    value); an active node whose slot is taken loses its key, or gets a slot of its own, as
    the service would have returned the existing node instead (node_active_slot_unique)."""
    node.value_hash = value_hash(node.value_json)
    node.slot = conflict_slot(key=node.key, value=node.value_json, cardinality="many", title=node.title,
                              content=node.content)
    if node.status != NodeStatus.ACTIVE:
        return

    def identity() -> tuple:
        return (node.session_id or 0, node.scope, node.workspace_id, node.user_id, node.domain, node.type, node.key,
                node.slot)

    if identity() in pop.active_identities and node.key:
        node.key, node.value_json, node.value_hash = "", None, ""
        node.slot = conflict_slot(key="", value=None, cardinality="one", title=node.title, content=node.content)
    if identity() in pop.active_identities:
        node.slot = f"bench:{len(pop.active_identities)}"
    pop.active_identities.add(identity())


def _successor(pop: Population, old: Node) -> Node:
    """An active node replacing `old`: same owner, domain, type and key; new text and value."""
    rng = pop.rng
    text = memory_text(rng, pop.real)
    node = Node(
        team=pop.team, session_id=old.session_id, workspace_id=old.workspace_id, user_id=old.user_id, scope=old.scope,
        domain=old.domain, category_path=old.category_path, category_path_text=old.category_path_text, type=old.type,
        key=old.key, value_json=text.value if old.key else None, title=text.title[:200], content=text.content,
        status=NodeStatus.ACTIVE, confidence=old.confidence, importance=old.importance, tags=old.tags,
        entities=old.entities, explicit=old.explicit, created_at=old.updated_at + timedelta(days=1),
        updated_at=min(NOW, old.updated_at + timedelta(days=rng.uniform(1, 20))),
    )
    _keep_identity_unique(pop, node)
    node.search_tokens = node_search_tokens(node)
    return node


def seed_nodes(pop: Population, *, total: int, log=print) -> None:
    """Add nodes until the team has `total` (generated by the same random stream)."""
    rng = pop.rng
    if not pop._session_weights:
        pop._session_weights = [max(1, len(info.message_pks)) ** 0.5 for info in pop.sessions]
    session_of = {info.pk: info for info in pop.sessions}
    with scopes_disabled():
        while pop.nodes_seeded < total:
            room = min(BATCH, total - pop.nodes_seeded)
            batch: list[Node] = []
            pairs: list[tuple[int, int]] = []
            while len(batch) < room:
                if room - len(batch) >= 2 and rng.random() < 0.06:
                    old = _node(pop, superseded=True)
                    batch.append(old)
                    batch.append(_successor(pop, old))
                    pairs.append((len(batch) - 2, len(batch) - 1))
                else:
                    batch.append(_node(pop))
            with transaction.atomic():
                Node.objects.bulk_create(batch)
                successors = []
                for old_index, new_index in pairs:
                    batch[new_index].supersedes_id = batch[old_index].pk
                    successors.append(batch[new_index])
                Node.objects.bulk_update(successors, ["supersedes"])
                links = []
                for node in batch:
                    if node.session_id and rng.random() < 0.3:
                        pks = session_of[node.session_id].message_pks
                        if pks:
                            for position, pk in enumerate(dict.fromkeys(rng.sample(pks, min(len(pks), rng.randint(1, 2))))):
                                links.append(NodeSource(node_id=node.pk, message_id=pk, position=position))
                NodeSource.objects.bulk_create(links)
            pop.nodes_seeded += len(batch)
    log(f"  nodes: {pop.nodes_seeded}")
