"""Model fields and lookups that carry the keyword index on both databases (R-QUERY).

`SearchTokensField` holds the pre-tokenised text (see memory.search.text). The index over it is
created by migration 0002 for the database in use:
- PostgreSQL: a stored `search_vector` column = to_tsvector('simple', search_tokens), GIN-indexed;
- SQLite: an FTS5 table `<table>_fts` (ascii tokenizer) kept in sync by triggers.
Because both index the same tokens, both answer the same matches.

Lookups:
- `search_tokens__matches=TokenQuery(tokens, mode)` — any/all of the tokens;
- `tags__has_item="x"` on a JSON list field — the list contains the string.
"""

from dataclasses import dataclass

from django.db import models
from django.db.models import Lookup

_SAFE_TOKEN_CHARS = frozenset("\"'\\|&!():*<>")


@dataclass(frozen=True)
class TokenQuery:
    """Rows whose tokens include any (or all) of `tokens` — and, when `within` is given, at
    least one of those owner tokens (the caller's reach; see memory.search.text.owner_token)."""

    tokens: tuple[str, ...]
    mode: str = "any"  # "any" | "all"
    within: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.tokens:
            raise ValueError("a TokenQuery needs at least one token")
        if self.mode not in ("any", "all"):
            raise ValueError(f"mode must be 'any' or 'all', not {self.mode!r}")
        for token in (*self.tokens, *self.within):
            if not token or any(ch in _SAFE_TOKEN_CHARS or ch.isspace() for ch in token):
                raise ValueError(f"not a token: {token!r}")

    def as_tsquery(self) -> str:
        joiner = " | " if self.mode == "any" else " & "
        text = joiner.join(f"'{token}'" for token in self.tokens)
        if not self.within:
            return text
        return "(" + " | ".join(f"'{token}'" for token in self.within) + f") & ({text})"

    def as_fts5(self) -> str:
        joiner = " OR " if self.mode == "any" else " AND "
        text = joiner.join(f'"{token}"' for token in self.tokens)
        if not self.within:
            return text
        return "(" + " OR ".join(f'"{token}"' for token in self.within) + f") AND ({text})"


class SearchTokensField(models.TextField):
    """Pre-tokenised search text; see the module docstring for the index behind it."""


def fts_table(model: type[models.Model]) -> str:
    return f"{model._meta.db_table}_fts"


def match_sql(connection, table: str, model: type[models.Model], query: TokenQuery) -> tuple[str, list]:
    """The SQL condition "rows of `table` (a quoted table name or alias of `model`) match
    `query`" on `connection`, and its parameters: the lookup's and the hand-written
    statements' (memory.search.source) one definition. Raises NotImplementedError on a
    database other than PostgreSQL and SQLite."""
    if connection.vendor == "postgresql":
        return f"{table}.search_vector @@ to_tsquery('simple'::regconfig, %s)", [query.as_tsquery()]
    if connection.vendor == "sqlite":
        fts = f'"{fts_table(model)}"'
        return f'{table}."id" IN (SELECT rowid FROM {fts} WHERE {fts} MATCH %s)', [query.as_fts5()]
    raise NotImplementedError(f"keyword search is not implemented for {connection.vendor}")


def has_item_sql(connection, column: str) -> str:
    """The SQL condition "the JSON list in `column` (an SQL expression) contains the string
    given as the one parameter %s", for the lookup and hand-written statements alike.
    Raises NotImplementedError on a database other than PostgreSQL and SQLite."""
    if connection.vendor == "postgresql":
        return f"({column})::jsonb @> jsonb_build_array(%s::text)"
    if connection.vendor == "sqlite":
        return f"EXISTS (SELECT 1 FROM json_each({column}) WHERE json_each.type = 'text' AND json_each.value = %s)"
    raise NotImplementedError(f"has_item is not implemented for {connection.vendor}")


@SearchTokensField.register_lookup
class TokensMatch(Lookup):
    lookup_name = "matches"
    prepare_rhs = False

    def get_db_prep_lookup(self, value, connection):
        return ("%s", [value])

    def as_sql(self, compiler, connection):
        if not isinstance(self.rhs, TokenQuery):
            raise TypeError("search_tokens__matches takes a TokenQuery")
        return match_sql(connection, compiler.quote_name(self.lhs.alias), self.lhs.target.model, self.rhs)


@models.JSONField.register_lookup
class JsonListHasItem(Lookup):
    """`field__has_item="x"`: a JSON array field contains the string x (same on both databases)."""

    lookup_name = "has_item"
    prepare_rhs = False

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return has_item_sql(connection, lhs), [*lhs_params, self.rhs]
