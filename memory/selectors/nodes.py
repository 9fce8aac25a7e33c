"""Which nodes a caller can see, and reading them by id, list and history (R-TEN, R-QUERY)."""

import re
from dataclasses import dataclass
from typing import Any

from django.db.models import Prefetch, Q, QuerySet
from django.utils import timezone

from accounts.principal import Principal
from memory.errors import NotFound
from memory.models import AuditEvent, Message, Node, NodeSource, NodeStatus, Scope, Session
from memory.search.fields import TokenQuery
from memory.search.text import CJK_RANGES, function_bigrams, owner_token, query_tokens
from memory.selectors.rows import columns, read
from memory.services.sessions import SessionRef


def nodes_for_team(*, principal: Principal) -> QuerySet[Node]:
    """Every node of the principal's team that it may read (dashboard, browse, get by id).

    A key limited to workspaces reads their nodes and the team's user and global nodes; with
    an empty limit it reads nothing (an empty allow-list denies, S09).
    """
    nodes = Node.objects.filter(team=principal.team)
    if principal.workspace_ids is not None:
        if not principal.workspace_ids:
            return nodes.none()
        nodes = nodes.filter(
            Q(workspace_id__in=sorted(principal.workspace_ids)) | Q(workspace_id="", scope__in=[Scope.USER, Scope.GLOBAL])
        )
    return nodes


@dataclass(frozen=True)
class Owner:
    """The caller's context: which workspace, end user and session it speaks for."""

    workspace_id: str = ""
    user_id: str = ""
    session_id: str = ""

    def session_ref(self) -> SessionRef | None:
        if not self.session_id:
            return None
        return SessionRef(session_id=self.session_id, workspace_id=self.workspace_id, user_id=self.user_id)


def owner_session(*, principal: Principal, owner: Owner) -> Session | None:
    """The live session `owner` names in the principal's team (session id with its workspace
    and user ids), or None when it names none or it does not exist (or is soft-deleted).
    Hand-written: it runs on every context call (memory.selectors.rows)."""
    ref = owner.session_ref()
    if ref is None:
        return None
    found = read(Session, f"SELECT {columns(Session, 's')} FROM {Session._meta.db_table} s "
                          "WHERE s.team_id = %s AND s.workspace_id = %s AND s.user_id = %s AND s.external_id = %s "
                          "AND s.deleted_at IS NULL ORDER BY s.id LIMIT 1",
                 [principal.team.pk, ref.workspace_id, ref.user_id, ref.session_id])
    return found[0] if found else None


def reach(*, owner: Owner, session: Session | None, scopes=tuple(Scope.values)) -> Q:
    """The nodes of `scopes` that the caller's context reaches: global, the user's (by
    user_id), the workspace's (by workspace_id), the session's. An absent id reaches
    nothing of that scope (no id never means every id)."""
    parts = []
    if Scope.GLOBAL in scopes:
        parts.append(Q(scope=Scope.GLOBAL))
    if Scope.USER in scopes and owner.user_id:
        parts.append(Q(scope=Scope.USER, user_id=owner.user_id))
    if Scope.WORKSPACE in scopes and owner.workspace_id:
        parts.append(Q(scope=Scope.WORKSPACE, workspace_id=owner.workspace_id))
    if Scope.SESSION in scopes and session is not None:
        parts.append(Q(scope=Scope.SESSION, session=session))
    if not parts:
        return Q(pk__in=[])
    combined = parts[0]
    for part in parts[1:]:
        combined |= part
    return combined


def reach_sql(*, owner: Owner, session: Session | None, scopes=tuple(Scope.values), alias: str = "n") -> tuple[str, list]:
    """`reach` as an SQL condition over the node columns of table alias `alias`, with its
    parameters (same rule; "1 = 0" when it reaches nothing), for hand-written statements."""
    parts: list[str] = []
    params: list = []
    if Scope.GLOBAL in scopes:
        parts.append(f"{alias}.scope = %s")
        params.append(Scope.GLOBAL)
    if Scope.USER in scopes and owner.user_id:
        parts.append(f"({alias}.scope = %s AND {alias}.user_id = %s)")
        params += [Scope.USER, owner.user_id]
    if Scope.WORKSPACE in scopes and owner.workspace_id:
        parts.append(f"({alias}.scope = %s AND {alias}.workspace_id = %s)")
        params += [Scope.WORKSPACE, owner.workspace_id]
    if Scope.SESSION in scopes and session is not None:
        parts.append(f"({alias}.scope = %s AND {alias}.session_id = %s)")
        params += [Scope.SESSION, session.pk]
    if not parts:
        return "1 = 0", []
    return "(" + " OR ".join(parts) + ")", params


def reach_tokens(*, team_id: int, owner: Owner, session: Session | None, scopes=tuple(Scope.values)) -> list[str]:
    """The owner tokens of `reach` (same rule), for keyword search inside the index."""
    tokens = []
    if Scope.GLOBAL in scopes:
        tokens.append(owner_token(team_id, "g"))
    if Scope.USER in scopes and owner.user_id:
        tokens.append(owner_token(team_id, "u", owner.user_id))
    if Scope.WORKSPACE in scopes and owner.workspace_id:
        tokens.append(owner_token(team_id, "w", owner.workspace_id))
    if Scope.SESSION in scopes and session is not None:
        tokens.append(owner_token(team_id, "s", session.pk))
    return tokens


def unexpired(now=None) -> Q:
    now = now or timezone.now()
    return Q(expires_at__isnull=True) | Q(expires_at__gt=now)


def status_q(status: str, now=None) -> Q:
    """Nodes whose status as of now is `status` (Node.current_status): an active node past its
    expires_at counts as expired, not active."""
    now = now or timezone.now()
    if status == NodeStatus.ACTIVE:
        return Q(status=NodeStatus.ACTIVE) & unexpired(now)
    if status == NodeStatus.EXPIRED:
        return Q(status=NodeStatus.EXPIRED) | Q(status=NodeStatus.ACTIVE, expires_at__lte=now)
    return Q(status=status)


def followable(principal: Principal, via: str = "") -> Q:
    """The messages `principal` may follow, as a condition on Message (or, with `via`, on the
    relation leading to one, e.g. "message__"): of a conversation not forgotten (a soft-deleted
    one left every read path), in a workspace the principal may read or in none."""
    condition = Q(**{f"{via}session__deleted_at__isnull": True})
    if principal.workspace_ids is not None:
        condition &= (Q(**{f"{via}session__workspace_id__in": sorted(principal.workspace_ids)})
                      | Q(**{f"{via}session__workspace_id": ""}))
    return condition


def visible_source_links(principal: Principal) -> Prefetch:
    """The prefetch of a node's source links that `principal` may follow (`followable`), so a
    node shows as its `source_message_ids` only those. A user's memory spans workspaces, and a
    key limited to one does not learn the message ids of another. Writes read a node's links
    whole (memory.services.nodes.node_for_write)."""
    return Prefetch("source_links", queryset=NodeSource.objects.filter(followable(principal, via="message__")))


def visible_message_ids(principal: Principal, ids) -> set[int]:
    """Of the message ids `ids`, those of the team `principal` may follow (`followable`). One query."""
    return set(Message.objects.filter(followable(principal), team=principal.team, pk__in=list(ids))
               .values_list("pk", flat=True))


def node_history_audit(*, principal: Principal, node_ids: list[int]) -> list[AuditEvent]:
    """node_audit_trail's events, each naming as its `source_message_ids` only the messages
    `principal` may follow, as the nodes themselves do (the payloads are changed in memory,
    never saved). For GET /nodes/{id}/history."""
    events = list(node_audit_trail(principal=principal, node_ids=node_ids))
    cited = [event.payload for event in events
             if isinstance(event.payload, dict) and isinstance(event.payload.get("source_message_ids"), list)]
    visible = visible_message_ids(principal, {pk for payload in cited for pk in payload["source_message_ids"]
                                              if isinstance(pk, int)})
    for payload in cited:
        payload["source_message_ids"] = [pk for pk in payload["source_message_ids"] if pk in visible]
    return events


def nodes_readable(*, principal: Principal, owner: Owner) -> QuerySet[Node]:
    """nodes_for_team as the API reads it for a caller naming `owner`: for a key limited to
    workspaces, what it reads in the workspace `owner` names (R-TEN, README): that workspace's
    memory and its sessions' memory, global memory, and the user memory of the end user
    `owner` names (`reach` without a session; no user_id, no user memory). Every other
    principal reads what nodes_for_team gives, whatever `owner` names.
    Raises AccessDenied when the key names no workspace, or one outside its limit."""
    nodes = nodes_for_team(principal=principal)
    if principal.workspace_ids is None:
        return nodes
    principal.check_workspace(owner.workspace_id)
    there = Owner(workspace_id=owner.workspace_id, user_id=owner.user_id)
    return nodes.filter(reach(owner=there, session=None) | Q(scope=Scope.SESSION, workspace_id=owner.workspace_id))


def node_get(*, principal: Principal, node_id: int, owner: Owner | None = None) -> Node:
    """A node of the team by id, any status; with `owner`, only one of nodes_readable.
    Raises NotFound (also for a workspace the principal may not read, so existence does not
    leak), AccessDenied (nodes_readable)."""
    readable = nodes_for_team(principal=principal) if owner is None else nodes_readable(principal=principal, owner=owner)
    node = (
        readable
        .select_related("session", "supersedes", "superseded_by")
        .prefetch_related(visible_source_links(principal))
        .filter(pk=node_id)
        .first()
    )
    if node is None:
        raise NotFound(f"no node {node_id}")
    return node


def node_of_owner(*, principal: Principal, node_id: int, owner: Owner) -> Node:
    """node_get, when the node is within the reach of the user, workspace and session `owner`
    names (any node of the team when it names none), as memory_forget reads a node by id: an
    agent naming one end user cannot read or change another's memory by its id (R-TEN). A
    workspace named outside the key's limit is refused, as every other call refuses it, and
    so is naming none with a key limited to workspaces. Raises AccessDenied, NotFound."""
    principal.check_workspace(owner.workspace_id)
    node = node_get(principal=principal, node_id=node_id)
    if owner.user_id or owner.workspace_id or owner.session_id:
        session = owner_session(principal=principal, owner=owner)
        if not Node.objects.filter(team=principal.team, pk=node_id).filter(reach(owner=owner, session=session)).exists():
            raise NotFound(f"no node {node_id} of this user, workspace or session")
    return node


def node_chain(*, principal: Principal, node: Node, owner: Owner | None = None) -> list[Node]:
    """The whole supersede chain through `node`, oldest first (both directions).

    Only links the principal may read are followed (with `owner`, those of nodes_readable): a
    key limited to some workspaces does not see a predecessor or successor in another
    workspace. The walk reads ids (one small query per link); the nodes are then fetched at
    once, with what serialisers need.
    """
    readable = nodes_for_team(principal=principal) if owner is None else nodes_readable(principal=principal, owner=owner)
    ids = [node.pk]
    current = node.supersedes_id
    while current and current not in ids:
        found = readable.filter(pk=current).values_list("pk", "supersedes_id").first()
        if found is None:
            break
        ids.insert(0, found[0])
        current = found[1]
    current = node.pk
    while True:
        following = readable.filter(supersedes_id=current).values_list("pk", flat=True).first()
        if following is None or following in ids:
            break
        ids.append(following)
        current = following
    found = readable.select_related("session", "superseded_by").prefetch_related(
        visible_source_links(principal)).in_bulk(ids)
    return [found[pk] for pk in ids if pk in found]


def node_audit_trail(*, principal: Principal, node_ids: list[int]) -> QuerySet[AuditEvent]:
    return AuditEvent.objects.filter(team=principal.team, node_id__in=node_ids).order_by("created_at", "pk")


def node_list(*, principal: Principal, filters: dict[str, Any]) -> QuerySet[Node]:
    """Browse the team's nodes with optional filters (scope, workspace_id, user_id,
    session_id, domain, category_path_prefix, type, status, key); newest first. Without a
    status filter, soft-deleted nodes are left out.

    For a key limited to workspaces, workspace_id and user_id name whom it reads for, as in
    a search, instead of filtering columns: it lists nodes_readable (that workspace's and its
    sessions' memory, global memory, the named user's user memory); without a workspace_id,
    AccessDenied."""
    exact_names = ["scope", "workspace_id", "user_id", "domain", "type", "key"]
    if principal.workspace_ids is None:
        nodes = nodes_for_team(principal=principal)
    else:
        owner = Owner(workspace_id=filters.get("workspace_id", ""), user_id=filters.get("user_id", ""))
        nodes = nodes_readable(principal=principal, owner=owner)
        exact_names = [name for name in exact_names if name not in ("workspace_id", "user_id")]
    exact = {name: filters[name] for name in exact_names if filters.get(name)}
    nodes = nodes.filter(**exact)
    if filters.get("status"):
        nodes = nodes.filter(status_q(filters["status"]))
    else:
        nodes = nodes.exclude(status=NodeStatus.DELETED)  # forgotten nodes only when asked for (S05)
    if filters.get("session_id"):
        nodes = nodes.filter(session__external_id=filters["session_id"])
    prefix = filters.get("category_path_prefix")
    if prefix:
        nodes = nodes.filter(category_path_prefix_q(prefix))
    return nodes.select_related("session").prefetch_related(visible_source_links(principal)).order_by("-pk")


_HAN = re.compile(f"[{CJK_RANGES}]")
_NEGATION = re.compile("[不没别未无]")


def node_text_filter(nodes: QuerySet[Node], text: str, *, team_id: int) -> QuerySet[Node]:
    """Nodes (of team `team_id`) whose indexed text has every word of `text`, every Chinese
    character of it and one of its Chinese bigrams at least, and every bigram of it that
    negates (不/没/别/未/无): 没有钱 is not 有钱, 不能吃海鲜 not 能吃海鲜, while 我的女儿 still
    lists 用户的女儿. Not every
    bigram: one that spans two words of the query (节跳 of 圣诞节跳舞, 果冰 of 芒果冰淇淋) is rarely
    in the memory (Bart在圣诞节晚会上跳舞), and a review found such phrases listing nothing."""
    owner = (owner_token(team_id, "t"),)
    grams = query_tokens(text)
    # every bigram that negates (不能, 没吃, 没有): 不能吃海鲜 must not list 用户能吃海鲜
    negations = [gram for gram in [*grams, *function_bigrams(text)] if _NEGATION.search(gram) and len(gram) > 1]
    chinese = [token for token in grams if _HAN.match(token)]
    characters = [character for token in chinese for character in token]
    required = list(dict.fromkeys([*(token for token in grams if token not in chinese), *characters, *negations]))
    if not required:
        return nodes.none()
    found = nodes.filter(search_tokens__matches=TokenQuery(tuple(required), "all", owner))
    bigrams = tuple(token for token in chinese if len(token) > 1)
    return found.filter(search_tokens__matches=TokenQuery(bigrams, "any", owner)) if bigrams else found


def category_path_prefix_q(prefix: str | list[str]) -> Q:
    text = prefix if isinstance(prefix, str) else "/".join(prefix)
    text = text.strip("/")
    return Q(category_path_text=text) | Q(category_path_text__startswith=text + "/")


