"""Turns that say a forgotten memory again (R-STORE provable forgetting, R-EXTRACT).

A memory is taken from one turn, but the user may have said it in others too: before capture
read them (a turn without 记住 waits for the idle sweep), or in words capture read while the
memory was not in its window. Hiding only the source turns left those recalled as earlier
messages, and the next capture run learned the forgotten memory back from them (a newcomer's
hard-forgotten peanut allergy came back twice, as session memories of two conversations).

`repeated_in` finds them by meaning, not by words: the user turns of the memory's
conversations that hold one of its words (the keyword index; newest first, within
REPEATS_READ_MAX turns and REPEATS_CHARS_MAX characters) are read one by one by the rule
extractor (memory.capture.rules, also where an LLM extracts: it is deterministic and offline),
and a turn counts when it yields the same memory — the same domain, key and value in the
schema's words (memory.services.schema), or for a keyless note (an agent's) the same title. A
word alone is not enough: 提醒我周五去上海前带护照 says 上海 but states no home. The forget links
them to the memory as sources ("said again", as capture cites repeats), so they are hidden with
its own turns, and a restore recalls them too (memory.services.forgotten_turns). What says it
in other words is not found.
"""

from typing import Any

from django.db.models.functions import Substr

from accounts.principal import Principal
from memory import limits
from memory.capture.base import ExtractionContext, MessageView
from memory.capture.rules import RuleExtractor
from memory.capture.rules_common import canonical
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
_WORDS_MAX = 32  # tokens of one memory's words that find those turns
_ALL_WORDS_MAX = 256  # ...and of all of a forget's memories


def _words(node: Node) -> list[str]:
    """The tokens that find turns which may say `node`: its entities and the strings of its
    value (花生; {"lives": "杭州"} → 杭州), else its title's."""
    value = node.value_json
    strings = [*node.entities, *value_strings(node),
               *(item for item in (value.values() if isinstance(value, dict) else ()) if isinstance(item, str))]
    return query_tokens(" ".join(strings) or node.title)[:_WORDS_MAX]


def _signature(domain: str, key: str, value: Any, title: str) -> tuple:
    """What makes two memories the same one here: domain, key and value for a keyed memory, the
    title for a keyless note (an agent's)."""
    return ("keyed", domain, key, canonical(value)) if key else ("note", title.strip())


def _proposed(principal: Principal, proposed: dict) -> set[tuple]:
    """The _signatures a proposal's node (a create body, memory.capture.rules) matches: its key
    and value in the schema's words (memory.services.schema), and its title, which a keyless
    note of the same words has (an agent's "用户对花生过敏" for capture's keyed allergy)."""
    key, value = proposed.get("key", ""), proposed.get("value_json")
    title = proposed.get("title", "")
    if not key:
        return {_signature("", "", None, title)}
    key, value = schema_terms(team=principal.team, domain=proposed.get("domain", ""), key=key, value=value,
                              has_value=True)
    return {_signature(proposed.get("domain", ""), key, value, title), _signature("", "", None, title)}


def _sessions_of(principal: Principal, nodes: list[Node]) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
    """Per node, the conversations whose turns may say it (those it was taken from, its own, and
    every conversation of its user for a user memory) and the turns it was taken from. Two
    statements."""
    sessions: dict[int, set[int]] = {node.pk: {node.session_id} - {None} for node in nodes}
    sources: dict[int, set[int]] = {node.pk: set() for node in nodes}
    for node_id, message_id, session_id in NodeSource.objects.filter(node__in=nodes).values_list(
            "node_id", "message_id", "message__session_id"):
        sessions[node_id].add(session_id)
        sources[node_id].add(message_id)
    users = {node.user_id for node in nodes if node.scope == Scope.USER and node.user_id}
    of_user: dict[str, set[int]] = {}
    for pk, user_id in Session.objects.filter(team=principal.team, user_id__in=users).values_list("pk", "user_id"):
        of_user.setdefault(user_id, set()).add(pk)
    for node in nodes:
        if node.scope == Scope.USER and node.user_id:
            sessions[node.pk] |= of_user.get(node.user_id, set())
    return sessions, sources


def repeated_in(principal: Principal, nodes: list[Node]) -> dict[int, list[int]]:
    """Per node of `nodes`, the ids of the user turns, other than its sources, that state it
    again (see the module docstring), ascending; nodes with none are left out. At most
    REPEATS_READ_MAX turns and REPEATS_CHARS_MAX characters are read for all of them, the newest
    first."""
    words = list(dict.fromkeys(token for node in nodes for token in _words(node)))[:_ALL_WORDS_MAX]
    if not words:
        return {}
    sessions, sources = _sessions_of(principal, nodes)
    wanted: dict[tuple, list[Node]] = {}
    for node in nodes:
        if node.key or node.title.strip():
            wanted.setdefault(_signature(node.domain, node.key, node.value_json, node.title), []).append(node)
    turns = (Message.objects.filter(team=principal.team, role=MessageRole.USER,
                                    session_id__in=set().union(*sessions.values()),
                                    search_tokens__matches=TokenQuery(tuple(words)))
             .annotate(start=Substr("content", 1, limits.CAPTURE_MESSAGE_CHARS)).order_by("-pk")
             .values_list("pk", "session_id", "start", "created_at", "metadata")[:REPEATS_READ_MAX])
    extractor = RuleExtractor()
    found: dict[int, list[int]] = {}
    budget = REPEATS_CHARS_MAX
    for pk, session_id, content, created_at, metadata in turns:
        budget -= len(content)
        if budget < 0:
            break
        view = MessageView(id=pk, role=MessageRole.USER, content=content, created_at=created_at,
                           speaker=str((metadata or {}).get("speaker", "")))
        context = ExtractionContext(messages=(view,), existing=(), workspace_id="", user_id="", session_id="",
                                    now=created_at)
        said = set().union(*(_proposed(principal, operation["node"]) for operation in extractor.extract(context).operations
                             if operation["operation"] == "create"))
        for signature in said:
            for node in wanted.get(signature, ()):
                if session_id in sessions[node.pk] and pk not in sources[node.pk]:
                    found.setdefault(node.pk, []).append(pk)
    return {node_id: sorted(set(turn_ids)) for node_id, turn_ids in found.items()}


def cite_repeats(principal: Principal, nodes: list[Node]) -> dict[int, int]:
    """Link the turns `repeated_in` finds to each of `nodes` as sources, after its own; returns
    {node id: how many}. Called inside the forget's transaction, which audits the counts."""
    repeats = repeated_in(principal, nodes)
    if not repeats:
        return {}
    start = dict.fromkeys(repeats, 0)
    for node_id, position in NodeSource.objects.filter(node_id__in=repeats).values_list("node_id", "position"):
        start[node_id] = max(start[node_id], position + 1)
    NodeSource.objects.bulk_create([NodeSource(node_id=node_id, message_id=message_id, position=start[node_id] + index)
                                    for node_id, turn_ids in repeats.items() for index, message_id in enumerate(turn_ids)])
    return {node_id: len(turn_ids) for node_id, turn_ids in repeats.items()}
