"""The KPI page: kpis()'s figures as SVG charts with the numbers beside them, by date range and
workspace (R-UI KPI page; seed 004 §7.3)."""

from datetime import UTC, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memory.capture_models import CaptureJob, JobStatus
from memory.selectors.kpis import kpis
from memory.services.policies import policy_set
from tests.dashboard.xss import ALL, ESCAPED, SCRIPT, injected
from tests.memory.selectors.test_kpis import D1, D2, build_ledger

URL = reverse("dashboard:kpis")
RANGE = {"since": D1.isoformat(), "until": D2.isoformat()}


@pytest.fixture
def ledger(agent_client, principal, other_agent_client, other_principal):
    return build_ledger(agent_client, principal, other_agent_client, other_principal)


def panel(response, key: str):
    return next(item for item in response.context["panels"] if item.key == key)


def test_the_page_shows_what_kpis_returns(viewer_client, team, ledger):
    response = viewer_client.get(URL, RANGE)
    assert response.status_code == 200
    data = response.context["data"]
    assert data == kpis(team=team, since=D1, until=D2)
    assert data["totals"]["context_calls"] == 5  # the other team's call is not counted
    assert panel(response, "calls").rows == [["2026-03-01", "4", "3", "0", "0", "0"], ["2026-03-02", "1", "1", "0", "0", "0"]]
    assert panel(response, "hit-rate").rows[0] == ["2026-03-01", "3", "2", "66.7%", "2", "66.7%"]
    assert panel(response, "hit-rate").total == ["Range", "4", "3", "75.0%", "3", "75.0%"]
    assert panel(response, "latency").rows == [["2026-03-01", "4", "20", "40"], ["2026-03-02", "1", "5", "5"]]
    assert panel(response, "omitted").headers == ["Day", "expired", "over_limit", "Total"]
    assert panel(response, "omitted").rows[1] == ["2026-03-02", "0", "1", "1"]
    assert panel(response, "used-rate").total == ["Range", "2", "3", "1", "33.3%", "1", "1"]
    assert ("api refused: source_required", "1") in panel(response, "proposals").extra
    assert panel(response, "extraction").rows[1] == ["2026-03-02", "1", "0", "1", "1", "1", "100.0%"]
    assert panel(response, "nodes-by_status").rows == [["active", "4"], ["expired", "1"]]
    html = response.content.decode()
    assert "<dt>Hit rate</dt><dd>75.0%</dd>" in html and "<dt>Latency p95</dt><dd>40 ms</dd>" in html


def test_every_chart_has_its_numbers_beside_it(viewer_client, ledger):
    response = viewer_client.get(URL, RANGE)
    html = response.content.decode()
    keys = [item.key for item in response.context["panels"]]
    assert len(keys) == 14
    for key in keys:
        section = html[html.index(f'id="kpi-{key}"'):]
        section = section[:section.index("</section>")]
        assert "<svg" in section and "<table>" in section, key
    assert "<script" not in html.split("<body", 1)[1]  # the charts need no script


def test_a_workspace_counts_only_its_own(viewer_client, team, ledger):
    response = viewer_client.get(URL, {**RANGE, "workspace_id": "w2"})
    assert response.context["data"] == kpis(team=team, workspace_id="w2", since=D1, until=D2)
    assert response.context["data"]["totals"]["context_calls"] == 1
    # a review read "Nodes 2" beside 83 accepted user memories: the page says what a workspace counts
    assert "a user's memory follows the user into every workspace" in response.content.decode()
    assert viewer_client.get(URL, {**RANGE, "workspace_id": "nowhere"}).context["data"]["totals"]["context_calls"] == 0


def test_the_page_opens_on_the_last_fourteen_days(viewer_client):
    today = timezone.now().astimezone(UTC).date()
    response = viewer_client.get(URL)
    data = response.context["data"]
    assert (data["since"], data["until"]) == ((today - timedelta(days=13)).isoformat(), today.isoformat())
    assert len(data["days"]) == 14
    html = response.content.decode()
    assert f'value="{today.isoformat()}"' in html and f'value="{(today - timedelta(days=13)).isoformat()}"' in html


def test_the_capture_backlog_is_shown_as_it_is_now(viewer_client, team):
    CaptureJob.objects.create(team=team, status=JobStatus.PENDING, workspace_id="w1")
    CaptureJob.objects.create(team=team, status=JobStatus.FAILED, workspace_id="w1")
    extra = dict(panel(viewer_client.get(URL), "extraction").extra)
    assert extra["Backlog now: pending jobs"] == "1" and extra["Failed jobs kept"] == "1"
    assert dict(panel(viewer_client.get(URL, {"workspace_id": "w2"}), "extraction").extra)[
        "Backlog now: pending jobs"] == "0"


@pytest.mark.parametrize(("params", "message"), [
    ({"since": "2026-13-45"}, "Enter a valid date."),
    ({"since": "2026-03-02", "until": "2026-03-01"}, "must be on or before until"),
    ({"since": "2026-01-01", "until": "2026-12-31"}, "at most 92 days (asked for 365)"),
    ({"until": "0001-01-05"}, "a year from 1900 to 9998"),
    ({"since": "99999-01-01"}, "Enter a valid date."),
    ({"since": "1850-01-01", "until": "1850-01-02"}, "a year from 1900 to 9998"),
    ({"workspace_id": "x" * 200}, "must be 1–128 characters"),
    ({"workspace_id": "a\tb"}, "must be printable"),
])
def test_bad_filters_are_a_400_with_the_reason_never_a_500(viewer_client, params, message):
    response = viewer_client.get(URL, params)
    assert response.status_code == 400
    assert message in response.content.decode() and response.context["data"] is None


def test_the_fragment_is_only_the_results(viewer_client, ledger):
    response = viewer_client.get(URL, RANGE, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<div id="results">') and "<html" not in html


def test_another_teams_figures_never_show(client, outsider, ledger):
    client.force_login(outsider)
    totals = client.get(URL, RANGE).context["data"]["totals"]
    assert totals["context_calls"] == 1 and totals["proposals"]["api"]["accepted"] == 0


def test_planted_markup_in_a_workspace_id_and_a_query_stays_text(viewer_client, agent_client):
    agent_client.post("/api/v1/context", {"workspace_id": SCRIPT, "session_id": "s", "query": ALL}, format="json")
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
        response = viewer_client.get(URL, {"workspace_id": SCRIPT}, **headers)
        html = response.content.decode()
        assert response.status_code == 200 and response.context["data"]["totals"]["context_calls"] == 1
        assert injected(html) == {} and ESCAPED[0] in html


def test_the_latest_calls_of_the_range_are_listed_newest_first_with_the_budget_in_force(
        viewer_client, admin_principal, agent_client, ledger):
    ids = ledger["ids"]
    response = viewer_client.get(URL, RANGE)
    latest = response.context["latest"]
    assert [call.retrieval_id for call in latest] == [ids[4], ids[3], ids[2], ids[1], ids[0]]
    newest = latest[0]
    assert (newest.workspace_id, newest.query, newest.memories, newest.omitted, newest.latency_ms) == ("w1", "香菜", 2, 1, 5.0)
    assert (newest.max_chars, newest.max_chars_source) == (1200, "default")
    only_w2 = viewer_client.get(URL, {**RANGE, "workspace_id": "w2"}).context["latest"]
    assert [call.retrieval_id for call in only_w2] == [ids[3]]

    policy_set(principal=admin_principal, workspace_id="w1", changes={"max_chars": 300})
    today = agent_client.post("/api/v1/context", {"workspace_id": "w1", "user_id": "u1", "session_id": "s1",
                                                  "query": "香菜"}, format="json").json()
    response = viewer_client.get(URL)
    html = response.content.decode()
    row = html[html.index(f'<td class="num">{today["retrieval_id"]}</td>'):]
    row = row[:row.index("</tr>")]
    assert '<td class="mono max-chars">300 <span class="badge source source-workspace">workspace</span></td>' in row
    assert f'<td class="num">{today["diagnostics"]["total_chars"]}</td>' in row
    assert 'href="/budgets?workspace_id=w1"' in row


def test_a_range_without_calls_says_so(viewer_client):
    html = viewer_client.get(URL).content.decode()
    assert "No context calls recorded in this range." in html
