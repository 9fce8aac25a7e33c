"""The KPI page's SVG helper: scales, gaps, and every label escaped (R-UI, issue 6 quality bar)."""

import re

from dashboard.charts import Series, bar_chart, line_chart, nice_ceiling, number
from tests.dashboard.xss import ALL, ESCAPED, injected


def test_bars_stack_their_series_and_scale_to_a_round_top():
    chart = bar_chart(["03-01", "03-02"], [Series("a", [1, 2]), Series("b", [None, 3])], title="calls")
    svg = str(chart.svg)
    heights = [float(value) for value in re.findall(r'<rect [^>]*height="([\d.]+)"', svg)]
    assert len(heights) == 3  # None and 0 draw nothing
    plot = 200 - 10 - 22
    assert heights == [plot * 1 / 5, plot * 2 / 5, plot * 3 / 5]  # 5 is the round top over 2 + 3
    assert '<title>03-02 · b: 3</title>' in svg and chart.legend == (("a", "#0b5cad"), ("b", "#1a7f37"))


def test_a_line_breaks_where_a_value_is_missing():
    svg = str(line_chart(["1", "2", "3", "4", "5"], [Series("rate", [0.5, 1.0, None, 0.25, 0.5])], title="r",
                         percent=True, top=1.0).svg)
    assert svg.count("<polyline") == 2 and svg.count("<circle") == 4
    assert "<title>2 · rate: 100.0%</title>" in svg and ">50.0%</text>" in svg


def test_no_data_still_draws_an_empty_frame():
    svg = str(bar_chart([], [], title="nothing").svg)
    assert svg.startswith("<svg") and "<rect" not in svg


def test_labels_names_and_titles_are_escaped():
    chart = bar_chart([ALL], [Series(ALL, [1])], title=ALL)
    line = line_chart([ALL], [Series(ALL, [1])], title=ALL)
    for svg in (str(chart.svg), str(line.svg)):
        assert injected(svg) == {}
        assert all(text in svg for text in ESCAPED[:2])


def test_figures_read_plainly():
    assert [number(None), number(1234), number(2.5), number(0.125, percent=True), number(3.0)] == [
        "—", "1,234", "2.5", "12.5%", "3"]
    assert [nice_ceiling(0), nice_ceiling(3), nice_ceiling(7), nice_ceiling(120), nice_ceiling(0.3)] == [1, 5, 10, 200, 0.5]
