"""Reads of a team's members and agent keys for the dashboard's administration pages (R-TEN, R-UI)."""

from django.db.models import F, QuerySet

from accounts.models import AgentKey, Membership, Role, Team


def member_list(*, team: Team) -> list[Membership]:
    """The team's memberships with their login, admins first, then by username (one query)."""
    order = {Role.ADMIN: 0, Role.EDITOR: 1, Role.VIEWER: 2}
    memberships = Membership.objects.filter(team=team).select_related("user")
    return sorted(memberships, key=lambda item: (order.get(item.role, 3), item.user.get_username()))


def agent_key_list(*, team: Team) -> QuerySet[AgentKey]:
    """The team's agent keys with their creator, in one query: live ones first (newest first),
    then the revoked (latest revoked first). Rows hold the prefix and the hash only: no raw key
    can be read back."""
    keys = AgentKey.objects.filter(team=team).select_related("created_by")
    return keys.order_by(F("revoked_at").desc(nulls_first=True), "-created_at", "-pk")
