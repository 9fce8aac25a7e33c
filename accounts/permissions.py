"""The one permission class: resolves the principal and its team once per request (R-TEN)."""

from rest_framework import exceptions, permissions

from accounts.models import AgentKey
from accounts.principal import Principal, principal_for_key, principal_for_user_role, team_choices

TEAM_HEADER = "HTTP_X_TEAM"


def resolve_user_principal(user, team_slug: str | None) -> Principal:
    """The principal of a logged-in user for `team_slug` (or, without one, their only team).

    Raises PermissionDenied when the team is not theirs or is ambiguous.
    """
    choices = team_choices(user)
    if team_slug:
        for choice in choices:
            if choice.team.slug == team_slug:
                return principal_for_user_role(choice.team, user, choice.role)
        raise exceptions.PermissionDenied(f"you are not a member of team {team_slug!r}")
    memberships = [choice for choice in choices if choice.member]
    if len(memberships) == 1:
        return principal_for_user_role(memberships[0].team, user, memberships[0].role)
    if not memberships:
        raise exceptions.PermissionDenied("you are not a member of any team")
    raise exceptions.PermissionDenied("you belong to several teams; send the X-Team header with the team slug")


class TeamPermission(permissions.BasePermission):
    """Allow a request when its principal has the view's `required_right`.

    Views declare `required_right` = "read" | "write" | "admin" (default: read for safe
    methods, write otherwise). The principal is stored as `request.principal`.
    """

    def has_permission(self, request, view) -> bool:
        principal = getattr(request, "principal", None)
        if principal is None:
            if isinstance(request.auth, AgentKey):
                principal = principal_for_key(request.auth)
            elif request.user is not None and request.user.is_authenticated:
                principal = resolve_user_principal(request.user, request.META.get(TEAM_HEADER))
            else:
                raise exceptions.NotAuthenticated("send 'Authorization: Bearer <key>'")
            # Also on the Django request, where the request log (memory.ops.middleware) reads it.
            request.principal = request._request.principal = principal
        right = getattr(view, "required_right", None)
        if right is None:
            right = "read" if request.method in permissions.SAFE_METHODS else "write"
        if right == "write" and not principal.can_write:
            raise exceptions.PermissionDenied("this principal is read-only")
        if right == "admin" and not principal.is_admin:
            raise exceptions.PermissionDenied("team admins only")
        return True
