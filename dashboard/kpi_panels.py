"""The KPI page's panels (R-UI KPI page; seed 004 §7.3): each figure kpis() returns, as a chart
over the days and the numbers beside it (a row per day and one for the range).

kpi_panels takes kpis()'s answer unchanged (memory.selectors.kpis documents every figure)
and only lays it out; nothing is computed here but sums for the stacked bars' legends.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dashboard.charts import Chart, Series, bar_chart, line_chart, number
from memory.selectors.dashboard_tuning import Backlog

LAYERS = ("L0", "L1", "L2", "L3", "L4", "L5")


@dataclass
class Panel:
    key: str
    title: str
    chart: Chart
    headers: list[str]
    rows: list[list[str]]  # one per day: the day first
    total: list[str]  # the range
    note: str = ""
    extra: list[tuple[str, str]] = field(default_factory=list)  # (label, figure) below the table


Figure = Callable[[dict[str, Any]], float | None]


def _dig(*path: str, default: float | None = None) -> Figure:
    """The figure at `path` of a day's (or the range's) figures; `default` when absent."""
    def get(figures: dict[str, Any]) -> Any:
        for key in path:
            figures = figures.get(key) if isinstance(figures, dict) else None
        return default if figures is None else figures
    return get


def _panel(key: str, title: str, data: dict[str, Any], columns: list[tuple[str, Figure, bool]], *,
           chart: str, charted: list[str], percent: bool = False, top: float | None = None, note: str = "") -> Panel:
    """A panel of `columns` (header, figure, is a rate) over the days; the columns named in
    `charted` are the chart's series, stacked bars or lines."""
    days = data["days"]
    labels = [day["date"][5:] for day in days]
    series = [Series(header, [figure(day) for day in days]) for header, figure, _ in columns if header in charted]
    drawn = (bar_chart(labels, series, title=title, percent=percent) if chart == "bar"
             else line_chart(labels, series, title=title, percent=percent, top=top))
    rows = [[day["date"], *(number(figure(day), percent=rate) for _, figure, rate in columns)] for day in days]
    total = ["Range", *(number(figure(data["totals"]), percent=rate) for _, figure, rate in columns)]
    return Panel(key, title, drawn, ["Day", *(header for header, _, _ in columns)], rows, total, note)


def _sizes(data: dict[str, Any], unit: str) -> Panel:
    columns = [(layer, _dig("injected", unit, "by_layer", layer, "sum"), False) for layer in LAYERS]
    columns += [("Block", _dig("injected", unit, "total", "sum"), False),
                ("Mean per call", _dig("injected", unit, "total", "mean"), False)]
    title = "Injected characters per layer" if unit == "chars" else "Injected tokens per layer (estimated)"
    return _panel(unit, title, data, columns, chart="bar", charted=list(LAYERS),
                  note="Each layer's items; the block adds section headers and blank lines.")


def _keys(data: dict[str, Any], *path: str) -> list[str]:
    return sorted(_dig(*path)(data["totals"]) or {})


def _proposals(data: dict[str, Any]) -> Panel:
    columns = [(f"{source} {outcome}", _dig("proposals", source, outcome), False)
               for source in ("api", "capture") for outcome in ("accepted", "refused")]
    panel = _panel("proposals", "Proposals accepted and refused", data, columns, chart="bar",
                   charted=[header for header, _, _ in columns],
                   note="api: agents and users; capture: background extraction.")
    for source in ("api", "capture"):
        for outcome in ("accepted_by_reason", "refused_by_reason"):
            for reason, count in data["totals"]["proposals"][source][outcome].items():
                panel.extra.append((f"{source} {outcome.split('_')[0]}: {reason}", number(count)))
    return panel


def _extraction(data: dict[str, Any], backlog: Backlog) -> Panel:
    columns = [("Jobs done", _dig("extraction", "jobs_done"), False), ("Jobs failed", _dig("extraction", "jobs_failed"), False),
               ("Messages", _dig("extraction", "messages"), False), ("Proposals", _dig("extraction", "proposals"), False),
               ("Accepted", _dig("extraction", "accepted"), False), ("Yield", _dig("extraction", "yield"), True)]
    panel = _panel("extraction", "Extraction jobs and yield", data, columns, chart="bar",
                   charted=["Jobs done", "Jobs failed"], note="Yield = accepted / proposals of finished capture jobs.")
    oldest = backlog.oldest_pending.strftime("%Y-%m-%d %H:%M UTC") if backlog.oldest_pending else "—"
    panel.extra += [("Backlog now: pending jobs", number(backlog.pending)), ("Oldest pending since", oldest),
                    ("Failed jobs kept", number(backlog.failed))]
    panel.extra += [(f"Outcome: {name}", number(count)) for name, count in data["totals"]["extraction"]["outcomes"].items()]
    return panel


def _store(data: dict[str, Any], key: str, title: str) -> Panel:
    counts = data["nodes"][key]
    labels = list(counts)
    chart = bar_chart(labels, [Series("nodes", [counts[label] for label in labels])], title=title)
    return Panel(f"nodes-{key}", title, chart, [key.removeprefix("by_").capitalize(), "Nodes"],
                 [[label, number(counts[label])] for label in labels], ["All", number(data["nodes"]["total"])],
                 note="The store now, not per day; an active node past its expiry counts as expired.")


def kpi_panels(data: dict[str, Any], backlog: Backlog) -> list[Panel]:
    """The panels of the KPI page, in reading order, from kpis()'s answer and the job backlog."""
    reasons = _keys(data, "omitted", "by_reason")
    types, scopes = _keys(data, "nodes_created", "by_type"), _keys(data, "nodes_created", "by_scope")
    panels = [
        _panel("calls", "Context calls per day", data, [
            ("Calls", _dig("context_calls"), False), ("With a query", _dig("query_calls"), False),
            ("Truncated", _dig("truncated_calls"), False), ("Degraded", _dig("degraded_calls"), False),
            ("Disabled", _dig("disabled_calls"), False)], chart="bar", charted=["Calls"]),
        _panel("hit-rate", "Hit rate", data, [
            ("Query calls", _dig("query_calls"), False), ("Hits", _dig("hits"), False),
            ("Hit rate", _dig("hit_rate"), True), ("L5 hits", _dig("l5_hits"), False),
            ("L5 hit rate", _dig("l5_hit_rate"), True)], chart="line", charted=["Hit rate", "L5 hit rate"],
            percent=True, top=1.0,
            note="Hit: a call with a query that injected at least one relevant memory; L5 also counts earlier messages."),
        _sizes(data, "chars"),
        _sizes(data, "tokens"),
        _panel("budget-use", "Budget use", data, [
            ("Calls", _dig("budget_use", "calls"), False), ("Mean use", _dig("budget_use", "mean"), True)],
            chart="line", charted=["Mean use"], percent=True, top=1.0,
            note="The block's characters over the policy's max_chars, calls with pre-injection on."),
        _panel("omitted", "Left out by reason", data,
               [(reason, _dig("omitted", "by_reason", reason, default=0), False) for reason in reasons]
               + [("Total", _dig("omitted", "total"), False)], chart="bar", charted=reasons),
        _panel("latency", "Latency of context calls (ms)", data, [
            ("Calls measured", _dig("latency_ms", "rows"), False), ("p50", _dig("latency_ms", "p50"), False),
            ("p95", _dig("latency_ms", "p95"), False)], chart="line", charted=["p50", "p95"],
            note=f"Nearest rank over at most {data['latency_rows_per_day']:,} calls a day."),
        _panel("used-rate", "Used-rate (agents' feedback)", data, [
            ("Reports", _dig("feedback", "retrievals"), False), ("Injected", _dig("feedback", "injected"), False),
            ("Used", _dig("feedback", "used"), False), ("Used rate", _dig("feedback", "used_rate"), True),
            ("Helpful", _dig("feedback", "helpful"), False), ("Not helpful", _dig("feedback", "not_helpful"), False)],
            chart="line", charted=["Used rate"], percent=True, top=1.0,
            note="Memories the agent reported using over the memories injected, in the calls it reported on."),
        _proposals(data),
        _extraction(data, backlog),
        _panel("growth", "Memories created by type", data,
               [(name, _dig("nodes_created", "by_type", name, default=0), False) for name in types]
               + [("Total", _dig("nodes_created", "total"), False)], chart="bar", charted=types),
    ]
    panels[-1].extra += [(f"Created in scope {scope}", number(data["totals"]["nodes_created"]["by_scope"][scope]))
                         for scope in scopes]
    panels += [_store(data, "by_type", "Nodes now by type"), _store(data, "by_scope", "Nodes now by scope"),
               _store(data, "by_status", "Nodes now by status")]
    return panels


def headline(data: dict[str, Any]) -> list[tuple[str, str]]:
    """The range's main figures, shown above the panels."""
    totals = data["totals"]
    p95 = totals["latency_ms"]["p95"]
    return [("Context calls", number(totals["context_calls"])),
            ("Hit rate", number(totals["hit_rate"], percent=True)),
            ("L5 hit rate", number(totals["l5_hit_rate"], percent=True)),
            ("Injected characters per call", number(totals["injected"]["chars"]["total"]["mean"])),
            ("Budget use", number(totals["budget_use"]["mean"], percent=True)),
            ("Latency p95", "—" if p95 is None else f"{number(p95)} ms"),
            ("Used-rate", number(totals["feedback"]["used_rate"], percent=True)),
            ("Nodes", number(data["nodes"]["total"]))]
