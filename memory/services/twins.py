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
- a capture write that a note (of anyone, in any status) from one of the same messages already
  says is not made (`twin_of`): the message was remembered, and what became of that memory
  since — superseded, forgotten, expired — stands; a late capture job does not bring it back.

"Says": the capture note's title — the fact itself, without the words capture wraps it in
("The user said …", 用户要求记住：…), its subject included — appears word for word in the
other note's title, content or both (compared as notes are: memory.search.text.note_words
folds case, width, traditional/simplified script and the marks that only punctuate), not inside
a longer word or number; the two are of the same type; and they agree in polarity (`agrees`).
Anything less keeps both. Two newcomers broke looser rules, each losing a fact: a share of common
words ("…peanuts, milk, eggs and soy" was absorbed by "…peanuts, milk and eggs"; "Tom … peanuts and
Emma … eggs" by the swapped sentence; 5月3日 by 3月5日), a constraint absorbed by a fact, a lasting
note by one that expires. A twin that survives costs characters; a lost fact costs the user.

Owners: the same scope and owner, or a session note of the agent's user-scope note's user (the
user's own memory saying it makes a session copy redundant, as the rules extractor holds).
"""

import re

from django.db.models import Q

from accounts.principal import Principal
from memory import limits
from memory.models import AuditEvent, Node, NodeSource, NodeStatus, Scope
from memory.search.text import note_words
from memory.services.audit import MERGED_EVENT, audit_record
from memory.services.nodes import NodeInput

CAPTURE_ROLE = "capture"
CAPTURE_ACTOR = f"system:{CAPTURE_ROLE}"
FACT_CHARS_MIN = 3  # a title saying less beyond its subject says too little to be found in another
_SUBJECT = re.compile(r"^(?:the )?user(?: |$)|^用户(?!的)")
_NEGATION = re.compile(r"\b(?:no|not|never|nor|none|nothing|nobody|neither|cannot|without|dont|doesnt|didnt|cant"
                       r"|wont|isnt|arent|wasnt|werent|\w+n['’]t)\b|[不没沒别別无無未勿莫]")
_LATIN = re.compile(r"[^\W_]", re.ASCII)


def fact_of(title: str) -> str:
    """A capture note's title as the fact another note must say, as notes are compared (subject
    and all: "用户对花生过敏" is not said by "女儿对花生过敏"); "" when it says nothing beyond a
    leading "user" / 用户 (fewer than FACT_CHARS_MIN characters)."""
    fact = note_words(title)
    return fact if len(_SUBJECT.sub("", fact, count=1)) >= FACT_CHARS_MIN else ""


def says(fact: str, title: str, content: str) -> bool:
    """Whether a note (`title`, `content`) says `fact` (fact_of) word for word: in its title, its
    content or both together, not inside a longer Latin word or number."""
    if not fact:
        return False
    for text in (note_words(title), note_words(content), note_words(f"{title} {content}")):
        start = text.find(fact)
        while start >= 0:
            end = start + len(fact)
            before = text[start - 1] if start else " "
            after = text[end] if end < len(text) else " "
            if not (_LATIN.match(fact[0]) and _LATIN.match(before)) and not (_LATIN.match(fact[-1]) and _LATIN.match(after)):
                return True
            start = text.find(fact, start + 1)
    return False


def negated(text: str) -> bool:
    """Whether `text` says no (not, never, don't …; 不, 没, 别, 无, 未 …)."""
    return bool(_NEGATION.search(note_words(text)))


def agrees(fact: str, title: str, content: str) -> bool:
    """Whether a note (`title`, `content`) says the capture title `fact` with the same polarity:
    a negated fact only in a note that says no somewhere, an affirmed one only in a note whose
    title does not ("User eats pork" does not say "User does not eat pork", nor the other way
    round; "用户对花生过敏" with "推荐菜谱时不要用花生" does say "用户对花生过敏")."""
    return negated(title) or negated(content) if negated(fact) else not negated(title)


def _is_twin(capture_title: str, capture_type: str, note: Node | NodeInput) -> bool:
    return (capture_type == note.type and says(fact_of(capture_title), note.title, note.content)
            and agrees(capture_title, note.title, note.content))


def _citing(message_ids) -> Q:
    return Q(pk__in=NodeSource.objects.filter(message_id__in=list(message_ids)).values("node_id"))


def twin_of(principal: Principal, data: NodeInput) -> Node | None:
    """For a capture write of `data` (validated): a node of its owner (or, for session scope,
    of its user), in any status, that cites one of its source messages and says its title, or
    None."""
    if principal.role != CAPTURE_ROLE or not data.source_message_ids:
        return None
    if data.scope == Scope.SESSION:
        owners = Q(scope=Scope.SESSION, session__external_id=data.session_id, session__workspace_id=data.workspace_id,
                   session__user_id=data.user_id) | Q(scope=Scope.USER, user_id=data.user_id)
    else:
        owners = Q(scope=data.scope, session=None, workspace_id=data.workspace_id if data.scope == Scope.WORKSPACE else "",
                   user_id=data.user_id if data.scope == Scope.USER else "")
    nodes = Node.objects.filter(owners, _citing(data.source_message_ids), team=principal.team)
    return next((node for node in nodes.order_by("pk")[:limits.NODE_SOURCES_MAX]
                 if _is_twin(data.title, data.type, node)), None)


def absorb_capture_twins(principal: Principal, node: Node) -> list[int]:
    """After an agent's or a person's write created `node`: merge into it the active notes that
    capture created from one of its source messages, of its owner (or session notes of its
    user), that it says and that last no longer than it (see module doc). Must run in the
    write's transaction. Returns the ids merged."""
    if principal.role == CAPTURE_ROLE:
        return []
    sources = list(NodeSource.objects.filter(node=node).order_by("position", "pk").values_list("message_id", flat=True))
    if not sources:
        return []
    owners = Q(scope=node.scope, session_id=node.session_id, workspace_id=node.workspace_id, user_id=node.user_id)
    if node.scope == Scope.USER:
        owners |= Q(scope=Scope.SESSION, session__user_id=node.user_id)
    candidates = list(Node.objects.filter(owners, _citing(sources), team=principal.team, status=NodeStatus.ACTIVE)
                      .exclude(pk=node.pk).select_for_update(of=("self",)).order_by("pk")[:limits.NODE_SOURCES_MAX])
    if not candidates:
        return []
    by_capture = set(AuditEvent.objects.filter(
        team=principal.team, event_type="memory.node.created", actor=CAPTURE_ACTOR,
        node_id__in=[twin.pk for twin in candidates]).values_list("node_id", flat=True))
    twins = [twin for twin in candidates if twin.pk in by_capture and _is_twin(twin.title, twin.type, node)
             and (node.expires_at is None or (twin.expires_at is not None and twin.expires_at <= node.expires_at))]
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
