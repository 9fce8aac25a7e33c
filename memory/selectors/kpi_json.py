"""Counting inside the ledgers' JSON columns in the database, on both databases the product
supports (SQLite's json_each / json_extract, PostgreSQL's jsonb functions), for
memory.selectors.kpis. Days are UTC calendar days."""

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.db import connections, router
from django.db.models import Func, IntegerField
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast

from memory.models import Retrieval

NOT_BLANK = r"\S"  # a query that is not blank, as context_build decides whether to search


class JSONArrayLength(Func):
    """The length of a JSON array column (SQLite json_array_length, PostgreSQL jsonb_array_length)."""

    function = "JSON_ARRAY_LENGTH"
    output_field = IntegerField()

    def as_postgresql(self, compiler, connection, **extra_context):
        return super().as_sql(compiler, connection, function="JSONB_ARRAY_LENGTH", **extra_context)


def json_int(column: str, *path: str) -> Cast:
    """An integer inside a JSON column, by key path (NULL when absent)."""
    expression: Any = column
    for key in path[:-1]:
        expression = KeyTransform(key, expression)
    return Cast(KeyTextTransform(path[-1], expression), IntegerField())


# Statements per vendor; {day}, {table} and {where} are filled in by per_day (table alias t).
OMITTED_BY_REASON = {
    "postgresql": "SELECT {day}, e.value ->> 'reason', COUNT(*) FROM {table} t "
                  "CROSS JOIN LATERAL jsonb_array_elements(t.omitted) AS e(value) WHERE {where} GROUP BY 1, 2",
    "sqlite": "SELECT {day}, json_extract(e.value, '$.reason'), COUNT(*) FROM {table} t, json_each(t.omitted) e "
              "WHERE {where} GROUP BY 1, 2",
}
JOB_OUTCOMES = {
    "postgresql": "SELECT {day}, e.key, SUM(CAST(e.value AS BIGINT)) FROM {table} t "
                  "CROSS JOIN LATERAL jsonb_each_text(t.result -> 'outcomes') AS e(key, value) "
                  "WHERE {where} GROUP BY 1, 2",
    "sqlite": "SELECT {day}, e.key, SUM(CAST(e.value AS INTEGER)) FROM {table} t, "
              "json_each(t.result, '$.outcomes') e WHERE {where} GROUP BY 1, 2",
}
# Context calls with a query that injected at least one item of the "relevant" section (the
# query's memories, memory.selectors.context.Item.ref).
RELEVANT_HITS = {
    "postgresql": "SELECT {day}, COUNT(*) FROM {table} t WHERE {where} AND t.query ~ %s "
                  "AND t.items @> '[{{\"section\": \"relevant\"}}]'::jsonb GROUP BY 1",
    "sqlite": "SELECT {day}, COUNT(*) FROM {table} t WHERE {where} AND t.query REGEXP %s AND EXISTS "
              "(SELECT 1 FROM json_each(t.items) e WHERE json_extract(e.value, '$.section') = 'relevant') GROUP BY 1",
}


@dataclass(frozen=True)
class Window:
    """One team's rows created in [start, end), of one workspace unless it is ""."""

    team_id: int
    workspace_id: str
    start: datetime
    end: datetime


def per_day(statements: dict[str, str], *, table: str, window: Window, status: str = "",
            params: tuple = ()) -> list[tuple]:
    """Rows (day, …) of the vendor's statement over `table` in `window` and, with `status`, of
    that status; `params` fill the statement's own placeholders, after the window's."""
    # Every table here is the memory app's, and the router decides by app: the replica on a
    # dashboard page (config.db_router), default everywhere else.
    connection = connections[router.db_for_read(Retrieval)]
    where = "t.team_id = %s AND t.created_at >= %s AND t.created_at < %s"
    values: list[Any] = [window.team_id, connection.ops.adapt_datetimefield_value(window.start),
                         connection.ops.adapt_datetimefield_value(window.end)]
    if status:
        where += " AND t.status = %s"
        values.append(status)
    if window.workspace_id:
        where += " AND t.workspace_id = %s"
        values.append(window.workspace_id)
    postgres = connection.vendor == "postgresql"
    day = "(t.created_at AT TIME ZONE 'UTC')::date" if postgres else "date(t.created_at)"
    sql = statements["postgresql" if postgres else "sqlite"].format(day=day, table=table, where=where)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*values, *params])
        return [(_day(row[0]), *row[1:]) for row in cursor.fetchall()]


def _day(value: Any) -> date:
    """A database's date: a date, or on SQLite the text 'YYYY-MM-DD'."""
    return value if isinstance(value, date) else date.fromisoformat(str(value)[:10])
