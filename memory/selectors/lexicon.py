"""Reading the team synonym lexicon, and expanding a query with it (seed 004 BusinessLexicon
同义词; R-QUERY: deterministic query expansion instead of vectors).

A query term matches a synonym set's term when every token of the term (its query tokens:
words, stems, CJK bigrams; a one-character term its character alone) is among the query's
tokens. The set's other terms then join the query: their tokens are added right after the
matched term (so they share its place among a long query's latest tokens, the ones that find
candidates), each at LEXICON_SHARE of the weight of the line the term came from
(memory.search.text.query_token_weights). They find candidates of their own — a memory that
says 敏感 is found by a question about 过敏 — but count for less than what the user said.
Sets in reach: the team's (workspace_id "") and those of the call's workspace.

Cost: one primary-key read per call (the team's LexiconVersion, bumped by every change); the
team's sets are read and tokenised again only when it changes, and kept per process (at most
CACHED_TEAMS teams).
"""

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connections, router
from django.db.models import QuerySet

from accounts.principal import Principal
from memory.lexicon_models import LexiconSet, LexiconVersion
from memory.search.text import query_tokens

# Measured on MADial with the Cilin thesaurus (docs/retrieval.md): 0.15–1.0 all within the noise
# of its 76 dialogues; 0.3 keeps a synonym near the unigram backoff's 0.4 and under a said word.
LEXICON_SHARE = 0.3
EXPANSION_TOKENS_MAX = 32  # synonym tokens one query gains at most (the heaviest, then the latest)
CACHED_TEAMS = 64


def lexicon_sets(*, principal: Principal, workspace_id: str | None = None) -> QuerySet[LexiconSet]:
    """The team's synonym sets the principal may read, oldest first: all of them, or for a key
    limited to workspaces the team-wide ones and its workspaces'. `workspace_id` narrows to one
    level ("" = team-wide only)."""
    sets = LexiconSet.objects.filter(team=principal.team)
    if principal.workspace_ids is not None:
        sets = sets.filter(workspace_id__in=["", *sorted(principal.workspace_ids)])
    if workspace_id is not None:
        sets = sets.filter(workspace_id=workspace_id)
    return sets.order_by("pk")


def lexicon_set_get(*, principal: Principal, set_id: int) -> LexiconSet | None:
    return lexicon_sets(principal=principal).filter(pk=set_id).first()


@dataclass(frozen=True)
class _Compiled:
    """A team's lexicon ready for matching: per set its workspace and its terms' tokens, and
    for each term's first token the (term tokens, set) pairs that start with it."""

    workspaces: tuple[str, ...]
    set_terms: tuple[tuple[tuple[str, ...], ...], ...]
    by_first: dict[str, tuple[tuple[tuple[str, ...], int], ...]]


_CACHE: "OrderedDict[int, tuple[int, _Compiled | None]]" = OrderedDict()
_LOCK = threading.Lock()


def _term_tokens(term: str) -> tuple[str, ...]:
    return tuple(query_tokens(term, None))


def _compile(rows: Sequence[tuple[str, list[str]]]) -> _Compiled:
    workspaces: list[str] = []
    set_terms: list[tuple[tuple[str, ...], ...]] = []
    by_first: dict[str, list[tuple[tuple[str, ...], int]]] = {}
    for index, (workspace_id, terms) in enumerate(rows):
        tokenised = tuple(tokens for tokens in map(_term_tokens, terms) if tokens)
        workspaces.append(workspace_id)
        set_terms.append(tokenised)
        for tokens in tokenised:
            by_first.setdefault(tokens[0], []).append((tokens, index))
    return _Compiled(tuple(workspaces), tuple(set_terms), {token: tuple(pairs) for token, pairs in by_first.items()})


def _version(team_id: int, alias: str) -> int | None:
    """The team's LexiconVersion on database `alias`, None when it never had a set. Plain SQL:
    it runs on every search, and the ORM's overhead was three to four times the read itself
    (0.47 vs 0.12 ms on PostgreSQL, 0.28 vs 0.02 ms on SQLite, docs/retrieval.md)."""
    connection = connections[alias]
    meta = LexiconVersion._meta
    sql = (f"SELECT {connection.ops.quote_name('version')} FROM {connection.ops.quote_name(meta.db_table)} "
           f"WHERE {connection.ops.quote_name(meta.pk.column)} = %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [team_id])
        row = cursor.fetchone()
    return None if row is None else int(row[0])


def _compiled(team_id: int) -> _Compiled | None:
    # The version and the sets come from the same database: a dashboard page may read a lagging
    # replica (config/db_router.py), and its old sets cached under the primary's new version
    # would be kept by every later search until the next change.
    alias = router.db_for_read(LexiconSet)
    version = _version(team_id, alias)
    if version is None:
        return None
    with _LOCK:
        cached = _CACHE.get(team_id)
        if cached is not None and cached[0] == version:
            _CACHE.move_to_end(team_id)
            return cached[1]
    rows = list(LexiconSet.objects.using(alias).filter(team_id=team_id).order_by("pk").values_list("workspace_id", "terms"))
    compiled = _compile(rows) if rows else None
    with _LOCK:
        _CACHE[team_id] = (version, compiled)
        _CACHE.move_to_end(team_id)
        while len(_CACHE) > CACHED_TEAMS:
            _CACHE.popitem(last=False)
    return compiled


def lexicon_expand(*, team_id: int, workspace_id: str, tokens: Sequence[str],
                   token_weights: dict[str, float]) -> tuple[list[str], dict[str, float]]:
    """The query's tokens with the synonyms of its terms added after them, and the token
    weights with theirs (LEXICON_SHARE × the matched term's weight; a token of several
    matched sets keeps its largest). Without a set in reach that matches, the inputs are
    returned unchanged. `token_weights` as memory.search.text.query_token_weights gives them
    (missing: 1)."""
    if not tokens:
        return list(tokens), token_weights
    compiled = _compiled(team_id)
    if compiled is None:
        return list(tokens), token_weights
    present = set(tokens)
    position = {token: index for index, token in enumerate(tokens)}
    gained: dict[str, tuple[float, int]] = {}  # synonym token → (weight, position of its matched term)
    for token in tokens:
        for term, index in compiled.by_first.get(token, ()):
            if compiled.workspaces[index] not in ("", workspace_id):
                continue
            if len(term) > 1 and not present.issuperset(term):
                continue
            found = (LEXICON_SHARE * min(token_weights.get(part, 1.0) for part in term),
                     max(position[part] for part in term))
            for other in compiled.set_terms[index]:
                if other == term:
                    continue
                for synonym in other:
                    if synonym not in present and found > gained.get(synonym, (0.0, -1)):
                        gained[synonym] = found
    if not gained:
        return list(tokens), token_weights
    chosen = sorted(gained, key=lambda token: (-gained[token][0], -gained[token][1]))[:EXPANSION_TOKENS_MAX]
    after: dict[int, list[str]] = {}
    for synonym in sorted(chosen, key=lambda token: gained[token][1]):
        after.setdefault(gained[synonym][1], []).append(synonym)
    expanded: list[str] = []
    for index, token in enumerate(tokens):
        expanded.append(token)
        expanded.extend(after.get(index, ()))
    weights = dict(token_weights)
    weights.update({token: gained[token][0] for token in chosen})
    return expanded, weights
