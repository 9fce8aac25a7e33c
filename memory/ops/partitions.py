"""Monthly range partitions of the retrievals table on PostgreSQL (docs/deploy.md, "Partitioning").

`memory_retrieval` (the hit ledger) grows with every context call and is read by recency. This
module converts it, while the service runs, into a table partitioned by month of `created_at`,
keeps months created ahead, and detaches old months for retention:

1. prepare (one transaction that leaves the old table's writers alone): the new table
   `memory_retrieval_p` is created LIKE the old one, PARTITION BY RANGE (created_at), with the
   primary key (id, created_at) — PostgreSQL requires the partition key in every unique
   constraint — an id sequence, one partition per month from the oldest row to MONTHS_AHEAD
   months after this one, a DEFAULT partition (rows outside them, such as old imports, still go
   in), the old table's indexes and its foreign keys to teams, keys and sessions; then, in a
   transaction of its own (writers wait for it), a trigger on the old table that logs the ids of
   updated and deleted rows (forget scrubs retrievals, team deletion removes them);
2. copy, in batches of ids, each its own transaction, the rows present when it started;
3. swap (one transaction, holding ACCESS EXCLUSIVE on the old table: writers wait that long):
   copy the rows written since, re-copy the logged ones, set the sequence past the largest id,
   drop feedback's foreign key (a key must reference a unique constraint; `retrieval_id` stays
   unique and indexed, and Django still deletes feedback with its retrieval), then rename the
   old table to `memory_retrieval_unpartitioned` and the new one to `memory_retrieval` with the
   old names of its indexes and primary key.

The Django model does not change (Django needs no migration and knows nothing of it); the old
table is kept for the operator to compare and drop. Detaching a month first deletes the
feedback of its retrievals (a feedback row must not outlive its retrieval), then detaches it
as a plain table named `memory_retrieval_<yyyy>_<mm>` to archive (pg_dump -t) and drop.

Every function takes a Runner: it executes SQL, or with dry_run only prints it.
"""

import re
import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

from django.db import DatabaseError, connection, transaction

TABLE = "memory_retrieval"
NEW = "memory_retrieval_p"
OLD = "memory_retrieval_unpartitioned"
SEQUENCE = "memory_retrieval_p_id_seq"
CHANGES = "memory_retrieval_p_changes"
TRACK = "memory_retrieval_p_track"
FEEDBACK = "memory_retrievalfeedback"
DEFAULT_PARTITION = "memory_retrieval_default"
MONTHS_AHEAD = 3
BATCH_ROWS = 10_000
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


class PartitionError(Exception):
    """The table is not in the state the operation needs (message says which)."""


class Runner:
    """Executes SQL on the default connection, or (dry_run) writes it to `out` instead."""

    def __init__(self, *, dry_run: bool, out: Callable[[str], None]):
        self.dry_run = dry_run
        self.out = out

    def run(self, sql: str, params: list[Any] | None = None) -> None:
        if self.dry_run:
            self.out(sql.strip() + ";" + (f"  -- {params}" if params else ""))
            return
        with connection.cursor() as cursor:
            cursor.execute(sql, params)

    def value(self, sql: str, params: list[Any] | None = None) -> Any:
        """First column of the first row of a read (runs even in a dry run)."""
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            row = cursor.fetchone()
        return row[0] if row else None

    def rows(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()


def month_start(day: date) -> date:
    return date(day.year, day.month, 1)


def next_month(month: date) -> date:
    return date(month.year + (month.month == 12), month.month % 12 + 1, 1)


def partition_name(month: date) -> str:
    return f"{TABLE}_{month.year:04d}_{month.month:02d}"


def parse_month(text: str) -> date:
    """`YYYY-MM` as the first day of that month. Raises PartitionError for anything else."""
    match = _MONTH.match(text.strip())
    if not match or not 1 <= int(match[2]) <= 12 or int(match[1]) < 1:  # date() starts at year 1
        raise PartitionError(f"a month looks like 2026-09, got {text!r}")
    return date(int(match[1]), int(match[2]), 1)


def relkind(runner: Runner, name: str) -> str | None:
    """'r' (table), 'p' (partitioned table) or None (no such relation)."""
    return runner.value("SELECT c.relkind::text FROM pg_class c WHERE c.oid = to_regclass(%s)", [name])


def _check_postgresql() -> None:
    if connection.vendor != "postgresql":
        raise PartitionError(f"partitioning needs PostgreSQL; this database is {connection.vendor}")


def _create_month(runner: Runner, table: str, month: date) -> None:
    runner.run(f"CREATE TABLE {partition_name(month)} PARTITION OF {table} "
               f"FOR VALUES FROM ('{month.isoformat()}T00:00:00+00:00') TO ('{next_month(month).isoformat()}T00:00:00+00:00')")


def _months(first: date, last: date) -> list[date]:
    months, month = [], month_start(first)
    while month <= last:
        months.append(month)
        month = next_month(month)
    return months


def convert(runner: Runner, *, months_ahead: int = MONTHS_AHEAD, batch_rows: int = BATCH_ROWS,
            today: date | None = None) -> dict[str, int]:
    """Convert memory_retrieval into monthly partitions (steps in the module docstring). Returns
    {"rows": rows in the new table, "partitions": monthly partitions, "batches": copy batches,
    "swap_ms": milliseconds the swap held the old table locked (writers waited)}.
    Raises PartitionError when not on PostgreSQL, already partitioned, or a former run left
    memory_retrieval_p or memory_retrieval_unpartitioned behind."""
    _check_postgresql()
    today = today or datetime.now(UTC).date()
    if relkind(runner, TABLE) == "p":
        raise PartitionError(f"{TABLE} is already partitioned")
    for leftover in (NEW, OLD, CHANGES):
        if relkind(runner, leftover) is not None:
            raise PartitionError(f"{leftover} exists (an earlier run?): drop it first")
    # Deferred foreign key checks pending on the table (rows written earlier in this transaction)
    # would forbid ALTER TABLE; checking them now is what COMMIT would do.
    runner.run("SET CONSTRAINTS ALL IMMEDIATE")
    oldest = runner.value(f"SELECT min(created_at) FROM {TABLE}")
    first = month_start(oldest.astimezone(UTC).date()) if oldest else month_start(today)
    last = month_start(today)
    for _ in range(months_ahead):
        last = next_month(last)
    months = _months(first, last)
    indexes = runner.rows("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
                          "AND tablename = %s AND indexname <> %s ORDER BY indexname", [TABLE, f"{TABLE}_pkey"])
    foreign_keys = runner.rows("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass "
                               "AND contype = 'f' ORDER BY conname", [TABLE])

    with transaction.atomic():
        runner.run(f"CREATE TABLE {CHANGES} (id bigint NOT NULL)")
        runner.run(f"CREATE FUNCTION {TRACK}() RETURNS trigger LANGUAGE plpgsql AS $$ "
                   f"BEGIN INSERT INTO {CHANGES} (id) VALUES (OLD.id); RETURN NULL; END $$")
        runner.run(f"CREATE TABLE {NEW} (LIKE {TABLE} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE) "
                   "PARTITION BY RANGE (created_at)")
        runner.run(f"CREATE SEQUENCE {SEQUENCE} AS bigint OWNED BY {NEW}.id")
        runner.run(f"ALTER TABLE {NEW} ALTER COLUMN id SET DEFAULT nextval('{SEQUENCE}')")
        runner.run(f"ALTER TABLE {NEW} ADD CONSTRAINT {NEW}_pkey PRIMARY KEY (id, created_at)")
        for month in months:
            _create_month(runner, NEW, month)
        runner.run(f"CREATE TABLE {DEFAULT_PARTITION} PARTITION OF {NEW} DEFAULT")
        for name, definition in indexes:
            runner.run(definition.replace(f"INDEX {name} ON ", f"INDEX {name}_p ON ", 1)
                       .replace(f".{TABLE} ", f".{NEW} ", 1))
        for name, definition in foreign_keys:
            runner.run(f"ALTER TABLE {NEW} ADD CONSTRAINT {name} {definition}")
    # Its own short transaction: CREATE TRIGGER waits for the table's writers in flight and makes
    # new ones wait until it commits. So every insert committed before it has an id up to
    # copied_up_to, every later insert a larger one (copied at the swap), and every later update
    # or delete is logged.
    with transaction.atomic():
        runner.run(f"CREATE TRIGGER {TRACK} AFTER UPDATE OR DELETE ON {TABLE} FOR EACH ROW EXECUTE FUNCTION {TRACK}()")
        copied_up_to = runner.value(f"SELECT coalesce(max(id), 0) FROM {TABLE}")

    batches, low = 0, 0
    if runner.dry_run and copied_up_to:
        runner.out(f"-- then {-(-copied_up_to // batch_rows)} batches of ids, each its own transaction:")
        runner.run(f"INSERT INTO {NEW} SELECT * FROM {TABLE} WHERE id > %s AND id <= %s", [0, min(batch_rows, copied_up_to)])
        low = copied_up_to
    while low < copied_up_to:
        high = min(low + batch_rows, copied_up_to)
        with transaction.atomic():
            runner.run(f"INSERT INTO {NEW} SELECT * FROM {TABLE} WHERE id > %s AND id <= %s", [low, high])
        batches, low = batches + 1, high

    swap_started = time.perf_counter()
    with transaction.atomic():
        runner.run(f"LOCK TABLE {TABLE} IN ACCESS EXCLUSIVE MODE")
        runner.run(f"INSERT INTO {NEW} SELECT * FROM {TABLE} WHERE id > %s", [copied_up_to])
        runner.run(f"DELETE FROM {NEW} WHERE id IN (SELECT id FROM {CHANGES}) AND id <= %s", [copied_up_to])
        runner.run(f"INSERT INTO {NEW} SELECT * FROM {TABLE} WHERE id IN (SELECT id FROM {CHANGES}) AND id <= %s",
                   [copied_up_to])
        runner.run(f"DROP TRIGGER {TRACK} ON {TABLE}")
        runner.run(f"DROP FUNCTION {TRACK}()")
        runner.run(f"DROP TABLE {CHANGES}")
        runner.run(f"SELECT setval('{SEQUENCE}', (SELECT coalesce(max(id), 0) + 1 FROM {NEW}), false)")
        for name in runner.value(
                "SELECT coalesce(array_agg(conname::text), '{}') FROM pg_constraint WHERE conrelid = %s::regclass "
                "AND confrelid = %s::regclass AND contype = 'f'", [FEEDBACK, TABLE]) or []:
            runner.run(f"ALTER TABLE {FEEDBACK} DROP CONSTRAINT {name}")
        runner.run(f"ALTER TABLE {TABLE} RENAME TO {OLD}")
        runner.run(f"ALTER TABLE {OLD} RENAME CONSTRAINT {TABLE}_pkey TO {OLD}_pkey")
        for name, _ in indexes:
            runner.run(f"ALTER INDEX {name} RENAME TO {name}_u")
            runner.run(f"ALTER INDEX {name}_p RENAME TO {name}")
        runner.run(f"ALTER TABLE {NEW} RENAME TO {TABLE}")
        runner.run(f"ALTER TABLE {TABLE} RENAME CONSTRAINT {NEW}_pkey TO {TABLE}_pkey")
    # From the lock to the commit: how long writers of retrievals (context calls) waited.
    swap_ms = round((time.perf_counter() - swap_started) * 1000, 1)
    rows = 0 if runner.dry_run else runner.value(f"SELECT count(*) FROM {TABLE}")
    return {"rows": rows, "partitions": len(months), "batches": batches, "swap_ms": swap_ms}


def partitions(runner: Runner) -> list[str]:
    """The names of memory_retrieval's partitions, oldest first (the DEFAULT one last). Raises
    PartitionError on a database other than PostgreSQL."""
    _check_postgresql()
    names = [row[0] for row in runner.rows(
        "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = to_regclass(%s) ORDER BY c.relname", [TABLE])]
    return sorted(names, key=lambda name: (name == DEFAULT_PARTITION, name))


def ensure_ahead(runner: Runner, *, months_ahead: int = MONTHS_AHEAD, today: date | None = None) -> list[str]:
    """Create the missing monthly partitions from this month to `months_ahead` months after it
    (run it monthly, e.g. from cron). Returns the names created. Raises PartitionError when the
    table is not partitioned."""
    _check_postgresql()
    if relkind(runner, TABLE) != "p":
        raise PartitionError(f"{TABLE} is not partitioned: run partition_retrievals --apply first")
    existing = set(partitions(runner))
    month, created = month_start(today or datetime.now(UTC).date()), []
    for _ in range(months_ahead + 1):
        if partition_name(month) not in existing:
            try:
                with transaction.atomic():
                    _create_month(runner, TABLE, month)
            except DatabaseError as error:  # rows of that month already in the DEFAULT partition
                raise PartitionError(f"cannot create {partition_name(month)}: {error}".strip()) from None
            created.append(partition_name(month))
        month = next_month(month)
    return created


def partitions_ahead(*, today: date | None = None) -> list[str]:
    """What beat runs daily (config/celery.py): on PostgreSQL with memory_retrieval partitioned,
    ensure_ahead; anywhere else nothing. Returns the partitions created. Without it a month
    with no partition of its own fills the DEFAULT partition, and that month's partition can
    then no longer be created."""
    if connection.vendor != "postgresql":
        return []
    runner = Runner(dry_run=False, out=lambda line: None)
    if relkind(runner, TABLE) != "p":
        return []
    return ensure_ahead(runner, today=today)


def detach(runner: Runner, month: date) -> dict[str, int]:
    """Detach the partition of `month` (its retrievals leave the service) after deleting the
    feedback on them. Returns {"retrievals": rows in the detached table, "feedback": feedback
    rows deleted}. Raises PartitionError when that month has no attached partition."""
    _check_postgresql()
    name = partition_name(month)
    if name not in partitions(runner):
        raise PartitionError(f"{TABLE} has no partition {name}")
    with transaction.atomic():
        feedback = runner.value(f"SELECT count(*) FROM {FEEDBACK} WHERE retrieval_id IN (SELECT id FROM {name})")
        runner.run(f"DELETE FROM {FEEDBACK} WHERE retrieval_id IN (SELECT id FROM {name})")
        runner.run(f"ALTER TABLE {TABLE} DETACH PARTITION {name}")
        retrievals = runner.value(f"SELECT count(*) FROM {name}")
    return {"retrievals": retrievals, "feedback": feedback}
