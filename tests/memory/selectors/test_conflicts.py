"""Conflict resolution's one statement (memory.selectors.conflicts) against the ORM: the same
rivals, hence the same losers, over keys and slots in every scope, several users and
workspaces, expired and superseded nodes, and another team's nodes of the same keys."""

import itertools
import random
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.errors import Conflict
from memory.models import Node, NodeStatus, Scope, Session
from memory.selectors import conflicts
from memory.selectors.conflicts import conflict_losers, losers_among
from memory.selectors.nodes import Owner, reach
from memory.selectors.ordering import seed_order_key
from tests.helpers import append, make_node


def losers_by_orm(principal, nodes, owner, session, now, scopes=()) -> dict[int, int]:
    """The rivals read with the ORM, weighed as the statement's are (losers_among)."""
    rivals = (Node.objects.filter(team=principal.team, status=NodeStatus.ACTIVE)
              .filter(reach(owner=owner, session=session, scopes=scopes or tuple(Scope.values)))
              .exclude(expires_at__lte=now))
    return losers_among([{"pk": rival.pk, **{field.attname: getattr(rival, field.attname) for field in Node._meta.fields}}
                         for rival in rivals], nodes, now)


def test_without_object_values_the_first_in_the_seed_order_wins_its_slot(principal):
    """The plain rule, computed here on its own: one winner a slot."""
    append(principal, "hi", session_id="s1", user_id="u1", workspace_id="w1")
    user = make_node(principal, scope="user", user_id="u1", type="constraint", key="editor", cardinality="one",
                     title="editor user", value_json="vim")
    session = make_node(principal, scope="session", session_id="s1", user_id="u1", workspace_id="w1",
                        type="constraint", key="editor", cardinality="one", title="editor session", value_json="emacs")
    now = timezone.now()
    nodes = [user, session]
    rivals = [{"pk": node.pk, **{field.attname: getattr(node, field.attname) for field in Node._meta.fields}}
              for node in nodes]
    assert sorted(nodes, key=lambda node: seed_order_key(rivals[nodes.index(node)], now))[0] == session
    assert losers_among(rivals, nodes, now) == {user.pk: session.pk}


def test_an_object_value_silences_only_the_nodes_that_share_one_of_its_fields(principal):
    """A session's {"spicy": "low"} and the user's {"salt": "low"} are both shown; a workspace's
    {"spicy": "high", "oil": "low"} shares spicy with the session's and is left out whole; a
    value that is no object silences every later one."""
    append(principal, "hi", session_id="s1", user_id="u1", workspace_id="w1")
    flavor = dict(type="preference", key="flavor_profile", cardinality="one")
    session = make_node(principal, scope="session", session_id="s1", user_id="u1", workspace_id="w1",
                        title="少辣", value_json={"spicy": "low"}, **flavor)
    workspace = make_node(principal, scope="workspace", workspace_id="w1", user_id="", title="重辣少油",
                          value_json={"spicy": "high", "oil": "low"}, **flavor)
    user = make_node(principal, scope="user", user_id="u1", title="少盐", value_json={"salt": "low"}, **flavor)
    nodes = [session, workspace, user]
    owner, conversation = Owner(user_id="u1", workspace_id="w1"), Session.objects.get(external_id="s1")
    now = timezone.now()
    assert conflict_losers(principal=principal, nodes=nodes, owner=owner, session=conversation, now=now) == {
        workspace.pk: session.pk}
    assert losers_by_orm(principal, nodes, owner, conversation, now) == {workspace.pk: session.pk}
    # Outside the conversation the workspace's value comes first and the user's {"salt"} still
    # shares nothing with it (the session's node, out of reach, loses to the slot's first).
    assert conflict_losers(principal=principal, nodes=nodes, owner=owner, session=None, now=now) == {
        session.pk: workspace.pk}
    Node.objects.filter(pk=session.pk).update(value_json="少辣")  # no object: it stands for the whole slot
    nodes = list(Node.objects.filter(pk__in=[node.pk for node in nodes]))
    assert conflict_losers(principal=principal, nodes=nodes, owner=owner, session=conversation, now=now) == {
        workspace.pk: session.pk, user.pk: session.pk}


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


KEYS = {"spicy": ("one", [None]), "editor": ("one", [None]), "avoid": ("many", ["蒜", "葱", "香菜"])}
OWNERS = [("u1", "w1", "s1"), ("u2", "w1", "s2"), ("u1", "w2", "s3")]


def random_store(rng, principal, admin_principal, other_principal) -> None:
    """Keyed nodes of every scope and owner, some superseded, deleted, expired or expiring
    (a narrow node that would win but has expired must not), and another team's of the same slots."""
    for user_id, workspace_id, session_id in OWNERS:
        append(principal, "hi", session_id=session_id, user_id=user_id, workspace_id=workspace_id)
    now = timezone.now()
    for _ in range(40):
        key = rng.choice(sorted(KEYS))
        cardinality, values = KEYS[key]
        user_id, workspace_id, session_id = rng.choice(OWNERS)
        scope, writer, extra = rng.choice([
            ("global", admin_principal, {"user_id": ""}), ("user", principal, {"user_id": user_id}),
            ("workspace", principal, {"workspace_id": workspace_id, "user_id": ""}),
            ("session", principal, {"session_id": session_id, "workspace_id": workspace_id, "user_id": user_id}),
            ("user", other_principal, {"user_id": user_id})])
        value = rng.choice(values)
        fields = dict(scope=scope, type=rng.choice(["constraint", "preference"]), key=key, cardinality=cardinality,
                      title=f"{key} {scope}", explicit=rng.random() < 0.5, confidence=rng.choice([0.5, 0.9]),
                      importance=rng.choice([0.2, 0.8]), **({"value_json": value} if value is not None else {}),
                      **extra)
        if rng.random() < 0.2:
            fields["expires_at"] = now + timedelta(hours=rng.choice([1, 48]))
        try:
            node = make_node(writer, **fields)
        except Conflict:
            continue  # that owner already holds the slot
        change = rng.random()
        if change < 0.1:
            Node.objects.filter(pk=node.pk).update(status=NodeStatus.SUPERSEDED)
        elif change < 0.2:
            Node.objects.filter(pk=node.pk).update(status=NodeStatus.DELETED)
        elif change < 0.3:
            Node.objects.filter(pk=node.pk).update(expires_at=now - timedelta(minutes=5))


@pytest.mark.parametrize("seed", range(6))
def test_random_stores_give_the_orms_losers_for_every_owner_and_scope_set(seed, principal, admin_principal,
                                                                          other_principal, monkeypatch):
    rng = random.Random(seed)
    random_store(rng, principal, admin_principal, other_principal)
    now = timezone.now()
    nodes = list(Node.objects.filter(team=principal.team).exclude(key=""))
    compared = 0
    for (user_id, workspace_id, session_id), scopes in itertools.product(
            OWNERS + [("u1", "", None), ("", "w1", None)], [(), ("user", "global"), ("workspace", "session")]):
        owner = Owner(user_id=user_id, workspace_id=workspace_id)
        session = Session.objects.get(team=principal.team, external_id=session_id) if session_id else None
        expected = losers_by_orm(principal, nodes, owner, session, now, scopes)
        found = conflict_losers(principal=principal, nodes=nodes, owner=owner, session=session, now=now,
                                scopes=scopes)
        assert found == expected, (owner, session_id, scopes)
        monkeypatch.setattr(conflicts, "PROBES_PER_STATEMENT", 3)  # several statements: the same answer
        assert conflict_losers(principal=principal, nodes=nodes, owner=owner, session=session, now=now,
                               scopes=scopes) == expected
        monkeypatch.undo()
        compared += len(expected)
    assert compared > 0  # the stores hold conflicts: not a comparison of empty answers


def test_a_rival_left_out_still_outranks_the_fields_it_holds(principal):
    """A review's case: the session's {"oil": "low"} leaves out the workspace's {"oil": "low",
    "spicy": "none"}; the user's {"spicy": "high"} must not then be shown as if nothing above it
    spoke of spice."""
    append(principal, "hi", session_id="s1", user_id="u1", workspace_id="w1")
    flavor = dict(type="preference", key="flavor_profile", cardinality="one")
    session = make_node(principal, scope="session", session_id="s1", user_id="u1", workspace_id="w1",
                        title="今天少油", value_json={"oil": "low"}, **flavor)
    workspace = make_node(principal, scope="workspace", workspace_id="w1", user_id="", title="家里做菜少油不辣",
                          value_json={"oil": "low", "spicy": "none"}, **flavor)
    user = make_node(principal, scope="user", user_id="u1", title="用户偏好吃辣", value_json={"spicy": "high"}, **flavor)
    found = conflict_losers(principal=principal, nodes=[session, workspace, user], owner=Owner(user_id="u1",
                            workspace_id="w1"), session=Session.objects.get(external_id="s1"), now=timezone.now())
    assert found == {workspace.pk: session.pk, user.pk: session.pk}


def test_a_temporary_constraint_outranks_a_preference_of_its_key_field_by_field(principal):
    """A session's temporary {"spicy": "none"} (a constraint) and the user's {"spicy": "high"}
    (a preference) were never rivals, their types differing: both were injected. Values that are
    no objects still compete only within a type (the seed's constraint and preference of one
    key both come back)."""
    append(principal, "hi", session_id="s1", user_id="u1", workspace_id="w1")
    soon = timezone.now() + timedelta(hours=12)
    today = make_node(principal, scope="session", session_id="s1", user_id="u1", workspace_id="w1",
                      type="constraint", key="flavor_profile", title="（暂时）用户偏好不辣", value_json={"spicy": "none"},
                      expires_at=soon)
    liked = make_node(principal, scope="user", user_id="u1", type="preference", key="flavor_profile",
                      title="用户偏好吃辣", value_json={"spicy": "high"})
    owner, conversation = Owner(user_id="u1", workspace_id="w1"), Session.objects.get(external_id="s1")
    assert conflict_losers(principal=principal, nodes=[today, liked], owner=owner, session=conversation,
                           now=timezone.now()) == {liked.pk: today.pk}
    Node.objects.filter(pk=liked.pk).update(value_json={"salt": "low"})  # another field: both stay
    liked.refresh_from_db()
    assert conflict_losers(principal=principal, nodes=[today, liked], owner=owner, session=conversation,
                           now=timezone.now()) == {}
