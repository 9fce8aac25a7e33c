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
A turn counts when one thing it yields is the same memory: the same domain and key and the value said
alike and whole in the schema's words (memory.services.schema; 杭州市 says 杭州, peanut says
peanuts, 杭州湾 and 花生酱 say something else), or for a keyless note (an agent's) the same
title. A turn that also says another memory is hidden too (left recalled, capture learned the
forgotten one back from it): what else it says is captured first (Kept, cite_repeats) when no
capture job read it yet, so 我对花生和虾过敏 keeps the shrimp allergy when the peanut one is
forgotten. That capture runs the rule extractor whatever extractor the team uses, and the
profile takes the new memory at the next consolidation. The same holds for the memory's own
source turns among those read. Only the user's own conversations that the forgetting key may
read are searched. A word alone is not enough:
提醒我周五去上海前带护照 says 上海 but states no home. The forget links them to the memory as
sources ("said again", as capture cites repeats), so they are hidden with its own turns, and a
restore recalls them too (memory.services.forgotten_turns); the links stay after a restore.
What says it in other words, or in a way the extractor does not read (我家在杭州), is not found;
what the extractor misreads as the user's own (a story that quotes 我住在杭州) is hidden too.
"""

import re
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q
from django.db.models.functions import Substr

from accounts.principal import Principal
from memory import limits
from memory.capture.base import Extraction, ExtractionContext, MessageView
from memory.capture.rules import RuleExtractor
from memory.capture.rules_common import canonical
from memory.capture_models import CaptureJob, JobKind, JobStatus
from memory.models import Message, MessageRole, Node, NodeSource, Scope, Session
from memory.search.fields import TokenQuery
from memory.search.text import query_tokens
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
    """What a turn a forget hides says besides the forgotten memories, read by no capture job
    yet: the extractor's create operations for it, applied before the turn is hidden."""

    session_id: int
    message: MessageView
    extraction: Extraction


@dataclass
class Repeats:
    """`turns`: per node, the ids of the user turns other than its sources that say it again,
    ascending (nodes with none left out); `kept`: what turns to be hidden say besides."""

    turns: dict[int, list[int]] = field(default_factory=dict)
    kept: list[Kept] = field(default_factory=list)


def _read_by_capture(session_ids: set[int]) -> dict[int, list[tuple[int, int]]]:
    """Per session, the message id ranges (after, to] its finished capture jobs read; one statement."""
    ranges: dict[int, list[tuple[int, int]]] = {}
    for session_id, after, to in CaptureJob.objects.filter(session_id__in=session_ids, kind=JobKind.CAPTURE,
                                                           status=JobStatus.DONE).values_list(
            "session_id", "after_message_id", "to_message_id"):
        ranges.setdefault(session_id, []).append((after, to))
    return ranges


def repeated_in(principal: Principal, nodes: list[Node]) -> Repeats:
    """The user turns that state `nodes` again (see the module docstring) and what turns to be
    hidden say besides. A turn counts when a proposal of the rule extractor says one of the
    nodes; what its other proposals say is kept (Kept) when the turn is not hidden yet and no
    finished capture job read it (one did: what it said is stored, or was refused or forgotten
    since, and is not learned again), so hiding it loses nothing capture would have learned. At
    most REPEATS_READ_MAX turns and REPEATS_CHARS_MAX characters are read for all of them, the
    newest first."""
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
    read: dict[int, list[tuple[int, int]]] | None = None
    budget = REPEATS_CHARS_MAX
    for pk, session_id, content, created_at, metadata, forgotten_at in turns:
        budget -= len(content)
        if budget < 0:
            break
        view = MessageView(id=pk, role=MessageRole.USER, content=content, created_at=created_at,
                           speaker=str((metadata or {}).get("speaker", "")))
        context = ExtractionContext(messages=(view,), existing=(), workspace_id="", user_id="", session_id="",
                                    now=created_at)
        extraction = extractor.extract(context)
        operations = [operation for operation in extraction.operations if operation["operation"] == "create"]
        said = [_proposed(principal, operation["node"]) for operation in operations]
        saying: set[int] = set()
        for node in nodes:
            if session_id not in sessions[node.pk]:
                continue
            hits = {index for index, proposed in enumerate(said) if _says(proposed, node, values[node.pk])}
            saying |= hits
            if hits and pk not in sources[node.pk]:
                found.turns.setdefault(node.pk, []).append(pk)
        others = [operation for index, operation in enumerate(operations) if index not in saying]
        if saying and others and forgotten_at is None:
            read = _read_by_capture(set().union(*sessions.values())) if read is None else read
            if not any(after < pk <= to for after, to in read.get(session_id, ())):
                found.kept.append(Kept(session_id=session_id, message=view,
                                       extraction=Extraction(operations=others, extractor=extraction.extractor)))
    found.turns = {node_id: sorted(set(turn_ids)) for node_id, turn_ids in found.turns.items()}
    return found


def cite_repeats(principal: Principal, nodes: list[Node]) -> dict[int, int]:
    """Capture what turns to be hidden say besides `nodes` (Kept; memory.capture.jobs.capture_turn),
    then link the turns `repeated_in` finds to each of `nodes` as sources, after its own; returns
    {node id: how many linked}. Called inside the forget's transaction, which audits the counts;
    each memory kept is audited as capture's, with the reason KEPT_REASON."""
    from memory.capture.jobs import capture_turn

    repeats = repeated_in(principal, nodes)
    if repeats.kept:
        owned = Session.objects.in_bulk({kept.session_id for kept in repeats.kept})
        for kept in repeats.kept:
            capture_turn(team=principal.team, session=owned[kept.session_id], message=kept.message,
                         extraction=kept.extraction, reason=KEPT_REASON)
    if not repeats.turns:
        return {}
    start = dict.fromkeys(repeats.turns, 0)
    for node_id, position in NodeSource.objects.filter(node_id__in=repeats.turns).values_list("node_id", "position"):
        start[node_id] = max(start[node_id], position + 1)
    NodeSource.objects.bulk_create([NodeSource(node_id=node_id, message_id=message_id, position=start[node_id] + index)
                                    for node_id, turn_ids in repeats.turns.items()
                                    for index, message_id in enumerate(turn_ids)])
    return {node_id: len(turn_ids) for node_id, turn_ids in repeats.turns.items()}
