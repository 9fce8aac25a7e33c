"""What a keyword search runs over, as hand-written SQL (R-QUERY; R-TEN).

memory.search.engine fetches candidates, counts document frequencies and reads the values it
scores with from a `Rows`: one model's table, optionally joined, under an SQL condition that
the caller writes and that must hold the team and the exact reach. The statements are written
out here instead of being compiled by the ORM each time: a context call runs two to five of
them, and the ORM spent more CPU compiling each than the database spent answering it
(docs/performance.md). The match is the same as the `search_tokens__matches` lookup's
(memory.search.fields): the GIN-indexed tsvector on PostgreSQL, the FTS5 table on SQLite.

Conditions, joins and columns name tables by their own names ("memory_node"."status"), as
the ORM does, and take parameters as %s.

On PostgreSQL the match runs alone in a subquery the planner does not merge (OFFSET 0), and
the caller's condition is checked on the rows it returns. The owner tokens inside the match
already narrow the GIN scan to the caller's reach (memory.search.text.owner_token); left to
itself the planner also ANDs it with a bitmap of the exact reach built from the B-tree indexes
(the global scope alone is 5,000 entries at 100k nodes, 50,000 at 1M), which took 1.1 ms of a
2.6 ms keyword statement at 100k nodes (docs/performance.md, finding 3). Same rows: the
condition still decides, in the same statement.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connections, router
from django.db.models import Field, Model

from memory.search.fields import TokenQuery, match_sql
from memory.selectors.rows import converted, converters


@dataclass(frozen=True)
class Column:
    """A value read with each candidate: its key in Scored.values, its SQL expression, and the
    model field whose database converters apply (as the ORM's values() converts it)."""

    name: str
    sql: str
    field: Field


@dataclass(frozen=True)
class Rows:
    """The rows of `model`'s table (plus `joins`) where `where` holds (its parameters in
    `params`), with `columns` read for each candidate."""

    model: type[Model]
    where: str
    params: tuple = ()
    joins: str = ""
    columns: tuple[Column, ...] = ()

    @property
    def table(self) -> str:
        return f'"{self.model._meta.db_table}"'

    @property
    def using(self) -> str:
        return router.db_for_read(self.model)

    def matching(self, query: TokenQuery, *, select: str, tail: str = "") -> tuple[str, list]:
        """`SELECT {select} FROM … WHERE (where) AND <the rows match query>{tail}` and its parameters."""
        connection = connections[self.using]
        return self._matching(connection, match_sql(connection, self.table, self.model, query), select=select, tail=tail)

    def _matching(self, connection, match: tuple[str, list], *, select: str, tail: str = "") -> tuple[str, list]:
        joins = f" {self.joins}" if self.joins else ""
        match_condition, match_params = match
        if connection.vendor == "postgresql":
            # The match alone, in a subquery the planner keeps apart (OFFSET 0); the condition is
            # checked on the rows it returns. See the module docstring.
            columns = ", ".join(f'"{field.column}"' for field in self.model._meta.concrete_fields)
            matched = f"(SELECT {columns} FROM {self.table} WHERE {match_condition} OFFSET 0) AS {self.table}"
            return f"SELECT {select} FROM {matched}{joins} WHERE ({self.where}){tail}", [*match_params, *self.params]
        return (f"SELECT {select} FROM {self.table}{joins} WHERE ({self.where}) AND {match_condition}{tail}",
                [*self.params, *match_params])

    def fetch(self, query: TokenQuery, limit: int) -> list[tuple]:
        """The newest `limit` matching rows: (id, search_tokens, *columns), values converted."""
        select = ", ".join([f"{self.table}.\"id\"", f"{self.table}.\"search_tokens\"",
                            *(column.sql for column in self.columns)])
        sql, params = self.matching(query, select=select, tail=f" ORDER BY {self.table}.\"id\" DESC LIMIT {int(limit)}")
        connection = connections[self.using]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        # The columns' converters (memory.selectors.rows), shifted past id and search_tokens.
        chains = [(index + 2, chain, column) for index, chain, column
                  in converters(connection, tuple(column.field for column in self.columns))]
        if not chains:
            return rows
        return [tuple(values) for values in converted(rows, 2 + len(self.columns), chains, connection)]

    def counts(self, queries: Sequence[TokenQuery], cap: int) -> list[int]:
        """Per query, the matching rows counted up to `cap`; one statement for all.

        On PostgreSQL the statement's text is the same whatever the number of queries (their
        tsqueries come as one array parameter), so it is parsed once per connection and, as
        deployed, prepared: written out once per query it was 18,000 characters with 210
        parameters for a 22-token Chinese sentence, planned anew each time (1.5 ms of the
        server's 4 ms) and split by the driver (docs/performance.md)."""
        if not queries:
            return []
        connection = connections[self.using]
        select, limit = f"{self.table}.\"id\"", f" LIMIT {int(cap)}"
        if connection.vendor == "postgresql":
            match = f"{self.table}.search_vector @@ to_tsquery('simple'::regconfig, q.text)"
            sql, params = self._matching(connection, (match, []), select=select, tail=limit)
            statement = (f"SELECT (SELECT COUNT(*) FROM ({sql}) AS df) FROM unnest(CAST(%s AS text[])) "
                         "WITH ORDINALITY AS q(text, position) ORDER BY q.position")
            with connection.cursor() as cursor:
                cursor.execute(statement, [*params, [query.as_tsquery() for query in queries]])
                return [int(count) for (count,) in cursor.fetchall()]
        parts: list[str] = []
        params = []
        for index, query in enumerate(queries):
            sql, query_params = self.matching(query, select=select, tail=limit)
            parts.append(f"(SELECT COUNT(*) FROM ({sql}) AS df_{index})")
            params += query_params
        with connection.cursor() as cursor:
            cursor.execute("SELECT " + ", ".join(parts), params)
            return [int(count) for count in cursor.fetchone()]
