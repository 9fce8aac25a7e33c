"""One message, one memory of it: background capture and an agent remembering the same words
(R-STORE no duplicates, R-EXTRACT).

A user says "Remember: I live in Berlin." The capture job (system:capture) extracts a note from
it, and the agent, following the README, proposes its own note citing the same message. Worded
differently ("The user said they live in Berlin." / "The user lives in Berlin."), the two took
two slots, so both were injected, and superseding or forgetting the agent's copy left the
capture's copy active (a newcomer's find). The agent's explicit write is the one kept:

- an agent's (or a person's) new note absorbs the active notes that capture wrote from one of
  the same messages and that it says (`absorb_capture_twins`): each becomes `deleted` with a
  `memory.node.merged` event naming the agent's node, which gains its source messages — as
  consolidation merges (memory.capture.consolidate), so forgetting the agent's node for good
  takes the twin along, and a restore of the twin is refused (memory.services.forgetting);
- a capture write that a note (of anyone) from one of the same messages already says is not
  made (`twin_of`): the answer names the note, as for any repeat.

"Say the same thing": the capture note's title — the fact itself, without the words capture
wraps it in ("The user said …", 用户要求记住：…) — says nothing the agent's note does not: at least
SAME_SHARE of its distinctive words (query tokens: stems, CJK bigrams, no stop words, no
"user"/用户) are among those of the agent's title, content, key and value. "User lives in Berlin"
is in "The user lives in Berlin."; a note of the whole "I'm allergic to peanuts and my daughter
Emma to eggs" is not in "User is allergic to peanuts" (a second newcomer's finding: the eggs
were lost), nor "likes tea and coffee" in "likes tea"; and with the same polarity (`agrees`:
"User eats pork" does not say "User does not eat pork"). Either may have a key: the README's agent
writes `home_city = Berlin` where capture wrote a keyless note. Only the same scope and owner: a
user's note does not absorb a session's.
"""

import re

from django.db.models import QuerySet

from accounts.principal import Principal
from memory import limits
from memory.models import AuditEvent, Node, NodeSource, NodeStatus, Scope
from memory.search.text import json_strings, normalize, query_tokens
from memory.services.audit import MERGED_EVENT, audit_record
from memory.services.nodes import NodeInput

CAPTURE_ROLE = "capture"
CAPTURE_ACTOR = f"system:{CAPTURE_ROLE}"
SAME_SHARE = 0.8
_GENERIC = frozenset({"user", "用户"})


def subject_words(*texts: str) -> frozenset[str]:
    """The distinctive tokens of a note's texts (see module doc)."""
    return frozenset(query_tokens("\n".join(texts), limit=None)) - _GENERIC


def note_words(title: str, content: str, key: str, value: object) -> frozenset[str]:
    """What a note says, as subject words: its title, content, key and value's strings."""
    return subject_words(title, content, key.replace("_", " ").replace(".", " "), *json_strings(value))


def says_all_of(words: frozenset[str], fact: frozenset[str]) -> bool:
    """Whether a note of subject `words` says the `fact` (a capture note's title words): at least
    two words, and at least SAME_SHARE of them among `words`."""
    return len(fact) >= 2 and len(fact & words) >= SAME_SHARE * len(fact)


_NEGATION = re.compile(r"\b(?:no|not|never|nor|none|nothing|nobody|neither|cannot|without|dont|doesnt|didnt|cant"
                       r"|wont|isnt|arent|wasnt|werent|\w+n['’]t)\b|[不没沒别別无無未勿莫]")


def negated(text: str) -> bool:
    """Whether `text` says no (not, never, don't …; 不, 没, 别, 无, 未 …)."""
    return bool(_NEGATION.search(normalize(text)))


def agrees(fact: str, title: str, content: str) -> bool:
    """Whether a note (`title`, `content`) says the capture title `fact` with the same polarity:
    a negated fact only in a note that says no somewhere, an affirmed one only in a note whose
    title does not ("User eats pork" does not say "User does not eat pork", nor the other way
    round; "用户对花生过敏" with "推荐菜谱时不要用花生" does say "用户对花生过敏")."""
    return negated(title) or negated(content) if negated(fact) else not negated(title)


def _same_owner(team_id: int, scope: str, *, session: dict, workspace_id: str, user_id: str) -> QuerySet[Node]:
    """Active nodes of one owner; `session` filters a session-scope owner's session."""
    nodes = Node.objects.filter(team_id=team_id, status=NodeStatus.ACTIVE, scope=scope)
    if scope == Scope.SESSION:
        return nodes.filter(**session)
    return nodes.filter(session=None, workspace_id=workspace_id if scope == Scope.WORKSPACE else "",
                        user_id=user_id if scope == Scope.USER else "")


def _citing(nodes: QuerySet[Node], message_ids) -> QuerySet[Node]:
    return nodes.filter(pk__in=NodeSource.objects.filter(message_id__in=list(message_ids)).values("node_id"))


def twin_of(principal: Principal, data: NodeInput) -> Node | None:
    """For a capture write of `data` (validated): the active node of the same owner that cites
    one of its source messages and says all its title says, or None."""
    if principal.role != CAPTURE_ROLE or not data.source_message_ids:
        return None
    fact = subject_words(data.title)
    session = {"session__external_id": data.session_id, "session__workspace_id": data.workspace_id,
               "session__user_id": data.user_id}
    owner = _same_owner(principal.team.pk, data.scope, session=session, workspace_id=data.workspace_id,
                        user_id=data.user_id)
    for node in _citing(owner, data.source_message_ids).order_by("pk")[:limits.NODE_SOURCES_MAX]:
        if says_all_of(note_words(node.title, node.content, node.key, node.value_json), fact) and agrees(
                data.title, node.title, node.content):
            return node
    return None


def absorb_capture_twins(principal: Principal, node: Node) -> list[int]:
    """After an agent's or a person's write created `node`: merge into it the active notes of
    the same owner that capture created from one of its source messages and whose title it
    says (see module doc). Must run in the write's transaction. Returns the ids merged."""
    if principal.role == CAPTURE_ROLE:
        return []
    sources = list(NodeSource.objects.filter(node=node).order_by("position", "pk").values_list("message_id", flat=True))
    if not sources:
        return []
    owner = _same_owner(principal.team.pk, node.scope, session={"session_id": node.session_id},
                        workspace_id=node.workspace_id, user_id=node.user_id).exclude(pk=node.pk)
    candidates = list(_citing(owner, sources).select_for_update().order_by("pk")[:limits.NODE_SOURCES_MAX])
    if not candidates:
        return []
    by_capture = set(AuditEvent.objects.filter(
        team=principal.team, event_type="memory.node.created", actor=CAPTURE_ACTOR,
        node_id__in=[twin.pk for twin in candidates]).values_list("node_id", flat=True))
    words = note_words(node.title, node.content, node.key, node.value_json)
    twins = [twin for twin in candidates if twin.pk in by_capture and says_all_of(words, subject_words(twin.title))
             and agrees(twin.title, node.title, node.content)]
    if not twins:
        return []
    links = list(NodeSource.objects.filter(node__in=twins).order_by("position", "pk").values_list("message_id", flat=True))
    added = [message for message in dict.fromkeys(links) if message not in sources][
        : max(0, limits.NODE_SOURCES_MAX - len(sources))]
    NodeSource.objects.bulk_create([NodeSource(node=node, message_id=message, position=len(sources) + index)
                                    for index, message in enumerate(added)])
    for twin in twins:
        twin.status = NodeStatus.DELETED
        twin.updated_at = node.updated_at
        twin.save(update_fields=["status", "updated_at"])
        audit_record(principal=principal, event_type=MERGED_EVENT, node=twin, reason=f"said by node {node.pk}",
                     payload={"merged_into": node.pk, "previous_status": NodeStatus.ACTIVE, "match": "same_message"})
    return [twin.pk for twin in twins]
