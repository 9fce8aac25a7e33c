"""Reads for the dashboard pages (R-UI): the memory browser and the node page.

Every function takes the request's `principal` as a required keyword and starts from its
team (and the workspaces it may read), like the other selectors; run them inside
`django_scopes.scope(team=principal.team)`.
"""

from typing import Any

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from accounts.principal import Principal
from memory.models import Message, Node, NodeStatus
from memory.selectors.nodes import node_list, node_text_filter, status_q


def node_browse(*, principal: Principal, filters: dict[str, Any], text: str = "") -> QuerySet[Node]:
    """The memory browser's rows: `node_list` filters plus the free-text search, newest first.

    `filters` takes node_list's keys (scope, workspace_id, user_id, session_id, domain,
    category_path_prefix, type, status, key); empty values are ignored. `text` matches
    every token of the text, Chinese and English alike (R-QUERY tokenisation); a text with
    no searchable token (only stop words or punctuation) matches nothing. Lazy queryset,
    ordered by -id, with the session joined and the source links prefetched.
    """
    nodes = node_list(principal=principal, filters=filters)
    if text.strip():
        nodes = node_text_filter(nodes, text, team_id=principal.team.pk)
    return nodes


def node_status_counts(*, principal: Principal, filters: dict[str, Any], text: str = "") -> dict[str, int]:
    """How many nodes each status has under the browser's filters, ignoring the status filter.

    Returns {status: count} for every NodeStatus value (zeros included) plus "all", in one
    aggregate query.
    """
    others = {name: value for name, value in filters.items() if name != "status"}
    nodes = node_browse(principal=principal, filters=others, text=text).order_by()
    now = timezone.now()
    counts = nodes.aggregate(
        all=Count("pk"),
        **{status: Count("pk", filter=status_q(status, now)) for status in NodeStatus.values},
    )
    return {name: counts[name] or 0 for name in ["all", *NodeStatus.values]}


def node_source_messages(*, principal: Principal, node: Node) -> list[Message]:
    """The messages `node` was derived from, in the order the writer gave, with their session.

    One query. Messages in a workspace the principal may not read, or of a soft-deleted
    session, are left out.
    """
    messages = Message.objects.filter(
        team=principal.team, node_links__node=node, session__deleted_at__isnull=True
    ).select_related("session")
    if principal.workspace_ids is not None:
        messages = messages.filter(
            Q(session__workspace_id__in=sorted(principal.workspace_ids)) | Q(session__workspace_id="")
        )
    return list(messages.order_by("node_links__position", "pk"))
