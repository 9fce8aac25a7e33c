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

from django.db.models import Q
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

# User turns holding one of a memory's words that a forget reads, newest first (each as capture
# reads it: its first CAPTURE_MESSAGE_CHARS), until this many characters: the rule extractor
# reads ~0.4 ms per 100 characters (10.7 ms a 4,000-character turn), so ~0.4 s at most.
REPEATS_READ_MAX = 200
REPEATS_CHARS_MAX = 100_000
_WORDS_MAX = 32  # tokens of a memory's words that find those turns


def _words(node: Node) -> list[str]:
    """The tokens that find turns which may say `node`: its entities and the strings of its
    value (花生; {"lives": "杭州"} → 杭州), else its title's."""
    value = node.value_json
    strings = [*node.entities, *value_strings(node),
               *(item for item in (value.values() if isinstance(value, dict) else ()) if isinstance(item, str))]
    return query_tokens(" ".join(strings) or node.title)[:_WORDS_MAX]


def _sessions(principal: Principal, node: Node) -> Q:
    """The conversations whose turns may say `node`: those it was taken from, its own, and every
    conversation of its user for a user memory."""
    sessions = Q(pk__in=NodeSource.objects.filter(node=node).values("message__session_id"))
    if node.session_id:
        sessions |= Q(pk=node.session_id)
    if node.scope == Scope.USER and node.user_id:
        sessions |= Q(user_id=node.user_id)
    return Q(session_id__in=Session.objects.filter(team=principal.team).filter(sessions).values("pk"))


def _says(principal: Principal, proposed: dict, node: Node) -> bool:
    """Whether a proposal's node (a create body, memory.capture.rules) is `node` in another
    turn's words: a keyed memory by its domain, key and value in the schema's words (a
    passing 今天… gives another type of the same key), a keyless one (an agent's note) by its
    title."""
    if not node.key:
        return proposed.get("title", "").strip() == node.title.strip()
    key, value = proposed.get("key", ""), proposed.get("value_json")
    if key:
        key, value = schema_terms(team=principal.team, domain=proposed.get("domain", ""), key=key, value=value,
                                  has_value=True)
    return (proposed.get("domain"), key) == (node.domain, node.key) and canonical(value) == canonical(node.value_json)


def repeated_in(principal: Principal, node: Node) -> list[int]:
    """Ids of the user turns, other than its sources, that state `node` again (see the module
    docstring), ascending. At most REPEATS_READ_MAX turns and REPEATS_CHARS_MAX characters are
    read, the newest first."""
    words = _words(node)
    if not words:
        return []
    turns = (Message.objects.filter(_sessions(principal, node), team=principal.team, role=MessageRole.USER,
                                    search_tokens__matches=TokenQuery(tuple(words)))
             .exclude(pk__in=NodeSource.objects.filter(node=node).values("message_id"))
             .annotate(start=Substr("content", 1, limits.CAPTURE_MESSAGE_CHARS)).order_by("-pk")
             .values_list("pk", "start", "created_at", "metadata")[:REPEATS_READ_MAX])
    extractor = RuleExtractor()
    found: list[int] = []
    budget = REPEATS_CHARS_MAX
    for pk, content, created_at, metadata in turns:
        budget -= len(content)
        if budget < 0:
            break
        view = MessageView(id=pk, role=MessageRole.USER, content=content, created_at=created_at,
                           speaker=str((metadata or {}).get("speaker", "")))
        context = ExtractionContext(messages=(view,), existing=(), workspace_id="", user_id="", session_id="",
                                    now=created_at)
        operations = extractor.extract(context).operations
        if any(operation["operation"] == "create" and _says(principal, operation["node"], node)
               for operation in operations):
            found.append(pk)
    return sorted(found)


def cite_repeats(principal: Principal, node: Node) -> int:
    """Link the turns `repeated_in` finds to `node` as sources, after its own; returns how many.
    Called inside the forget's transaction, which audits the count."""
    repeats = repeated_in(principal, node)
    if not repeats:
        return 0
    start = NodeSource.objects.filter(node=node).count()
    NodeSource.objects.bulk_create([NodeSource(node=node, message_id=message_id, position=start + index)
                                    for index, message_id in enumerate(repeats)])
    return len(repeats)
