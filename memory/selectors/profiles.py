"""Reading a user's profile document and its versions (seed 004 L2; R-EXTRACT, R-TEN).

A profile is user memory: readable by every principal of the team that reads the team's
user-scope nodes (memory.selectors.nodes.nodes_for_team) — not by a key limited to an
empty list of workspaces.
"""

import copy
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from django.db import connections, router
from django.db.models import QuerySet

from accounts.principal import Principal
from memory.errors import NotFound
from memory.models import Node, NodeStatus, Scope
from memory.profile_models import ProfileGenerator, UserProfile, UserProfileVersion
from memory.selectors.rows import columns, instances, read
from memory.services.audit import audit_merge_survivors
from memory.services.profiles import (
    UNKNOWN_NODE,
    ProfileLine,
    line_text_of,
    profile_title,
    render_content,
    render_summary,
)
from memory.validation import clean_identity


def _reads_user_memory(principal: Principal) -> bool:
    return principal.workspace_ids is None or bool(principal.workspace_ids)


_CURRENT = (f"FROM {UserProfileVersion._meta.db_table} v WHERE v.team_id = %s AND v.user_id = %s AND v.version = ("
            f"SELECT p.current_version FROM {UserProfile._meta.db_table} p WHERE p.team_id = %s AND p.user_id = %s "
            "LIMIT 1) ORDER BY v.id LIMIT 1")
# Whether any of the version's user's user memory was written (edited, superseded, forgotten,
# added: node_user_idx) or expired (node_team_status_idx) after the version was laid out; always
# for a rollback's copy, whose lines were laid out with the version it copies. "After" starts
# LAYOUT_MARGIN_SECONDS before the layout: a forget stamps updated_at when its transaction begins
# and commits later, so a consolidation in between lays the memory out with a stamp before its own.
LAYOUT_MARGIN_SECONDS = 300
_NODES = Node._meta.db_table
_SINCE = {
    "postgresql": f"v.created_at - interval '{LAYOUT_MARGIN_SECONDS} seconds'",
    "sqlite": f"datetime(v.created_at, '-{LAYOUT_MARGIN_SECONDS} seconds')",
}


def _written_since(vendor: str) -> str:
    since = _SINCE[vendor]
    return (
        "(v.rolled_back_from IS NOT NULL "
        f"OR EXISTS (SELECT 1 FROM {_NODES} n WHERE n.team_id = v.team_id AND n.user_id = v.user_id AND n.status IN "
        f"('{NodeStatus.ACTIVE}', '{NodeStatus.SUPERSEDED}', '{NodeStatus.DELETED}', '{NodeStatus.EXPIRED}') "
        f"AND n.updated_at > {since} AND n.scope = '{Scope.USER}') "
        f"OR EXISTS (SELECT 1 FROM {_NODES} n WHERE n.team_id = v.team_id AND n.status = '{NodeStatus.ACTIVE}' "
        f"AND n.expires_at > {since} AND n.expires_at <= %s AND n.user_id = v.user_id AND n.scope = '{Scope.USER}'))")


def profile_get(*, principal: Principal, user_id: str) -> UserProfileVersion | None:
    """The current version of `user_id`'s profile in the principal's team, or None when it
    has none (or the principal may not read user memory). Raises InvalidInput (bad user_id).
    Hand-written: it runs on every context call (memory.selectors.rows)."""
    user_id = clean_identity(user_id, field="user_id", required=True)
    if not _reads_user_memory(principal):
        return None
    found = read(UserProfileVersion, f"SELECT {columns(UserProfileVersion, 'v')} {_CURRENT}",
                 [principal.team.pk, user_id, principal.team.pk, user_id])
    return found[0] if found else None


def _current_and_changed(principal: Principal, user_id: str, now: datetime) -> tuple[UserProfileVersion | None, bool]:
    """profile_get, and whether the user's memory changed since the version was laid out (as of
    `now`), in one statement."""
    user_id = clean_identity(user_id, field="user_id", required=True)
    if not _reads_user_memory(principal):
        return None, False
    using = router.db_for_read(UserProfileVersion)
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT {columns(UserProfileVersion, 'v')}, {_written_since(connections[using].vendor)} {_CURRENT}",
                       [now, principal.team.pk, user_id, principal.team.pk, user_id])
        rows = cursor.fetchall()
    if not rows:
        return None, False
    return instances(UserProfileVersion, rows, using=using)[0], bool(rows[0][-1])


LONG_AGO = datetime(1970, 1, 1, tzinfo=UTC)
SUCCESSOR_HOPS = 3  # corrections of a corrected memory followed since the layout; beyond, the line is left out


def profile_as_injected(*, principal: Principal, user_id: str, now: datetime) -> UserProfileVersion | None:
    """The current version of `user_id`'s profile as it holds now, which the context call injects
    and GET /profiles/{user_id} answers (R-CTX; R-STORE forgetting; S03): the document is laid
    out at consolidation, so until the next one a line may name a memory changed since. Here
    a line of a memory superseded since names its active successor instead (住在杭州 → 住在成都,
    following up to SUCCESSOR_HOPS corrections; only the user's own user memory: a correction
    kept in one conversation or workspace never reaches the profile), one folded into a duplicate
    names the survivor (a memory.node.merged event), one edited since reads as
    the memory does now, and one forgotten or expired is left out; the summary and content are
    then laid out from those lines by rules (a language model's text cannot be split by memory)
    in a copy, not saved, whose `changed_since_layout` says what changed ({"replaced": [[old,
    new], …], "edited": [ids], "left_out": [ids]}). A version whose memories all hold is returned
    as stored (no such attribute), read in profile_get's one statement (_current_and_changed: 0.1
    ms more in the server); one more when the user's memory changed since, one per hop more
    when a line was superseded. Raises InvalidInput (bad user_id)."""
    version, changed_since = _current_and_changed(principal, user_id, now)
    if version is None or not version.lines or not changed_since:
        return version
    lines = [line for line in map(ProfileLine.read, version.lines) if line is not None]
    wanted = sorted({line.node_id for line in lines if line.node_id != UNKNOWN_NODE})
    stored = {line.node_id: line.text for line in lines}
    now_said = _as_said_now(principal, version, stored, "id", wanted, now)
    if len(lines) == len(version.lines) and all(now_said.get(line.node_id, (0, "", ""))[1:] == (line.title, line.text)
                                                for line in lines if line.node_id != UNKNOWN_NODE):
        return version
    successors = _successors(principal, version, stored, [pk for pk in wanted if pk not in now_said], now)
    successors.update(_merged_into(principal, version, stored, [pk for pk in wanted
                                                                if pk not in now_said and pk not in successors], now))
    changed: dict[str, list] = {"replaced": [], "edited": [], "left_out": []}
    kept: list[ProfileLine] = []
    for line in lines:
        if line.node_id == UNKNOWN_NODE:
            kept.append(line)
        elif line.node_id in now_said:
            _, title, text = now_said[line.node_id]
            if (title, text) != (line.title, line.text):
                changed["edited"].append(line.node_id)
                line = replace(line, title=title, text=text)
            kept.append(line)
        elif line.node_id in successors:
            new_id, title, text = successors[line.node_id]
            changed["replaced"].append([line.node_id, new_id])
            kept.append(replace(line, node_id=new_id, title=title, text=text))
        else:
            changed["left_out"].append(line.node_id)
    kept = list({line.node_id if line.node_id != UNKNOWN_NODE else -1 - index: line
                 for index, line in enumerate(kept)}.values())  # two lines corrected into one memory: once
    shown = copy.copy(version)
    shown.lines = [line.as_json() for line in kept]
    shown.source_node_ids = sorted({line.node_id for line in kept if line.node_id != UNKNOWN_NODE})
    shown.summary, shown.content = render_summary(kept), render_content(kept)
    shown.generator = ProfileGenerator.RULES
    shown.changed_since_layout = changed
    return shown


def _as_said_now(principal: Principal, version: UserProfileVersion, stored: dict[int, str], column: str,
                 ids: list[int], now: datetime) -> dict[int, tuple[int, str, str]]:
    """{key: (id, title, line text)} of `version`'s user's active, unexpired user-scope nodes
    whose `column` (id or supersedes_id) is among `ids`, keyed by that column. A node changed
    after the version was laid out has its line text read again (title and content); the
    others keep the text their line has in `stored` ({node id: line text})."""
    if not ids:
        return {}
    connection = connections[router.db_for_read(Node)]
    if connection.vendor == "postgresql":  # one statement text whatever the number of lines: prepared
        among, params = "= ANY(CAST(%s AS bigint[]))", [ids]
    else:
        among, params = f"IN ({', '.join(['%s'] * len(ids))})", ids
    with connection.cursor() as cursor:
        laid_out = (version.created_at - timedelta(seconds=LAYOUT_MARGIN_SECONDS)
                    if version.rolled_back_from is None else LONG_AGO)
        cursor.execute(f"SELECT {column}, id, title, CASE WHEN updated_at > %s THEN content END "
                       f"FROM {Node._meta.db_table} WHERE team_id = %s AND {column} {among} AND scope = %s AND user_id = %s "
                       "AND status = %s AND (expires_at IS NULL OR expires_at > %s)",
                       [laid_out, principal.team.pk, *params, Scope.USER, version.user_id,
                        NodeStatus.ACTIVE, now])
        rows = cursor.fetchall()
    said = {}
    for key, pk, title, content in rows:
        text = line_text_of(title, content) if content is not None or pk not in stored else stored[pk]
        said[key] = (pk, profile_title(title), text)
    return said


def _successors(principal: Principal, version: UserProfileVersion, stored: dict[int, str], ids: list[int],
                now: datetime) -> dict[int, tuple[int, str, str]]:
    """{id: (active successor's id, title, line text)} for the nodes of `ids` superseded by a
    user memory of the same user that is active now, directly or through at most SUCCESSOR_HOPS
    corrections."""
    found: dict[int, tuple[int, str, str]] = {}
    origin = {pk: pk for pk in ids}  # each node of the chain → the line's node
    for _ in range(SUCCESSOR_HOPS):
        if not origin:
            break
        for old, (pk, title, text) in _as_said_now(principal, version, stored, "supersedes_id", sorted(origin), now).items():
            found[origin[old]] = (pk, title, text)
        unresolved = sorted(pk for pk in origin if origin[pk] not in found)
        if not unresolved:
            break
        with connections[router.db_for_read(Node)].cursor() as cursor:  # successors corrected again: one hop on
            cursor.execute(f"SELECT supersedes_id, id FROM {Node._meta.db_table} WHERE team_id = %s AND supersedes_id IN "
                           f"({', '.join(['%s'] * len(unresolved))}) AND scope = %s AND user_id = %s AND status = %s",
                           [principal.team.pk, *unresolved, Scope.USER, version.user_id, NodeStatus.SUPERSEDED])
            origin = {pk: origin[old] for old, pk in cursor.fetchall()}
    return found


def _merged_into(principal: Principal, version: UserProfileVersion, stored: dict[int, str], ids: list[int],
                 now: datetime) -> dict[int, tuple[int, str, str]]:
    """{id: (survivor's id, title, line text)} for the nodes of `ids` folded into another as a
    duplicate (a memory.node.merged event: consolidation, or a capture note an agent said again)
    whose survivor is the same user's active user memory: it says the same thing."""
    into = audit_merge_survivors(team_id=principal.team.pk, node_ids=ids)
    survivors = _as_said_now(principal, version, stored, "id", sorted(set(into.values())), now)
    return {pk: survivors[target] for pk, target in into.items() if target in survivors}


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
