"""The proposal-outcome ledger: one row per answered proposal, accepted or refused by reason,
from agents (api) and from background capture (issue 5 item 5; R-UI KPI page)."""

from memory.capture.jobs import job_run
from memory.capture_models import CaptureJob
from memory.kpi_models import ProposalOutcome
from memory.models import AuditEvent, Node
from memory.services.outcomes import NOT_APPLIED
from tests.helpers import append
from tests.memory.capture.test_jobs import Echo, Remember

PROPOSE = "/api/v1/memory/propose"
EXTRACT = "/api/v1/memory/extractions"
CTX = {"workspace_id": "home", "user_id": "xiaoming", "session_id": "cook-1"}


def outcomes():
    return list(ProposalOutcome.objects.order_by("pk").values_list("source", "operation", "accepted", "reason"))


def preference(said, **node):
    return {"scope": "user", "type": "preference", "source_message_ids": [said], "title": "tea", **node}


def test_an_accepted_proposal_is_counted_with_its_reason(agent_client, principal):
    said = append(principal, "remember: tea", **CTX)[0].pk
    body = {**CTX, "operation": "create", "explicit_user_intent": True, "node": preference(said, key="drink")}
    agent_client.post(PROPOSE, body, format="json")
    agent_client.post(PROPOSE, body, format="json")
    assert outcomes() == [("api", "create", True, ""), ("api", "create", True, "duplicate")]
    row = ProposalOutcome.objects.first()
    assert (row.team, row.workspace_id, row.user_id, row.actor) == (principal.team, "home", "xiaoming", principal.actor)


def test_a_refused_proposal_is_counted_and_writes_nothing_else(agent_client, principal):
    said = append(principal, "tea", **CTX)[0].pk
    events = AuditEvent.objects.count()
    response = agent_client.post(PROPOSE, {**CTX, "operation": "create", "node": preference(said)}, format="json")
    assert response.json()["reason"] == "explicit_intent_required"
    assert outcomes() == [("api", "create", False, "explicit_intent_required")]
    assert Node.objects.count() == 0 and AuditEvent.objects.count() == events


def test_a_malformed_proposal_is_not_an_outcome(agent_client):
    response = agent_client.post(PROPOSE, {**CTX, "operation": "create", "node": {"scope": "nowhere"}}, format="json")
    assert response.status_code == 400
    assert outcomes() == []


def test_a_refused_batch_counts_its_refusal_and_its_unapplied_proposals(agent_client, principal):
    said = append(principal, "tea", **CTX)[0].pk
    operations = [{"operation": "create", "explicit_user_intent": True, "node": preference(said, key="drink")},
                  {"operation": "create", "node": preference(said, key="food", title="rice")}]
    response = agent_client.post(EXTRACT, {**CTX, "operations": operations}, format="json")
    assert response.json()["applied"] is False
    assert outcomes() == [("api", "create", False, NOT_APPLIED), ("api", "create", False, "explicit_intent_required")]


def test_an_applied_batch_counts_each_proposal_once(agent_client, principal):
    said = append(principal, "tea", **CTX)[0].pk
    operations = [{"operation": "create", "explicit_user_intent": True, "node": preference(said, key=key)}
                  for key in ("drink", "food")]
    agent_client.post(EXTRACT, {**CTX, "operations": operations}, format="json")
    assert outcomes() == [("api", "create", True, ""), ("api", "create", True, "")]


def test_capture_proposals_are_counted_as_capture(principal):
    append(principal, "remember tea", "remember jazz", **CTX)
    job_run(CaptureJob.objects.get().pk, extractor=Remember(), summarizer=Echo())
    assert outcomes() == [("capture", "create", True, ""), ("capture", "create", True, "")]
    assert set(ProposalOutcome.objects.values_list("actor", flat=True)) == {"system:capture"}


def test_an_idempotent_retry_is_counted_once(agent_client, principal):
    said = append(principal, "tea", **CTX)[0].pk
    body = {**CTX, "operation": "create", "explicit_user_intent": True, "node": preference(said, key="drink")}
    for _ in range(2):
        agent_client.post(PROPOSE, body, format="json", HTTP_IDEMPOTENCY_KEY="once")
    assert outcomes() == [("api", "create", True, "")]
