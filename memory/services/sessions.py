"""Sessions: resolved from the agent's (workspace_id, user_id, session_id) within the team."""

from dataclasses import dataclass

from accounts.principal import Principal
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


def session_get_or_create(*, principal: Principal, ref: SessionRef) -> Session:
    """The session named by `ref` in the principal's team, created on first use.

    Raises AccessDenied when the principal may not touch the workspace.
    """
    principal.check_workspace(ref.workspace_id)
    session, _ = Session.objects.get_or_create(
        team=principal.team,
        workspace_id=ref.workspace_id,
        user_id=ref.user_id,
        external_id=ref.session_id,
    )
    return session
