"""The context call's hand-written reads (memory.selectors.rows and the selectors that use it)
give the instances the ORM gives, cache what serialisers read, and keep to the caller's team."""

import datetime as dt

import pytest
from django.db import connection

from memory.instruction_models import PinnedInstructions
from memory.models import Message, Node, Session, Summary
from memory.policy_models import BudgetPolicy
from memory.selectors.budget import policy_rows
from memory.selectors.nodes import Owner, owner_session
from memory.selectors.rows import NODE_DEFERRED, columns, instances, messages_by_id, nodes_by_id, read
from memory.services.nodes import NodeInput, node_supersede
from tests.helpers import append, make_node


def _same_fields(found, expected, exclude=()) -> None:
    for field in type(expected)._meta.concrete_fields:
        if field.attname not in exclude:
            assert getattr(found, field.attname) == getattr(expected, field.attname), field.attname


def test_instances_equal_what_the_orm_loads_json_and_datetimes_included(principal):
    said = append(principal, "remember: tea, no sugar", metadata={"speaker": "Ann", "n": [1, 2]})[0]
    node = make_node(principal, title="Likes tea", key="drink", value_json={"kind": "tea", "sugar": None},
                     tags=["food", "茶"], entities=["tea"], category_path=["life", "food"],
                     expires_at=dt.datetime(2099, 1, 2, 3, 4, 5, 678, tzinfo=dt.UTC), source_message_ids=[said.pk])
    loaded = read(Node, f"SELECT {columns(Node, 'n')} FROM memory_node n WHERE n.team_id = %s AND n.id = %s",
                  [principal.team.pk, node.pk])
    _same_fields(loaded[0], Node.objects.get(pk=node.pk))
    assert loaded[0].value_json == {"kind": "tea", "sugar": None} and loaded[0].expires_at.tzinfo is not None
    message = read(Message, f"SELECT {columns(Message, 'm')} FROM memory_message m WHERE m.team_id = %s AND m.id = %s",
                   [principal.team.pk, said.pk])[0]
    _same_fields(message, Message.objects.get(pk=said.pk))
    assert message.metadata["n"] == [1, 2]


def test_excluded_columns_are_deferred_and_load_on_access(principal):
    node = make_node(principal, title="Deferred tokens")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns(Node, 'n', NODE_DEFERRED)} FROM memory_node n WHERE n.id = %s", [node.pk])
        found = instances(Node, cursor.fetchall(), using="default", exclude=NODE_DEFERRED)[0]
    assert found.get_deferred_fields() == {"search_tokens"}
    assert found.search_tokens == Node.objects.get(pk=node.pk).search_tokens


def test_nodes_by_id_caches_session_and_successor_and_keeps_to_the_team(principal, other_principal, django_assert_num_queries):
    append(principal, "hello", session_id="s9")
    session = Session.objects.get(team=principal.team, external_id="s9")
    plain = make_node(principal, scope="session", type="task", session_id="s9", title="Pack the bag")
    old = make_node(principal, type="fact", title="Lives in Paris")
    new = node_supersede(principal=principal, old_node_id=old.pk, data=NodeInput(
        scope="user", type="fact", user_id="u1", title="Lives in Lyon"))
    theirs = make_node(other_principal, title="Not yours")
    found = nodes_by_id(team_id=principal.team.pk, pks=[plain.pk, old.pk, new.pk, theirs.pk])
    assert sorted(found) == sorted([plain.pk, old.pk, new.pk])
    with django_assert_num_queries(0):
        assert found[plain.pk].session.external_id == "s9" and found[plain.pk].session.pk == session.pk
        with pytest.raises(Node.superseded_by.RelatedObjectDoesNotExist):  # cached: as select_related leaves it
            found[plain.pk].superseded_by  # noqa: B018
        assert found[old.pk].superseded_by.pk == new.pk
        assert found[new.pk].session_id is None
    _same_fields(found[old.pk], Node.objects.get(pk=old.pk), exclude=NODE_DEFERRED)


def test_messages_by_id_caches_the_session_and_keeps_to_the_team(principal, other_principal, django_assert_num_queries):
    mine = append(principal, "one", "two", session_id="s2")
    theirs = append(other_principal, "three", session_id="s2")
    found = messages_by_id(team_id=principal.team.pk, pks=[mine[0].pk, mine[1].pk, theirs[0].pk])
    assert sorted(found) == [mine[0].pk, mine[1].pk]
    with django_assert_num_queries(0):
        assert {message.session.external_id for message in found.values()} == {"s2"}
    _same_fields(found[mine[0].pk], Message.objects.get(pk=mine[0].pk), exclude=("search_tokens",))


def test_owner_session_finds_only_the_live_session_of_the_callers_team(principal, other_principal):
    append(other_principal, "theirs", session_id="s3")
    owner = Owner(user_id="u1", session_id="s3")
    assert owner_session(principal=principal, owner=owner) is None
    append(principal, "mine", session_id="s3")
    found = owner_session(principal=principal, owner=owner)
    _same_fields(found, Session.objects.get(team=principal.team, external_id="s3"))
    Session.objects.filter(pk=found.pk).update(deleted_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    assert owner_session(principal=principal, owner=owner) is None
    assert owner_session(principal=principal, owner=Owner(user_id="u1")) is None


def test_policy_rows_read_the_teams_own_policies(principal, other_principal):
    BudgetPolicy.objects.create(team=other_principal.team, workspace_id="", max_chars=111)
    assert policy_rows(team=principal.team, workspace_id="w1") == (None, None)
    team_row = BudgetPolicy.objects.create(team=principal.team, workspace_id="", max_chars=500, l2_chars=90)
    BudgetPolicy.objects.create(team=principal.team, workspace_id="w1", top_n=3)
    found = policy_rows(team=principal.team, workspace_id="w1")
    _same_fields(found[0], team_row)
    assert (found[0].max_chars, found[1].top_n, found[1].max_chars) == (500, 3, None)
    assert policy_rows(team=principal.team)[1] is None


@pytest.mark.django_db
def test_the_context_reads_of_one_team_never_show_another_teams_rows(agent_client, principal, other_principal):
    """Same ids in two teams: the context call's hand-written reads return only the caller's
    session, messages, summary, pinned instructions and corrections."""
    for who, word in ((other_principal, "theirs"), (principal, "mine")):
        said = append(who, f"{word} message?", f"{word} reply", *(f"{word} turn {i}" for i in range(10)),
                      session_id="s1", workspace_id="w1")  # more than the recent window: the summary is shown
        Summary.objects.create(team=who.team, session=said[0].session, from_message=said[0], to_message=said[-1],
                               summary=f"{word} summary")
        PinnedInstructions.objects.create(team=who.team, workspace_id="w1", text=f"{word} instructions")
        old = make_node(who, type="fact", title=f"{word} old fact")
        node_supersede(principal=who, old_node_id=old.pk, data=NodeInput(
            scope="user", type="fact", user_id="u1", title=f"{word} corrected fact"))
    response = agent_client.post("/api/v1/context", {"workspace_id": "w1", "user_id": "u1", "session_id": "s1",
                                                         "query": "message"}, format="json")
    body = response.json()
    assert response.status_code == 200
    assert "mine" in body["block"] and "theirs" not in body["block"]
    assert body["latest_summary"]["summary"] == "mine summary"
    assert [item["title"] for item in body["corrections"]] == ["mine corrected fact"]


def test_reach_sql_selects_what_reach_selects(principal, other_principal):
    from memory.models import Scope
    from memory.selectors.nodes import reach, reach_sql

    append(principal, "hi", session_id="s1", workspace_id="w1")
    append(principal, "hi", session_id="s2", workspace_id="w1", user_id="u2")
    for who in (principal, other_principal):
        made = make_node(who, scope="workspace", type="fact", user_id="", workspace_id="w9", title="global")
        Node.objects.filter(pk=made.pk).update(scope="global", workspace_id="")  # global needs an admin
        make_node(who, scope="workspace", type="fact", user_id="", workspace_id="w1", title="w1")
        make_node(who, scope="workspace", type="fact", user_id="", workspace_id="w2", title="w2")
        make_node(who, scope="user", type="fact", user_id="u2", title="u2")
    make_node(principal, title="u1")
    make_node(principal, scope="session", type="task", session_id="s1", workspace_id="w1", title="s1")
    make_node(principal, scope="session", type="task", session_id="s2", workspace_id="w1", user_id="u2", title="s2")
    sessions = [None, *Session.objects.filter(team=principal.team).order_by("pk")]
    owners = [Owner(), Owner(workspace_id="w1"), Owner(user_id="u1"), Owner(workspace_id="w1", user_id="u2")]
    for owner in owners:
        for session in sessions:
            for scopes in (tuple(Scope.values), (Scope.USER, Scope.SESSION), ()):
                condition, params = reach_sql(owner=owner, session=session, scopes=scopes)
                with connection.cursor() as cursor:
                    cursor.execute(f"SELECT n.id FROM memory_node n WHERE n.team_id = %s AND {condition}",
                                   [principal.team.pk, *params])
                    found = sorted(row[0] for row in cursor.fetchall())
                expected = sorted(Node.objects.filter(team=principal.team).filter(
                    reach(owner=owner, session=session, scopes=scopes)).values_list("pk", flat=True))
                assert found == expected, (owner, session, scopes)


def test_prefetched_source_links_are_the_orms_in_position_order(principal, django_assert_num_queries):
    from django.db.models import prefetch_related_objects

    from memory.selectors.rows import prefetch_source_links

    said = append(principal, "one", "two", "three")
    first = make_node(principal, title="three sources", source_message_ids=[said[2].pk, said[0].pk, said[1].pk])
    second = make_node(principal, title="no source")
    mine = list(Node.objects.filter(pk__in=[first.pk, second.pk]).order_by("pk"))
    orms = list(Node.objects.filter(pk__in=[first.pk, second.pk]).order_by("pk"))
    prefetch_source_links(mine, principal=principal)
    prefetch_related_objects(orms, "source_links")
    with django_assert_num_queries(0):
        assert [node.source_message_ids for node in mine] == [node.source_message_ids for node in orms]
        assert mine[0].source_message_ids == [said[2].pk, said[0].pk, said[1].pk]


def test_prefetched_source_links_follow_the_readers_reach_as_the_orms_prefetch_does(team, principal):
    from django.db.models import prefetch_related_objects

    from accounts.principal import principal_for_key
    from accounts.services import agent_key_create
    from memory.selectors.nodes import visible_source_links
    from memory.selectors.rows import prefetch_source_links
    from memory.services.forget import session_forget
    from memory.services.sessions import SessionRef

    home, = append(principal, "one", session_id="a", user_id="u1", workspace_id="home")
    work, = append(principal, "two", session_id="b", user_id="u1", workspace_id="work")
    loose, = append(principal, "three", session_id="c", user_id="u1")
    gone, = append(principal, "four", session_id="d", user_id="u1", workspace_id="home")
    node = make_node(principal, scope="user", user_id="u1", title="four sources",
                     source_message_ids=[gone.pk, work.pk, home.pk, loose.pk])
    session_forget(principal=principal, ref=SessionRef("d", "home", "u1"), mode="soft")
    limited = principal_for_key(agent_key_create(team=team, name="home", workspace_ids=["home"])[0])
    nowhere = principal_for_key(agent_key_create(team=team, name="none", workspace_ids=[])[0])
    expected = {principal: [work.pk, home.pk, loose.pk], limited: [home.pk, loose.pk], nowhere: [loose.pk]}
    for reader, ids in expected.items():
        mine, orms = [Node.objects.get(pk=node.pk)], [Node.objects.get(pk=node.pk)]
        prefetch_source_links(mine, principal=reader)
        prefetch_related_objects(orms, visible_source_links(reader))
        assert mine[0].source_message_ids == orms[0].source_message_ids == ids


def test_the_ledger_insert_stores_what_the_orms_create_stores(principal):
    from django.forms.models import model_to_dict
    from django.utils import timezone

    from memory.models import Retrieval
    from memory.selectors.context import _insert

    values = {"team_id": principal.team.pk, "actor": "key:abc", "agent_key_id": principal.agent_key.pk,
              "session_id": None, "workspace_id": "w1", "user_id": "u1", "query": "茶 or tea?", "domain": "",
              "policy": {"max_chars": {"value": 900, "source": "team"}, "requested": {}},
              "items": [{"kind": "node", "id": 3, "section": "relevant"}], "omitted": [], "used_node_ids": [3],
              "message_ids": [], "summary_id": None, "chars_by_layer": {"L0": 0, "L5": 12},
              "tokens_by_layer": {"L5": 4}, "total_chars": 12, "total_tokens": 4, "truncated": False,
              "store_status": "ok", "warnings": ["a \"quoted\" warning"], "latency_ms": 1.25,
              "created_at": timezone.now()}
    written = Retrieval.objects.get(pk=_insert(Retrieval, connection, values))
    created = Retrieval.objects.create(**values)
    assert {**model_to_dict(written), "id": None} == {**model_to_dict(created), "id": None}
    assert written.created_at == values["created_at"] and written.policy["max_chars"]["value"] == 900
    # A column the caller leaves out (one added to Retrieval later) takes its default, as create() would.
    partial = {name: value for name, value in values.items() if name not in ("warnings", "truncated", "omitted")}
    defaulted = Retrieval.objects.get(pk=_insert(Retrieval, connection, partial))
    assert (defaulted.warnings, defaulted.truncated, defaulted.omitted) == ([], False, [])


def test_instances_made_without_init_are_the_ones_from_db_makes(principal):
    from memory.selectors.rows import _plain

    node = make_node(principal, title="Plain", value_json={"a": 1}, tags=["x"])
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns(Node, 'n', NODE_DEFERRED)} FROM memory_node n WHERE n.id = %s", [node.pk])
        row = cursor.fetchall()
    assert _plain(Node) and _plain(Session) and _plain(Message)
    fast = instances(Node, row, using="default", exclude=NODE_DEFERRED)[0]
    names = [field.attname for field in Node._meta.concrete_fields if field.attname not in NODE_DEFERRED]
    slow = Node.from_db("default", names, [Node._meta.get_field(name).to_python(value) if name != "value_json"
                                           else {"a": 1} for name, value in zip(names, row[0], strict=True)])
    assert fast.__dict__.keys() == slow.__dict__.keys()
    assert (fast._state.adding, fast._state.db) == (slow._state.adding, slow._state.db) == (False, "default")
    assert fast.get_deferred_fields() == slow.get_deferred_fields() == {"search_tokens"}
    _same_fields(fast, Node.objects.get(pk=node.pk), exclude=NODE_DEFERRED)
    fast.title = "Changed"
    fast.save(update_fields=["title"])
    assert Node.objects.get(pk=node.pk).title == "Changed"


def test_a_post_init_receiver_gets_every_instance(principal):
    from django.db.models.signals import post_init

    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance)

    append(principal, "hello", session_id="s5")
    post_init.connect(receiver, sender=Session)
    try:
        found = read(Session, f"SELECT {columns(Session, 's')} FROM memory_session s WHERE s.team_id = %s",
                     [principal.team.pk])
    finally:
        post_init.disconnect(receiver, sender=Session)
    assert seen == found and len(found) == 1


def test_the_key_lookup_reads_what_the_orm_reads_with_its_team(principal, other_principal, django_assert_num_queries):
    from accounts.authentication import _key_with_team
    from accounts.models import AgentKey

    for who in (principal, other_principal):
        found = _key_with_team(who.agent_key.prefix)
        expected = AgentKey.objects.select_related("team").get(pk=who.agent_key.pk)
        _same_fields(found, expected)
        with django_assert_num_queries(0):
            _same_fields(found.team, expected.team)
    assert _key_with_team("nosuchprefix") is None
