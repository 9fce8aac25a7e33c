import pytest
from django.db import connection

from memory.models import Node
from memory.search.schema import ensure_search_index
from tests.helpers import index_hits, make_node


def test_the_index_exists_after_migrations(principal):
    make_node(principal, title="用户不吃香菜")
    assert index_hits(Node, "香菜") == 1


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite table rebuilds drop triggers; PostgreSQL keeps the column")
def test_missing_sqlite_triggers_are_restored_and_rows_written_meanwhile_are_indexed(principal):
    with connection.cursor() as cursor:
        for suffix in ("ai", "ad", "au"):
            cursor.execute(f"DROP TRIGGER memory_node_fts_{suffix}")
    make_node(principal, title="written while the index was broken: 香菜")
    assert index_hits(Node, "香菜") == 0
    ensure_search_index(connection)
    assert index_hits(Node, "香菜") == 1
    make_node(principal, title="written after: 少辣")
    assert index_hits(Node, "少辣") == 1


def test_ensuring_the_index_twice_changes_nothing(principal):
    make_node(principal, title="香菜")
    ensure_search_index(connection)
    ensure_search_index(connection)
    assert index_hits(Node, "香菜") == 1
