"""The one permission class: resolves the principal and its team once per request (R-TEN)."""

from django_scopes import scopes_disabled
from rest_framework import exceptions, permissions

from accounts.models import AgentKey, Membership, Role, Team
from accounts.principal import Principal, principal_for_key, principal_for_membership, principal_for_user_role

TEAM_HEADER = "HTTP_X_TEAM"


def resolve_user_principal(user, team_slug: str | None) -> Principal:
    """The principal of a logged-in user for `team_slug` (or their only team).

    Raises PermissionDenied when the team is not theirs or is ambiguous.
    """
    with scopes_disabled():
        memberships = Membership.objects.select_related("team", "user").filter(user=user)
        if team_slug:
            membership = memberships.filter(team__slug=team_slug).first()
            if membership is not None:
                return principal_for_membership(membership)
            if user.is_superuser:
                team = Team.objects.filter(slug=team_slug).first()
                if team is not None:
                    return principal_for_user_role(team, user, Role.ADMIN)
            raise exceptions.PermissionDenied(f"you are not a member of team {team_slug!r}")
        found = list(memberships[:2])
    if len(found) == 1:
        return principal_for_membership(found[0])
    if not found:
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
            request.principal = principal
        right = getattr(view, "required_right", None)
        if right is None:
            right = "read" if request.method in permissions.SAFE_METHODS else "write"
        if right == "write" and not principal.can_write:
            raise exceptions.PermissionDenied("this principal is read-only")
        if right == "admin" and not principal.is_admin:
            raise exceptions.PermissionDenied("team admins only")
        return True
