"""Load a dataset into a fresh team through the services the API uses, ask the context and
search calls each question, and score what comes back against the gold turns or memories
(issue 7; R-QUERY, R-CTX).

Recall@k of one question = |gold ∩ ids of the first k items| / |gold|, averaged over the
questions. An item's ids: a message → its turn id (LoCoMo) ; a node → the turn ids of its source
messages (LoCoMo) or the memory it was loaded from (MADial). Characters are code points of
the rendered context block (or, for the baseline, of the k turns themselves, one per line).

Every call runs in a team created for the run and deleted afterwards (unless keep=True); the
calls are not recorded in the hit ledger.
"""

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.test import override_settings
from django.utils import timezone
from django_scopes import scope, scopes_disabled

from accounts.models import Team
from accounts.principal import Principal, principal_for_key
from accounts.services import agent_key_create, team_create
from memory import limits
from memory.capture.jobs import jobs_sweep
from memory.evaluation.baseline import BM25Baseline
from memory.evaluation.datasets import Conversation, Dialogue, Memory
from memory.models import Node
from memory.selectors.budget import budget_resolve
from memory.selectors.context import ContextRequest, context_build
from memory.selectors.nodes import Owner
from memory.selectors.query import MemoryQuery, memory_query
from memory.services.embeddings import embeddings_refresh
from memory.services.lexicon import lexicon_load
from memory.services.messages import MessageInput, messages_append
from memory.services.node_input import NodeInput
from memory.services.nodes import node_create
from memory.services.policies import policy_set
from memory.services.sessions import SessionRef

LOCOMO_KS = (1, 5, 10, 20)
MADIAL_KS = (1, 3, 5, 10)
RANKING_CHARS = limits.CONTEXT_MAX_CHARS_MAX  # the ranking call is not cut by characters
WORKSPACE = "eval"
EMBED_ALL = 1_000_000  # with semantic recall on, every loaded row gets its vector before the questions


@dataclass
class Series:
    """Per-question recall@k (and characters) of one method."""

    name: str
    ks: tuple[int, ...]
    recall: dict[int, list[float]] = field(default_factory=dict)
    chars: list[int] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)

    def add(self, ranked: Sequence[set[str]], gold: frozenset[str], chars: int | None = None,
            ms: float | None = None) -> None:
        for k in self.ks:
            found = set().union(*ranked[:k]) if ranked[:k] else set()
            self.recall.setdefault(k, []).append(len(found & gold) / len(gold))
        if chars is not None:
            self.chars.append(chars)
        if ms is not None:
            self.ms.append(ms)

    def summary(self) -> dict:
        count = len(next(iter(self.recall.values()), []))
        out = {"method": self.name, "questions": count,
               "recall": {k: round(sum(values) / len(values), 3) for k, values in self.recall.items() if values}}
        if self.chars:
            out["chars_mean"] = round(sum(self.chars) / len(self.chars))
        if self.ms:
            ordered = sorted(self.ms)
            out["ms_p50"] = round(ordered[len(ordered) // 2], 1)
            out["ms_p95"] = round(ordered[max(0, int(len(ordered) * 0.95) - 1)], 1)
        return out


@dataclass
class Run:
    team: Team
    principal: Principal
    keep: bool = False


def _fresh_team(name: str) -> Run:
    slug = f"eval-{name}-{timezone.now():%Y%m%d%H%M%S%f}"
    team = team_create(slug=slug, name=f"evaluation {name}")
    key, _ = agent_key_create(team=team, name="evaluate", kind="admin")
    principal = principal_for_key(key)
    with scope(team=team):
        policy_set(principal=principal, changes={"top_n": limits.CONTEXT_TOP_N_MAX, "max_chars": RANKING_CHARS})
    return Run(team=team, principal=principal)


def _drop(run: Run) -> None:
    if not run.keep:
        with scopes_disabled():
            Team.objects.filter(pk=run.team.pk).delete()


def _load_lexicon(run: Run, sets: Sequence[Sequence[str]], log: Callable[[str], None]) -> None:
    """A synonym lexicon for the evaluation team (a general thesaurus; never one built from the data)."""
    if sets:
        report = lexicon_load(principal=run.principal, sets=sets, source="evaluate")
        log(f"lexicon: {report.created} synonym sets loaded, skipped {report.skipped}")


def _budget(run: Run, top_n: int, max_chars: int):
    return budget_resolve({"top_n": top_n, "max_chars": max_chars}, team=run.team, workspace_id=WORKSPACE)


def _load_conversation(run: Run, conversation: Conversation) -> dict[int, str]:
    """Append every turn (one session per LoCoMo session, one end user per conversation) and
    capture them as agents' traffic would be; returns {message id: turn id}."""
    turn_of: dict[int, str] = {}
    by_session: dict[str, list] = {}
    for turn in conversation.turns:
        by_session.setdefault(turn.session_id, []).append(turn)
    for session_id, turns in by_session.items():
        ref = SessionRef(session_id=session_id, workspace_id=WORKSPACE, user_id=conversation.sample_id)
        for start in range(0, len(turns), 8):  # an agent appends a few turns at a time
            batch = turns[start : start + 8]
            stored = messages_append(principal=run.principal, messages=[
                MessageInput(session=ref, role=turn.role, content=turn.content, occurred_at=turn.occurred_at,
                             metadata={"speaker": turn.speaker, "dia_id": turn.dia_id})
                for turn in batch
            ])
            turn_of.update({message.pk: turn.dia_id for message, turn in zip(stored, batch, strict=True)})
    return turn_of


def _capture_all() -> int:
    """Run capture over every uncaptured message now (as `manage.py capture_run`); returns passes."""
    for passes in range(1, 1000):
        counts = jobs_sweep(now=timezone.now(), idle_seconds=0, limit=500)
        if counts["due"] == 0 and counts["created"] == 0:
            return passes
    return 1000


def _item_ids(item, turn_of: dict[int, str]) -> set[str]:
    if item.kind == "message":
        return {turn_of[item.obj.pk]} if item.obj.pk in turn_of else set()
    if item.kind == "node":
        return {turn_of[link.message_id] for link in item.obj.source_links.all() if link.message_id in turn_of}
    return set()


def _l5_units(context, turn_of: dict[int, str]) -> list[set[str]]:
    """The ids of the context's L5 hits in rank order; a follow-up counts with its message."""
    units: list[set[str]] = []
    unit_of_message: dict[int, set[str]] = {}
    for item in context.items:
        if item.layer != "L5":
            continue
        if item.after is not None and item.after in unit_of_message:
            unit_of_message[item.after] |= _item_ids(item, turn_of)
            continue
        units.append(_item_ids(item, turn_of))
        if item.kind == "message":
            unit_of_message[item.obj.pk] = units[-1]
    return units


def locomo_evaluate(conversations: Sequence[Conversation], *, budget_top_n: int = 10, budget_chars: int = 1500,
                    keep: bool = False, log: Callable[[str], None] = print,
                    lexicon: Sequence[Sequence[str]] = ()) -> dict:
    """Score LoCoMo: per conversation and overall, recall@k (LOCOMO_KS) of
    - "context": the context call's L5 items (relevant nodes and earlier messages, in rank order);
    - "search": the search call's relevant nodes (by their source turns);
    - "context in budget": every item the context call injects under top_n=`budget_top_n`,
      max_chars=`budget_chars` (recall of the whole block, and its characters);
    - "bm25": the baseline over the conversation's turns.
    """
    overall = _locomo_series(budget_top_n)
    per_conversation = {}
    with override_settings(MEMORY_CAPTURE_THREADS=False):
        run = _fresh_team("locomo")
        run.keep = keep
        try:
            with scope(team=run.team):
                _load_lexicon(run, lexicon, log)
                for conversation in conversations:
                    started = time.perf_counter()
                    turn_of = _load_conversation(run, conversation)
                    _capture_all()
                    embeddings_refresh(team=run.team, limit=EMBED_ALL)
                    with scopes_disabled():
                        nodes = Node.objects.filter(team=run.team, user_id=conversation.sample_id).count()
                    log(f"{conversation.sample_id}: {len(conversation.turns)} turns loaded, {nodes} nodes captured "
                        f"in {time.perf_counter() - started:.1f} s; {len(conversation.questions)} questions")
                    series = _locomo_series(budget_top_n)
                    _locomo_questions(run, conversation, turn_of, series, budget_top_n, budget_chars)
                    per_conversation[conversation.sample_id] = {name: item.summary() for name, item in series.items()}
                    for name, item in series.items():
                        for k, values in item.recall.items():
                            overall[name].recall.setdefault(k, []).extend(values)
                        overall[name].chars += item.chars
                        overall[name].ms += item.ms
        finally:
            _drop(run)
    return {"dataset": "locomo", "overall": {name: item.summary() for name, item in overall.items()},
            "per_conversation": per_conversation}


def _locomo_series(budget_top_n: int) -> dict[str, Series]:
    return {"bm25": Series("BM25 over turns (baseline)", LOCOMO_KS),
            "context": Series("context call, L5 items", LOCOMO_KS),
            "search": Series("search call, nodes' source turns", LOCOMO_KS),
            "budget": Series(f"context call in budget (top_n {budget_top_n}), whole block", (budget_top_n,))}


def _locomo_questions(run: Run, conversation: Conversation, turn_of: dict[int, str], series: dict[str, Series],
                      budget_top_n: int, budget_chars: int) -> None:
    baseline = BM25Baseline([turn.content for turn in conversation.turns])
    owner = Owner(workspace_id=WORKSPACE, user_id=conversation.sample_id)
    ranking_budget = _budget(run, max(LOCOMO_KS), RANKING_CHARS)
    small_budget = _budget(run, budget_top_n, budget_chars)
    for question in conversation.questions:
        top = baseline.top(question.text, max(LOCOMO_KS))
        chars = sum(len(conversation.turns[index].content) + 1 for index in top[:budget_top_n])
        series["bm25"].add([{conversation.turns[index].dia_id} for index in top], question.evidence, chars)
        request = ContextRequest(owner=owner, query=question.text)
        ranked = context_build(principal=run.principal, request=request, budget=ranking_budget, record=False)
        series["context"].add(_l5_units(ranked, turn_of), question.evidence, ms=ranked.latency_ms)
        injected = context_build(principal=run.principal, request=request, budget=small_budget, record=False)
        series["budget"].add([set().union(*(_item_ids(item, turn_of) for item in injected.items))],
                             question.evidence, len(injected.block))
        found = memory_query(principal=run.principal, query=MemoryQuery(owner=owner, query_text=question.text,
                                                                          limit=max(LOCOMO_KS)))
        series["search"].add([{turn_of[link.message_id] for link in node.source_links.all()
                               if link.message_id in turn_of} for node in found.relevant], question.evidence)


def madial_evaluate(memories: Sequence[Memory], dialogues: Sequence[Dialogue], *, keep: bool = False,
                    log: Callable[[str], None] = print, lexicon: Sequence[Sequence[str]] = ()) -> dict:
    """Score MADial-Bench zh: memories are user-scope facts of one end user; each dialogue's
    turns before the test turn are the query (its last QUERY_TEXT_MAX characters). Recall@k
    (MADIAL_KS) of the context call's L5 nodes, of the search call, and of the baseline over
    the same memory texts."""
    series = {"bm25": Series("BM25 over memories (baseline)", MADIAL_KS),
              "context": Series("context call, L5 nodes", MADIAL_KS),
              "search": Series("search call", MADIAL_KS)}
    run = _fresh_team("madial")
    run.keep = keep
    try:
        with scope(team=run.team):
            _load_lexicon(run, lexicon, log)
            with override_settings(MEMORY_CAPTURE_THREADS=False):
                memory_of = _load_memories(run, memories)
            embeddings_refresh(team=run.team, limit=EMBED_ALL)
            node_of_memory = {memory_id: pk for pk, ids in memory_of.items() for memory_id in ids}
            log(f"madial: {len(memories)} memories loaded; {len(dialogues)} dialogues")
            texts = [memory_text(memory) for memory in memories]
            baseline = BM25Baseline(texts)
            owner = Owner(workspace_id=WORKSPACE, user_id="bart")
            ranking_budget = _budget(run, max(MADIAL_KS), RANKING_CHARS)
            for dialogue in dialogues:
                query = dialogue.query[-limits.QUERY_TEXT_MAX:]
                top = baseline.top(dialogue.query, max(MADIAL_KS))
                series["bm25"].add([memory_of[node_of_memory[memories[index].id]] for index in top], dialogue.relevant)
                context = context_build(principal=run.principal, request=ContextRequest(owner=owner, query=query),
                                        budget=ranking_budget, record=False)
                series["context"].add([memory_of[item.obj.pk] for item in context.items
                                        if item.layer == "L5" and item.kind == "node"], dialogue.relevant,
                                       ms=context.latency_ms)
                found = memory_query(principal=run.principal,
                                     query=MemoryQuery(owner=owner, query_text=query, limit=max(MADIAL_KS)))
                series["search"].add([memory_of[node.pk] for node in found.relevant], dialogue.relevant)
    finally:
        _drop(run)
    return {"dataset": "madial_zh", "overall": {name: item.summary() for name, item in series.items()}}


def memory_text(memory: Memory) -> str:
    return f"{memory.date}（{memory.scene}，{memory.emotion}）{memory.event}"


def _load_memories(run: Run, memories: Sequence[Memory]) -> dict[int, set[str]]:
    """One user-scope fact per memory; identical memories (the data has a few) are one node,
    as the product stores an identical note once. Returns {node id: memory ids}."""
    memory_of: dict[int, set[str]] = {}
    node_of_text: dict[str, int] = {}
    for memory in memories:
        text = memory_text(memory)
        if text not in node_of_text:
            with transaction.atomic():
                node = node_create(principal=run.principal, reason="evaluation load", data=NodeInput(
                    scope="user", type="fact", user_id="bart", workspace_id=WORKSPACE, title=memory.event[:200],
                    content=text, tags=(memory.scene, memory.emotion), entities=("Bart",)))
            node_of_text[text] = node.pk
        memory_of.setdefault(node_of_text[text], set()).add(memory.id)
    return memory_of
