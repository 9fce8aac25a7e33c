"""Imports racing into one empty team: one wins, the others get the collision (409), never a
store error (PostgreSQL: the in-memory SQLite test database is not shared between threads)."""

import pytest
from django.db import connection

from accounts.principal import principal_for_key
from accounts.services import agent_key_create, team_create
from memory.errors import Conflict
from memory.models import Node, Session
from tests.helpers import append, make_node, run_parallel
from tests.memory.portability.conftest import export_bytes, import_bytes

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs parallel connections to one database"),
    pytest.mark.django_db(transaction=True),
]


def _admin(slug: str):
    return principal_for_key(agent_key_create(team=team_create(slug=slug), name="admin", kind="admin")[0])


def test_parallel_imports_into_one_empty_team_give_one_import_and_collisions():
    source = _admin("source")
    append(source, "I like green tea.", session_id="s1", user_id="u1")
    make_node(source, user_id="u1", title="Likes green tea")
    data = export_bytes(source)
    target = _admin("race")
    results = run_parallel([lambda: import_bytes(target, data)] * 3, team=target.team)
    errors = [result for result in results if isinstance(result, Exception)]
    assert len(errors) == 2 and all(isinstance(error, Conflict) for error in errors), results
    assert all(error.code == "import_collision" for error in errors)
    assert Session.objects.filter(team=target.team).count() == 1
    assert Node.objects.filter(team=target.team).count() == 1
