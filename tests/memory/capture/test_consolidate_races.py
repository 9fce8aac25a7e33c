"""Consolidation jobs racing each other through real parallel connections (PostgreSQL: the
in-memory SQLite test database is not shared between threads)."""

import pytest
from django.db import connection

from accounts.principal import principal_for_key
from accounts.services import agent_key_create, team_create
from memory.capture.consolidate import nodes_merge_duplicates, profile_consolidate
from memory.models import AuditEvent, Node, UserProfileVersion
from tests.helpers import make_node, run_parallel, stored_before

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs parallel connections to one database"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def racer():
    team = team_create(slug="race")
    return principal_for_key(agent_key_create(team=team, name="racer")[0])


def test_parallel_consolidations_write_one_version(racer):
    for index in range(8):
        make_node(racer, type="fact", title=f"note {index}")
    results = run_parallel([lambda: profile_consolidate(team=racer.team, user_id="u1")] * 4, team=racer.team)
    assert all(not isinstance(result, Exception) for result in results), results
    assert [result.version.version for result in results if result.version is not None] == [1]
    assert UserProfileVersion.objects.filter(user_id="u1").count() == 1


def test_parallel_merges_fold_each_duplicate_once(racer):
    survivor = make_node(racer, type="fact", title="likes tea")
    twins = [stored_before(racer, type="fact", title=f"likes tea{mark}") for mark in ("!", ".", "。", "…")]
    results = run_parallel([lambda: nodes_merge_duplicates(team=racer.team, user_id="u1")] * 4, team=racer.team)
    assert all(not isinstance(result, Exception) for result in results), results
    assert sorted(len(result) for result in results) == [0, 0, 0, 1]
    assert list(Node.objects.filter(status="active").values_list("pk", flat=True)) == [survivor.pk]
    assert AuditEvent.objects.filter(event_type="memory.node.merged").count() == len(twins)
