"""The keyword index's own schema objects, per database (see memory/search/fields.py).

PostgreSQL: a stored tsvector column computed by the database and a GIN index on it, with
fastupdate off. With it on (PostgreSQL's default), new rows wait in the index's pending list
(up to gin_pending_list_limit, 4 MB) until autovacuum merges them. Every search scans that
whole list: a one-token frequency probe took 5.5–7.6 ms with 376 pending pages and 0.56 ms
after the merge, at 100k nodes. Memories are read before every model call and written far
less often, so each write pays for its index entries at once instead: 0.32 ms per message
inserted against 0.07 ms (500 rows in one transaction, load average 11), small beside the
commit's own WAL flush (6.5 ms on the same machine).
SQLite: an external-content FTS5 table with the ascii tokenizer (tokens are pre-split and
space separated) and triggers, so every write path — bulk_create and update() included —
keeps the index in step, and deleting a row deletes its index entry.

Django does not know these objects, and SQLite migrations that rebuild a table (adding a
column, say) drop its triggers; so `ensure_search_index` runs after every migrate
(memory.apps) and restores whatever is missing, rebuilding the FTS content when a trigger
was gone.
"""

TABLES = ("memory_node", "memory_message")


def _postgresql(cursor, table: str) -> None:
    cursor.execute(
        "SELECT 1 FROM information_schema.columns WHERE table_name = %s AND column_name = 'search_vector'", [table]
    )
    if cursor.fetchone() is None:
        cursor.execute(
            f"ALTER TABLE {table} ADD COLUMN search_vector tsvector "
            f"GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, search_tokens)) STORED"
        )
    index = f"{table}_search_vector_gin"
    cursor.execute("SELECT 1 FROM pg_indexes WHERE tablename = %s AND indexname = %s", [table, index])
    if cursor.fetchone() is None:
        cursor.execute(f"CREATE INDEX {index} ON {table} USING gin (search_vector) WITH (fastupdate = off)")
    cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [index])
    if "fastupdate=off" not in (cursor.fetchone()[0] or []):
        # An index made before fastupdate was turned off: turn it off and merge its pending list.
        cursor.execute(f"ALTER INDEX {index} SET (fastupdate = off)")
        cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [index])


def _sqlite(cursor, table: str) -> None:
    fts = f"{table}_fts"
    cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s", [table])
    triggers = {row[0] for row in cursor.fetchall()}
    cursor.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5(search_tokens, content='{table}', "
        f"content_rowid='id', tokenize='ascii')"
    )
    statements = {
        f"{fts}_ai": f"CREATE TRIGGER IF NOT EXISTS {fts}_ai AFTER INSERT ON {table} BEGIN "
        f"INSERT INTO {fts}(rowid, search_tokens) VALUES (new.id, new.search_tokens); END",
        f"{fts}_ad": f"CREATE TRIGGER IF NOT EXISTS {fts}_ad AFTER DELETE ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, search_tokens) VALUES ('delete', old.id, old.search_tokens); END",
        f"{fts}_au": f"CREATE TRIGGER IF NOT EXISTS {fts}_au AFTER UPDATE OF search_tokens ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, search_tokens) VALUES ('delete', old.id, old.search_tokens); "
        f"INSERT INTO {fts}(rowid, search_tokens) VALUES (new.id, new.search_tokens); END",
    }
    for statement in statements.values():
        cursor.execute(statement)
    if set(statements) - triggers:
        # Rows written while a trigger was missing are not indexed: rebuild from the table.
        cursor.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")


def ensure_search_index(connection) -> None:
    """Create whatever part of the keyword index is missing; idempotent."""
    builders = {"postgresql": _postgresql, "sqlite": _sqlite}
    if connection.vendor not in builders:
        raise RuntimeError(f"keyword search supports postgresql and sqlite, not {connection.vendor}")
    with connection.cursor() as cursor:
        for table in TABLES:
            builders[connection.vendor](cursor, table)


def drop_search_index(connection) -> None:
    with connection.cursor() as cursor:
        for table in TABLES:
            if connection.vendor == "postgresql":
                cursor.execute(f"DROP INDEX IF EXISTS {table}_search_vector_gin")
                cursor.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS search_vector")
            else:
                for suffix in ("ai", "ad", "au"):
                    cursor.execute(f"DROP TRIGGER IF EXISTS {table}_fts_{suffix}")
                cursor.execute(f"DROP TABLE IF EXISTS {table}_fts")
