"""Reading a user's profile document and its versions (seed 004 L2; R-EXTRACT, R-TEN).

A profile is user memory: readable by every principal of the team that reads the team's
user-scope nodes (memory.selectors.nodes.nodes_for_team) — not by a key limited to an
empty list of workspaces.
"""

import copy
from dataclasses import replace
from datetime import datetime

from django.db import connections, router
from django.db.models import QuerySet

from accounts.principal import Principal
from memory.errors import NotFound
from memory.models import Node, NodeStatus
from memory.profile_models import ProfileGenerator, UserProfile, UserProfileVersion
from memory.selectors.rows import columns, read
from memory.services.profiles import UNKNOWN_NODE, ProfileLine, profile_title, render_content, render_summary
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


SUCCESSOR_HOPS = 3  # corrections of a corrected memory followed since the layout; beyond, the line is left out


def profile_as_injected(*, principal: Principal, user_id: str, now: datetime) -> UserProfileVersion | None:
    """The current version of `user_id`'s profile as it holds now, which the context call injects
    and GET /profiles/{user_id} answers (R-CTX; R-STORE forgetting; S03): the document is laid
    out at consolidation, so until the next one a line may name a memory changed since. Here
    a line of a memory superseded since names its active successor instead (住在杭州 → 住在成都,
    following up to SUCCESSOR_HOPS corrections), one edited in place its title now, and one
    forgotten or expired is left out; the summary and content are then laid out from those lines
    by rules (a language model's text cannot be split by memory) in a copy, not saved, whose
    `changed_since_layout` says what changed ({"replaced": [[old, new], …], "edited": [ids],
    "left_out": [ids]}). A version whose memories all hold is returned as stored (no such
    attribute). One more statement than profile_get when it has lines (one per hop more when a
    line was superseded). Raises InvalidInput (bad user_id)."""
    version = profile_get(principal=principal, user_id=user_id)
    if version is None or not version.lines:
        return version
    lines = [line for line in map(ProfileLine.read, version.lines) if line is not None]
    wanted = sorted({line.node_id for line in lines if line.node_id != UNKNOWN_NODE})
    titles = _active_titles(principal, "id", wanted, now)
    if len(lines) == len(version.lines) and all(titles.get(line.node_id) == line.title for line in lines
                                                if line.node_id != UNKNOWN_NODE):
        return version
    successors = _successors(principal, [pk for pk in wanted if pk not in titles], now)
    changed: dict[str, list] = {"replaced": [], "edited": [], "left_out": []}
    kept: list[ProfileLine] = []
    for line in lines:
        if line.node_id == UNKNOWN_NODE:
            kept.append(line)
        elif line.node_id in titles:
            if titles[line.node_id] != line.title:
                changed["edited"].append(line.node_id)
                line = replace(line, title=titles[line.node_id], text=titles[line.node_id])
            kept.append(line)
        elif line.node_id in successors:
            new_id, title = successors[line.node_id]
            changed["replaced"].append([line.node_id, new_id])
            kept.append(replace(line, node_id=new_id, title=title, text=title))
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


def _active_titles(principal: Principal, column: str, ids: list[int], now: datetime) -> dict[int, str]:
    """{id: title, one line} of the team's active, unexpired nodes whose `column` (id or
    supersedes_id) is among `ids`, keyed by that column."""
    if not ids:
        return {}
    connection = connections[router.db_for_read(Node)]
    if connection.vendor == "postgresql":  # one statement text whatever the number of lines: prepared
        among, params = "= ANY(CAST(%s AS bigint[]))", [ids]
    else:
        among, params = f"IN ({', '.join(['%s'] * len(ids))})", ids
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column}, id, title FROM {Node._meta.db_table} WHERE team_id = %s AND {column} {among} "
                       "AND status = %s AND (expires_at IS NULL OR expires_at > %s)",
                       [principal.team.pk, *params, NodeStatus.ACTIVE, now])
        rows = cursor.fetchall()
    if column == "id":
        return {pk: profile_title(title) for pk, _, title in rows}
    return {old: (pk, profile_title(title)) for old, pk, title in rows}


def _successors(principal: Principal, ids: list[int], now: datetime) -> dict[int, tuple[int, str]]:
    """{id: (active successor's id, its title)} for the nodes of `ids` superseded by a node
    that is active now, directly or through at most SUCCESSOR_HOPS corrections."""
    found: dict[int, tuple[int, str]] = {}
    origin = {pk: pk for pk in ids}  # each node of the chain → the line's node
    for _ in range(SUCCESSOR_HOPS):
        if not origin:
            break
        for old, (pk, title) in _active_titles(principal, "supersedes_id", sorted(origin), now).items():
            found[origin[old]] = (pk, title)
        with connections[router.db_for_read(Node)].cursor() as cursor:  # the successors no longer active: one hop on
            unresolved = sorted(pk for pk in origin if origin[pk] not in found)
            if not unresolved:
                break
            cursor.execute(f"SELECT supersedes_id, id FROM {Node._meta.db_table} WHERE team_id = %s AND supersedes_id IN "
                           f"({', '.join(['%s'] * len(unresolved))}) AND status = %s",
                           [principal.team.pk, *unresolved, NodeStatus.SUPERSEDED])
            origin = {pk: origin[old] for old, pk in cursor.fetchall()}
    return found


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
