"""Who is calling, for which team, with which rights (R-TEN).

A Principal is resolved once per request (API or dashboard) and handed to services and
selectors, which never look at the request themselves.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from accounts.models import AgentKey, KeyKind, Membership, Role, Team

SCOPES = ("session", "workspace", "user", "global")
AGENT_DEFAULT_WRITABLE_SCOPES = ("session", "workspace", "user")


class AccessDenied(Exception):
    """The principal may not do this; views turn it into 403 with the message."""


@dataclass(frozen=True)
class Principal:
    team: Team
    kind: str  # "agent" | "user" | "system"
    role: str  # viewer | editor | admin for users; agent | admin for keys; system
    agent_key: AgentKey | None = None
    user: Any = None
    workspace_ids: frozenset[str] | None = None  # None: every workspace
    writable_scopes: frozenset[str] = frozenset()

    @property
    def actor(self) -> str:
        """The audit trail's name for this principal: `key:<prefix>`, `user:<username>` or `system:<job>`."""
        if self.agent_key is not None:
            return f"key:{self.agent_key.prefix}"
        if self.user is not None:
            return f"user:{self.user.get_username()}"
        return f"system:{self.role}"

    @property
    def can_write(self) -> bool:
        return bool(self.writable_scopes)

    @property
    def is_admin(self) -> bool:
        return self.role == Role.ADMIN or self.role == KeyKind.ADMIN

    def can_read_workspace(self, workspace_id: str) -> bool:
        if self.workspace_ids is None:
            return True
        return workspace_id in self.workspace_ids

    def check_workspace(self, workspace_id: str) -> None:
        """Raise AccessDenied unless this principal may touch `workspace_id` ("" = no workspace).

        A key limited to workspaces must always name one of them; an empty limit denies all.
        """
        if self.workspace_ids is None:
            return
        if not workspace_id:
            raise AccessDenied("this key is limited to named workspaces; pass workspace_id")
        if workspace_id not in self.workspace_ids:
            raise AccessDenied(f"this key may not access workspace {workspace_id!r}")

    def check_write_scope(self, scope: str) -> None:
        if scope not in self.writable_scopes:
            if not self.writable_scopes:
                raise AccessDenied("this principal is read-only")
            raise AccessDenied(f"this principal may not write {scope!r} scope memories")


@dataclass(frozen=True)
class TeamChoice:
    team: Team
    role: str
    member: bool  # False: a superuser's view of a team they do not belong to


def team_choices(user: Any) -> list[TeamChoice]:
    """The teams a login may work in, by slug, with its role in each.

    Members get their memberships; a superuser also gets every other team, as admin.
    """
    memberships = Membership.objects.select_related("team").filter(user=user)
    choices = {item.team.slug: TeamChoice(item.team, item.role, True) for item in memberships}
    if user.is_superuser:
        for team in Team.objects.exclude(slug__in=list(choices)):
            choices[team.slug] = TeamChoice(team, Role.ADMIN, False)
    return [choices[slug] for slug in sorted(choices)]


def principal_for_key(key: AgentKey) -> Principal:
    scopes = frozenset(key.writable_scopes or ())
    if key.kind != KeyKind.ADMIN:
        scopes = scopes - {"global"}  # global memory is never written by an agent (R-TEN)
    workspaces = None if key.workspace_ids is None else frozenset(key.workspace_ids)
    return Principal(
        team=key.team,
        kind="agent",
        role=key.kind,
        agent_key=key,
        workspace_ids=workspaces,
        writable_scopes=scopes,
    )


def principal_for_user_role(team: Team, user: Any, role: str) -> Principal:
    if role == Role.ADMIN:
        scopes: Iterable[str] = SCOPES
    elif role == Role.EDITOR:
        scopes = AGENT_DEFAULT_WRITABLE_SCOPES
    else:
        scopes = ()
    return Principal(team=team, kind="user", role=role, user=user, writable_scopes=frozenset(scopes))


def system_principal(team: Team, job: str) -> Principal:
    """The actor for background jobs and management commands (audited as `system:<job>`)."""
    return Principal(team=team, kind="system", role=job, writable_scopes=frozenset(SCOPES))
