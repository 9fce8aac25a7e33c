"""Reading a user's profile document and its versions (seed 004 L2; R-EXTRACT, R-TEN).

A profile is user memory: readable by every principal of the team that reads the team's
user-scope nodes (memory.selectors.nodes.nodes_for_team) — not by a key limited to an
empty list of workspaces.
"""

from django.db.models import QuerySet

from accounts.principal import Principal
from memory.errors import NotFound
from memory.profile_models import UserProfile, UserProfileVersion
from memory.selectors.rows import columns, read
from memory.validation import clean_identity


def _reads_user_memory(principal: Principal) -> bool:
    return principal.workspace_ids is None or bool(principal.workspace_ids)


def profile_get(*, principal: Principal, user_id: str) -> UserProfileVersion | None:
    """The current version of `user_id`'s profile in the principal's team, or None when it
    has none (or the principal may not read user memory). Raises InvalidInput (bad user_id).
    Hand-written: it runs on every context call (memory.selectors.rows)."""
    user_id = clean_identity(user_id, field="user_id", required=True)
    if not _reads_user_memory(principal):
        return None
    found = read(UserProfileVersion,
                 f"SELECT {columns(UserProfileVersion, 'v')} FROM {UserProfileVersion._meta.db_table} v "
                 "WHERE v.team_id = %s AND v.user_id = %s AND v.version = ("
                 f"SELECT p.current_version FROM {UserProfile._meta.db_table} p WHERE p.team_id = %s AND p.user_id = %s "
                 "LIMIT 1) ORDER BY v.id LIMIT 1",
                 [principal.team.pk, user_id, principal.team.pk, user_id])
    return found[0] if found else None


def profile_version_get(*, principal: Principal, user_id: str, version: int) -> UserProfileVersion:
    """One version of `user_id`'s profile. Raises InvalidInput, NotFound."""
    user_id = clean_identity(user_id, field="user_id", required=True)
    found = profile_versions(principal=principal, user_id=user_id).filter(version=version).first()
    if found is None:
        raise NotFound(f"no version {version} of the profile of user {user_id!r}")
    return found


def profile_versions(*, principal: Principal, user_id: str) -> QuerySet[UserProfileVersion]:
    """Every version of `user_id`'s profile, newest first (none for a principal that may not
    read user memory). Raises InvalidInput (bad user_id)."""
    user_id = clean_identity(user_id, field="user_id", required=True)
    versions = UserProfileVersion.objects.filter(team=principal.team, user_id=user_id)
    if not _reads_user_memory(principal):
        return versions.none()
    return versions.order_by("-version")
