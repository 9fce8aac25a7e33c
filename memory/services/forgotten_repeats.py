"""Turns that say a forgotten memory again (R-STORE provable forgetting, R-EXTRACT).

A memory is taken from one turn, but the user may have said it in others too: before capture
read them (a turn without 记住 waits for the idle sweep), or in words capture read while the
memory was not in its window. Hiding only the source turns left those recalled as earlier
messages, and the next capture run learned the forgotten memory back from them (a newcomer's
hard-forgotten peanut allergy came back twice, as session memories of two conversations).

`repeated_in` finds them by meaning, not by words: the user turns of the memory's
conversations that hold one of its words (the keyword index; newest first, within
REPEATS_READ_MAX turns and REPEATS_CHARS_MAX characters) are read one by one by the rule
extractor (memory.capture.rules, also where an LLM extracts: it is deterministic and offline).
A turn counts when one thing it yields is the same memory: the same domain and key and the value
said alike and whole in the schema's words (memory.services.schema; 杭州市 says 杭州, peanut says
peanuts, 杭州湾 and 花生酱 say something else), or for a keyless note (an agent's) the same
title. A turn that also says another memory is hidden too (left recalled, capture learned the
forgotten one back from it), and what else it says is captured first when no capture job read
it yet (Kept, cite_repeats; memory.capture.jobs.capture_turn reads it as capture would in its
conversation), so 我对花生和虾过敏 keeps the shrimp allergy when the peanut one is forgotten.
What the forgotten memories say, what a memory already hiding the turn says (a soft forget's),
what a forget by selector would take (in the schema's words), what would replace a memory the
user changed since the turn (_said_since) and a passing state already over are left out. The
same holds for the memory's own source turns among those read, when the rules read the memory
in them. That capture runs the rule extractor whatever extractor the team uses, and the profile
takes the new memory at the next consolidation. A turn hidden while a capture job ran over it,
then recalled by a restore, counts as read (capture skipped it): what else it says is not kept.
Only the user's own conversations that the forgetting key may read are searched. A word alone is
not enough: 提醒我周五去上海前带护照 says 上海 but states no home. The forget links them to the memory as
sources ("said again", as capture cites repeats), so they are hidden with its own turns, and a
restore recalls them too (memory.services.forgotten_turns); the links stay after a restore.
What says it in other words, or in a way the extractor does not read (我家在杭州), is not found;
what the extractor misreads as the user's own (a story that quotes 我住在杭州) is hidden too.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Q
from django.db.models.functions import Substr

from accounts.principal import Principal
from memory import limits
from memory.capture.base import ExtractionContext, MessageView
from memory.capture.rules import RuleExtractor
from memory.capture.rules_common import canonical
from memory.capture_models import CaptureJob, JobKind, JobStatus
from memory.models import HIDDEN_FOR_GOOD, Message, MessageRole, Node, NodeSource, NodeStatus, Scope, Session
from memory.search.fields import TokenQuery
from memory.search.text import query_tokens
from memory.selectors.nodes import Owner, reach
from memory.services.audit import value_strings
from memory.services.schema import schema_terms

# User turns holding one of the memories' words that one forget reads, for all the memories it
# forgets together, newest first (each as capture reads it: its first CAPTURE_MESSAGE_CHARS),
# until this many characters: the rule extractor reads ~0.4 ms per 100 characters (10.7 ms a
# 4,000-character turn), so ~0.4 s at most. Each turn is read once, whatever it may say.
REPEATS_READ_MAX = 200
REPEATS_CHARS_MAX = 100_000
KEPT_REASON = "extracted by rules from a turn a forget hid"
_WORDS_MAX = 32  # tokens of one memory's words that find those turns
_ALL_WORDS_MAX = 256  # ...and of all of a forget's memories


def _words(node: Node) -> list[str]:
    """The tokens that find turns which may say `node`: its entities and the strings of its
    value (花生; {"lives": "杭州"} → 杭州), else its title's."""
    value = node.value_json
    strings = [*node.entities, *value_strings(node),
               *(item for item in (value.values() if isinstance(value, dict) else ()) if isinstance(item, str))]
    return query_tokens(" ".join(strings) or node.title)[:_WORDS_MAX]


_ADMINISTRATIVE = re.compile(r"(?<=[\u4e00-\u9fff])[市省]$")  # 杭州市 is 杭州; 杭州湾 is not


def _value_words(value: Any) -> frozenset[str]:
    """A value as the set _says compares: each string as its search tokens joined (peanuts and
    peanut alike; 杭州市 as 杭州, but 杭州湾 and 花生酱 stay themselves), an object's as
    field:string, a list's items, anything else as JSON."""
    if isinstance(value, str):
        return frozenset({" ".join(query_tokens(_ADMINISTRATIVE.sub("", value.strip())))} - {""})
    if isinstance(value, dict):
        return frozenset(f"{field}:{word}" for field, item in value.items() for word in _value_words(item))
    if isinstance(value, list):
        return frozenset(word for item in value for word in _value_words(item))
    return frozenset({canonical(value)})


def _says(proposed: tuple, node: Node, wanted: frozenset[str]) -> bool:
    """Whether a proposal (_proposed: domain, key, value words, title) says `node` (`wanted`: the
    words of its value): a keyed memory by its domain and key and its value said alike (杭州市 for
    杭州, peanut for peanuts; an object's fields all and no more), a keyless note (an agent's) by
    its title."""
    domain, key, words, title = proposed
    if not node.key:
        return bool(node.title.strip()) and title.strip() == node.title.strip()
    return (domain, key) == (node.domain, node.key) and bool(wanted) and wanted == words


def _proposed(principal: Principal, proposed: dict) -> tuple:
    """A proposal's node (a create body, memory.capture.rules) as _says reads it: its key and
    value in the schema's words (memory.services.schema)."""
    key, value = proposed.get("key", ""), proposed.get("value_json")
    if key:
        key, value = schema_terms(team=principal.team, domain=proposed.get("domain", ""), key=key, value=value,
                                  has_value=True)
    return proposed.get("domain", ""), key, _value_words(value), proposed.get("title", "")


def _sessions_of(principal: Principal, nodes: list[Node]) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
    """Per node, the conversations whose turns may say it, among those the principal may read:
    its own and those it was taken from, and every conversation of its user for a user memory,
    but never another user's (a node's user, when it has one, must own the conversation); and
    the turns it was taken from. Two statements."""
    sources: dict[int, set[int]] = {node.pk: set() for node in nodes}
    named: dict[int, set[int]] = {node.pk: {node.session_id} - {None} for node in nodes}
    for node_id, message_id, session_id in NodeSource.objects.filter(node__in=nodes).values_list(
            "node_id", "message_id", "message__session_id"):
        named[node_id].add(session_id)
        sources[node_id].add(message_id)
    users = {node.user_id for node in nodes if node.scope == Scope.USER and node.user_id}
    readable = Session.objects.filter(team=principal.team).filter(
        Q(pk__in=set().union(*named.values())) | Q(user_id__in=users))
    if principal.workspace_ids is not None:
        readable = readable.filter(workspace_id__in=sorted(principal.workspace_ids))
    owner = dict(readable.values_list("pk", "user_id"))
    of_user: dict[str, set[int]] = {}
    for pk, user_id in owner.items():
        of_user.setdefault(user_id, set()).add(pk)
    sessions = {}
    for node in nodes:
        mine = of_user.get(node.user_id, set()) if node.user_id else set()
        sessions[node.pk] = {pk for pk in named[node.pk] if pk in owner and (not node.user_id or pk in mine)}
        if node.scope == Scope.USER and node.user_id:
            sessions[node.pk] |= mine
    return sessions, sources


@dataclass(frozen=True)
class Kept:
    """A turn the forget hides that says something besides the forgotten memories and that no
    capture job read: what else it says is captured before it is hidden. `hidden_by`: the
    forgotten memories that already hide it (a soft forget's), whose words are not kept either."""

    session_id: int
    message: MessageView
    hidden_by: tuple[int, ...] = ()


@dataclass
class Repeats:
    """`turns`: per node, the ids of the user turns other than its sources that say it again,
    ascending (nodes with none left out); `kept`: the turns to capture first (Kept)."""

    turns: dict[int, list[int]] = field(default_factory=dict)
    kept: list[Kept] = field(default_factory=list)


@dataclass
class Cited:
    """What cite_repeats did: per node, the turns linked; how many memories it kept (accepted)."""

    turns: dict[int, int] = field(default_factory=dict)
    kept: int = 0


def _read_by_capture(team, session_ids: set[int]) -> dict[int, list[tuple[int, int, datetime]]]:
    """Per session, the message id ranges (after, to] its finished capture jobs read, and when
    each finished; one statement."""
    ranges: dict[int, list[tuple[int, int, datetime]]] = {}
    for session_id, after, to, finished in CaptureJob.objects.filter(
            team=team, session_id__in=session_ids, kind=JobKind.CAPTURE, status=JobStatus.DONE).values_list(
            "session_id", "after_message_id", "to_message_id", "updated_at"):
        ranges.setdefault(session_id, []).append((after, to, finished))
    return ranges


def _unread(ranges: list[tuple[int, int, datetime]], pk: int, hidden_at: datetime | None) -> bool:
    """Whether no capture job read turn `pk`: none covers it, or (a turn hidden since `hidden_at`)
    those that cover it ran while it was hidden, and capture skips hidden turns."""
    return not any(after < pk <= to and (hidden_at is None or finished < hidden_at) for after, to, finished in ranges)


def repeated_in(principal: Principal, nodes: list[Node], *, hard: bool = False) -> Repeats:
    """The user turns that state `nodes` again (see the module docstring), and those of them and
    of the nodes' own sources to capture before they are hidden (Kept): a turn that says
    something besides and that no capture job read. A turn already hidden by a soft forget is
    kept only by a hard forget (which hides it for good; a soft one leaves it to that memory's
    restore); one hidden for good, never. At most REPEATS_READ_MAX turns and REPEATS_CHARS_MAX
    characters are read for all of them, the newest first."""
    words = list(dict.fromkeys(token for node in nodes for token in _words(node)))[:_ALL_WORDS_MAX]
    if not words:
        return Repeats()
    sessions, sources = _sessions_of(principal, nodes)
    values = {node.pk: _value_words(node.value_json) for node in nodes}
    turns = (Message.objects.filter(team=principal.team, role=MessageRole.USER,
                                    session_id__in=set().union(*sessions.values()),
                                    search_tokens__matches=TokenQuery(tuple(words)))
             .annotate(start=Substr("content", 1, limits.CAPTURE_MESSAGE_CHARS)).order_by("-pk")
             .values_list("pk", "session_id", "start", "created_at", "metadata", "memory_forgotten_at")[:REPEATS_READ_MAX])
    extractor = RuleExtractor()
    found = Repeats()
    candidates: list[tuple[int, MessageView, datetime | None]] = []
    budget = REPEATS_CHARS_MAX
    for pk, session_id, content, created_at, metadata, hidden_at in turns:
        budget -= len(content)
        if budget < 0:
            break
        view = MessageView(id=pk, role=MessageRole.USER, content=content, created_at=created_at,
                           speaker=str((metadata or {}).get("speaker", "")))
        context = ExtractionContext(messages=(view,), existing=(), workspace_id="", user_id="", session_id="",
                                    now=created_at)
        said = [_proposed(principal, operation["node"]) for operation in extractor.extract(context).operations
                if operation["operation"] == "create"]
        saying: set[int] = set()
        for node in nodes:
            if session_id not in sessions[node.pk]:
                continue
            hits = {index for index, proposed in enumerate(said) if _says(proposed, node, values[node.pk])}
            saying |= hits
            if hits and pk not in sources[node.pk]:
                found.turns.setdefault(node.pk, []).append(pk)
        if saying and len(saying) < len(said) and hidden_at != HIDDEN_FOR_GOOD and (hard or hidden_at is None):
            candidates.append((session_id, view, hidden_at))
    if candidates:
        read = _read_by_capture(principal.team, {session_id for session_id, _, _ in candidates})
        hiders: dict[int, list[int]] = {}
        for message_id, node_id in NodeSource.objects.filter(
                message_id__in=[view.id for _, view, hidden_at in candidates if hidden_at is not None],
                node__team=principal.team, node__status=NodeStatus.DELETED).values_list("message_id", "node_id"):
            hiders.setdefault(message_id, []).append(node_id)
        found.kept = [Kept(session_id=session_id, message=view, hidden_by=tuple(hiders.get(view.id, ())))
                      for session_id, view, hidden_at in candidates
                      if _unread(read.get(session_id, []), view.id, hidden_at)]
    found.turns = {node_id: sorted(set(turn_ids)) for node_id, turn_ids in found.turns.items()}
    return found


def _said_since(principal: Principal, session: Session, operation: dict, proposed: tuple, said_at: datetime) -> bool:
    """Whether the user said something newer than a turn said at `said_at` that a proposal from it
    would replace: the memory a supersede targets, or the active one-valued memory of its key
    in the conversation's reach (slot ""), changed since. An old turn read late does not undo a
    later move (我住在杭州 read after 记住，我搬到上海了)."""
    newer = Node.objects.filter(team=principal.team, status=NodeStatus.ACTIVE, updated_at__gt=said_at)
    if operation.get("target_id") is not None:
        return newer.filter(pk=operation["target_id"]).exists()
    domain, key, _, _ = proposed
    if not key:
        return False
    owner = Owner(workspace_id=session.workspace_id, user_id=session.user_id, session_id=session.external_id)
    return newer.filter(domain=domain, key=key, slot="").filter(reach(owner=owner, session=session)).exists()


def cite_repeats(principal: Principal, nodes: list[Node], *, hard: bool = False,
                 forgets: Callable[[dict], bool] | None = None) -> Cited:
    """Capture the turns to be hidden that say something besides `nodes` (Kept;
    memory.capture.jobs.capture_turn, audited as capture's with the reason KEPT_REASON), leaving
    out what says one of `nodes` or of the memories already hiding the turn, and what `forgets`
    takes (a forget by selector: it keeps nothing it would forget); then link the turns
    `repeated_in` finds to each of `nodes` as sources, after its own. Called inside the forget's
    transaction (`hard`: the forget's mode), which audits the counts."""
    from memory.capture.jobs import capture_turn

    repeats = repeated_in(principal, nodes, hard=hard)
    cited = Cited()
    if repeats.kept:
        owned = Session.objects.filter(team=principal.team).in_bulk({kept.session_id for kept in repeats.kept})
        hiders = {node_id for kept in repeats.kept for node_id in kept.hidden_by}
        hiding = Node.objects.filter(team=principal.team).in_bulk(hiders)
        forgotten = frozenset(node.pk for node in nodes)
        for kept in repeats.kept:
            against = [*nodes, *(hiding[node_id] for node_id in kept.hidden_by if node_id in hiding)]
            wanted = {node.pk: _value_words(node.value_json) for node in against}

            def drop(operation: dict, against=against, wanted=wanted, kept=kept) -> bool:
                proposed = _proposed(principal, operation["node"])
                return (any(_says(proposed, node, wanted[node.pk]) for node in against)
                        or bool(forgets and forgets(operation["node"]))
                        or _said_since(principal, owned[kept.session_id], operation, proposed, kept.message.created_at))

            counts = capture_turn(team=principal.team, session=owned[kept.session_id], message=kept.message, drop=drop,
                                  reason=KEPT_REASON, forgotten=forgotten)
            cited.kept += counts.get("accepted", 0)
    if not repeats.turns:
        return cited
    start = dict.fromkeys(repeats.turns, 0)
    for node_id, position in NodeSource.objects.filter(node_id__in=repeats.turns).values_list("node_id", "position"):
        start[node_id] = max(start[node_id], position + 1)
    NodeSource.objects.bulk_create([NodeSource(node_id=node_id, message_id=message_id, position=start[node_id] + index)
                                    for node_id, turn_ids in repeats.turns.items()
                                    for index, message_id in enumerate(turn_ids)])
    cited.turns = {node_id: len(turn_ids) for node_id, turn_ids in repeats.turns.items()}
    return cited
