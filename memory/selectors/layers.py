"""The context's default layers, read in one statement (R-CTX; seed 000 默认自动检索).

Sections and what they hold (active, unexpired nodes only):
  session           — every node of the caller's session (L4),
  workspace         — constraints, decisions and facts of the workspace and of the team's
                      global memory (L1),
  user_preferences  — preferences and constraints of the end user (L2).
Each owner's part takes its top `limit` (at most DEFAULT_LIST_MAX) by importance, newest first, in the order
of the rank indexes (memory.models.Node.Meta), so the database reads only that many rows;
the parts are joined with UNION ALL in one round trip. This is the hot path of every context
call, so the statement is written out here instead of being compiled by the ORM each time.
"""

from datetime import datetime

from django.db import connections, router

from memory.models import Node, NodeStatus, NodeType, Scope, Session
from memory.selectors.nodes import Owner
from memory.selectors.ordering import seed_order_sql
from memory.selectors.rows import NODE_JOINS, NODE_SELECT, nodes_of_rows

DEFAULT_LIST_MAX = 20
OVERFLOW_REPORTED = 30  # standing nodes past the limit fetched per part, to be reported as over_limit
WORKSPACE_TYPES = (NodeType.CONSTRAINT, NodeType.DECISION, NodeType.FACT)
USER_TYPES = (NodeType.PREFERENCE, NodeType.CONSTRAINT)
_TABLE = Node._meta.db_table
SECTION_NUMBER = {"session": 0, "workspace": 1, "user_preferences": 2}
SECTIONS_BY_NUMBER = {number: section for section, number in SECTION_NUMBER.items()}
_ORDER_COLUMNS = "scope, type, explicit, expires_at, updated_at, confidence, importance"


def like_prefix(text: str) -> str:
    """The LIKE pattern (escape character backslash) of the category paths under `text`."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"


def default_layers(
    *,
    team_id: int,
    owner: Owner,
    session: Session | None,
    now: datetime,
    domain: str = "",
    category_prefix: tuple[str, ...] = (),
    limit: int = DEFAULT_LIST_MAX,
) -> dict[str, list]:
    """{section: nodes} for the caller's context, at most `limit` per section — the session's in
    the seed's order, the workspace's and the user's by importance, then the seed's order —
    plus "overflow": the ids of up to OVERFLOW_REPORTED more per part that did not make it
    (reported as over_limit, not shown). Nodes come without search_tokens (deferred), with
    their session and successor (memory.selectors.rows.nodes_of_rows); one statement."""
    connection = connections[router.db_for_read(Node)]  # the replica on a dashboard page (config.db_router)
    common = ["team_id = %s", "status = %s", "(expires_at IS NULL OR expires_at > %s)"]
    common_params: list = [team_id, NodeStatus.ACTIVE, connection.ops.adapt_datetimefield_value(now)]
    if domain:
        common.append("domain = %s")
        common_params.append(domain)
    if category_prefix:
        text = "/".join(category_prefix)
        common.append("(category_path_text = %s OR category_path_text LIKE %s ESCAPE '\\')")
        common_params += [text, like_prefix(text)]

    parts: list[tuple[str, str, list, tuple[str, ...]]] = []  # section, condition, params, types
    if session is not None:
        parts.append(("session", "session_id = %s AND scope = %s", [session.pk, Scope.SESSION], ()))
    if owner.workspace_id:
        parts.append(("workspace", "workspace_id = %s AND scope = %s", [owner.workspace_id, Scope.WORKSPACE],
                      WORKSPACE_TYPES))
    parts.append(("workspace", "workspace_id = %s AND scope = %s", ["", Scope.GLOBAL], WORKSPACE_TYPES))
    if owner.user_id:
        parts.append(("user_preferences", "user_id = %s AND scope = %s", [owner.user_id, Scope.USER], USER_TYPES))

    limit = max(1, min(int(limit), DEFAULT_LIST_MAX))
    fetch = limit + OVERFLOW_REPORTED  # the rows past `limit` are only reported, by id
    statements: list[str] = []
    params: list = []
    for index, (section, condition, part_params, types) in enumerate(parts):
        where = [*common, condition]
        if types:
            where.append(f"type IN ({', '.join(['%s'] * len(types))})")
        statements.append(
            f"SELECT * FROM (SELECT id, {SECTION_NUMBER[section]} AS section, {_ORDER_COLUMNS} FROM {_TABLE} "
            f"WHERE {' AND '.join(where)} ORDER BY importance DESC, updated_at DESC, id DESC "
            f"LIMIT {fetch}) AS part_{index}"
        )
        params += [*common_params, *part_params, *types]
    # The final order, in SQL, with each part's rows numbered in it so that only the nodes shown
    # (the first `limit` of each section) are read whole and become model instances: the
    # session's in the seed's order; the workspace's (with global) and the user's by importance,
    # then the seed's order (memory.selectors.ordering).
    def order(alias: str) -> str:
        return f"CASE WHEN {alias}.section = 0 THEN 0 ELSE {alias}.importance END DESC, {seed_order_sql(alias)}"

    sql = (
        f"SELECT picked.id, picked.section, {NODE_SELECT} FROM (SELECT unioned.*, ROW_NUMBER() OVER "
        f"(PARTITION BY unioned.section ORDER BY {order('unioned')}) AS place FROM "
        f"({' UNION ALL '.join(statements)}) AS unioned) AS picked "
        f"LEFT JOIN {_TABLE} n ON n.id = CASE WHEN picked.place <= {limit} THEN picked.id END AND n.team_id = %s "
        f"{NODE_JOINS} "
        f"ORDER BY picked.section, {order('picked')}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, team_id])
        found = cursor.fetchall()

    result: dict[str, list] = {section: [] for section in SECTION_NUMBER}
    overflow: list[int] = []
    read_whole = [index for index, row in enumerate(found) if row[2] is not None]
    node_at = dict(zip(read_whole, nodes_of_rows([found[index][2:] for index in read_whole], using=connection.alias),
                       strict=True))
    for index, (pk, number, *_) in enumerate(found):
        rows = result[SECTIONS_BY_NUMBER[number]]
        if index in node_at and len(rows) < limit:
            rows.append(node_at[index])
        else:
            overflow.append(pk)
    result["overflow"] = overflow
    return result
