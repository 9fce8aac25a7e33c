"""Sessions: resolved from the agent's (workspace_id, user_id, session_id) within the team."""

from dataclasses import dataclass

from accounts.principal import Principal
from memory.errors import Conflict
from memory.models import Session
from memory.validation import clean_identity


@dataclass(frozen=True)
class SessionRef:
    """The agent's name for a conversation. Two refs differing in any part are different sessions."""

    session_id: str
    workspace_id: str = ""
    user_id: str = ""

    @classmethod
    def of(cls, *, session_id: str, workspace_id: str | None = "", user_id: str | None = "") -> "SessionRef":
        """Validate the three ids (1–128 printable characters; session_id required)."""
        return cls(
            session_id=clean_identity(session_id, field="session_id", required=True),
            workspace_id=clean_identity(workspace_id or "", field="workspace_id"),
            user_id=clean_identity(user_id or "", field="user_id"),
        )

    @property
    def sort_key(self) -> tuple[str, str, str]:
        return (self.workspace_id, self.user_id, self.session_id)


def session_get_or_create(*, principal: Principal, ref: SessionRef) -> Session:
    """The session named by `ref` in the principal's team, created on first use, locked for
    the rest of the caller's transaction (so a concurrent forget of it waits or is waited
    for; see memory.services.forget). Must run inside a transaction.

    Raises AccessDenied when the principal may not touch the workspace, and Conflict when
    the session was soft-deleted: a forgotten conversation takes no new messages or session
    memories (a hard-deleted one is gone, and the same ids then start a new session).
    """
    principal.check_workspace(ref.workspace_id)
    session, _ = Session.objects.select_for_update().get_or_create(
        team=principal.team,
        workspace_id=ref.workspace_id,
        user_id=ref.user_id,
        external_id=ref.session_id,
    )
    if session.deleted_at is not None:
        raise Conflict(f"session {ref.session_id!r} was deleted; it takes no new messages or memories")
    return session
