"""Reading conversation messages: the recent window and keyword recall of earlier turns."""

from dataclasses import dataclass

from django.db.models import OuterRef, QuerySet, Subquery

from accounts.principal import Principal
from memory.embedding_models import Embedding
from memory.models import Message, Session
from memory.search.engine import Scored, rank
from memory.search.semantic import MESSAGE_DENSE_WEIGHT, dense_rank, embedder, fused_ranking
from memory.search.text import episodic_token, normalize, owner_token, query_token_weights, query_tokens, temporal_expansions
from memory.search.when import in_periods, mentioned_periods
from memory.selectors.lexicon import lexicon_expand
from memory.selectors.nodes import Owner

MESSAGE_FIELD_WEIGHTS = (1.0, 1.0)  # content | speaker name (memory.services.messages.message_search_tokens)
TEMPORAL_EXPANSION_SHARE = 0.3  # of a dating word's weight, for a question that asks when (docs/retrieval.md)
SESSION_EVIDENCE_SHARE = 0.5
SESSION_EVIDENCE_TOP = 2
SESSION_EVIDENCE_POOL = 50
DATE_MATCH_SHARE = 0.5  # a turn said in a period the query names gains this share of its score (docs/retrieval.md)


@dataclass(frozen=True)
class MessageHit:
    message: Message
    score: float
    matched: tuple[str, ...]
    followup: Message | None = None  # the next turn of the same session (the reply, usually)


def messages_recent(*, session: Session, limit: int) -> list[Message]:
    """The last `limit` messages of the session, oldest first (server order)."""
    if limit <= 0:
        return []
    newest = list(Message.objects.filter(team_id=session.team_id, session=session).order_by("-pk")[:limit])
    for message in newest:
        message.session = session  # serialisers read it; no query per message
    return list(reversed(newest))


def messages_page(*, session: Session) -> QuerySet[Message]:
    """All messages of the session, newest first, for cursor paging."""
    return Message.objects.filter(team_id=session.team_id, session=session).order_by("-pk")


def messages_search(
    *,
    principal: Principal,
    session: Session | None,
    owner: Owner,
    query_text: str,
    limit: int,
    exclude_ids: set[int] = frozenset(),
    exclude_texts: set[str] = frozenset(),
) -> list[MessageHit]:
    """Earlier messages relevant to `query_text` (episodic memory), best first.

    Reach: the caller's session and, when the caller names an end user, that user's live
    sessions in the same workspace — also when the session itself is new. The index keeps
    the search inside that reach (the session's or the (workspace, user) pair's owner
    token); the exact rule is then checked on each candidate here, so the database never has
    to join sessions to filter. Messages whose normalised text repeats an excluded text or a
    better-ranked hit are skipped; the hits for a smaller `limit` are a prefix of those for
    a larger one.

    A hit that asks something (a "?" in it) comes with its follow-up: the next message of
    its session, where the answer usually is — unless that one is excluded (already in the
    recent window). The caller shows a message only once.
    """
    tokens = query_tokens(query_text)
    if not tokens or limit <= 0 or (session is None and not owner.user_id):
        return []
    team_id = principal.team.pk
    if owner.user_id:
        within = [episodic_token(team_id, owner.workspace_id, owner.user_id)]
    else:
        within = [owner_token(team_id, "s", session.pk)]

    def in_reach(values: dict) -> bool:
        if values["session__deleted_at"] is not None:
            return False
        if not owner.user_id:
            return values["session"] == session.pk
        return values["session__workspace_id"] == owner.workspace_id and values["session__user_id"] == owner.user_id

    expansions = dict.fromkeys(temporal_expansions(query_text), TEMPORAL_EXPANSION_SHARE)
    tokens, token_weights = lexicon_expand(team_id=team_id, workspace_id=owner.workspace_id, tokens=tokens,
                                           token_weights=query_token_weights(query_text))
    ranked = rank(Message.objects.filter(team=principal.team), tokens, weights=MESSAGE_FIELD_WEIGHTS, within=within,
                  expansions=expansions, token_weights=token_weights, fields=_REACH_FIELDS)
    # Dates the query names, then session evidence, re-rank the keyword hits by their scores;
    # the dense ranking then joins by rank.
    ranked = [item for item in ranked if item.pk not in exclude_ids and in_reach(item.values)]
    ranked = _with_session_evidence(_in_named_periods(ranked, query_text))
    ranked = _with_dense(principal, ranked, owner, session, query_text)
    reachable = [item for item in ranked if item.pk not in exclude_ids and in_reach(item.values)]
    hits: list[MessageHit] = []
    seen = set(exclude_texts)
    # Read the candidates a window at a time until `limit` distinct texts are found, so the
    # hits for a smaller limit are always a prefix of those for a larger one.
    window = limit * 3
    for start in range(0, len(reachable), window):
        chunk = reachable[start : start + window]
        found = Message.objects.select_related("session").in_bulk([item.pk for item in chunk])
        for item in chunk:
            message = found.get(item.pk)
            if message is None:
                continue
            text = normalize(message.content)
            if text in seen:
                continue
            seen.add(text)
            hits.append(MessageHit(message, item.score, item.matched))
            if len(hits) == limit:
                return _with_followups(hits, exclude_ids)
    return _with_followups(hits, exclude_ids)


_REACH_FIELDS = ("session", "session__workspace_id", "session__user_id", "session__deleted_at", "occurred_at",
                 "created_at")


def _in_named_periods(ranked: list[Scored], query_text: str) -> list[Scored]:
    """When the query names a day, a month or a year (memory.search.when), a turn said then
    (occurred_at, else created_at; up to a week after the day) scores DATE_MATCH_SHARE more;
    best first, ties newest first. Otherwise `ranked` as it is."""
    periods = mentioned_periods(query_text)
    if not periods or not ranked:
        return ranked
    for item in ranked:
        if in_periods(item.values["occurred_at"] or item.values["created_at"], periods):
            item.score = round(item.score * (1.0 + DATE_MATCH_SHARE), 6)
    return sorted(ranked, key=lambda item: (-item.score, -item.pk))


def _with_dense(principal: Principal, ranked: list[Scored], owner: Owner, session: Session | None,
                query_text: str) -> list[Scored]:
    """With semantic recall on, the keyword ranking fused with the dense one over the
    messages in reach (memory.search.semantic); otherwise `ranked` as it is."""
    model = embedder()
    if model is None:
        return ranked
    vectors = Embedding.objects.filter(team_id=principal.team.pk, model=model.name, message__isnull=False)
    if owner.user_id:
        vectors = vectors.filter(message__session__workspace_id=owner.workspace_id,
                                 message__session__user_id=owner.user_id)
    else:
        vectors = vectors.filter(message__session=session)
    dense = dense_rank(vectors, "message_id", model, query_text)
    messages = Message.objects.filter(team=principal.team)
    return fused_ranking(ranked, dense, lambda pks: {
        row["pk"]: {field: row[field] for field in _REACH_FIELDS}
        for row in messages.filter(pk__in=pks).values("pk", *_REACH_FIELDS)}, dense_weight=MESSAGE_DENSE_WEIGHT)


def _with_session_evidence(ranked: list[Scored]) -> list[Scored]:
    """Re-rank so that a turn gains from the other hits of its conversation: each gets
    SESSION_EVIDENCE_SHARE × (the best SESSION_EVIDENCE_TOP scores of the other hits of its
    session among the first SESSION_EVIDENCE_POOL) / the best score overall. A session that
    talks about the question at length is likelier to hold the answer than a stray turn that
    shares one word with it (the cluster hypothesis)."""
    if len(ranked) < 2:
        return ranked
    by_session: dict[int, list[tuple[float, int]]] = {}
    for item in ranked[:SESSION_EVIDENCE_POOL]:
        by_session.setdefault(item.values["session"], []).append((item.score, item.pk))
    best = ranked[0].score or 1.0

    def boosted(item: Scored) -> float:
        others = [score for score, pk in by_session.get(item.values["session"], ()) if pk != item.pk]
        return item.score + SESSION_EVIDENCE_SHARE * sum(sorted(others, reverse=True)[:SESSION_EVIDENCE_TOP]) / best

    scores = {item.pk: boosted(item) for item in ranked}
    return sorted(ranked, key=lambda item: (-scores[item.pk], -item.pk))


def _with_followups(hits: list[MessageHit], exclude_ids: set[int]) -> list[MessageHit]:
    """The hits, those that ask with the next message of their session (two queries for all)."""
    if not hits:
        return hits
    first = hits[0].message
    following = Message.objects.filter(team_id=first.team_id, session_id=OuterRef("session_id"), pk__gt=OuterRef("pk"))
    asking = [hit.message.pk for hit in hits if "?" in normalize(hit.message.content)]
    if not asking:
        return hits
    next_of = dict(Message.objects.filter(team_id=first.team_id, pk__in=asking)
                   .annotate(next_pk=Subquery(following.order_by("pk").values("pk")[:1]))
                   .values_list("pk", "next_pk"))
    wanted = {pk for pk in next_of.values() if pk is not None and pk not in exclude_ids}
    found = Message.objects.select_related("session").in_bulk(sorted(wanted))
    return [MessageHit(hit.message, hit.score, hit.matched, found.get(next_of.get(hit.message.pk))) for hit in hits]
