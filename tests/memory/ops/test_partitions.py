"""Monthly partitions of the retrievals table (memory.ops.partitions, manage.py partition_retrievals;
docs/deploy.md "Partitioning"). PostgreSQL only.

Each test converts the test database's memory_retrieval inside the test's transaction (DDL is
transactional in PostgreSQL), so the rollback at its end gives the next test the plain table.
"""

from datetime import UTC, date, datetime

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.urls import reverse

from memory.kpi_models import RetrievalFeedback
from memory.models import Retrieval
from memory.ops import partitions as parts
from tests.helpers import append, make_node

postgresql_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="declarative partitioning is PostgreSQL's")

CTX = {"workspace_id": "w1", "user_id": "u1", "session_id": "s1"}
TODAY = datetime.now(UTC).date()


def months_back(count: int) -> date:
    month = parts.month_start(TODAY)
    for _ in range(count):
        month = date(month.year - (month.month == 1), (month.month - 2) % 12 + 1, 1)
    return month


def context(client, query: str = "香菜") -> int:
    response = client.post(reverse("api-context"), {**CTX, "query": query}, format="json")
    assert response.status_code == 200
    return response.json()["retrieval_id"]


def partition_of(retrieval_id: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tableoid::regclass::text FROM memory_retrieval WHERE id = %s", [retrieval_id])
        row = cursor.fetchone()
    return row[0] if row else ""


@pytest.fixture
def ledger(agent_client, principal):
    """Three context calls, two moved to the 10th of two months ago and of last month, one left
    at now (this month's 10th may not have come yet), and feedback on the oldest:
    {month: retrieval id}, plus the injected node."""
    append(principal, "hello", **CTX)
    node = make_node(principal, scope="user", user_id="u1", type="fact", title="喜欢香菜汤")
    ids = {}
    for back in (2, 1, 0):
        retrieval_id = context(agent_client)
        month = months_back(back)
        if back:
            Retrieval.objects.filter(pk=retrieval_id).update(created_at=datetime(month.year, month.month, 10, 12, tzinfo=UTC))
        ids[month] = retrieval_id
    oldest = ids[months_back(2)]
    sent = agent_client.post(reverse("api-retrieval-feedback", args=[oldest]), {"used_node_ids": [node.pk]}, format="json")
    assert sent.status_code == 201
    return {"ids": ids, "node": node}


@postgresql_only
def test_the_conversion_keeps_every_row_and_puts_each_in_its_month(ledger):
    result = parts.convert(parts.Runner(dry_run=False, out=print), months_ahead=2, batch_rows=1, today=TODAY)
    assert parts.relkind(parts.Runner(dry_run=False, out=print), "memory_retrieval") == "p"
    assert {**result, "swap_ms": 0} == {"rows": 3, "partitions": 5, "batches": max(ledger["ids"].values()), "swap_ms": 0}
    assert result["swap_ms"] > 0
    assert {month: partition_of(pk) for month, pk in ledger["ids"].items()} == {
        month: parts.partition_name(month) for month in ledger["ids"]}
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memory_retrieval_unpartitioned")
        assert cursor.fetchone()[0] == 3
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'memory_retrieval' ORDER BY 1")
        names = [row[0] for row in cursor.fetchall()]
    assert {"memory_retrieval_pkey", "retrieval_team_created_idx", "retrieval_ws_created_idx"} <= set(names)
    expected = [parts.partition_name(months_back(back)) for back in (2, 1, 0)]
    assert parts.partitions(parts.Runner(dry_run=False, out=print))[:3] == expected
    assert parts.partitions(parts.Runner(dry_run=False, out=print))[-1] == parts.DEFAULT_PARTITION


@postgresql_only
def test_after_the_conversion_the_service_works_on_the_partitioned_table(agent_client, ledger):
    call_command("partition_retrievals", "--apply", "--batch-rows", "2")
    new_id = context(agent_client, "汤")
    assert new_id > max(ledger["ids"].values())  # the sequence went on past the copied ids
    assert partition_of(new_id) == parts.partition_name(TODAY)

    oldest = ledger["ids"][months_back(2)]
    read = agent_client.get(reverse("api-retrieval", args=[oldest]))
    assert read.status_code == 200 and read.json()["id"] == oldest
    assert agent_client.get(reverse("api-retrieval", args=[new_id])).json()["query"] == "汤"
    sent = agent_client.post(reverse("api-retrieval-feedback", args=[new_id]), {"used_node_ids": [ledger["node"].pk],
                                                                               "helpful": True}, format="json")
    assert sent.status_code == 201
    assert RetrievalFeedback.objects.get(retrieval_id=new_id).helpful is True
    kpis = agent_client.get(reverse("api-kpis"), {"since": months_back(2).replace(day=10).isoformat(),
                                                  "until": TODAY.isoformat()})
    assert kpis.status_code == 200 and kpis.json()["totals"]["context_calls"] == 4


@postgresql_only
def test_an_old_month_is_detached_with_its_feedback_and_the_rest_still_works(agent_client, ledger):
    call_command("partition_retrievals", "--apply")
    oldest = ledger["ids"][months_back(2)]
    result = parts.detach(parts.Runner(dry_run=False, out=print), months_back(2))
    assert result == {"retrievals": 1, "feedback": 1}
    assert parts.partition_name(months_back(2)) not in parts.partitions(parts.Runner(dry_run=False, out=print))
    assert agent_client.get(reverse("api-retrieval", args=[oldest])).status_code == 404
    assert not RetrievalFeedback.objects.filter(retrieval_id=oldest).exists()
    kpis = agent_client.get(reverse("api-kpis"), {"since": months_back(2).replace(day=10).isoformat(),
                                                  "until": TODAY.isoformat()})
    assert kpis.status_code == 200 and kpis.json()["totals"]["context_calls"] == 2
    with connection.cursor() as cursor:  # a plain table now, for the operator to archive and drop
        cursor.execute(f"SELECT id FROM {parts.partition_name(months_back(2))}")
        assert cursor.fetchall() == [(oldest,)]


class ChangesWhileCopying(parts.Runner):
    """After the first copy batch (all rows, in these tests), a forget scrubs a copied row and
    another row is deleted, as the service may do between batches."""

    def __init__(self, scrub: int, delete: int):
        super().__init__(dry_run=False, out=print)
        self.pending = (scrub, delete)

    def run(self, sql, params=None):
        super().run(sql, params)
        if self.pending and sql.startswith("INSERT INTO memory_retrieval_p SELECT") and "AND id <= %s" in sql:
            scrub, delete = self.pending
            self.pending = None
            Retrieval.objects.filter(pk=scrub).update(query="")
            Retrieval.objects.filter(pk=delete).delete()


@postgresql_only
def test_rows_changed_or_deleted_during_the_copy_are_taken_again_at_the_swap(ledger):
    first, second, _ = sorted(ledger["ids"].values())
    RetrievalFeedback.objects.filter(retrieval_id=second).delete()
    runner = ChangesWhileCopying(scrub=first, delete=second)
    parts.convert(runner, batch_rows=max(ledger["ids"].values()), today=TODAY)
    assert runner.pending is None  # the changes did happen after the copy
    assert Retrieval.objects.get(pk=first).query == ""
    assert not Retrieval.objects.filter(pk=second).exists()
    assert Retrieval.objects.count() == 2


@postgresql_only
def test_a_dry_run_prints_the_sql_and_changes_nothing(ledger, capsys):
    call_command("partition_retrievals", "--dry-run")
    printed = capsys.readouterr().out
    assert "PARTITION BY RANGE (created_at)" in printed and "ALTER TABLE memory_retrieval_p RENAME TO memory_retrieval" in printed
    assert parts.relkind(parts.Runner(dry_run=False, out=print), "memory_retrieval") == "r"
    assert parts.relkind(parts.Runner(dry_run=False, out=print), "memory_retrieval_p") is None


@postgresql_only
def test_refusals_name_the_problem(ledger):
    call_command("partition_retrievals", "--apply")
    with pytest.raises(CommandError, match="memory_retrieval is already partitioned"):
        call_command("partition_retrievals", "--apply")
    with pytest.raises(CommandError, match="has no partition memory_retrieval_1999_01"):
        call_command("partition_retrievals", "--detach", "1999-01")
    with pytest.raises(CommandError, match="a month looks like 2026-09"):
        call_command("partition_retrievals", "--detach", "1999-13")


@postgresql_only
def test_ensure_creates_the_coming_months_once(ledger):
    call_command("partition_retrievals", "--apply", "--months-ahead", "0")
    runner = parts.Runner(dry_run=False, out=print)
    assert parts.ensure_ahead(runner, months_ahead=2, today=TODAY) == [
        parts.partition_name(parts.next_month(parts.month_start(TODAY))),
        parts.partition_name(parts.next_month(parts.next_month(parts.month_start(TODAY))))]
    assert parts.ensure_ahead(runner, months_ahead=2, today=TODAY) == []


@pytest.mark.skipif(connection.vendor == "postgresql", reason="the refusal of other databases")
def test_on_sqlite_the_command_refuses_and_changes_nothing():
    with pytest.raises(CommandError, match="partitioning needs PostgreSQL; this database is sqlite"):
        call_command("partition_retrievals", "--apply")


@pytest.mark.skipif(connection.vendor == "postgresql", reason="the refusal of other databases")
def test_on_sqlite_listing_the_partitions_refuses_too():
    with pytest.raises(CommandError, match="partitioning needs PostgreSQL; this database is sqlite"):
        call_command("partition_retrievals", "--list")


@pytest.mark.parametrize("text", ["0000-01", "0000-12"])
def test_a_month_of_year_zero_is_refused_as_a_bad_month(text):
    with pytest.raises(CommandError, match=f"a month looks like 2026-09, got '{text}'"):
        call_command("partition_retrievals", "--detach", text)


def test_beat_creates_the_coming_months_only_where_the_table_is_partitioned(db):
    from config.celery import app
    from memory.capture.tasks import create_partitions_ahead

    assert app.conf.beat_schedule["partitions-ahead"]["task"] == "memory.capture.tasks.partitions_ahead"
    assert create_partitions_ahead() == []  # a plain table (and SQLite): nothing to do, no error


@postgresql_only
def test_beat_creates_the_coming_months_of_a_partitioned_table(ledger):
    call_command("partition_retrievals", "--apply", "--months-ahead", "0")
    created = parts.partitions_ahead(today=TODAY)
    assert len(created) == parts.MONTHS_AHEAD and set(created) <= set(parts.partitions(parts.Runner(
        dry_run=False, out=print)))
    assert parts.partitions_ahead(today=TODAY) == []
