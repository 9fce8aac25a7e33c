"""Small server-rendered SVG charts for the KPI page (R-UI: charts over time, no scripts, no CDN).

`bar_chart` (stacked bars) and `line_chart` take labels (days, or categories) and named
series of numbers, None where there is no value, and return a Chart: the SVG markup and the
legend (name, colour) for the template to show beside it. Every piece of markup is built
with format_html, so each label, series name and number is escaped; nothing is marked safe
by hand. Each bar and point carries a <title> with its label, series and value.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

PALETTE = ("#0b5cad", "#1a7f37", "#9a6700", "#cf222e", "#8250df", "#1b7c83", "#bf3989", "#6e7781")
WIDTH, HEIGHT = 640, 200
LEFT, RIGHT, TOP, BOTTOM = 52, 8, 10, 22
X_LABELS_MAX = 8  # labels under the axis; the others are in the bars' and points' titles


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float | None]


@dataclass(frozen=True)
class Chart:
    svg: SafeString
    legend: tuple[tuple[str, str], ...]  # (series name, colour)


def number(value: float | None, *, percent: bool = False) -> str:
    """A figure as shown on the page: "—" for None, a percentage with one decimal, whole
    numbers with thousands separators, others with at most two decimals."""
    if value is None:
        return "—"
    if percent:
        return f"{value * 100:.1f}%"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k at or above `value` (1 for 0 or less)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power * (1 + 1e-9):
            return step * power
    return 10 * power


def _at(coordinate: float) -> str:
    """A coordinate with one decimal (format_html escapes its arguments to text first)."""
    return f"{coordinate:.1f}"


def _frame(labels: Sequence[str], top: float, percent: bool, title: str) -> list[SafeString]:
    """Grid lines at 0, half and top with their values; every k-th label under the axis."""
    plot_height = HEIGHT - TOP - BOTTOM
    parts = []
    for fraction in (0, 0.5, 1):
        y = TOP + plot_height * (1 - fraction)
        parts.append(format_html(
            '<line class="grid" x1="{}" y1="{}" x2="{}" y2="{}"/>'
            '<text class="axis" x="{}" y="{}" text-anchor="end">{}</text>',
            LEFT, _at(y), WIDTH - RIGHT, _at(y), LEFT - 4, _at(y + 4), number(top * fraction, percent=percent)))
    slot = (WIDTH - LEFT - RIGHT) / max(1, len(labels))
    every = max(1, math.ceil(len(labels) / X_LABELS_MAX))
    for index, label in enumerate(labels):
        if index % every == 0:
            parts.append(format_html('<text class="axis" x="{}" y="{}" text-anchor="middle">{}</text>',
                                     _at(LEFT + slot * (index + 0.5)), HEIGHT - 6, label))
    return [format_html('<title>{}</title>', title), *parts]


def _svg(parts: list[SafeString], title: str) -> SafeString:
    return format_html('<svg class="chart" viewBox="0 0 {} {}" role="img" aria-label="{}" '
                       'xmlns="http://www.w3.org/2000/svg">{}</svg>',
                       WIDTH, HEIGHT, title, format_html_join("", "{}", ((part,) for part in parts)))


def _legend(series: Sequence[Series]) -> tuple[tuple[str, str], ...]:
    return tuple((item.name, PALETTE[index % len(PALETTE)]) for index, item in enumerate(series))


def bar_chart(labels: Sequence[str], series: Sequence[Series], *, title: str, percent: bool = False) -> Chart:
    """Stacked bars, one per label, a segment per series (None and 0 draw nothing)."""
    totals = [sum(item.values[index] or 0 for item in series) for index in range(len(labels))]
    top = nice_ceiling(max(totals, default=0))
    plot_height = HEIGHT - TOP - BOTTOM
    slot = (WIDTH - LEFT - RIGHT) / max(1, len(labels))
    width = max(1.0, slot * 0.7)
    parts = _frame(labels, top, percent, title)
    for index, label in enumerate(labels):
        base = 0.0
        for number_, item in enumerate(series):
            value = item.values[index] or 0
            if value <= 0:
                continue
            height = plot_height * value / top
            y = TOP + plot_height - plot_height * base / top - height
            parts.append(format_html(
                '<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{} · {}: {}</title></rect>',
                _at(LEFT + slot * index + (slot - width) / 2), _at(y), _at(width), _at(height), PALETTE[number_ % len(PALETTE)],
                label, item.name, number(value, percent=percent)))
            base += value
    return Chart(_svg(parts, title), _legend(series))


def line_chart(labels: Sequence[str], series: Sequence[Series], *, title: str, percent: bool = False,
               top: float | None = None) -> Chart:
    """A line per series over the labels, broken where a value is None; `top` fixes the
    scale (1.0 for rates), else it fits the largest value."""
    values = [value for item in series for value in item.values if value is not None]
    top = top if top is not None else nice_ceiling(max(values, default=0))
    plot_height = HEIGHT - TOP - BOTTOM
    slot = (WIDTH - LEFT - RIGHT) / max(1, len(labels))
    parts = _frame(labels, top, percent, title)
    for number_, item in enumerate(series):
        colour = PALETTE[number_ % len(PALETTE)]
        runs: list[list[str]] = [[]]
        for index, value in enumerate(item.values):
            if value is None:
                runs.append([])
                continue
            x, y = LEFT + slot * (index + 0.5), TOP + plot_height * (1 - min(value, top) / top)
            runs[-1].append(f"{_at(x)},{_at(y)}")
            parts.append(format_html('<circle cx="{}" cy="{}" r="3" fill="{}"><title>{} · {}: {}</title></circle>',
                                     _at(x), _at(y), colour, labels[index], item.name, number(value, percent=percent)))
        dashes = "" if number_ == 0 else "6 3"  # lines that coincide stay told apart
        parts += [format_html('<polyline points="{}" fill="none" stroke="{}" stroke-width="2" stroke-dasharray="{}"/>',
                              " ".join(run), colour, dashes) for run in runs if len(run) > 1]
    return Chart(_svg(parts, title), _legend(series))
