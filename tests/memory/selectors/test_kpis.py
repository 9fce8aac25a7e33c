"""The KPIs over a small crafted ledger: exact figures per day and for the range (issue 5
item 5; R-UI KPI page; seed 004 §7.3)."""

from datetime import UTC, date, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memory import limits
from memory.capture.jobs import job_run
from memory.capture_models import CaptureJob
from memory.errors import InvalidInput
from memory.kpi_models import OutcomeSource, ProposalOutcome
from memory.models import Node, Retrieval
from memory.selectors.kpis import kpi_range, kpis, percentile
from tests.helpers import append, make_node
from tests.memory.capture.test_jobs import Echo, Remember

D1, D2 = date(2026, 3, 1), date(2026, 3, 2)
W1 = {"workspace_id": "w1", "user_id": "u1", "session_id": "s1"}
W2 = {"workspace_id": "w2", "user_id": "u1", "session_id": "s2"}
STANDING, RELEVANT = "- 厨房在二楼", "- 喜欢香菜汤"  # 7 characters, 6 estimated tokens each


def at(day: date, hour: int) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def context(client, owner, **body):
    return client.post(reverse("api-context"), {**owner, **body}, format="json").json()


def build_ledger(agent_client, principal, other_agent_client, other_principal):
    """Five context calls of team acme and one of the other team, feedback on two, four proposals
    through the API and one capture job, all moved to known days and latencies.

    D1: c1 w1 "香菜" (hit: L1 standing + L5 relevant), c2 w1 "zzz" (no hit), c3 w1 no query,
        c4 w2 "香菜" (hit: L5 only); latencies 40, 10, 30, 20 ms.
    D2: c5 w1 "香菜" (hit), 5 ms; the capture job.
    """
    standing = make_node(principal, scope="workspace", workspace_id="w1", type="fact", title="厨房在二楼")
    relevant = make_node(principal, scope="user", user_id="u1", type="fact", title="喜欢香菜汤")
    make_node(other_principal, scope="user", user_id="u1", type="fact", title="喜欢香菜汤")
    calls = [context(agent_client, W1, query="香菜"), context(agent_client, W1, query="zzz"), context(agent_client, W1),
             context(agent_client, W2, query="香菜"), context(agent_client, W1, query="香菜")]
    context(other_agent_client, W1, query="香菜")
    assert [c["used_memory_ids"] for c in calls] == [[standing.pk, relevant.pk], [standing.pk], [standing.pk],
                                                     [relevant.pk], [standing.pk, relevant.pk]]
    ids = [c["retrieval_id"] for c in calls]
    moves = [(D1, 9, 40.0), (D1, 10, 10.0), (D1, 11, 30.0), (D1, 12, 20.0), (D2, 9, 5.0)]
    for pk, (day, hour, latency) in zip(ids, moves, strict=True):
        Retrieval.objects.filter(pk=pk).update(created_at=at(day, hour), latency_ms=latency)
    Retrieval.objects.filter(pk=ids[0]).update(omitted=[{"node_id": 901, "reason": "over_limit"},
                                                        {"node_id": 902, "reason": "expired"}])
    Retrieval.objects.filter(pk=ids[4]).update(omitted=[{"node_id": 903, "reason": "over_limit"}])
    Retrieval.objects.exclude(team=principal.team).update(created_at=at(D1, 9))

    feedback = reverse("api-retrieval-feedback", args=[ids[0]])
    agent_client.post(feedback, {"used_node_ids": [relevant.pk], "helpful": True}, format="json")
    agent_client.post(reverse("api-retrieval-feedback", args=[ids[1]]), {"used_node_ids": [], "helpful": False},
                      format="json")

    said = append(principal, "tea, please", **W1)[0].pk
    session_fact = {"scope": "session", "type": "fact", "title": "用户在做汤"}
    user_pref = {"scope": "user", "type": "preference", "key": "drink", "value_json": "tea", "title": "tea"}
    for body in ({"node": session_fact}, {"node": session_fact}, {"node": {**user_pref, "source_message_ids": [said]}},
                 {"node": user_pref, "explicit_user_intent": True}):
        agent_client.post(reverse("api-memory-propose"), {**W1, "operation": "create", **body}, format="json")
    ProposalOutcome.objects.update(created_at=at(D1, 13))

    append(principal, "remember tea", workspace_id="w1", user_id="u2", session_id="cap")
    job_run(CaptureJob.objects.get().pk, extractor=Remember(), summarizer=Echo())
    CaptureJob.objects.update(created_at=at(D2, 10))
    ProposalOutcome.objects.filter(source=OutcomeSource.CAPTURE).update(created_at=at(D2, 10))

    old = make_node(principal, scope="workspace", workspace_id="w1", type="decision", title="old plan",
                    expires_at=timezone.now() + timedelta(days=1))
    Node.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(days=1))
    Node.objects.update(created_at=at(D1, 8))
    Node.objects.filter(team=principal.team, scope="user", type="preference").update(created_at=at(D2, 10))
    return {"ids": ids, "standing": standing, "relevant": relevant}


@pytest.fixture
def ledger(agent_client, principal, other_agent_client, other_principal):
    return build_ledger(agent_client, principal, other_agent_client, other_principal)


@pytest.fixture
def report(team, ledger):
    return kpis(team=team, since=D1, until=D2)


def test_context_calls_and_hit_rate_per_day_and_in_total(report):
    day1, day2 = report["days"]
    assert [day["date"] for day in report["days"]] == ["2026-03-01", "2026-03-02"]
    assert (day1["context_calls"], day1["query_calls"], day1["hits"], day1["hit_rate"]) == (4, 3, 2, 0.6667)
    assert (day2["context_calls"], day2["query_calls"], day2["hits"], day2["hit_rate"]) == (1, 1, 1, 1.0)
    totals = report["totals"]
    assert (totals["context_calls"], totals["query_calls"], totals["hits"], totals["hit_rate"]) == (5, 4, 3, 0.75)
    assert (totals["l5_hits"], totals["l5_hit_rate"]) == (3, 0.75)  # no earlier messages were recalled


def test_an_earlier_message_is_an_l5_hit_but_not_a_memory_hit(team, agent_client, principal):
    append(principal, "zebra crossing", *[f"turn {n}" for n in range(8)], **W1)
    body = context(agent_client, W1, query="zebra")
    assert [item["section"] for item in body["items"] if item["layer"] == "L5"] == ["earlier_messages"]
    Retrieval.objects.update(created_at=at(D1, 9))
    totals = kpis(team=team, since=D1, until=D1)["totals"]
    assert (totals["hits"], totals["hit_rate"], totals["l5_hits"], totals["l5_hit_rate"]) == (0, 0.0, 1, 1.0)


def test_injected_characters_and_tokens_per_layer(team, report):
    chars, tokens = report["totals"]["injected"]["chars"], report["totals"]["injected"]["tokens"]
    # The standing fact went into the four calls of w1, the relevant one into the three hits.
    assert chars["by_layer"]["L1"] == {"sum": 4 * len(STANDING), "mean": round(4 * len(STANDING) / 5, 2)}
    assert chars["by_layer"]["L5"] == {"sum": 3 * len(RELEVANT), "mean": round(3 * len(RELEVANT) / 5, 2)}
    assert (tokens["by_layer"]["L1"]["sum"], tokens["by_layer"]["L5"]["sum"]) == (4 * 6, 3 * 6)
    assert all(chars["by_layer"][layer]["sum"] == 0 for layer in ("L0", "L2", "L3", "L4"))
    rows = Retrieval.objects.filter(team=team)
    assert chars["total"]["sum"] == sum(row.total_chars for row in rows)
    assert tokens["total"]["sum"] == sum(row.total_tokens for row in rows)
    assert report["days"][1]["injected"]["chars"]["by_layer"]["L5"] == {"sum": 7, "mean": 7.0}


def test_budget_use_is_the_mean_share_of_max_chars(team, report):
    rows = Retrieval.objects.filter(team=team)
    expected = sum(row.total_chars / row.policy["max_chars"]["value"] for row in rows) / 5
    assert report["totals"]["budget_use"] == {"mean": round(expected, 4), "calls": 5}


def test_omitted_nodes_are_counted_by_reason(report):
    assert report["totals"]["omitted"] == {"total": 3, "by_reason": {"expired": 1, "over_limit": 2}}
    assert report["days"][1]["omitted"] == {"total": 1, "by_reason": {"over_limit": 1}}


def test_latency_percentiles_by_nearest_rank(report):
    assert report["days"][0]["latency_ms"] == {"p50": 20.0, "p95": 40.0, "rows": 4, "capped": False}
    assert report["days"][1]["latency_ms"] == {"p50": 5.0, "p95": 5.0, "rows": 1, "capped": False}
    assert report["totals"]["latency_ms"] == {"p50": 20.0, "p95": 40.0, "rows": 5, "capped": False}


def test_latency_reads_at_most_the_days_first_rows_and_says_so(team, ledger, monkeypatch):
    monkeypatch.setattr(limits, "KPI_LATENCY_ROWS_PER_DAY", 2)
    report = kpis(team=team, since=D1, until=D2)
    assert report["days"][0]["latency_ms"] == {"p50": 10.0, "p95": 40.0, "rows": 2, "capped": True}
    assert report["latency_rows_per_day"] == 2 and report["totals"]["latency_ms"]["capped"] is True


def test_used_rate_from_feedback(report):
    assert report["totals"]["feedback"] == {"retrievals": 2, "injected": 3, "used": 1, "used_rate": 0.3333,
                                            "helpful": 1, "not_helpful": 1}
    assert report["days"][1]["feedback"]["used_rate"] is None


def test_proposals_accepted_and_refused_by_reason_and_source(report):
    assert report["totals"]["proposals"] == {
        "api": {"accepted": 2, "refused": 2, "accepted_by_reason": {"duplicate": 1},
                "refused_by_reason": {"explicit_intent_required": 1, "source_required": 1}},
        "capture": {"accepted": 1, "refused": 0, "accepted_by_reason": {}, "refused_by_reason": {}},
    }
    assert report["days"][1]["proposals"]["api"]["accepted"] == 0


def test_extraction_yield_from_capture_jobs(report):
    assert report["days"][1]["extraction"] == {"jobs_done": 1, "jobs_failed": 0, "messages": 1, "proposals": 1,
                                               "accepted": 1, "yield": 1.0, "outcomes": {"accepted": 1}}
    assert report["days"][0]["extraction"]["yield"] is None


def test_node_counts_now_by_type_scope_and_status(report):
    assert report["nodes"] == {
        "total": 5,
        "by_type": {"decision": 1, "fact": 3, "preference": 1},
        "by_scope": {"session": 1, "user": 2, "workspace": 2},
        "by_status": {"active": 4, "expired": 1},
    }


def test_memory_growth_per_day(report):
    assert report["days"][0]["nodes_created"] == {"total": 4, "by_type": {"decision": 1, "fact": 3},
                                                  "by_scope": {"session": 1, "user": 1, "workspace": 2}}
    assert report["days"][1]["nodes_created"]["by_type"] == {"preference": 1}


def test_a_workspace_counts_only_its_own(team, ledger):
    report = kpis(team=team, workspace_id="w1", since=D1, until=D2)
    totals = report["totals"]
    assert (totals["context_calls"], totals["query_calls"], totals["hits"], totals["hit_rate"]) == (4, 3, 2, 0.6667)
    assert totals["latency_ms"] == {"p50": 10.0, "p95": 40.0, "rows": 4, "capped": False}
    assert totals["injected"]["chars"]["by_layer"]["L5"]["sum"] == 2 * len(RELEVANT)
    assert totals["proposals"]["api"]["accepted"] == 2 and totals["extraction"]["jobs_done"] == 1
    # Its workspace memories and its sessions' memories; user memories belong to no workspace.
    assert report["nodes"] == {"total": 3, "by_type": {"decision": 1, "fact": 2},
                               "by_scope": {"session": 1, "workspace": 2}, "by_status": {"active": 2, "expired": 1}}
    empty = kpis(team=team, workspace_id="w9", since=D1, until=D2)["totals"]
    assert (empty["context_calls"], empty["hit_rate"], empty["nodes_created"]["total"]) == (0, None, 0)


def test_another_teams_ledger_is_never_counted(other_team, ledger):
    report = kpis(team=other_team, since=D1, until=D2)
    assert (report["team"], report["totals"]["context_calls"], report["totals"]["hits"]) == ("globex", 1, 1)
    assert report["totals"]["proposals"]["api"]["accepted"] == 0 and report["nodes"]["total"] == 1


def test_every_day_of_the_range_is_listed_even_without_calls(team, ledger):
    report = kpis(team=team, since=D1 - timedelta(days=2), until=D2)
    assert [day["date"] for day in report["days"]] == ["2026-02-27", "2026-02-28", "2026-03-01", "2026-03-02"]
    assert report["days"][0]["context_calls"] == 0 and report["days"][0]["hit_rate"] is None
    assert report["totals"]["context_calls"] == 5


def test_the_range_defaults_to_the_last_seven_days():
    assert kpi_range(since=None, until=None, today=D2) == (D2 - timedelta(days=6), D2)
    assert kpi_range(since=None, until=D1, today=D2) == (D1 - timedelta(days=6), D1)


@pytest.mark.parametrize("since,until", [(D2, D1), (D2 - timedelta(days=92), D2)])
def test_a_reversed_or_too_long_range_is_invalid(since, until):
    with pytest.raises(InvalidInput):
        kpi_range(since=since, until=until, today=D2)


def test_ninety_two_days_are_allowed():
    assert kpi_range(since=D2 - timedelta(days=91), until=D2, today=D2)[0] == D2 - timedelta(days=91)


def test_nearest_rank_percentiles():
    values = [float(n) for n in range(1, 21)]
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 100)) == (10.0, 19.0, 20.0)
    assert percentile([], 50) is None and percentile([7.0], 95) == 7.0


def test_a_blank_query_is_not_a_query_call(team, agent_client):
    context(agent_client, W1, query="  \n")
    Retrieval.objects.update(created_at=at(D1, 9))
    totals = kpis(team=team, since=D1, until=D1)["totals"]
    assert (totals["context_calls"], totals["query_calls"], totals["hit_rate"]) == (1, 0, None)


def test_calls_with_pre_injection_off_are_left_out_of_budget_use(team, agent_client):
    context(agent_client, W1, query="香菜", budget={"enabled": False})
    Retrieval.objects.update(created_at=at(D1, 9))
    totals = kpis(team=team, since=D1, until=D1)["totals"]
    assert (totals["disabled_calls"], totals["query_calls"], totals["hits"]) == (1, 1, 0)
    assert totals["budget_use"] == {"mean": None, "calls": 0}
