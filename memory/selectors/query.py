"""MemoryQuery → MemoryQueryResult {exact, relevant, omitted} (seed 000 Memory Query 接口; R-QUERY).

- exact: nodes matching the structured selector (key, value, value filters) — or, when the
  query has neither a key nor text, every node matching the filters — in the seed's order;
- relevant: nodes whose title, content, tags, entities, key or value strings match
  `query_text`, by keyword relevance, ties in the seed's order; exact hits are not repeated;
- omitted: nodes that matched but are not returned, with the reason: expired, superseded,
  low_confidence, over_limit. Deleted nodes are never reported.
Filters (scopes, domain, category prefix, types, tags, entities) restrict both lists.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import groupby
from typing import Any

from django.db import connections, router
from django.db.models import Q, QuerySet
from django.db.models.expressions import JSONNull
from django.utils import timezone

from accounts.principal import Principal
from memory import limits
from memory.embedding_models import Embedding
from memory.errors import Conflict, InvalidInput, NotFound
from memory.models import Node, NodeStatus, NodeType, Scope, Session
from memory.search.concepts import query_concepts
from memory.search.engine import ConceptQuery, Scored, concept_found, rank
from memory.search.fields import has_item_sql
from memory.search.semantic import NODE_DENSE_WEIGHT, dense_rank, embedder, fused_ranking
from memory.search.source import Column, Rows
from memory.search.text import FUNCTION_BIGRAM_SHARE, cjk_unigrams, function_bigrams, query_token_weights, query_tokens
from memory.selectors.budget import budget_resolve
from memory.selectors.conflicts import conflict_losers
from memory.selectors.layers import like_prefix
from memory.selectors.lexicon import lexicon_expand
from memory.selectors.nodes import Owner, category_path_prefix_q, owner_session, reach, reach_sql, reach_tokens, unexpired
from memory.selectors.ordering import ORDER_FIELDS, seed_order_by, seed_order_key
from memory.selectors.rows import nodes_by_id, prefetch_source_links
from memory.services.nodes import canonical_json, value_hash
from memory.services.schema import schema_terms
from memory.validation import clean_text

# title | content | tags | entities | key and value strings | concept tokens (see
# services.node_input.node_search_tokens); the concept field reranks (CONCEPT_FIELD) and weighs
# nothing in BM25F's scores and lengths
NODE_FIELD_WEIGHTS = (2.0, 1.0, 1.5, 1.5, 1.0, 0.0)
CONCEPT_FIELD = 5
CONCEPT_SHARE = 3.0  # of the best keyword score, for a full concept match (docs/retrieval.md, "Concepts")
# When the words find fewer nodes than this (none), concepts look for up to CONCEPT_FIND_MAX
# (memory.search.engine.concept_found; docs/retrieval.md, "Questions in other words").
CONCEPT_FIND_BELOW = 1
CONCEPT_FIND_MAX = 5
EVERY_MEMORY_SAYS = "用户"
CJK_UNIGRAM_SHARE = 0.4  # of a Chinese character's weight when it backs off a query bigram
OMITTED_MAX = 50
VALUE_FILTER_OPS = ("is_null", "exists", "missing", "not_null", "equals")
_ORDER_FIELDS = ("status", *ORDER_FIELDS)


@dataclass(frozen=True)
class ValueFilter:
    """A condition on one key path of value_json (S15). Documented semantics:
    is_null — present with JSON null; exists — present with any value, null included;
    missing — absent (or the value is not an object); not_null — absent, or present and not
    null (the exact complement of is_null); equals — present and equal to `value`."""

    path: tuple[str, ...]
    op: str
    value: Any = None


@dataclass(frozen=True)
class MemoryQuery:
    owner: Owner = Owner()
    scopes: tuple[str, ...] = ()
    domain: str = ""
    category_path_prefix: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    key: str = ""
    key_as_sent: str = ""  # before the schema's spelling and synonyms: memories stored under it are found too
    has_value: bool = False
    value_json: Any = None
    value_filters: tuple[ValueFilter, ...] = ()
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    query_text: str = ""
    include_expired: bool = False
    min_confidence: float = 0.0
    # Raise min_confidence to the budget policy's floor for the owner's workspace (search).
    # The context passes its resolved budget's value instead, already the policy's or a draft's.
    policy_floor: bool = True
    limit: int = limits.QUERY_LIMIT_DEFAULT
    exclude_ids: frozenset[int] = frozenset()  # nodes the caller already has; not returned, not reported


@dataclass(frozen=True)
class Omission:
    node_id: int
    reason: str  # expired | superseded | low_confidence | conflict_lost | over_limit | layer_disabled | same_text


@dataclass
class MemoryQueryResult:
    exact: list[Node] = field(default_factory=list)
    relevant: list[Node] = field(default_factory=list)
    omitted: list[Omission] = field(default_factory=list)
    matched: dict[int, tuple[str, ...]] = field(default_factory=dict)  # relevant node id → query tokens it matched


def _validate(query: MemoryQuery) -> None:
    clean_text(query.query_text, field="query_text", max_length=limits.QUERY_TEXT_MAX)
    if not 1 <= query.limit <= limits.QUERY_LIMIT_MAX:
        raise InvalidInput(f"limit must be 1–{limits.QUERY_LIMIT_MAX}", fields={"limit": ["out of range"]})
    for scope in query.scopes:
        if scope not in Scope.values:
            raise InvalidInput(f"unknown scope {scope!r}", fields={"scopes": ["invalid choice"]})
    for node_type in query.types:
        if node_type not in NodeType.values:
            raise InvalidInput(f"unknown type {node_type!r}", fields={"types": ["invalid choice"]})
    for value_filter in query.value_filters:
        if value_filter.op not in VALUE_FILTER_OPS:
            raise InvalidInput(
                f"value filter op must be one of {', '.join(VALUE_FILTER_OPS)}", fields={"value_filters": ["bad op"]}
            )
        if not 1 <= len(value_filter.path) <= 4 or any(
            not isinstance(part, str) or not part or not part.isprintable() or "__" in part for part in value_filter.path
        ):
            raise InvalidInput(
                "value filter path must have 1–4 non-empty parts without '__'", fields={"value_filters": ["bad path"]}
            )


def value_filter_q(value_filter: ValueFilter) -> Q:
    """The Q for one ValueFilter; the same rows on PostgreSQL and SQLite.

    Every key part is followed by an explicit lookup, so a key named like a lookup
    ("contains") is still read as a key.
    """
    parts = list(value_filter.path)
    prefix = "__".join(["value_json", *parts])
    parent = "__".join(["value_json", *parts[:-1]])
    exists = Q(**{f"{parent}__has_key": parts[-1]})
    is_null = Q(**{f"{prefix}__exact": JSONNull()})
    if value_filter.op == "exists":
        return exists
    if value_filter.op == "is_null":
        return is_null
    if value_filter.op == "missing":
        return Q(value_json__isnull=True) | ~exists
    if value_filter.op == "not_null":
        return Q(value_json__isnull=True) | ~exists | (exists & ~is_null)
    return Q(**{f"{prefix}__exact": canonical_json(value_filter.value)})


def _filtered(principal: Principal, query: MemoryQuery, session: Session | None) -> QuerySet[Node]:
    # The workspace is checked and the session resolved by memory_query already.
    nodes = Node.objects.filter(team=principal.team).filter(reach(owner=query.owner, session=session))
    if query.scopes:
        nodes = nodes.filter(scope__in=query.scopes)
    if query.domain:
        nodes = nodes.filter(domain=query.domain)
    if query.category_path_prefix:
        nodes = nodes.filter(category_path_prefix_q(list(query.category_path_prefix)))
    if query.types:
        nodes = nodes.filter(type__in=query.types)
    for tag in query.tags:
        nodes = nodes.filter(tags__has_item=tag)
    for entity in query.entities:
        nodes = nodes.filter(entities__has_item=entity)
    return nodes.exclude(status=NodeStatus.DELETED)


_NODE_TABLE = f'"{Node._meta.db_table}"'
_NODE_COLUMNS = tuple(Column(name, f'{_NODE_TABLE}."{name}"', Node._meta.get_field(name)) for name in _ORDER_FIELDS)


def node_rows(principal: Principal, query: MemoryQuery, session: Session | None) -> Rows:
    """The rows of `_filtered` as a hand-written condition for keyword search (the same rows:
    tests compare the two), with the columns `_reason` and the seed's order read."""
    table = _NODE_TABLE
    reach_condition, reach_params = reach_sql(owner=query.owner, session=session, alias=table)
    where = [f"{table}.\"team_id\" = %s", reach_condition]
    params: list = [principal.team.pk, *reach_params]

    def one_of(column: str, values: tuple[str, ...]) -> None:
        where.append(f"{table}.\"{column}\" IN ({', '.join(['%s'] * len(values))})")
        params.extend(values)

    if query.scopes:
        one_of("scope", query.scopes)
    if query.domain:
        where.append(f"{table}.\"domain\" = %s")
        params.append(query.domain)
    if query.category_path_prefix:
        text = "/".join(query.category_path_prefix).strip("/")
        where.append(f"({table}.\"category_path_text\" = %s OR {table}.\"category_path_text\" LIKE %s ESCAPE '\\')")
        params += [text, like_prefix(text)]
    if query.types:
        one_of("type", query.types)
    connection = connections[router.db_for_read(Node)]
    for column, items in (("tags", query.tags), ("entities", query.entities)):
        for item in items:  # the tags__has_item lookup's condition
            where.append(has_item_sql(connection, f'{table}."{column}"'))
            params.append(item)
    where.append(f"NOT ({table}.\"status\" = %s)")
    params.append(NodeStatus.DELETED)
    return Rows(Node, " AND ".join(where), tuple(params), columns=_NODE_COLUMNS)


def _structured(nodes: QuerySet[Node], query: MemoryQuery) -> QuerySet[Node]:
    if query.key:
        nodes = nodes.filter(key__in={query.key, query.key_as_sent or query.key})
    if query.has_value:
        nodes = nodes.filter(value_hash=value_hash(query.value_json))
    for value_filter in query.value_filters:
        nodes = nodes.filter(value_filter_q(value_filter))
    return nodes


def _reason(values: dict[str, Any], query: MemoryQuery, now) -> str | None:
    """Why a matching node is not returned, or None when it may be."""
    if values["status"] == NodeStatus.SUPERSEDED:
        return "superseded"
    expired = values["status"] == NodeStatus.EXPIRED or (
        values["expires_at"] is not None and values["expires_at"] <= now
    )
    if expired and not query.include_expired:
        return "expired"
    if values["confidence"] < query.min_confidence:
        return "low_confidence"
    return None


def _exact(nodes: QuerySet[Node], query: MemoryQuery, now) -> tuple[list[int], list[Omission]]:
    returnable = nodes.filter(status=NodeStatus.ACTIVE, confidence__gte=query.min_confidence)
    if not query.include_expired:
        returnable = returnable.filter(unexpired(now))
    ordered = list(returnable.order_by(*seed_order_by()).values_list("pk", flat=True)[: query.limit + OMITTED_MAX])
    chosen = ordered[: query.limit]
    omitted = [Omission(pk, "over_limit") for pk in ordered[query.limit :]]
    others = nodes.exclude(pk__in=returnable.values("pk")).order_by("-updated_at", "-pk")
    for values in others.values("pk", *_ORDER_FIELDS)[:OMITTED_MAX]:
        reason = _reason(values, query, now)
        if reason:
            omitted.append(Omission(values["pk"], reason))
    return chosen, omitted


def _relevant(
    rows: Rows, nodes: Callable[[], QuerySet[Node]], query: MemoryQuery, now, exclude: set[int], within: list[str],
    team_id: int
) -> tuple[list[int], list[Omission], dict[int, tuple[str, ...]]]:
    tokens = query_tokens(query.query_text)
    if not within:
        return [], [], {}
    # Chinese characters of the query back off its bigrams: 演出 still counts for a memory
    # that says 表演 (docs/retrieval.md, MADial).
    expansions = dict.fromkeys(cjk_unigrams(query.query_text), CJK_UNIGRAM_SHARE)
    expansions.update(dict.fromkeys(function_bigrams(query.query_text), FUNCTION_BIGRAM_SHARE))
    tokens, token_weights = lexicon_expand(team_id=team_id, workspace_id=query.owner.workspace_id, tokens=tokens,
                                           token_weights=query_token_weights(query.query_text))
    concepts = ConceptQuery(query_concepts(query.query_text), CONCEPT_FIELD, CONCEPT_SHARE)
    scored = rank(rows, tokens, weights=NODE_FIELD_WEIGHTS, within=within, expansions=expansions,
                  token_weights=token_weights, concepts=concepts)
    by_concept: set[int] = set()
    if len(scored) < CONCEPT_FIND_BELOW and concepts.weights:
        # A question in other words (我闺女几岁了 for 用户的女儿今年六岁): the same kind of thing.
        found = concept_found(rows, concepts, within=within, exclude=exclude | {item.pk for item in scored},
                              below=min((item.score for item in scored), default=1.0) / 2, stop=_every_memory_says())
        by_concept = {item.pk for item in found}
        scored += found
    model = embedder()
    if model is not None:
        filtered = nodes()
        dense = dense_rank(Embedding.objects.filter(team_id=team_id, model=model.name,
                                                    node__in=filtered), "node_id", model, query.query_text)
        scored = fused_ranking(scored, dense, lambda pks: {
            row["pk"]: {field: row[field] for field in _ORDER_FIELDS}
            for row in filtered.filter(pk__in=pks).values("pk", *_ORDER_FIELDS)}, dense_weight=NODE_DENSE_WEIGHT)
    scored = _by_score_then_seed_order(scored, now)
    chosen: list[int] = []
    omitted: list[Omission] = []
    matched: dict[int, tuple[str, ...]] = {}
    for item in scored:
        if item.pk in exclude:
            continue
        reason = _reason(item.values, query, now)
        if item.pk in by_concept:  # no word of the question found it: never reported as omitted
            if reason is not None or len(by_concept.intersection(chosen)) >= CONCEPT_FIND_MAX:
                continue
        if reason is None and len(chosen) >= query.limit:
            reason = "over_limit"
        if reason is None:
            chosen.append(item.pk)
            matched[item.pk] = item.matched
        elif len(omitted) < OMITTED_MAX:
            omitted.append(Omission(item.pk, reason))
        if len(chosen) >= query.limit and len(omitted) >= OMITTED_MAX:
            break
    return chosen, omitted, matched


def _every_memory_says() -> frozenset[str]:
    """The concept tokens of the word every memory's title says (用户…, capture's and the seed's
    notes): 客户 shares its word group Di05C02, and found five unrelated memories."""
    return frozenset(query_concepts(EVERY_MEMORY_SAYS))


def _by_score_then_seed_order(scored: list[Scored], now) -> list[Scored]:
    """Best score first; equal scores in the seed's order (memory.selectors.ordering). The
    seed's key is computed only within runs of equal scores, which are rare: ~1 ms less per
    search over a thousand candidates than computing it for each."""
    scored = sorted(scored, key=lambda item: -item.score)
    ordered: list[Scored] = []
    for _, run in groupby(scored, key=lambda item: item.score):
        run = list(run)
        if len(run) > 1:
            run.sort(key=lambda item: seed_order_key({**item.values, "pk": item.pk}, now))
        ordered += run
    return ordered


def nodes_in_order(pks: list[int], *, principal: Principal, prefetch_sources: bool = True) -> list[Node]:
    """Fetch the team's nodes by id with what serialisers need (session, successor, the source
    links `principal` may follow), in the order of `pks`; search_tokens deferred
    (memory.selectors.rows.nodes_by_id)."""
    if not pks:
        return []
    found = nodes_by_id(team_id=principal.team.pk, pks=pks)
    nodes = [found[pk] for pk in pks if pk in found]
    if prefetch_sources:
        prefetch_source_links(nodes, principal=principal)
    return nodes


def memory_query(
    *, principal: Principal, query: MemoryQuery, now=None, session: Session | None = None, prefetch_sources: bool = True,
    resolve_conflicts: bool = True,
) -> MemoryQueryResult:
    """Run a MemoryQuery for the principal (R-QUERY). Deterministic for a given store.

    `session` may pass the owner's session when the caller already has it;
    `resolve_conflicts=False` leaves conflict losers in (the context call resolves conflicts
    once over everything it gathered). Raises
    InvalidInput (limits, choices) and AccessDenied (workspace outside a key's limit).
    """
    _validate(query)
    if query.policy_floor:
        floor = budget_resolve(team=principal.team, workspace_id=query.owner.workspace_id).min_confidence
        if floor > query.min_confidence:
            query = replace(query, min_confidence=floor)
    if query.key:
        key, value = schema_terms(team=principal.team, domain=query.domain, key=query.key, value=query.value_json,
                                  has_value=query.has_value)
        query = replace(query, key=key, key_as_sent=query.key, value_json=value)
    now = now or timezone.now()
    principal.check_workspace(query.owner.workspace_id)
    if session is None:
        session = owner_session(principal=principal, owner=query.owner)
    exact_ids: list[int] = []
    omitted: list[Omission] = []
    structured = bool(query.key or query.has_value or query.value_filters)
    if structured or not query.query_text.strip():
        exact_ids, omitted = _exact(_structured(_filtered(principal, query, session), query), query, now)
    relevant_ids: list[int] = []
    matched: dict[int, tuple[str, ...]] = {}
    if query.query_text.strip():
        within = reach_tokens(team_id=principal.team.pk, owner=query.owner, session=session,
                              scopes=query.scopes or tuple(Scope.values))
        relevant_ids, relevant_omitted, matched = _relevant(
            node_rows(principal, query, session), lambda: _filtered(principal, query, session), query, now,
            set(exact_ids) | query.exclude_ids, within, principal.team.pk)
        known = {item.node_id for item in omitted} | set(exact_ids)
        omitted.extend(item for item in relevant_omitted if item.node_id not in known)
    fetched = {node.pk: node for node in nodes_in_order(exact_ids + relevant_ids, principal=principal,
                                                         prefetch_sources=prefetch_sources)}
    losers = conflict_losers(principal=principal, nodes=fetched.values(), owner=query.owner, session=session, now=now,
                             scopes=query.scopes) if resolve_conflicts else {}
    if losers:
        exact_ids = [pk for pk in exact_ids if pk not in losers]
        relevant_ids = [pk for pk in relevant_ids if pk not in losers]
        omitted = [Omission(pk, "conflict_lost") for pk in losers] + omitted
    return MemoryQueryResult(
        exact=[fetched[pk] for pk in exact_ids if pk in fetched],
        relevant=[fetched[pk] for pk in relevant_ids if pk in fetched],
        omitted=omitted[:OMITTED_MAX],
        matched=matched,
    )


GET_SEVERAL = 10  # values memory_get_by_key lists when the key holds more than one


def memory_get_by_key(*, principal: Principal, query: MemoryQuery) -> Node:
    """The active node for `query.key` (R-TOOLS memory_get), after conflicts and precedence.

    Raises NotFound when none is active, and Conflict `several_values` (409) when several
    active values share the first one's domain and type (an allergy per food): answering one
    would hide the rest from an agent checking what the user may not eat. One value per domain
    or type is each its own fact: the first by precedence is answered."""
    found = memory_query(principal=principal, query=replace(query, limit=GET_SEVERAL + 1)).exact
    if not found:
        raise NotFound("no active node with that key")
    several = [node for node in found if (node.domain, node.type) == (found[0].domain, found[0].type)]
    if len(several) > 1:
        values = [f"{node.pk}: {json.dumps(node.value_json, ensure_ascii=False)[:80]}" for node in several[:GET_SEVERAL]]
        more = ", …" if len(several) > GET_SEVERAL else ""
        raise Conflict(f"key {found[0].key} holds {'more than ' if more else ''}{min(len(several), GET_SEVERAL)} active "
                       f"values ({'; '.join(values)}{more}): read them all with memory_search and this key",
                       code="several_values")
    return found[0]
