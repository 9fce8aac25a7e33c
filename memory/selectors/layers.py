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

from django.db import connection

from memory.models import Node, NodeStatus, NodeType, Scope, Session
from memory.selectors.nodes import Owner
from memory.selectors.ordering import node_order_key

DEFAULT_LIST_MAX = 20
OVERFLOW_REPORTED = 30  # standing nodes past the limit fetched per part, to be reported as over_limit
WORKSPACE_TYPES = (NodeType.CONSTRAINT, NodeType.DECISION, NodeType.FACT)
USER_TYPES = (NodeType.PREFERENCE, NodeType.CONSTRAINT)
_TABLE = Node._meta.db_table


def _like_prefix(text: str) -> str:
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
) -> dict[str, list[Node]]:
    """{section: nodes} for the caller's context, at most `limit` per section, plus
    "overflow": up to OVERFLOW_REPORTED more per part that did not make it (reported, not shown): the
    session's in the seed's order, the workspace's and the user's by importance, then the
    seed's order."""
    common = ["team_id = %s", "status = %s", "(expires_at IS NULL OR expires_at > %s)"]
    common_params: list = [team_id, NodeStatus.ACTIVE, connection.ops.adapt_datetimefield_value(now)]
    if domain:
        common.append("domain = %s")
        common_params.append(domain)
    if category_prefix:
        text = "/".join(category_prefix)
        common.append("(category_path_text = %s OR category_path_text LIKE %s ESCAPE '\\')")
        common_params += [text, _like_prefix(text)]

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
    fetch = limit + OVERFLOW_REPORTED  # the rows past `limit` are only reported (section "…_overflow")
    statements: list[str] = []
    params: list = []
    for index, (_, condition, part_params, types) in enumerate(parts):
        where = [*common, condition]
        if types:
            where.append(f"type IN ({', '.join(['%s'] * len(types))})")
        statements.append(
            f"SELECT part_{index}.id, {index} AS part, successor.id FROM (SELECT id FROM {_TABLE} "
            f"WHERE {' AND '.join(where)} ORDER BY importance DESC, updated_at DESC, id DESC "
            f"LIMIT {fetch}) AS part_{index} LEFT JOIN {_TABLE} AS successor "
            f"ON successor.supersedes_id = part_{index}.id"
        )
        params += [*common_params, *part_params, *types]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(statements), params)
        found = cursor.fetchall()

    nodes = Node.objects.in_bulk([pk for pk, _, _ in found])
    layers: dict[str, list[Node]] = {"session": [], "workspace": [], "user_preferences": []}
    for pk, part, successor in found:
        node = nodes.get(pk)
        if node is None:
            continue
        # What serialisers read, set here so that they issue no query per node.
        if successor is None:
            Node.superseded_by.related.set_cached_value(node, None)
        if session is not None and node.session_id == session.pk:
            node.session = session
        layers[parts[part][0]].append(node)

    def seed_key(node: Node) -> tuple:
        return node_order_key(node, now)

    ordered = {
        # The session's working memory in the seed's order (temporary constraints, newest first);
        # standing workspace and user memory by importance first.
        "session": sorted(layers["session"], key=seed_key),
        "workspace": sorted(layers["workspace"], key=lambda node: (-node.importance, seed_key(node))),
        "user_preferences": sorted(layers["user_preferences"], key=lambda node: (-node.importance, seed_key(node))),
    }
    result: dict[str, list[Node]] = {section: nodes[:limit] for section, nodes in ordered.items()}
    result["overflow"] = [node for nodes in ordered.values() for node in nodes[limit:]]
    return result
