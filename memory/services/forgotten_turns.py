"""Turns that say what was forgotten (R-STORE provable forgetting, R-CTX): when a memory is
forgotten, the messages it was taken from — and the assistant's answer right after each — are
no longer recalled as earlier messages (Message.memory_forgotten_at; memory.selectors.messages
skips them); a restore recalls again what its own forget hid. Called inside the forget's or the
restore's transaction (memory.services.nodes.node_delete, memory.services.forgetting)."""

from datetime import datetime

from django.db.models import OuterRef, Subquery

from accounts.principal import Principal
from memory.models import Message, MessageRole, Node, NodeSource, NodeStatus


def _said_by(principal: Principal, node: Node) -> list[int]:
    """The messages `node` was taken from, and the assistant's answer right after each (an answer
    "好的，已经记下：你对花生过敏" says it again)."""
    sources = list(NodeSource.objects.filter(node=node).values_list("message_id", flat=True))
    following = Message.objects.filter(team=principal.team, session_id=OuterRef("session_id"),
                                       pk__gt=OuterRef("pk")).order_by("pk")
    replies = (Message.objects.filter(team=principal.team, pk__in=sources)
               .annotate(next_id=Subquery(following.values("pk")[:1]), next_role=Subquery(following.values("role")[:1]))
               .filter(next_role=MessageRole.ASSISTANT).values_list("next_id", flat=True))  # one statement
    return [*sources, *replies]


def hide_turns(*, principal: Principal, node: Node, now: datetime) -> int:
    """Mark the messages `node` was taken from, and the answers to them (_said_by), as no longer
    recalled, at `now` (the forget's time: a restore unmarks only what this forget marked);
    returns how many."""
    return Message.objects.filter(team=principal.team, pk__in=_said_by(principal, node),
                                  memory_forgotten_at__isnull=True).update(memory_forgotten_at=now)


def recall_turns(*, principal: Principal, node: Node, forgotten_at: datetime) -> int:
    """After `node`, soft-forgotten at `forgotten_at`, is restored: the messages that forget
    marked are recalled again, but not those another forgotten node was also taken from, nor
    those an earlier forget marked (a hard forget leaves no link to tell). Returns how many."""
    said = _said_by(principal, node)
    others = NodeSource.objects.filter(message_id__in=said, node__status=NodeStatus.DELETED).exclude(node=node)
    return Message.objects.filter(team=principal.team, pk__in=said, memory_forgotten_at__gte=forgotten_at).exclude(
        pk__in=others.values("message_id")).update(memory_forgotten_at=None)
