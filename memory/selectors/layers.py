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
from memory.selectors.rows import nodes_by_id

DEFAULT_LIST_MAX = 20
OVERFLOW_REPORTED = 30  # standing nodes past the limit fetched per part, to be reported as over_limit
WORKSPACE_TYPES = (NodeType.CONSTRAINT, NodeType.DECISION, NodeType.FACT)
USER_TYPES = (NodeType.PREFERENCE, NodeType.CONSTRAINT)
_TABLE = Node._meta.db_table
SECTION_NUMBER = {"session": 0, "workspace": 1, "user_preferences": 2}
SECTIONS_BY_NUMBER = {number: section for section, number in SECTION_NUMBER.items()}
_ORDER_COLUMNS = "scope, type, explicit, expires_at, updated_at, confidence, importance"
_SEED_ORDER = seed_order_sql("picked")


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
    their session and successor (memory.selectors.rows.nodes_by_id)."""
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
    # The final order, in SQL so that only the nodes shown become model instances: the session's
    # in the seed's order; the workspace's (with global) and the user's by importance, then the
    # seed's order (memory.selectors.ordering).
    sql = (
        f"SELECT picked.id, picked.section FROM ({' UNION ALL '.join(statements)}) AS picked "
        f"ORDER BY picked.section, CASE WHEN picked.section = 0 THEN 0 ELSE picked.importance END DESC, "
        f"{_SEED_ORDER}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchall()

    shown: dict[str, list[int]] = {section: [] for section in SECTION_NUMBER}
    overflow: list[int] = []
    for pk, number in found:
        rows = shown[SECTIONS_BY_NUMBER[number]]
        if len(rows) < limit:
            rows.append(pk)
        else:
            overflow.append(pk)
    nodes = nodes_by_id(team_id=team_id, pks=[pk for rows in shown.values() for pk in rows])
    result: dict[str, list] = {section: [nodes[pk] for pk in rows if pk in nodes] for section, rows in shown.items()}
    result["overflow"] = overflow
    return result
