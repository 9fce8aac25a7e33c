"""Reading a session's summary chain."""

from django.db.models import QuerySet

from accounts.principal import Principal
from memory.errors import NotFound
from memory.models import Summary
from memory.selectors.sessions import session_get
from memory.services.sessions import SessionRef


def summary_list(*, principal: Principal, ref: SessionRef) -> QuerySet[Summary]:
    """The session's summaries, oldest first (chain order). Raises NotFound for no such session."""
    session = session_get(principal=principal, ref=ref)
    return Summary.objects.filter(team=principal.team, session=session).select_related("session").order_by("pk")


def summary_latest(*, principal: Principal, ref: SessionRef) -> Summary:
    """The newest summary of a session; raises NotFound when there is none."""
    summary = summary_list(principal=principal, ref=ref).order_by("-pk").first()
    if summary is None:
        raise NotFound("this session has no summary yet")
    return summary
