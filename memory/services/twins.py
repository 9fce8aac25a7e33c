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
  since — superseded, soft-forgotten, expired — stands; a late capture job does not bring it
  back.

"Says": the capture note's title — the fact itself, without the words capture wraps it in
("The user said …", 用户要求记住：…) — is the other note's title, its content or one sentence of
it (`says`; compared as notes are: memory.search.text.note_words folds case, width,
traditional/simplified script and the marks that only punctuate; a leading "the" aside); its
content adds nothing beyond that but capture's wrapping (`adds_nothing`); the two are of the
same type and polarity (`agrees`); the other lasts as long; and no person or agent has changed
capture's note since. Anything less keeps both. Five newcomers broke looser rules, each losing a
fact: a share of common words ("…milk, eggs and soy" absorbed by "…milk and eggs"; swapped
names; 5月3日 by 3月5日), a substring (the user's allergy by "User's daughter is allergic to
peanuts"; 5万 by 5万5), a constraint absorbed by a fact, a lasting note by one that expires, a
model's details ("carries an EpiPen", "…peanuts and eggs", "only eats fish") merged away. A twin
that survives costs characters; a lost fact costs the user.

Not refused: a capture job that runs after a memory of its message was forgotten for good may
take the fact from the message again. The message is conversation, not memory, and still
recalled as an earlier turn until the conversation is forgotten (DELETE /sessions, hard); a
refusal by message lost the other facts the message (or, through repeats and versions, another
message) held (a fifth newcomer's find).

Owners: the same scope and owner, or a session note of the agent's user-scope note's user (the
user's own memory saying it makes a session copy redundant, as the rules extractor holds).
"""

import re

from django.db.models import Q

from accounts.principal import Principal
from memory import limits
from memory.models import AuditEvent, Node, NodeSource, NodeStatus, Scope
from memory.search.text import note_words, stem
from memory.services.audit import MERGED_EVENT, audit_record
from memory.services.nodes import NodeInput

CAPTURE_ROLE = "capture"
CAPTURE_ACTOR = f"system:{CAPTURE_ROLE}"
FACT_CHARS_MIN = 3  # a title saying less beyond its subject says too little to be found in another
_SUBJECT = re.compile(r"^(?:the )?user(?: |$)|^用户(?!的)")
_NEGATION = re.compile(r"\b(?:no|not|never|nor|none|nothing|nobody|neither|cannot|without|dont|doesnt|didnt|cant"
                       r"|wont|isnt|arent|wasnt|werent|\w+n['’]t)\b|[不没沒别別无無未勿莫]")
_THE = re.compile(r"^the ")
_SENTENCE = re.compile(r"[.。!！?？;；\n]+")
_WORD = re.compile(r"[a-z0-9]+|[^\W\d_a-z]", re.IGNORECASE)
_FILLER = frozenset({"the", "a", "an", "is", "are", "am", "was", "were", "be", "user", "they", "s", "it"})
# How capture's rules open a note's content (memory.capture.rules_en, rules_zh).
_WRAPPING = re.compile(r"^(?:the user (?:said|says|asked to remember|corrected)(?: that)?(?: they| their)?:? ?"
                       r"|用户(?:说自己|说|要求记住|表示)[:：]? ?)")


def fact_of(title: str) -> str:
    """A capture note's title as the fact another note must say, as notes are compared; "" when
    it says nothing beyond a leading "user" / 用户 (fewer than FACT_CHARS_MIN characters)."""
    fact = _THE.sub("", note_words(title), count=1)
    return fact if len(_SUBJECT.sub("", fact, count=1)) >= FACT_CHARS_MIN else ""


def says(fact: str, title: str, content: str) -> bool:
    """Whether a note (`title`, `content`) says `fact` (fact_of) and nothing else: its title, its
    content or one sentence of its content is the fact (a leading "the" aside). Two newcomers
    broke a looser reading with facts that a longer text holds but changes: a subject ("User's
    daughter is allergic to peanuts"), a number (5万5, 2.5 kg, -5°C), a qualifier ("5 kg more
    than last year")."""
    if not fact:
        return False
    sentences = [note_words(title), note_words(content), *(note_words(part) for part in _SENTENCE.split(content))]
    return any(_THE.sub("", sentence, count=1) == fact for sentence in sentences)


def adds_nothing(capture_content: str, fact: str) -> bool:
    """Whether a capture note's content says its title (`fact`, fact_of) and nothing more: empty,
    or, without capture's wrapping ("The user said they …", 用户说自己…), the same words in the
    same order, but for the subject and the verb "to be" (`_core`). A model's content with details
    ("carries an EpiPen"; "…peanuts and eggs"; "only eats fish") keeps the note apart (the
    fourth and fifth newcomers' finds: words of the agent's note, or stop words such as "only"
    and "not", no longer count as saying nothing)."""
    said = _WRAPPING.sub("", note_words(capture_content), count=1)
    return not said.strip() or _core(said) == _core(fact)


def _core(text: str) -> list[str]:
    """A folded text's words in order (Latin words stemmed, CJK characters one by one), less its
    subject and the verb "to be"."""
    text = _SUBJECT.sub("", _THE.sub("", text.strip(), count=1), count=1)
    return [stem(word) if word[0].isascii() else word for word in _WORD.findall(text) if word not in _FILLER]


def negated(text: str) -> bool:
    """Whether `text` says no (not, never, don't …; 不, 没, 别, 无, 未 …)."""
    return bool(_NEGATION.search(note_words(text)))


def agrees(fact: str, title: str, content: str) -> bool:
    """Whether a note (`title`, `content`) says the capture title `fact` with the same polarity:
    a negated fact only in a note that says no somewhere, an affirmed one only in a note whose
    title does not ("User eats pork" does not say "User does not eat pork", nor the other way
    round; "用户对花生过敏" with "推荐菜谱时不要用花生" does say "用户对花生过敏")."""
    return negated(title) or negated(content) if negated(fact) else not negated(title)


def _is_twin(capture: Node | NodeInput, note: Node | NodeInput) -> bool:
    """Whether `note` says what the capture note `capture` says (see module doc)."""
    fact = fact_of(capture.title)
    return (capture.type == note.type and says(fact, note.title, note.content)
            and agrees(capture.title, note.title, note.content)
            and adds_nothing(capture.content, fact))


def _lasts(note: Node | NodeInput, other: Node | NodeInput) -> bool:
    """Whether `note` lasts at least as long as `other` (expires_at None: for good)."""
    return note.expires_at is None or (other.expires_at is not None and other.expires_at <= note.expires_at)


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
                 if _is_twin(data, node) and _lasts(node, data)), None)


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
    # Capture's own notes only, as capture wrote them: one that a person or an agent changed since
    # holds their words too.
    events = AuditEvent.objects.filter(team=principal.team, node_id__in=[twin.pk for twin in candidates])
    by_capture = set(events.filter(event_type="memory.node.created", actor=CAPTURE_ACTOR)
                     .values_list("node_id", flat=True))
    by_capture -= set(events.exclude(actor=CAPTURE_ACTOR).values_list("node_id", flat=True))
    twins = [twin for twin in candidates if twin.pk in by_capture and _is_twin(twin, node) and _lasts(node, twin)]
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
