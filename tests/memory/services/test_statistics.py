"""SQLite's planner statistics are refreshed as the message table grows, also without a beat
(memory.services.maintenance.statistics_refresh_if_stale; the embedded default)."""

import pytest
from django.db import connection

from memory.services import maintenance
from memory.services.maintenance import statistics_refresh_if_stale
from tests.helpers import append

pytestmark = pytest.mark.skipif(connection.vendor != "sqlite", reason="PostgreSQL's autovacuum keeps its own")


def _analysed_rows() -> int | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'")
        if cursor.fetchone() is None:
            return None
        cursor.execute("SELECT stat FROM sqlite_stat1 WHERE tbl = 'memory_message' AND idx IS NOT NULL LIMIT 1")
        row = cursor.fetchone()
        return int(row[0].split()[0]) if row else None


def test_statistics_are_computed_once_the_table_holds_enough_rows_and_again_after_it_doubles(principal):
    maintenance._ANALYSED_ROWS.clear()
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'")
        if cursor.fetchone() is not None:
            cursor.execute("DELETE FROM sqlite_stat1")
    append(principal, *(f"turn {number}" for number in range(6)))
    assert statistics_refresh_if_stale(min_rows=10) is False  # too few rows to matter
    append(principal, *(f"turn {number}" for number in range(6, 12)))
    assert statistics_refresh_if_stale(min_rows=10) is True
    assert _analysed_rows() == 12
    assert statistics_refresh_if_stale(min_rows=10) is False  # fresh
    append(principal, *(f"turn {number}" for number in range(12, 25)))
    assert statistics_refresh_if_stale(min_rows=10) is True  # 25 > 2 × 12
    assert _analysed_rows() == 25


def test_a_sampled_estimate_below_the_rows_does_not_refresh_again_and_again(principal):
    """With analysis_limit SQLite's count of rows is a sample's estimate, as low as 0.4 of the
    rows at 20k messages (a newcomer's measurement)."""
    maintenance._ANALYSED_ROWS.clear()
    append(principal, *(f"turn {number}" for number in range(20)))
    assert statistics_refresh_if_stale(min_rows=10) is True
    with connection.cursor() as cursor:
        cursor.execute("UPDATE sqlite_stat1 SET stat = '8 1' WHERE tbl = 'memory_message'")  # an estimate of 0.4
    assert statistics_refresh_if_stale(min_rows=10) is False
