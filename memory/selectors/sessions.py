"""Reading sessions by the agent's ids."""

from accounts.principal import Principal
from memory.errors import NotFound
from memory.models import Session
from memory.services.sessions import SessionRef


def session_find(*, principal: Principal, ref: SessionRef, include_deleted: bool = False) -> Session | None:
    """The session named by `ref` in the principal's team, or None. Raises AccessDenied for a
    workspace the principal may not read."""
    principal.check_workspace(ref.workspace_id)
    sessions = Session.objects.filter(
        team=principal.team, workspace_id=ref.workspace_id, user_id=ref.user_id, external_id=ref.session_id
    )
    if not include_deleted:
        sessions = sessions.filter(deleted_at__isnull=True)
    return sessions.first()


def session_get(*, principal: Principal, ref: SessionRef) -> Session:
    """Like session_find, but raises NotFound when there is no such session."""
    session = session_find(principal=principal, ref=ref)
    if session is None:
        raise NotFound(f"no session {ref.session_id!r} for this workspace and user")
    return session
