"""Keyword ranking over a team's rows: the database finds candidates, Python scores them.

The same code runs on PostgreSQL and SQLite, so both give the same ranking for the same
store (R-QUERY: deterministic by default). Every match is limited in the index to the
caller's reach (owner tokens, see memory.search.text.owner_token).

1. Direct: fetch the rows in reach matching any query token; when there are at most
   DIRECT_CANDIDATES, they are all the candidates and document frequencies are counted
   among them.
2. Otherwise, probes: for each query token not already seen in DF_PROBE_CAP of the rows
   fetched in step 1, count matching rows, stopping at DF_PROBE_CAP (one SQL statement for all
   tokens); tokens that reach the cap are common. Candidates are
   the rows matching any rare token or, when every token is common, rows matching all of
   them plus the most recent rows matching any (at most MAX_CANDIDATES).
3. Score: BM25F over the fields of `search_tokens` with per-field weights, idf from the
   frequencies. Ties are left to the caller's ordering.

The rows come from a memory.search.source.Rows: hand-written statements under the caller's
condition (team and exact reach).
"""

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from memory.search.concepts import similarities
from memory.search.fields import TokenQuery
from memory.search.source import Rows
from memory.search.text import FIELD_SEPARATOR

DF_PROBE_CAP = 200
MAX_CANDIDATES = 1000
DIRECT_CANDIDATES = 400
MAX_PROBED_TOKENS = 24  # beyond these, tokens of a long query count as common
MATCH_TOKENS_MAX = 128  # tokens of a query that find candidates in the index (the last ones)
BM25_K1 = 1.2
CONCEPT_RERANK_MAX = 100  # the best keyword rows that concepts rerank (the head, as rerankers do; bounds the cost)
# Concepts that find rows the words did not (concept_found): the credit of the finest class a
# row shares with the question, by the length of its Cilin code (minor class Ah14B, word group
# Ah14B01; not the middle class Ah14, which holds sons and daughters alike: 我儿子几岁了 found the
# daughter's age); classes C (time and space: 今天 and 明天 share Ca23), K (function words) and L
# (courtesies) find nothing.
CONCEPT_FIND_CREDIT = {5: 0.6, 7: 1.0}
CONCEPT_FIND_SKIPPED = ("c", "k", "l")
CONCEPT_FIND_CANDIDATES = 200
CONCEPT_PREFIX_LENGTH = len("zzc")
# Conversation turns are short and their length says little about relevance: half the usual
# length normalisation (0.75) measured best on LoCoMo (0.4–0.5 a plateau; docs/retrieval.md).
BM25_B = 0.5


@dataclass(frozen=True)
class ConceptQuery:
    """A question's concept tokens (memory.search.concepts.query_concepts: token → line weight),
    the index of the rows' field that holds theirs, and the share of the best keyword score
    that a full concept match adds."""

    weights: dict[str, float]
    field: int
    share: float


@dataclass
class Scored:
    pk: int
    score: float
    matched: tuple[str, ...]
    values: dict = field(default_factory=dict)


def document_frequencies(rows: Rows, tokens: Sequence[str], within: tuple[str, ...] = ()) -> dict[str, int]:
    """Rows matching each token (within the owner tokens), capped at DF_PROBE_CAP; one round trip."""
    if not tokens:
        return {}
    counts = rows.counts([TokenQuery((token,), within=within) for token in tokens], DF_PROBE_CAP)
    return dict(zip(tokens, counts, strict=True))


def idf(frequency: int) -> float:
    return math.log(1.0 + DF_PROBE_CAP / (frequency + 0.5))


def _candidates(rows: Rows, frequencies: dict[str, int], within: tuple[str, ...]) -> list[tuple]:
    present = [token for token, count in frequencies.items() if count > 0]
    if not present:
        return []
    rare = [token for token in present if frequencies[token] < DF_PROBE_CAP]
    if rare:
        return rows.fetch(TokenQuery(tuple(rare), within=within), MAX_CANDIDATES)
    found: dict[int, tuple] = {}
    for row in rows.fetch(TokenQuery(tuple(present), "all", within), MAX_CANDIDATES):
        found[row[0]] = row
    if len(found) < MAX_CANDIDATES:
        for row in rows.fetch(TokenQuery(tuple(present), within=within), MAX_CANDIDATES - len(found)):
            found.setdefault(row[0], row)
    return list(found.values())


def _parse(rows: list[tuple], query: set[str], weights: Sequence[float]) -> list[tuple[tuple, dict[str, float], float]]:
    """Per row: the weighted term frequency of each query token, and the weighted length."""
    parsed = []
    for row in rows:
        tf: dict[str, float] = {}
        length = 0.0
        for weight, text in zip(weights, row[1].split(FIELD_SEPARATOR), strict=False):
            if not weight:
                continue  # a field that only reranks (concepts)
            tokens_in_field = text.split()
            length += weight * len(tokens_in_field)
            for token in query.intersection(tokens_in_field):
                tf[token] = tf.get(token, 0.0) + weight * tokens_in_field.count(token)
        parsed.append((row, tf, length))
    return parsed


def _reranked(keyword: list[float], rows: list[tuple], concepts: ConceptQuery) -> list[float]:
    """The keyword scores of `rows` after the concept rerank of their CONCEPT_RERANK_MAX best.
    The best keyword row stays first (all of them, tied, when several share the best score):
    concepts reorder the others, so the memory that says the asked word is never passed by one
    that only says a word of its kind (网球 for 羽毛球)."""
    head = sorted(range(len(rows)), key=lambda index: (-keyword[index], -rows[index][0]))[:CONCEPT_RERANK_MAX]
    fields_of = [rows[index][1].split(FIELD_SEPARATOR) for index in head]
    near = similarities([parts[concepts.field] if len(parts) > concepts.field else "" for parts in fields_of],
                        concepts.weights)
    best = keyword[head[0]]
    out = list(keyword)
    for index, similarity in zip(head, near, strict=True):
        out[index] += concepts.share * best * similarity
    # The rows tied for the best keyword score stay first, still tied: the caller's order (the
    # seed's: stated before inferred, newer first) decides among them, as without concepts.
    first = max(out) * (1.0 + 1e-6) + 1e-6  # still above the rest after the 6 decimals Scored keeps
    for index in head:
        if keyword[index] == best:
            out[index] = first
    return out


def concept_found(source: Rows, concepts: ConceptQuery, *, within: Sequence[str] = (), exclude: set[int],
                  below: float, stop: frozenset[str] = frozenset()) -> list[Scored]:
    """Rows that share no word with the question but name the same kind of thing (女儿 for 闺女,
    老公 for 爱人; memory.search.concepts), best first; the caller keeps the few it wants.

    Candidates are the newest CONCEPT_FIND_CANDIDATES rows in reach holding one of the
    question's concept tokens of a minor class or finer (CONCEPT_FIND_CREDIT), save time words,
    function words and courtesies (classes C, K and L) and the tokens in `stop` (the words every
    memory says). A row scores the credit of the finest class it shares with the question (word
    group 1, minor class 0.6), times that token's weight in the question over the question's
    largest, times `below`, so that it ranks under every row the words found; ties newest first.
    Rows in `exclude` are left out."""
    credit = {token: CONCEPT_FIND_CREDIT[len(token) - CONCEPT_PREFIX_LENGTH] * weight
              for token, weight in concepts.weights.items()
              if len(token) - CONCEPT_PREFIX_LENGTH in CONCEPT_FIND_CREDIT
              and token[CONCEPT_PREFIX_LENGTH] not in CONCEPT_FIND_SKIPPED and token not in stop}
    if not credit:
        return []
    tokens = tuple(sorted(credit, key=lambda token: (-credit[token], token)))[:MATCH_TOKENS_MAX]
    rows = source.fetch(TokenQuery(tokens, within=tuple(dict.fromkeys(within))), CONCEPT_FIND_CANDIDATES)
    fields = [column.name for column in source.columns]
    heaviest = max(credit.values())
    found = []
    for row in rows:
        if row[0] in exclude:
            continue
        parts = row[1].split(FIELD_SEPARATOR)
        held = parts[concepts.field].split() if len(parts) > concepts.field else ()
        best = max((credit[token] for token in held if token in credit), default=0.0)
        if best:
            found.append(Scored(pk=row[0], score=round(below * best / heaviest, 6), matched=(),
                                values=dict(zip(fields, row[2:], strict=True))))
    found.sort(key=lambda item: (-item.score, -item.pk))
    return found


def rank(
    source: Rows,
    tokens: Sequence[str],
    *,
    weights: Sequence[float],
    within: Sequence[str] = (),
    expansions: dict[str, float] | None = None,
    token_weights: dict[str, float] | None = None,
    concepts: ConceptQuery | None = None,
) -> list[Scored]:
    """Score the rows of `source` that match `tokens`, best first (ties in pk order, newest first).

    `weights` gives one weight per field of the row's search_tokens; the values of
    `source.columns` come back in `Scored.values`, by column name. `expansions` maps extra tokens to a share of their
    weight: they add to the score of rows that match a query token but find no rows of
    their own (query expansion). `token_weights` scales the weight of any token (missing: 1),
    e.g. by how recent the line of a conversation it comes from. `concepts` reranks the
    CONCEPT_RERANK_MAX best rows the words found (_reranked): each gains share × the best keyword
    score × the closeness of its concept field and the question's
    (memory.search.concepts.similarities), so a row about the same kind of thing rises among
    them, and the best keyword rows stay first. `within` (owner tokens) lets the index itself keep
    to the caller's reach; `source.where` must still carry the team and the exact filters, which decide.

    When the caller's reach holds at most DIRECT_CANDIDATES matching rows — the usual case —
    one query fetches them all and document frequencies are counted among them (exact);
    otherwise the capped frequency probes choose the candidates (see the module docstring).
    """
    if not tokens:
        return []
    owners = tuple(dict.fromkeys(within))
    fields = [column.name for column in source.columns]
    # A long query (a whole conversation) finds its candidates by its last MATCH_TOKENS_MAX
    # tokens (the latest turns) and is scored by all of them.
    rows = source.fetch(TokenQuery(tuple(tokens[-MATCH_TOKENS_MAX:]), within=owners), DIRECT_CANDIDATES + 1)
    expansions = {token: share for token, share in (expansions or {}).items() if token not in tokens}
    if len(rows) <= DIRECT_CANDIDATES:
        parsed = _parse(rows, set(tokens) | set(expansions), weights)
        frequencies = Counter(token for _, tf, _ in parsed for token in tf)
    else:
        # A token in DF_PROBE_CAP or more of the rows already fetched is common: no need to
        # probe it (its probe would read the longest posting lists only to return the cap).
        wanted, sampled = set(tokens), Counter()
        for row in rows:
            sampled.update(wanted.intersection(row[1].split()))
        common = {token for token, count in sampled.items() if count >= DF_PROBE_CAP}
        probed = document_frequencies(source, [t for t in tokens if t not in common][:MAX_PROBED_TOKENS], owners)
        frequencies = Counter({token: probed.get(token, DF_PROBE_CAP) for token in tokens})
        rows = _candidates(source, frequencies, owners)
        parsed = _parse(rows, {token for token, count in frequencies.items() if count > 0} | set(expansions), weights)
        # Not probed: in a reach this large an expansion token counts as half as common as the cap.
        frequencies.update({token: DF_PROBE_CAP // 2 for token in expansions})
    if not parsed:
        return []
    weights_of = {token: idf(count) * expansions.get(token, 1.0) * (token_weights or {}).get(token, 1.0)
                  for token, count in frequencies.items() if count > 0}
    average = sum(length for _, _, length in parsed) / len(parsed) or 1.0
    # `matched` lists the query tokens a row has, in query order: by position when the tokens
    # are distinct (a row has few of them), else by walking the query (duplicates kept).
    position = {token: index for index, token in enumerate(tokens)}
    distinct = len(position) == len(tokens)
    found = [(row, tf, length) for row, tf, length in parsed if tf and not position.keys().isdisjoint(tf)]
    # (no row without a query token of its own: an expansion alone does not count)
    keyword = []
    for _row, tf, length in found:
        norm = 1.0 - BM25_B + BM25_B * (length / average)
        keyword.append(sum(weights_of[t] * f * (BM25_K1 + 1.0) / (f + BM25_K1 * norm) for t, f in tf.items()))
    if concepts and concepts.weights and found:
        keyword = _reranked(keyword, [row for row, _, _ in found], concepts)
    scored: list[Scored] = []
    for (row, tf, _length), score in zip(found, keyword, strict=True):
        if distinct:
            matched = tuple(sorted((token for token in tf if token in position), key=position.__getitem__))
        else:
            matched = tuple(token for token in tokens if token in tf)
        values = dict(zip(fields, row[2:], strict=True))
        scored.append(Scored(pk=row[0], score=round(score, 6), matched=matched, values=values))
    scored.sort(key=lambda item: (-item.score, -item.pk))
    return scored
