"""Conflict resolution at read time (seed 000 冲突消解; R-QUERY).

Two active nodes the caller reaches compete when they have the same domain, type, key and
conflict slot (one-valued key: any value; many-valued key: the same value) but different
owners — a session's temporary value and the user's standing one, say. The first in the
seed's order wins (narrower scope, unexpired, stated over inferred, temporary constraint over
long-term preference, newer, higher confidence, higher importance); the others are left out
as `conflict_lost`. An object value speaks only for its own fields, also across types (a
temporary constraint's {"spicy": "none"} outranks a preference's {"spicy": "high"}): a session's flavor_profile
{"spicy": "low"} does not silence the user's {"salt": "low"} (a newcomer's "以后做饭记得少放盐"
was left out of every block of that conversation), but does silence {"spicy": "high", "salt":
"low"} — a node is shown whole or not at all, so one that shares any field with a node before it
loses (losers_among). Within one owner the database already allows one active node per slot.
Nodes below the budget's minimum confidence are left out as `low_confidence`.
"""

from collections.abc import Iterable, Iterator
from datetime import datetime

from django.db import connections, router

from accounts.principal import Principal
from memory.models import Node, NodeStatus, Scope, Session
from memory.selectors.nodes import Owner, reach_sql
from memory.selectors.ordering import ORDER_FIELDS, seed_order_key
from memory.selectors.rows import values_of

PROBES_PER_STATEMENT = 2000  # (key, slot, user id, workspace id) combinations: 8,000 parameters (SQLite)


def _group(node) -> tuple:
    """The slot owners compete for: a key's, whatever the type (losers_among decides which
    types meet)."""
    return (node.domain, node.key, node.slot)


def _meet(type_a: str, fields_a: frozenset | None, type_b: str, fields_b: frozenset | None) -> bool:
    """Whether two values of one slot disagree: of one type, unless both are objects of other
    fields; of two types (a session's temporary constraint, the user's preference), only objects
    that share a field — the seed's "今天胃不舒服，少辣" constraint and "喜欢川菜" preference are
    both kept, but a session's {"spicy": "none"} and the user's {"spicy": "high"} are not."""
    if type_a == type_b and (fields_a is None or fields_b is None):
        return True
    return fields_a is not None and fields_b is not None and bool(fields_a & fields_b)


def conflict_losers(
    *, principal: Principal, nodes: Iterable[Node], owner: Owner, session: Session | None, now: datetime,
    scopes: tuple[str, ...] = (),
) -> dict[int, int]:
    """{node id: winning node id} for each keyed node of `nodes` that loses its conflict.

    One hand-written statement (on SQLite one per PROBES_PER_STATEMENT probes), over every active
    unexpired node the caller reaches (in `scopes`, default all; memory.selectors.nodes.reach_sql)
    in the same slots: the index node_slot_owner_idx is probed for each key, slot and owner id
    involved (every node the caller reaches has its user id or "", and its workspace id or "");
    the groups are matched here.
    """
    nodes = list(nodes)
    groups = {_group(node) for node in nodes if node.key}
    if not groups:
        return {}
    reach_condition, reach_params = reach_sql(owner=owner, session=session, scopes=scopes or tuple(Scope.values))
    pairs = sorted({(group[1], group[2]) for group in groups})
    users, workspaces = sorted({owner.user_id, ""}), sorted({owner.workspace_id, ""})
    names = ("id", "domain", "key", "slot", "value_json", *ORDER_FIELDS)
    using = router.db_for_read(Node)
    connection = connections[using]
    key = connection.ops.quote_name("key")
    # One index probe per key, slot and owner ids the caller reaches (node_slot_owner_idx):
    # `key IN (…) AND slot IN (…) AND …` made PostgreSQL 15 descend the index once per
    # combination of the lists (11 keys × 17 slots × 2 × 2 = 748 descents, 1.5 ms, for a
    # call's 17 keyed nodes); joined to the pairs themselves, it read the other users' nodes of
    # each pair too.
    probes = [(*pair, user, workspace) for pair in pairs for user in users for workspace in workspaces]
    rivals: list[dict] = []
    for groups_sql, groups_params in _probe_groups(connection, probes):
        sql = (f"WITH g (k, s, u, w) AS ({groups_sql}) "
               f"SELECT {', '.join('n.' + connection.ops.quote_name(name) for name in names)} "
               f"FROM g JOIN {Node._meta.db_table} n "
               f"ON n.team_id = %s AND n.{key} = g.k AND n.slot = g.s AND n.user_id = g.u AND n.workspace_id = g.w "
               f"WHERE n.status = %s AND (n.expires_at IS NULL OR n.expires_at > %s) AND {reach_condition}")
        with connection.cursor() as cursor:
            cursor.execute(sql, [*groups_params, principal.team.pk, NodeStatus.ACTIVE,
                                 connection.ops.adapt_datetimefield_value(now), *reach_params])
            rivals += values_of(Node, names, cursor.fetchall(), using=using)
    for values in rivals:
        values["pk"] = values["id"]
    return losers_among(rivals, nodes, now)


def _probe_groups(connection, probes: list[tuple[str, str, str, str]]) -> Iterator[tuple[str, list]]:
    """The probes (key, slot, user id, workspace id) as the rows of `g`: SQL and parameters,
    one or more statements' worth.

    On PostgreSQL, four array parameters: the statement's text is the same for any number of
    probes, so the server prepares it once (as VALUES lists it had 4 parameters a probe, a new
    text for each count, and was planned anew every call). Elsewhere a VALUES list,
    PROBES_PER_STATEMENT probes at a time, so that no statement nears SQLite's parameter limit.
    """
    if connection.vendor == "postgresql":
        yield ("SELECT * FROM unnest(CAST(%s AS text[]), CAST(%s AS text[]), CAST(%s AS text[]), "
               "CAST(%s AS text[]))", [list(column) for column in zip(*probes, strict=True)])
        return
    one = "(CAST(%s AS TEXT), CAST(%s AS TEXT), CAST(%s AS TEXT), CAST(%s AS TEXT))"
    for start in range(0, len(probes), PROBES_PER_STATEMENT):
        batch = probes[start : start + PROBES_PER_STATEMENT]
        yield f"VALUES {', '.join([one] * len(batch))}", [value for probe in batch for value in probe]


def _fields(value) -> frozenset | None:
    """The fields an object value sets (flavor_profile {"spicy": "low"} → {"spicy"}); None for
    any other value, which stands whole."""
    return frozenset(value) if isinstance(value, dict) and value else None


def losers_among(rivals: Iterable[dict], nodes: Iterable[Node], now: datetime) -> dict[int, int]:
    """{node id: winning node id} for the keyed `nodes` that lose to `rivals` (dicts of node
    columns: pk, domain, type, key, slot, value_json and ORDER_FIELDS; every active node the
    caller reaches in the nodes' slots). In the seed's order, a rival is kept unless a rival
    before it disagrees with it (_meet): a value that is not an object covers all of its type's
    slot, an object its own fields — a rival left out still covers its fields (the session's {"oil": "low"}
    leaves out the workspace's {"oil": "low", "spicy": "none"}, whose "spicy" still outranks the
    user's {"spicy": "high"}). A loser's winner is the first kept rival it shares a field with,
    or the winner of the first rival left out that it does. A node that is no rival itself (not
    reached) loses to the first rival it disagrees with (_meet)."""
    nodes = [node for node in nodes if node.key]
    groups = {_group(node) for node in nodes}
    ranked: dict[tuple, list[tuple]] = {}
    for values in rivals:
        group = (values["domain"], values["key"], values["slot"])
        if group in groups:
            ranked.setdefault(group, []).append((seed_order_key(values, now), values["pk"], values["type"],
                                                 _fields(values["value_json"])))
    for entries in ranked.values():
        entries.sort()  # the seed's order
    beaten: dict[int, int] = {}
    reached = {entry[1] for entries in ranked.values() for entry in entries}
    for entries in ranked.values():
        before: list[tuple[int, str, frozenset | None]] = []  # every rival so far, kept or not
        for _rank, pk, type_, fields in entries:
            shares = next((earlier for earlier, earlier_type, earlier_fields in before
                           if _meet(type_, fields, earlier_type, earlier_fields)), None)
            if shares is not None:
                beaten[pk] = beaten.get(shares, shares)
            before.append((pk, type_, fields))
    losers = {}
    for node in nodes:
        group = _group(node)
        if group not in ranked:
            continue
        if node.pk in beaten:
            losers[node.pk] = beaten[node.pk]
        elif node.pk not in reached:
            fields = _fields(node.value_json)
            winner = next((pk for _rank, pk, type_, rival_fields in ranked[group]
                           if _meet(node.type, fields, type_, rival_fields)), None)
            if winner is not None:
                losers[node.pk] = beaten.get(winner, winner)
    return losers


def below_confidence(nodes: Iterable[Node], floor: float) -> set[int]:
    """Ids of `nodes` under `floor`, the minimum confidence of the budget in force (policy
    precedence in memory.selectors.budget: team < workspace < request)."""
    return {node.pk for node in nodes if node.confidence < floor} if floor > 0 else set()
