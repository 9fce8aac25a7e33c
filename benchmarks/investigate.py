"""Where the time goes: SQL per calling function, EXPLAIN of the slowest statements, a profile.

- `sql_breakdown` runs context_build / memory_query directly (inside the team scope) with a
  connection.execute_wrapper that times every statement and labels it with the innermost
  function of memory/ that issued it; the rest of the wall time is Python.
- `explain_slowest` re-runs the slowest captured statements under EXPLAIN (ANALYZE, BUFFERS) on
  PostgreSQL (EXPLAIN QUERY PLAN on SQLite).
- `profile_calls` runs cProfile over calls through the Django test client.
"""

from __future__ import annotations

import cProfile
import pstats
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field

from django.db import connection
from django_scopes import scope

from memory.selectors.context import ContextRequest, context_build
from memory.selectors.nodes import Owner
from memory.selectors.query import MemoryQuery, memory_query

_OWN_CODE = re.compile(r"/(memory|accounts)/(?!migrations)")


@dataclass
class Statement:
    label: str
    sql: str
    params: tuple
    ms: float


@dataclass
class Capture:
    statements: list[Statement] = field(default_factory=list)

    def __call__(self, execute, sql, params, many, context):
        frame = sys._getframe(1)
        label = "?"
        while frame is not None:
            filename = frame.f_code.co_filename
            if _OWN_CODE.search(filename):
                module = filename.rsplit("/", 2)
                label = f"{module[-2]}/{module[-1][:-3]}.{frame.f_code.co_name}"
                break
            frame = frame.f_back
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.statements.append(Statement(label, sql, tuple(params or ()), (time.perf_counter() - started) * 1000))


def _call(kind: str, principal, owner: Owner, text: str):
    if kind == "context":
        return context_build(principal=principal, request=ContextRequest(owner=owner, query=text))
    return memory_query(principal=principal, query=MemoryQuery(owner=owner, query_text=text))


def sql_breakdown(kind: str, principal, workload: list[tuple[Owner, str]], out=print) -> list[Statement]:
    """Run `workload` (owner, query) directly; print SQL ms per label and Python ms; return statements."""
    by_label: dict[str, list[float]] = defaultdict(list)
    statements: list[Statement] = []
    wall = 0.0
    with scope(team=principal.team):
        for owner, text in workload[:5]:
            _call(kind, principal, owner, text)  # warm-up
        for owner, text in workload:
            capture = Capture()
            started = time.perf_counter()
            with connection.execute_wrapper(capture):
                _call(kind, principal, owner, text)
            wall += (time.perf_counter() - started) * 1000
            for statement in capture.statements:
                by_label[statement.label].append(statement.ms)
            statements.extend(capture.statements)
    calls = len(workload)
    sql_total = sum(sum(values) for values in by_label.values())
    out(f"\n  {kind}: {calls} direct calls, mean {wall / calls:.2f} ms/call, SQL {sql_total / calls:.2f} ms/call, "
        f"Python {(wall - sql_total) / calls:.2f} ms/call, {len(statements) / calls:.1f} statements/call")
    out(f"  {'issued by':58} {'stmts/call':>10} {'ms/call':>8} {'p95 ms':>8} {'max ms':>8}")
    for label, values in sorted(by_label.items(), key=lambda item: -sum(item[1])):
        ordered = sorted(values)
        p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
        out(f"  {label:58} {len(values) / calls:10.2f} {sum(values) / calls:8.2f} {p95:8.2f} {ordered[-1]:8.2f}")
    return statements


def _literal_sql(sql: str, params: tuple) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            return cursor.mogrify(sql, params) if params else sql
    return sql


def explain_slowest(statements: list[Statement], *, per_label: int = 1, labels: int = 6, out=print) -> None:
    """EXPLAIN the slowest statement of each of the `labels` most expensive labels."""
    if not statements:
        return
    cost: dict[str, float] = defaultdict(float)
    for statement in statements:
        cost[statement.label] += statement.ms
    chosen: list[Statement] = []
    for label, _ in sorted(cost.items(), key=lambda item: -item[1])[:labels]:
        mine = sorted((s for s in statements if s.label == label and s.sql.lstrip().upper().startswith("SELECT")),
                      key=lambda s: -s.ms)
        chosen.extend(mine[:per_label])
    for statement in chosen:
        out(f"\n  --- {statement.label}: {statement.ms:.2f} ms when captured")
        out("  " + _literal_sql(statement.sql, statement.params)[:1500].replace("\n", " "))
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement.sql, statement.params)
            else:
                cursor.execute("EXPLAIN QUERY PLAN " + statement.sql, statement.params)
            rows = cursor.fetchall()
        if len(rows) > 40:
            rows = rows[:40] + [(f"… {len(rows) - 40} more plan lines",)]
        for row in rows:
            out("    " + " | ".join(str(part) for part in (row if connection.vendor == "postgresql" else row[-1:])))


def _short(filename: str) -> str:
    import memory

    code_root = str(__import__("pathlib").Path(memory.__file__).resolve().parents[1]) + "/"
    for marker in ("site-packages/", code_root):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


def profile_calls(call, args: list, *, top: int = 30, out=print) -> None:
    """cProfile `call(arg)` over `args`; print the top functions by cumulative and own time (ms per call)."""
    for arg in args[:5]:
        call(arg)
    profiler = cProfile.Profile()
    profiler.enable()
    for arg in args:
        call(arg)
    profiler.disable()
    stats = pstats.Stats(profiler).stats
    calls = len(args)
    rows = [(_short(file), line, name, primitive, total, own, cumulative)
            for (file, line, name), (primitive, total, own, cumulative, _) in stats.items()]
    for title, index, keep in (
        ("cumulative, project code", 6, lambda row: row[0].startswith(("memory/", "accounts/"))),
        ("own time, everything", 5, lambda row: True),
    ):
        out(f"\n  cProfile over {calls} calls through the test client, by {title} (ms per call; profiler overhead included):")
        out(f"  {'calls/call':>10} {'own ms':>8} {'cum ms':>8}  function")
        for row in sorted(filter(keep, rows), key=lambda row: -row[index])[:top]:
            out(f"  {row[4] / calls:10.1f} {row[5] * 1000 / calls:8.2f} {row[6] * 1000 / calls:8.2f}  "
                f"{row[0]}:{row[1]}({row[2]})")


# --- inclusive wall time per phase, by monkeypatching names where they are looked up ---------

PHASES = [
    # (module, attribute, label): where each function is looked up by its caller
    ("rest_framework.views", "APIView.dispatch", "dispatch"),
    ("memory.api.views", "tool_call", "tool_call"),
    ("accounts.authentication", "AgentKeyAuthentication.authenticate", "auth"),
    ("memory.api.tool_calls", "context_build", "context_build"),
    ("memory.api.tool_calls", "memory_query", "memory_query"),
    ("memory.selectors.context", "budget_resolve", "budget_resolve"),
    ("memory.selectors.context", "owner_session", "owner_session"),
    ("memory.selectors.context", "gather_parts", "gather_parts"),
    ("memory.selectors.context_gather", "default_layers", "default_layers"),
    ("memory.selectors.context_gather", "_long_term", "_long_term"),
    ("memory.selectors.context_gather", "working_memory_for_context", "working_memory"),
    ("memory.selectors.context_gather", "messages_recent", "messages_recent"),
    ("memory.selectors.context_gather", "memory_query", "memory_query"),
    ("memory.selectors.context_gather", "messages_search", "messages_search"),
    ("memory.selectors.context", "conflict_losers", "conflict_losers"),
    ("memory.selectors.context", "_fit", "_fit"),
    ("memory.selectors.context", "_record", "_record(ledger)"),
    ("memory.selectors.context", "prefetch_source_links", "prefetch source_links"),
    ("memory.selectors.query", "_filtered", "_filtered"),
    ("memory.selectors.query", "_exact", "_exact"),
    ("memory.selectors.query", "_relevant", "_relevant"),
    ("memory.selectors.query", "rank", "rank"),
    ("memory.selectors.query", "nodes_in_order", "nodes_in_order"),
    ("memory.selectors.query", "query_tokens", "query_tokens"),
    ("memory.selectors.messages", "rank", "rank"),
    ("memory.selectors.messages", "_with_followups", "followups"),
    ("memory.search.engine", "_parse", "_parse"),
    ("memory.search.engine", "document_frequencies", "document_frequencies"),
    ("memory.search.engine", "_candidates", "_candidates"),
    ("memory.search.engine", "similarities", "concept similarities"),
    ("memory.selectors.query", "query_concepts", "query_concepts"),
]


class Phases:
    """Inclusive wall (`totals`) and CPU (`cpu`, time.process_time) seconds and call counts of
    each function of PHASES while the block runs, keyed by its nesting ("caller > callee")."""

    def __init__(self):
        self.stack: list[str] = []
        self.totals: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        self._undo: list = []

    def _wrap(self, function, label):
        phases = self

        def wrapper(*args, **kwargs):
            phases.stack.append(label)
            key = " > ".join(phases.stack)
            started, cpu = time.perf_counter(), time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                phases.totals[key] += time.perf_counter() - started
                phases.cpu[key] += time.process_time() - cpu
                phases.counts[key] += 1
                phases.stack.pop()

        wrapper.__wrapped__ = function
        return wrapper

    def __enter__(self):
        import importlib

        for module_name, attribute, label in PHASES:
            owner = importlib.import_module(module_name)
            *path, name = attribute.split(".")
            for part in path:
                owner = getattr(owner, part)
            original = (owner.__dict__ if isinstance(owner, type) else vars(owner)).get(name)
            if original is None:  # the code moved on; time what is still there
                continue
            setattr(owner, name, self._wrap(original, label))
            self._undo.append((owner, name, original))
        return self

    def __exit__(self, *exc):
        for owner, name, original in reversed(self._undo):
            setattr(owner, name, original)


def phase_breakdown(call, args: list, *, out=print, title: str = "") -> dict[str, float]:
    """Inclusive wall ms per call of each phase (nested as caller > callee), over `args`."""
    for arg in args[:5]:
        call(arg)
    total = 0.0
    with Phases() as phases:
        for arg in args:
            started = time.perf_counter()
            call(arg)
            total += time.perf_counter() - started
    calls = len(args)
    out(f"\n  phases{(' of ' + title) if title else ''}: {calls} calls through the test client, "
        f"{total * 1000 / calls:.2f} ms/call end to end (inclusive wall ms per call; calls per call)")
    result = {}
    for key in sorted(phases.totals):
        depth = key.count(" > ")
        ms = phases.totals[key] * 1000 / calls
        result[key] = ms
        out(f"  {'  ' * depth}{key.rsplit(' > ', 1)[-1]:{44 - 2 * depth}} {ms:8.2f} ms  ×{phases.counts[key] / calls:.1f}")
    return result
