"""`make partition-check`: partition_retrievals --apply on a scratch PostgreSQL database while a
writer keeps inserting, scrubbing and deleting retrievals (docs/reliability/deploy.md).

A fresh database is migrated and given ROWS retrievals spread over the last 12 months. A writer
thread then inserts a retrieval, blanks the query of a random older one (what a forget does)
and deletes another, in a loop, until it sees the partitioned table; meanwhile the command
converts the table. Afterwards the new table must hold exactly the old table's rows (every
column), the longest write must have waited about as long as the swap, a time-bounded query
must read one month's partition, and detaching the oldest month must work. Exits 1 if not.

Environment: PG_BASE (default postgres://postgres@127.0.0.1:5432), PARTITION_CHECK_DB (default
memory_partition_check; dropped, created, dropped again), PARTITION_CHECK_ROWS (default 300000).
"""

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
BASE = os.environ.get("PG_BASE", "postgres://postgres@127.0.0.1:5432")
DB = os.environ.get("PARTITION_CHECK_DB", "memory_partition_check")
ROWS = int(os.environ.get("PARTITION_CHECK_ROWS", "300000"))
URL = f"{BASE}/{DB}"
ENV = {**os.environ, "DATABASE_URL": URL, "DJANGO_SETTINGS_MODULE": "config.settings"}
COLUMNS = ("team_id, actor, workspace_id, user_id, query, domain, policy, items, omitted, used_node_ids, message_ids, "
           "chars_by_layer, tokens_by_layer, total_chars, total_tokens, truncated, store_status, warnings, latency_ms, "
           "created_at")
VALUES = ("%(team)s, 'key:check', 'w' || mod(n, 5), 'u' || mod(n, 50), 'query ' || n, '', '{}', '[]', '[]', '[1, 2]', '[]', "
          "'{}', '{}', 100, 25, false, 'ok', '[]', 3.5, {created}")
failures: list[str] = []


def expect(condition: bool, what: str) -> None:
    print(("  ok   " if condition else "  FAIL ") + what)
    if not condition:
        failures.append(what)


def manage(*args: str) -> str:
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=ENV, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{result.stderr[-3000:]}")
    return result.stdout


def recreate() -> None:
    with psycopg.connect(f"{BASE}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{DB}"')


class Writer(threading.Thread):
    """Writes until memory_retrieval is partitioned. Keeps the count of statements, the longest
    iteration (ms) and the ids its statements touched in the new table: a statement waiting for
    the swap's lock runs on the table that has the name once the lock is released."""

    def __init__(self, team: int):
        super().__init__(daemon=True)
        self.team, self.operations, self.longest_ms, self.error = team, 0, 0.0, None
        self.after_swap: set[int] = set()

    def note(self, rows: list[tuple]) -> None:
        self.after_swap.update(pk for pk, table in rows if table != "memory_retrieval")

    def run(self) -> None:
        try:
            with psycopg.connect(URL, autocommit=True) as db:
                while db.execute("SELECT relkind::text FROM pg_class WHERE oid = 'memory_retrieval'::regclass"
                                 ).fetchone()[0] == "r":
                    started = time.perf_counter()
                    touched = " RETURNING id, tableoid::regclass::text"
                    self.note(db.execute(f"INSERT INTO memory_retrieval ({COLUMNS}) SELECT "
                                         f"{VALUES.replace('{created}', 'now()')} FROM (SELECT 0 AS n) AS one" + touched,
                                         {"team": self.team}).fetchall())
                    self.note(db.execute("UPDATE memory_retrieval SET query = '' WHERE id = "
                                         "(SELECT floor(random() * %s)::int + 1)" + touched, [ROWS]).fetchall())
                    self.note(db.execute("DELETE FROM memory_retrieval WHERE id = "
                                         "(SELECT floor(random() * %s)::int + 1)" + touched, [ROWS]).fetchall())
                    self.longest_ms = max(self.longest_ms, (time.perf_counter() - started) * 1000)
                    self.operations += 3
                    time.sleep(0.002)
        except Exception as error:  # noqa: BLE001 - reported as a failure below
            self.error = error


def main() -> int:
    print(f"scratch database {DB}: migrate, {ROWS:,} retrievals over 12 months")
    recreate()
    manage("migrate", "--noinput", "-v0")
    manage("create_team", "check-team")
    with psycopg.connect(URL, autocommit=True) as db:
        team = db.execute("SELECT id FROM accounts_team WHERE slug = 'check-team'").fetchone()[0]
        created = f"now() - (n * interval '{round(365 * 86400 / ROWS, 3)} seconds')"
        db.execute(f"INSERT INTO memory_retrieval ({COLUMNS}) SELECT {VALUES.replace('{created}', created)} "
                   f"FROM generate_series(1, {ROWS}) AS n", {"team": team})
        db.execute("ANALYZE memory_retrieval")
        size = db.execute("SELECT pg_size_pretty(pg_total_relation_size('memory_retrieval'))").fetchone()[0]
    print(f"  memory_retrieval: {ROWS:,} rows, {size}")

    writer = Writer(team)
    writer.start()
    time.sleep(1)
    started = time.perf_counter()
    output = manage("partition_retrievals", "--apply")
    seconds = time.perf_counter() - started
    writer.join(timeout=30)
    print("  " + output.strip())
    expect(writer.error is None, f"the writer ran without error ({writer.error!r})")
    expect(writer.operations > 0, f"the writer wrote during the conversion: {writer.operations:,} statements, "
                                  f"longest insert+update+delete {writer.longest_ms:.0f} ms")

    with psycopg.connect(URL, autocommit=True) as db:
        one = db.execute
        expect(one("SELECT relkind::text FROM pg_class WHERE oid = 'memory_retrieval'::regclass").fetchone()[0] == "p",
               "memory_retrieval is partitioned")
        later = sorted(writer.after_swap) or [0]  # rows the writer changed in the new table after the swap
        old = one("SELECT count(*) FROM memory_retrieval_unpartitioned WHERE id <> ALL(%s)", [later]).fetchone()[0]
        new = one("SELECT count(*) FROM memory_retrieval WHERE id <> ALL(%s)", [later]).fetchone()[0]
        missing = one("SELECT count(*) FROM (SELECT * FROM memory_retrieval_unpartitioned WHERE id <> ALL(%s) EXCEPT "
                      "SELECT * FROM memory_retrieval) AS d", [later]).fetchone()[0]
        extra = one("SELECT count(*) FROM (SELECT * FROM memory_retrieval WHERE id <> ALL(%s) EXCEPT "
                    "SELECT * FROM memory_retrieval_unpartitioned) AS d", [later]).fetchone()[0]
        expect(old == new and missing == extra == 0,
               f"the new table holds the old one's rows exactly: {new:,} = {old:,}, differing rows {missing} + {extra} "
               f"(leaving out {len(writer.after_swap)} the writer changed after the swap)")
        partitions = one("SELECT count(*) FROM pg_inherits WHERE inhparent = 'memory_retrieval'::regclass").fetchone()[0]
        print(f"  {partitions} partitions; conversion {seconds:.1f} s in all")
        plan = "\n".join(row[0] for row in one(
            "EXPLAIN SELECT count(*) FROM memory_retrieval WHERE team_id = %s AND created_at >= date_trunc('month', now()) "
            "- interval '1 month' AND created_at < date_trunc('month', now())", [team]).fetchall())
        scanned = sorted(set(re.findall(r"\bon (memory_retrieval_\d{4}_\d{2}|memory_retrieval_default)\b", plan)))
        expect(len(scanned) == 1, f"last month's query reads one partition: {', '.join(scanned)}")
        inserted = one(f"INSERT INTO memory_retrieval ({COLUMNS}) SELECT {VALUES.replace('{created}', 'now()')} "
                       "FROM (SELECT 0 AS n) AS one RETURNING id", {"team": team}).fetchone()[0]
        expect(inserted > one("SELECT max(id) FROM memory_retrieval_unpartitioned").fetchone()[0],
               f"a new retrieval gets the next id ({inserted:,})")
        oldest = one("SELECT min(created_at) FROM memory_retrieval").fetchone()[0].strftime("%Y-%m")

    started = time.perf_counter()
    output = manage("partition_retrievals", "--detach", oldest)
    print(f"  {output.strip()} ({(time.perf_counter() - started) * 1000:.0f} ms with the command's start-up)")
    expect(output.startswith("detached "), f"the oldest month ({oldest}) is detached")
    with psycopg.connect(f"{BASE}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
    print("FAILED: " + "; ".join(failures) if failures else "all expectations met")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
