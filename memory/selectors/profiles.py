"""Reading a user's profile document and its versions (seed 004 L2; R-EXTRACT, R-TEN).

A profile is user memory: readable by every principal of the team that reads the team's
user-scope nodes (memory.selectors.nodes.nodes_for_team) — not by a key limited to an
empty list of workspaces.
"""

import copy
from datetime import datetime

from django.db import connections, router
from django.db.models import QuerySet

from accounts.principal import Principal
from memory.errors import NotFound
from memory.models import Node, NodeStatus
from memory.profile_models import ProfileGenerator, UserProfile, UserProfileVersion
from memory.selectors.rows import columns, read
from memory.services.profiles import ProfileLine, render_content, render_summary
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


def profile_as_injected(*, principal: Principal, user_id: str, now: datetime) -> UserProfileVersion | None:
    """The current version of `user_id`'s profile as a context call injects it (R-CTX; R-STORE
    forgetting; S03): without the lines of memories that are no longer active as of `now`
    (superseded, forgotten or expired since the version was laid out), so the block never says a
    value beside its correction, nor what was forgotten, until the next consolidation lays the
    document out again. When a line is taken out, the summary and content are laid out from the
    rest by rules (a language model's text cannot be split by memory): a copy, not saved.
    Otherwise the version as stored. One more statement than profile_get when it has lines.
    Raises InvalidInput (bad user_id)."""
    version = profile_get(principal=principal, user_id=user_id)
    if version is None or not version.lines:
        return version
    wanted = sorted({int(item["node_id"]) for item in version.lines})
    connection = connections[router.db_for_read(Node)]
    if connection.vendor == "postgresql":  # one statement text whatever the number of lines: prepared
        among, params = "= ANY(CAST(%s AS bigint[]))", [wanted]
    else:
        among, params = f"IN ({', '.join(['%s'] * len(wanted))})", wanted
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {Node._meta.db_table} WHERE team_id = %s AND id {among} "
                       "AND status = %s AND (expires_at IS NULL OR expires_at > %s)",
                       [principal.team.pk, *params, NodeStatus.ACTIVE, now])
        active = {pk for (pk,) in cursor.fetchall()}
    if len(active) == len(wanted):
        return version
    kept = [line for line in map(ProfileLine.from_json, version.lines) if line.node_id in active]
    shown = copy.copy(version)
    shown.lines = [line.as_json() for line in kept]
    shown.source_node_ids = [pk for pk in version.source_node_ids if pk in active]
    shown.summary, shown.content = render_summary(kept), render_content(kept)
    shown.generator = ProfileGenerator.RULES
    return shown


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
