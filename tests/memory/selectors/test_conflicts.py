"""Conflict resolution's one statement (memory.selectors.conflicts) against the ORM: the same
rivals, hence the same losers, over keys and slots in every scope, several users and
workspaces, expired and superseded nodes, and another team's nodes of the same keys."""

import itertools
from datetime import timedelta

from django.utils import timezone

from memory.models import Node, NodeStatus, Session
from memory.selectors.conflicts import _group, conflict_losers
from memory.selectors.nodes import Owner, reach
from memory.selectors.ordering import seed_order_key
from tests.helpers import append, make_node


def losers_by_orm(principal, nodes, owner, session, now) -> dict[int, int]:
    groups = {_group(node) for node in nodes if node.key}
    rivals = (Node.objects.filter(team=principal.team, status=NodeStatus.ACTIVE)
              .filter(reach(owner=owner, session=session)).exclude(expires_at__lte=now))
    winners: dict[tuple, tuple] = {}
    for rival in rivals:
        group = _group(rival)
        if group in groups:
            values = {"pk": rival.pk, **{field.attname: getattr(rival, field.attname) for field in Node._meta.fields}}
            rank = seed_order_key(values, now)
            if group not in winners or rank < winners[group][0]:
                winners[group] = (rank, rival.pk)
    return {node.pk: winners[_group(node)][1] for node in nodes
            if node.key and winners.get(_group(node)) and winners[_group(node)][1] != node.pk}


def test_the_statement_finds_the_losers_the_orm_finds(principal, admin_principal, other_principal):
    for session_id, user_id in (("s1", "u1"), ("s2", "u2")):
        append(principal, "hi", session_id=session_id, user_id=user_id, workspace_id="w1")
    append(other_principal, "hi", session_id="s1", workspace_id="w1")
    soon = timezone.now() + timedelta(hours=2)
    made = []
    for key, (cardinality, values) in {"spicy": ("one", [None]), "avoid": ("many", ["蒜", "葱"]),
                                       "editor": ("one", [None])}.items():
        for value, (scope, extra) in itertools.product(values, [
            ("global", {}), ("user", {"user_id": "u1"}), ("user", {"user_id": "u2"}),
            ("workspace", {"workspace_id": "w1", "user_id": ""}), ("workspace", {"workspace_id": "w2", "user_id": ""}),
            ("session", {"session_id": "s1", "workspace_id": "w1"}),
            ("session", {"session_id": "s2", "workspace_id": "w1", "user_id": "u2"}),
        ]):
            writer = admin_principal if scope == "global" else principal
            fields = dict(scope=scope, type="constraint", key=key, cardinality=cardinality, title=f"{key} {scope}",
                          **({"value_json": value} if value is not None else {}), **extra)
            if scope == "user" and key == "editor":
                fields["expires_at"] = soon  # a temporary value: ranks before the standing one
            made.append(make_node(writer, **fields))
        for value in values:  # another team's value of the same key and slot, newer than all of these
            make_node(other_principal, type="constraint", key=key, cardinality=cardinality, title=f"{key} other",
                      **({"value_json": value} if value is not None else {}))
    Node.objects.filter(pk=made[0].pk).update(expires_at=timezone.now() - timedelta(minutes=1))  # expired: no rival
    now = timezone.now()
    nodes = list(Node.objects.filter(team=principal.team, key__in=["spicy", "avoid", "editor"]))
    for owner_fields, session_id in [({"user_id": "u1", "workspace_id": "w1"}, "s1"),
                                     ({"user_id": "u2", "workspace_id": "w1"}, "s2"),
                                     ({"user_id": "u1", "workspace_id": ""}, None),
                                     ({"user_id": "", "workspace_id": "w2"}, None)]:
        owner = Owner(**owner_fields)
        session = Session.objects.get(team=principal.team, external_id=session_id) if session_id else None
        found = conflict_losers(principal=principal, nodes=nodes, owner=owner, session=session, now=now)
        assert found == losers_by_orm(principal, nodes, owner, session, now), owner
        assert found  # every owner here has rivals: the comparison is not of two empty answers
        assert set(found.values()) <= {node.pk for node in nodes}  # winners are this team's nodes
