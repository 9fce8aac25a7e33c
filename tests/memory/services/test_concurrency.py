"""Races through real parallel database connections (PostgreSQL: the in-memory SQLite test
database is not shared between threads)."""

import threading

import pytest
from django.db import connection, connections
from django_scopes import scope

from accounts.principal import principal_for_key
from accounts.services import agent_key_create, team_create
from memory.errors import Conflict
from memory.models import Node, NodeStatus
from memory.services.nodes import NodeInput, node_supersede, supersede_input
from memory.services.upsert import node_upsert

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs parallel connections to one database"),
    pytest.mark.django_db(transaction=True),
]


def in_parallel(count: int, work, team) -> list:
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def run(index: int) -> None:
        try:
            barrier.wait()
            with scope(team=team):  # a new thread starts outside any scope, like a worker would
                results[index] = work()
        except Exception as error:  # noqa: BLE001 - the result under test
            results[index] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


@pytest.fixture
def racer():
    team = team_create(slug="race")
    return principal_for_key(agent_key_create(team=team, name="racer")[0])


def test_parallel_identical_creates_leave_one_active_node(racer):
    data = NodeInput(scope="user", user_id="u1", type="fact", key="dup", value_json={"x": 1}, title="dup")
    for _ in range(5):
        results = in_parallel(8, lambda: node_upsert(principal=racer, data=data), racer.team)
        assert all(not isinstance(result, Exception) for result in results), results
        assert len({result.node.pk for result in results}) == 1
    assert Node.objects.filter(key="dup", status=NodeStatus.ACTIVE).count() == 1


def test_parallel_supersedes_of_one_node_leave_one_successor(racer):
    for round_number in range(10):
        old = node_upsert(principal=racer, data=NodeInput(scope="user", user_id="u1", type="fact",
                                                            key=f"k{round_number}", value_json="old", title="old")).node
        results = in_parallel(2, lambda old=old: node_supersede(
            principal=racer, old_node_id=old.pk, data=supersede_input(old, {"value_json": "new"}, {})), racer.team)
        winners = [result for result in results if isinstance(result, Node)]
        losers = [result for result in results if isinstance(result, Conflict)]
        assert len(winners) == 1 and len(losers) == 1, results
        assert Node.objects.filter(key=f"k{round_number}", status=NodeStatus.ACTIVE).count() == 1
        assert Node.objects.get(pk=old.pk).status == NodeStatus.SUPERSEDED
