"""Reading conversation messages: the recent window and keyword recall of earlier turns."""

from dataclasses import dataclass

from django.db.models import QuerySet

from accounts.principal import Principal
from memory.models import Message, Session
from memory.search.engine import rank
from memory.search.text import owner_token, query_tokens

MESSAGE_FIELD_WEIGHTS = (1.0,)


@dataclass(frozen=True)
class MessageHit:
    message: Message
    score: float
    matched: tuple[str, ...]


def messages_recent(*, session: Session, limit: int) -> list[Message]:
    """The last `limit` messages of the session, oldest first (server order)."""
    if limit <= 0:
        return []
    newest = list(Message.objects.filter(team_id=session.team_id, session=session).order_by("-pk")[:limit])
    for message in newest:
        message.session = session  # serialisers read it; no query per message
    return list(reversed(newest))


def messages_page(*, session: Session) -> QuerySet[Message]:
    """All messages of the session, newest first, for cursor paging."""
    return Message.objects.filter(team_id=session.team_id, session=session).order_by("-pk")


def messages_search(
    *, principal: Principal, session: Session, query_text: str, limit: int, exclude_ids: set[int] = frozenset()
) -> list[MessageHit]:
    """Earlier messages relevant to `query_text` (episodic memory), best first.

    Reach: the session itself and, when it names an end user, that user's other live
    sessions in the same workspace. The index keeps the search inside that reach (the
    session's or the (workspace, user) pair's owner token); the exact rule is then checked
    on each candidate here, so the database never has to join sessions to filter.
    """
    tokens = query_tokens(query_text)
    if not tokens or limit <= 0:
        return []
    team_id = principal.team.pk
    if session.user_id:
        within = [owner_token(team_id, "p", f"{session.workspace_id}\x1f{session.user_id}")]
    else:
        within = [owner_token(team_id, "s", session.pk)]

    def in_reach(values: dict) -> bool:
        if values["session__deleted_at"] is not None:
            return False
        if not session.user_id:
            return values["session"] == session.pk
        return values["session__workspace_id"] == session.workspace_id and values["session__user_id"] == session.user_id

    ranked = rank(Message.objects.filter(team=principal.team), tokens, weights=MESSAGE_FIELD_WEIGHTS, within=within,
                  fields=("session", "session__workspace_id", "session__user_id", "session__deleted_at"))
    scored = [item for item in ranked if item.pk not in exclude_ids and in_reach(item.values)][:limit]
    found = Message.objects.select_related("session").in_bulk([item.pk for item in scored])
    return [MessageHit(found[item.pk], item.score, item.matched) for item in scored if item.pk in found]
