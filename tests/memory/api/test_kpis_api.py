"""GET /api/v1/kpis: the KPIs for the dashboard, read right, strict parameters, at most 92 days
(issue 5 item 5; R-UI KPI page)."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from accounts.services import agent_key_create
from tests.conftest import key_client
from tests.memory.selectors.test_kpis import D1, D2, build_ledger

URL = "/api/v1/kpis"


@pytest.fixture
def ledger(agent_client, principal, other_agent_client, other_principal):
    return build_ledger(agent_client, principal, other_agent_client, other_principal)


def test_the_kpis_of_a_range(agent_client, ledger):
    response = agent_client.get(URL, {"since": D1.isoformat(), "until": D2.isoformat()})
    assert response.status_code == 200
    body = response.json()
    assert (body["team"], body["since"], body["until"], body["days_basis"]) == ("acme", "2026-03-01", "2026-03-02", "UTC")
    assert (body["totals"]["context_calls"], body["totals"]["hit_rate"]) == (5, 0.75)
    assert [day["date"] for day in body["days"]] == ["2026-03-01", "2026-03-02"]
    assert body["nodes"]["total"] == 5


def test_without_dates_the_last_seven_days_up_to_today(agent_client):
    today = datetime.now(UTC).date()
    body = agent_client.get(URL).json()
    assert (body["since"], body["until"]) == ((today - timedelta(days=6)).isoformat(), today.isoformat())
    assert len(body["days"]) == 7


def test_a_workspace_filter(agent_client, ledger):
    body = agent_client.get(URL, {"since": D1.isoformat(), "until": D2.isoformat(), "workspace_id": "w2"}).json()
    assert (body["workspace_id"], body["totals"]["context_calls"], body["totals"]["hits"]) == ("w2", 1, 1)


def test_another_team_sees_only_its_own(other_agent_client, ledger):
    body = other_agent_client.get(URL, {"since": D1.isoformat(), "until": D2.isoformat()}).json()
    assert (body["team"], body["totals"]["context_calls"], body["nodes"]["total"]) == ("globex", 1, 1)


@pytest.mark.parametrize("params,field", [
    ({"since": "2026-03-02", "until": "2026-03-01"}, "since"),
    ({"since": "2026-01-01", "until": "2026-04-03"}, "since"),  # 93 days
    ({"since": "2026/03/01"}, "since"),
    ({"until": "yesterday"}, "until"),
    ({"since": "2026-02-30"}, "since"),
    ({"workspace_id": " w1"}, "workspace_id"),
    ({"day": "2026-03-01"}, "day"),
])
def test_bad_parameters_are_a_400(agent_client, params, field):
    response = agent_client.get(URL, params)
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]


def test_ninety_two_days_are_answered(agent_client):
    response = agent_client.get(URL, {"since": "2026-01-01", "until": "2026-04-02"})
    assert response.status_code == 200 and len(response.json()["days"]) == 92


def test_a_key_limited_to_workspaces_must_name_one_of_them(team, ledger):
    client = key_client(agent_key_create(team=team, name="w2 only", workspace_ids=["w2"])[1])
    range_ = {"since": D1.isoformat(), "until": D2.isoformat()}
    assert client.get(URL, range_).status_code == 403
    assert client.get(URL, {**range_, "workspace_id": "w1"}).status_code == 403
    response = client.get(URL, {**range_, "workspace_id": "w2"})
    assert response.status_code == 200 and response.json()["totals"]["context_calls"] == 1


def test_read_only_keys_and_viewers_may_read_them(readonly_agent_client, client, viewer):
    assert readonly_agent_client.get(URL).status_code == 200
    client.force_login(viewer)
    assert client.get(URL).status_code == 200


def test_the_operation_is_documented_as_kpis_get(client):
    schema = client.get(reverse("api-schema"), HTTP_ACCEPT="application/json").content.decode()
    assert '"kpis_get"' in schema and '"retrievals_feedback"' in schema


@pytest.mark.parametrize("params", [{"until": "9999-12-31"}, {"since": "9999-12-30", "until": "9999-12-31"},
                                    {"since": "0001-01-01"}])
def test_dates_at_the_edge_of_the_calendar_are_400(agent_client, params):
    response = agent_client.get("/api/v1/kpis", params)
    assert response.status_code == 400, response.content
