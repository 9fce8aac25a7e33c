"""One message, one memory of it: background capture and an agent remembering the same words
(R-STORE no duplicates, R-EXTRACT).

A user says "Remember: I live in Berlin." The capture job (system:capture) extracts a note from
it, and the agent, following the README, proposes its own note citing the same message. Worded
differently ("The user said they live in Berlin." / "The user lives in Berlin."), the two took
two slots, so both were injected, and superseding or forgetting the agent's copy left the
capture's copy active (a newcomer's find). The agent's explicit write is the one kept:

- an agent's (or a person's) new keyless note absorbs the active keyless notes that capture
  wrote from one of the same messages and that say the same thing (`absorb_capture_twins`): each
  becomes `deleted` with a `memory.node.merged` event naming the agent's node, which gains its
  source messages — as consolidation merges (memory.capture.consolidate), so forgetting the
  agent's node for good takes the twin along;
- a capture write that such a note (of anyone) already says, from one of the same messages, is
  not made (`twin_of`): the answer names the note, as for any repeat.

"Say the same thing": the distinctive words of title and content (query tokens: stems, CJK
bigrams, no stop words, no "user"/用户) of the shorter text are at least SAME_SHARE of them in
the other's. "User lives in Berlin" and "The user said they live in Berlin" are one; "likes
tea" and "likes coffee" from "I like tea and coffee" are two (half their words). Keyed nodes
are left to their slots (the same key and value already take one). Only the same scope and
owner: a user's note does not absorb a session's.
"""

from django.db.models import QuerySet

from accounts.principal import Principal
from memory import limits
from memory.models import AuditEvent, Node, NodeSource, NodeStatus, Scope
from memory.search.text import query_tokens
from memory.services.audit import MERGED_EVENT, audit_record
from memory.services.nodes import NodeInput

CAPTURE_ROLE = "capture"
CAPTURE_ACTOR = f"system:{CAPTURE_ROLE}"
SAME_SHARE = 0.8
_GENERIC = frozenset({"user", "用户"})


def subject_words(title: str, content: str) -> frozenset[str]:
    """The distinctive tokens of a note (see module doc)."""
    return frozenset(query_tokens(f"{title}\n{content}", limit=None)) - _GENERIC


def same_subject(one: frozenset[str], other: frozenset[str]) -> bool:
    """Whether two notes' subject words say the same thing: at least two words, and at least
    SAME_SHARE of the smaller set in the larger."""
    smaller = min(len(one), len(other))
    return smaller >= 2 and len(one & other) >= SAME_SHARE * smaller


def _same_owner(team_id: int, scope: str, *, session: dict, workspace_id: str, user_id: str) -> QuerySet[Node]:
    """Active keyless nodes of one owner; `session` filters a session-scope owner's session."""
    nodes = Node.objects.filter(team_id=team_id, status=NodeStatus.ACTIVE, scope=scope, key="")
    if scope == Scope.SESSION:
        return nodes.filter(**session)
    return nodes.filter(session=None, workspace_id=workspace_id if scope == Scope.WORKSPACE else "",
                        user_id=user_id if scope == Scope.USER else "")


def _citing(nodes: QuerySet[Node], message_ids) -> QuerySet[Node]:
    return nodes.filter(pk__in=NodeSource.objects.filter(message_id__in=list(message_ids)).values("node_id"))


def twin_of(principal: Principal, data: NodeInput) -> Node | None:
    """For a capture write of keyless `data` (validated): the active keyless note of the same
    owner that cites one of its source messages and says the same thing, or None."""
    if principal.role != CAPTURE_ROLE or data.key or not data.source_message_ids:
        return None
    words = subject_words(data.title, data.content)
    session = {"session__external_id": data.session_id, "session__workspace_id": data.workspace_id,
               "session__user_id": data.user_id}
    owner = _same_owner(principal.team.pk, data.scope, session=session, workspace_id=data.workspace_id,
                        user_id=data.user_id)
    for node in _citing(owner, data.source_message_ids).order_by("pk")[:limits.NODE_SOURCES_MAX]:
        if same_subject(words, subject_words(node.title, node.content)):
            return node
    return None


def absorb_capture_twins(principal: Principal, node: Node) -> list[int]:
    """After an agent's or a person's write created keyless `node`: merge into it the active
    keyless notes of the same owner that capture created from one of its source messages and
    that say the same thing (see module doc). Must run in the write's transaction. Returns the
    ids merged."""
    if principal.role == CAPTURE_ROLE or node.key:
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
    words = subject_words(node.title, node.content)
    twins = [twin for twin in candidates
             if twin.pk in by_capture and same_subject(words, subject_words(twin.title, twin.content))]
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
