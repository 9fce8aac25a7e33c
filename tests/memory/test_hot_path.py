"""What keeps the context call fast: the keyword index has no pending list, the hit ledger
commits without waiting for the WAL flush (and only its own transaction), and the answers'
lists are serialised by shared serializers with the same output as DRF's own many=True."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memory.api import serializers as s
from memory.api.tool_calls import represent
from memory.models import Node, Retrieval
from memory.search.schema import TABLES
from memory.services.nodes import NodeInput, node_supersede
from tests.helpers import append, make_node

postgresql_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL index and setting")

CTX = {"workspace_id": "w1", "user_id": "u1", "session_id": "s1"}


def _propose(client, content: str) -> int:
    response = client.post("/api/v1/memory/propose", {
        "operation": "create", "workspace_id": "w1", "user_id": "u1",
        "node": {"scope": "workspace", "type": "fact", "title": content[:20], "content": content}}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["node"]["id"]


@postgresql_only
def test_the_keyword_indexes_write_through_without_a_pending_list(db):
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [f"{table}_search_vector_gin"])
            assert "fastupdate=off" in cursor.fetchone()[0]


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_the_ledger_commits_asynchronously_in_its_own_transaction_only(agent_client):
    _propose(agent_client, "The deploy window is Tuesday night")
    with CaptureQueriesContext(connection) as captured:
        response = agent_client.post("/api/v1/context", {**CTX, "query": "deploy window"}, format="json")
    assert response.status_code == 200
    assert Retrieval.objects.filter(pk=response.json()["retrieval_id"]).exists()
    assert any("synchronous_commit TO OFF" in query["sql"] for query in captured.captured_queries)
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"  # SET LOCAL ended with the ledger's transaction


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_inside_a_callers_transaction_the_ledger_does_not_change_its_durability(agent_client):
    with transaction.atomic(), CaptureQueriesContext(connection) as captured:
        response = agent_client.post("/api/v1/context", {**CTX, "query": "anything"}, format="json")
        assert response.status_code == 200
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            assert cursor.fetchone()[0] == "on"
    assert not any("SET LOCAL synchronous_commit" in query["sql"] for query in captured.captured_queries)
    assert Retrieval.objects.filter(pk=response.json()["retrieval_id"]).exists()


def test_shared_serializers_give_what_drf_gives(agent_client):
    ids = [_propose(agent_client, text) for text in ("Ships on Fridays", "周五发布", "Owner: Dana")]
    nodes = list(Node.objects.select_related("session", "superseded_by").filter(pk__in=ids).order_by("pk"))
    matched = {ids[0]: ("ship",)}
    assert represent(s.NodeOutSerializer, nodes) == s.NodeOutSerializer(nodes, many=True).data
    assert represent(s.RelevantNodeOutSerializer, nodes, matched=matched) == s.RelevantNodeOutSerializer(
        nodes, many=True, context={"matched": matched}).data
    assert represent(s.RelevantNodeOutSerializer, nodes, matched=matched)[0]["matched"] == ["ship"]
    assert represent(s.NodeOutSerializer, []) == []


def test_a_kept_serializer_takes_each_uses_context_only(agent_client):
    ids = [_propose(agent_client, text) for text in ("Ships on Fridays", "周五发布")]
    nodes = list(Node.objects.select_related("session", "superseded_by").filter(pk__in=ids).order_by("pk"))
    first = represent(s.RelevantNodeOutSerializer, nodes, matched={ids[0]: ("ship",)})
    second = represent(s.RelevantNodeOutSerializer, nodes, matched={ids[1]: ("周五",)})
    assert [item["matched"] for item in first] == [["ship"], []]
    assert [item["matched"] for item in second] == [[], ["周五"]]
    assert second == s.RelevantNodeOutSerializer(nodes, many=True, context={"matched": {ids[1]: ("周五",)}}).data


def test_the_context_answer_reads_no_node_twice(agent_client, principal):
    """Every node the answer serialises comes with its session and successor: no query per
    node. Corrections (L2) are the user's nodes that superseded another."""
    said = append(principal, "I moved to Lyon")[0].pk
    for text in ("Lives in Paris", "Works at Acme", "Drinks tea"):
        old = make_node(principal, type="fact", title=text, source_message_ids=[said])
        node_supersede(principal=principal, old_node_id=old.pk, data=NodeInput(
            scope="user", type="fact", user_id="u1", title=text + " (corrected)", source_message_ids=[said]))
    with CaptureQueriesContext(connection) as captured:
        response = agent_client.post("/api/v1/context", {**CTX, "query": "weather"}, format="json")
    assert response.status_code == 200
    assert len(response.json()["corrections"]) == 3
    one_by_one = [query["sql"] for query in captured.captured_queries  # a lazy related read is a get(): LIMIT 21
                  if query["sql"].startswith(('SELECT "memory_node"', 'SELECT "memory_session"'))
                  and query["sql"].endswith("LIMIT 21")]
    assert one_by_one == []


def test_the_rendered_size_is_the_length_of_the_rendered_block():
    """_fit tracks the block's length instead of rendering it after every item: the two agree
    for any mix of sections, empty and long lines, messages and their follow-ups."""
    import random
    from types import SimpleNamespace

    from memory.selectors.context_items import SECTIONS, Item, RenderedSize, render

    rng = random.Random(11)
    for _ in range(300):
        items: list[Item] = []
        size = RenderedSize()
        for pk in range(rng.randint(0, 25)):
            section = rng.choice(list(SECTIONS))
            text = "x" * rng.choice((0, 1, 7, 160)) + rng.choice(("", "周五", "\n"))
            item = Item(section, "message", SimpleNamespace(pk=pk), text, "relevant")
            items.append(item)
            size.add(item)
            if section == "earlier_messages" and rng.random() < 0.5:
                followup = Item(section, "message", SimpleNamespace(pk=1000 + pk), "  ↳ reply", "followup", after=pk)
                items.append(followup)
                size.add(followup)
            if items and rng.random() < 0.2:  # the last item never has a follow-up after it
                size.remove(items.pop())
            assert size.chars == len(render(items))


def test_the_memory_browser_is_bounded_by_the_teams_newest_node_only(principal, other_principal):
    """node_browse bounds ids by the team's newest (a planner aid at scale); every node of the
    team is still listed, newest first, however many other teams wrote after it."""
    from django_scopes import scope

    from memory.selectors.dashboard import node_browse

    mine = [make_node(principal, title=f"mine {index}").pk for index in range(3)]
    for index in range(5):
        make_node(other_principal, title=f"theirs {index}")
    with scope(team=principal.team):
        assert list(node_browse(principal=principal, filters={}).values_list("pk", flat=True)) == mine[::-1]
    with scope(team=other_principal.team):
        assert node_browse(principal=other_principal, filters={"user_id": "nobody"}).count() == 0
