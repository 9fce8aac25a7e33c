"""Reading conversation messages: the recent window and keyword recall of earlier turns."""

from dataclasses import dataclass, replace
from datetime import UTC, datetime, tzinfo

from django.db import connections, router
from django.db.models import QuerySet
from django.utils import timezone

from accounts.principal import Principal
from memory.embedding_models import Embedding
from memory.models import Message, MessageRole, NodeSource, NodeStatus, Session
from memory.search.engine import Scored, rank
from memory.search.semantic import MESSAGE_DENSE_WEIGHT, dense_rank, embedder, fused_ranking
from memory.search.source import Column, Rows
from memory.search.text import (
    FUNCTION_BIGRAM_SHARE,
    episodic_token,
    function_bigrams,
    normalize,
    owner_token,
    query_token_weights,
    query_tokens,
    temporal_expansions,
)
from memory.search.when import (
    DayRange,
    Period,
    asks_for_a_recap,
    in_periods,
    mentioned_periods,
    period_spans,
    without_relative_periods,
)
from memory.selectors.lexicon import lexicon_expand
from memory.selectors.nodes import Owner
from memory.selectors.rows import (
    MESSAGE_DEFERRED,
    columns,
    converted,
    converters,
    messages_by_id,
    messages_with_sessions,
    read,
)

MESSAGE_FIELD_WEIGHTS = (1.0, 1.0)  # content | speaker name (memory.services.messages.message_search_tokens)
TEMPORAL_EXPANSION_SHARE = 0.3  # of a dating word's weight, for a question that asks when (docs/retrieval.md)
SESSION_EVIDENCE_SHARE = 0.5
SESSION_EVIDENCE_TOP = 2
SESSION_EVIDENCE_POOL = 50
RELATIVE_WORD_SHARE = 0.3  # of a relative period's word's weight ("yesterday"), on turns other words find
DATE_MATCH_SHARE = 0.5  # a turn said in a period the query names gains this share of its score (docs/retrieval.md)


@dataclass(frozen=True)
class MessageHit:
    message: Message
    score: float
    matched: tuple[str, ...]
    followup: Message | None = None  # the next turn of the same session (the reply, usually)
    why: str = "relevant"  # or "said_then": said in a period the query names, found by its time alone


def messages_recent(*, session: Session, limit: int) -> list[Message]:
    """The last `limit` messages of the session, oldest first (server order), leaving out
    system messages: they are the agent's own instructions, which it sends with every model
    call, and the block is recalled data, not instructions (R-CTX). The same holds for the
    earlier messages of messages_search. Turns a forgotten memory was taken from are left out
    too (Message.memory_forgotten_at, R-STORE): the block recalls them nowhere."""
    if limit <= 0:
        return []
    newest = read(Message, f"SELECT {columns(Message, 'm')} FROM {Message._meta.db_table} m "
                           f"WHERE m.team_id = %s AND m.session_id = %s AND m.role <> %s "
                           f"AND m.memory_forgotten_at IS NULL ORDER BY m.id DESC LIMIT {int(limit)}",
                  [session.team_id, session.pk, MessageRole.SYSTEM.value])
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
    now: datetime | None = None,
    zone: tzinfo | None = None,
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

    A turn said in a period the query names scores DATE_MATCH_SHARE more (R-QUERY); relative
    ones ("yesterday", "上周") count back from `now`, the call's time (default: this moment);
    dates are read in the time zone `zone` (None: not known, UTC with a day's lead). When the
    words find fewer than `limit` turns said in the periods themselves (not the week after a
    named day), turns said in them make up the rest (why "said_then"), placed right after the
    words' last such hit (first, when there is none), so before the words' hits from other
    times that rank below it: "what did we talk about yesterday?" or "2023年5月8日聊了什么" names
    little but a time, and its words ("talk", "聊") are found all over a conversation.
    """
    if limit <= 0 or (session is None and not owner.user_id):
        return []
    now = now or timezone.now()
    periods = mentioned_periods(query_text, now=now, zone=zone)
    if not periods and session is not None and asks_for_a_recap(query_text):
        # "What did we talk about?" asks about this conversation, which its summary and recent
        # window show; its words ("talk", 聊) only find greetings of other conversations, which
        # took the summary's room (a newcomer's finding).
        return []
    # A relative period's words ("yesterday", 昨天) date the question, not what was said: they
    # score the turns the other words find, and find none themselves.
    words_text, relative_words = without_relative_periods(query_text, now, zone) if periods else (query_text, [])
    tokens = query_tokens(words_text)
    if not tokens and not periods:
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

    expansions = dict.fromkeys(function_bigrams(words_text), FUNCTION_BIGRAM_SHARE)
    expansions.update(dict.fromkeys(temporal_expansions(query_text), TEMPORAL_EXPANSION_SHARE))
    expansions.update(dict.fromkeys((token for words in relative_words for token in query_tokens(words)),
                                    RELATIVE_WORD_SHARE))
    tokens, token_weights = lexicon_expand(team_id=team_id, workspace_id=owner.workspace_id, tokens=tokens,
                                           token_weights=query_token_weights(words_text))
    rows = Rows(Message, f"{_MESSAGES}.\"team_id\" = %s", (team_id,), joins=_SESSION_JOIN, columns=_REACH_COLUMNS)
    ranked = rank(rows, tokens, weights=MESSAGE_FIELD_WEIGHTS, within=within, expansions=expansions,
                  token_weights=token_weights)
    # Dates the query names, then session evidence, re-rank the keyword hits by their scores;
    # the dense ranking then joins by rank.
    ranked = [item for item in ranked if item.pk not in exclude_ids and in_reach(item.values)]
    ranked = _with_session_evidence(_in_named_periods(ranked, periods, zone))
    ranked = _with_dense(principal, ranked, owner, session, query_text)
    reachable = [item for item in ranked if item.pk not in exclude_ids and in_reach(item.values)]
    said_then: set[int] = set()
    spans = period_spans(periods, now, zone, talked_about=False) if periods else []  # the periods themselves
    inside = [index for index, item in enumerate(reachable)
              if spans and _within(item.values["occurred_at"] or item.values["created_at"], spans)]
    if spans and len(inside) < limit:
        # Without a time zone the spans start a day early; the periods' own UTC days come first.
        core = spans if zone is not None else period_spans(periods, now, UTC, talked_about=False)
        skip = {item.pk for item in reachable} | set(exclude_ids)
        extra = _said_in_periods(team_id, owner, session, spans, core, limit - len(inside), skip)
        said_then = {item.pk for item in extra}
        at = inside[-1] + 1 if inside else 0  # after the words' last hit in the periods, before the rest
        reachable = reachable[:at] + extra + reachable[at:]
    hits: list[MessageHit] = []
    seen = set(exclude_texts)
    # Read the candidates a window at a time until `limit` distinct texts are found, so the
    # hits for a smaller limit are always a prefix of those for a larger one.
    window = limit * 3
    for start in range(0, len(reachable), window):
        chunk = reachable[start : start + window]
        found = messages_by_id(team_id=team_id, pks=[item.pk for item in chunk])
        corrected = corrected_sources(team_id=team_id, message_ids=[pk for pk, message in found.items()
                                                                     if message.role == MessageRole.USER])
        for item in chunk:
            message = found.get(item.pk)
            if (message is None or message.role == MessageRole.SYSTEM or item.pk in corrected
                    or message.memory_forgotten_at is not None):  # it says what was forgotten
                continue
            text = normalize(message.content)
            if text in seen:
                continue
            seen.add(text)
            hits.append(MessageHit(message, item.score, item.matched,
                                   why="said_then" if item.pk in said_then else "relevant"))
            if len(hits) == limit:
                return _with_followups(hits, exclude_ids)
    return _with_followups(hits, exclude_ids)


def corrected_sources(*, team_id: int, message_ids: list[int]) -> set[int]:
    """The messages among `message_ids` that are sources of memories and whose every memory has
    been superseded since: what they said was corrected ("我特别喜欢吃辣" after "不对，我现在
    完全不吃辣了"), so they are not recalled as earlier messages beside the correction (a
    newcomer's finding). A message with one memory still active, or none at all, stays."""
    if not message_ids:
        return set()
    statuses: dict[int, set[str]] = {}
    for message_id, status in (NodeSource.objects.filter(node__team_id=team_id, message_id__in=message_ids)
                               .values_list("message_id", "node__status")):
        statuses.setdefault(message_id, set()).add(status)
    return {message_id for message_id, found in statuses.items() if found == {NodeStatus.SUPERSEDED}}


_REACH_FIELDS = ("session", "session__workspace_id", "session__user_id", "session__deleted_at", "occurred_at",
                 "created_at")
_MESSAGES, _SESSIONS = f'"{Message._meta.db_table}"', f'"{Session._meta.db_table}"'
_SESSION_JOIN = f'INNER JOIN {_SESSIONS} ON ({_MESSAGES}."session_id" = {_SESSIONS}."id")'
_REACH_COLUMNS = (  # the values of _REACH_FIELDS, as the ORM's values() reads them
    Column("session", f'{_MESSAGES}."session_id"', Message._meta.get_field("session")),
    Column("session__workspace_id", f'{_SESSIONS}."workspace_id"', Session._meta.get_field("workspace_id")),
    Column("session__user_id", f'{_SESSIONS}."user_id"', Session._meta.get_field("user_id")),
    Column("session__deleted_at", f'{_SESSIONS}."deleted_at"', Session._meta.get_field("deleted_at")),
    Column("occurred_at", f'{_MESSAGES}."occurred_at"', Message._meta.get_field("occurred_at")),
    Column("created_at", f'{_MESSAGES}."created_at"', Message._meta.get_field("created_at")),
)


def _in_named_periods(ranked: list[Scored], periods: list[Period | DayRange], zone: tzinfo | None) -> list[Scored]:
    """When the query names `periods` — a day, a month or a year, or a period relative to the
    call's time (yesterday, last week; memory.search.when.mentioned_periods) — a turn said then
    (occurred_at, else created_at, as a date in `zone`; from the day before to a week after)
    scores DATE_MATCH_SHARE more; best first, ties newest first. Otherwise `ranked` as it is."""
    if not periods or not ranked:
        return ranked
    for item in ranked:
        if in_periods(item.values["occurred_at"] or item.values["created_at"], periods, zone):
            item.score = round(item.score * (1.0 + DATE_MATCH_SHARE), 6)
    return sorted(ranked, key=lambda item: (-item.score, -item.pk))


def _within(moment: datetime, spans: list[tuple[datetime, datetime]]) -> bool:
    return any(start <= moment < end for start, end in spans)


def _said_in_periods(team_id: int, owner: Owner, session: Session | None, spans: list[tuple[datetime, datetime]],
                     core: list[tuple[datetime, datetime]], limit: int, skip: set[int]) -> list[Scored]:
    """Turns in the reach of messages_search said within `spans` (occurred_at, else
    created_at; [start, end) in UTC, from memory.search.when.period_spans), other than system
    messages and the ids in `skip`: the `limit` longest (they say the most; those within
    `core` first; ties oldest first), in the order they were said, scored 0. One statement,
    by time alone (message_session_said_idx)."""
    if limit <= 0:
        return []
    connection = connections[router.db_for_read(Message)]
    moment = 'COALESCE(m."occurred_at", m."created_at")'
    when = " OR ".join([f"({moment} >= %s AND {moment} < %s)"] * len(spans))
    first = " OR ".join([f"({moment} >= %s AND {moment} < %s)"] * len(core))
    reach, params = ("s.workspace_id = %s AND s.user_id = %s", [owner.workspace_id, owner.user_id]) if owner.user_id \
        else ("m.session_id = %s", [session.pk])
    sql = (f"SELECT m.id, m.session_id, m.occurred_at, m.created_at FROM {_MESSAGES} m JOIN {_SESSIONS} s "
           f"ON s.id = m.session_id WHERE m.team_id = %s AND s.team_id = %s AND s.deleted_at IS NULL AND {reach} "
           f"AND m.role <> %s AND ({when}) ORDER BY CASE WHEN {first} THEN 0 ELSE 1 END, LENGTH(m.content) DESC, m.id "
           f"LIMIT {int(limit + len(skip))}")
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(sql, [team_id, team_id, *params, MessageRole.SYSTEM.value,
                             *(adapt(bound) for span in (*spans, *core) for bound in span)])
        rows = cursor.fetchall()
    chains = converters(connection, (Message._meta.get_field("occurred_at"), Message._meta.get_field("created_at")))
    rows = converted(rows, 4, [(index + 2, chain, column) for index, chain, column in chains], connection) \
        if chains else rows
    chosen = [(occurred_at or created_at, pk, session_id) for pk, session_id, occurred_at, created_at in rows
              if pk not in skip and _within(occurred_at or created_at, spans)][:limit]
    return [Scored(pk=pk, score=0.0, matched=(), values={"session": session_id}) for _, pk, session_id in sorted(chosen)]


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
    """The hits, those that ask with the next message of their session that is not a system
    message (one statement for all). That message is left out, not replaced by a later one,
    when a forget hid it (memory_forgotten_at, R-STORE): a review found a hard-forgotten answer
    ("I am flying to Lisbon on June 3rd…") injected beneath the question before it."""
    asking = [hit.message.pk for hit in hits if "?" in normalize(hit.message.content)]
    if not asking:
        return hits
    team_id = hits[0].message.team_id
    table = Message._meta.db_table
    following = (f"SELECT u.id FROM {table} u WHERE u.team_id = %s AND u.session_id = a.session_id AND u.id > a.id "
                 "AND u.role <> %s ORDER BY u.id LIMIT 1")  # the next turn that is not a system message
    sql = (f"SELECT a.id, {columns(Message, 'm', MESSAGE_DEFERRED)}, {columns(Session, 's')} FROM {table} a "
           f"JOIN {table} m ON m.id = ({following}) JOIN {Session._meta.db_table} s ON s.id = m.session_id "
           f"WHERE a.team_id = %s AND m.team_id = %s AND a.id IN ({', '.join(['%s'] * len(asking))})")
    params = [team_id, MessageRole.SYSTEM.value, team_id, team_id, *asking]
    next_of = {lead[0]: message for lead, message in messages_with_sessions(sql, params, lead=1)
               if message.pk not in exclude_ids and message.memory_forgotten_at is None}
    return [replace(hit, followup=next_of.get(hit.message.pk)) for hit in hits]
