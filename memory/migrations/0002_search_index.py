"""The keyword index over `search_tokens`, per database (see memory/search/fields.py).

PostgreSQL: a stored tsvector column computed by the database and a GIN index on it.
SQLite: an external-content FTS5 table with the ascii tokenizer (tokens are pre-split and
space separated) and triggers, so every write path — bulk_create and update() included —
keeps the index in step, and deleting a row deletes its index entry.
"""

from django.db import migrations

TABLES = ("memory_node", "memory_message")


def _postgresql(table: str) -> list[str]:
    return [
        f"ALTER TABLE {table} ADD COLUMN search_vector tsvector "
        f"GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, search_tokens)) STORED",
        f"CREATE INDEX {table}_search_vector_gin ON {table} USING gin (search_vector)",
    ]


def _sqlite(table: str) -> list[str]:
    fts = f"{table}_fts"
    return [
        f"CREATE VIRTUAL TABLE {fts} USING fts5(search_tokens, content='{table}', content_rowid='id', tokenize='ascii')",
        f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {table} BEGIN "
        f"INSERT INTO {fts}(rowid, search_tokens) VALUES (new.id, new.search_tokens); END",
        f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, search_tokens) VALUES ('delete', old.id, old.search_tokens); END",
        f"CREATE TRIGGER {fts}_au AFTER UPDATE OF search_tokens ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, search_tokens) VALUES ('delete', old.id, old.search_tokens); "
        f"INSERT INTO {fts}(rowid, search_tokens) VALUES (new.id, new.search_tokens); END",
    ]


def _drop_postgresql(table: str) -> list[str]:
    return [f"DROP INDEX IF EXISTS {table}_search_vector_gin", f"ALTER TABLE {table} DROP COLUMN IF EXISTS search_vector"]


def _drop_sqlite(table: str) -> list[str]:
    fts = f"{table}_fts"
    return [*(f"DROP TRIGGER IF EXISTS {fts}_{suffix}" for suffix in ("ai", "ad", "au")), f"DROP TABLE IF EXISTS {fts}"]


def _run(schema_editor, builders: dict) -> None:
    vendor = schema_editor.connection.vendor
    if vendor not in builders:
        raise RuntimeError(f"keyword search supports postgresql and sqlite, not {vendor}")
    for table in TABLES:
        for statement in builders[vendor](table):
            schema_editor.execute(statement)


def create_index(apps, schema_editor) -> None:
    _run(schema_editor, {"postgresql": _postgresql, "sqlite": _sqlite})


def drop_index(apps, schema_editor) -> None:
    _run(schema_editor, {"postgresql": _drop_postgresql, "sqlite": _drop_sqlite})


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]

    operations = [migrations.RunPython(create_index, drop_index)]
