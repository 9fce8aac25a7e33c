"""Budget policies over the API: read with sources, admin-only writes, ranges, isolation, and
the next context call following a change (R-CTX, R-TEN; issue 5 "Done when")."""

import pytest
from django.urls import reverse

from accounts.services import agent_key_create
from memory.models import AuditEvent, BudgetPolicy
from tests.conftest import key_client
from tests.helpers import append, make_node

TEAM_URL = reverse("api-policies")


def workspace_url(workspace_id: str) -> str:
    return reverse("api-policy-workspace", args=[workspace_id])


@pytest.fixture
def admin_client(team):
    return key_client(agent_key_create(team=team, name="admin", kind="admin")[1])


def put(client, url, body, method="put"):
    return getattr(client, method)(url, body, format="json")


def test_get_reports_every_effective_value_with_its_source(agent_client, settings):
    settings.USER_MEMORY_PREINJECT_TOPN = 4
    body = agent_client.get(TEAM_URL).json()
    assert body["level"] == "team" and body["workspace_id"] == "" and body["updated_at"] is None
    assert body["effective"]["top_n"] == {"value": 4, "source": "environment"}
    assert body["effective"]["max_chars"] == {"value": 1200, "source": "default"}
    assert body["effective"]["l5_chars"] == {"value": None, "source": "default"}
    assert set(body["policy"].values()) == {None}


def test_an_admin_key_puts_the_team_policy(admin_client):
    response = put(admin_client, TEAM_URL, {"top_n": 3, "l2_enabled": False})
    assert response.status_code == 200
    body = response.json()
    assert body["policy"]["top_n"] == 3 and body["updated_by"].startswith("key:")
    assert body["effective"]["top_n"] == {"value": 3, "source": "team"}
    assert body["effective"]["l2_enabled"] == {"value": False, "source": "team"}


def test_put_replaces_and_patch_changes_only_what_is_sent(admin_client):
    put(admin_client, TEAM_URL, {"top_n": 3, "max_chars": 800})
    patched = put(admin_client, TEAM_URL, {"max_chars": 700}, method="patch").json()
    assert (patched["policy"]["top_n"], patched["policy"]["max_chars"]) == (3, 700)
    replaced = put(admin_client, TEAM_URL, {"max_chars": 600}).json()
    assert (replaced["policy"]["top_n"], replaced["policy"]["max_chars"]) == (None, 600)
    assert replaced["effective"]["top_n"] == {"value": 6, "source": "default"}


def test_null_resets_a_setting_to_inherit(admin_client):
    put(admin_client, TEAM_URL, {"top_n": 3})
    put(admin_client, workspace_url("w1"), {"top_n": 1})
    body = put(admin_client, workspace_url("w1"), {"top_n": None}, method="patch").json()
    assert body["policy"]["top_n"] is None
    assert body["effective"]["top_n"] == {"value": 3, "source": "team"}


def test_a_workspace_policy_overrides_the_team_policy(admin_client, agent_client):
    put(admin_client, TEAM_URL, {"top_n": 3, "max_chars": 800})
    put(admin_client, workspace_url("w1"), {"max_chars": 400})
    body = agent_client.get(workspace_url("w1")).json()
    assert body["level"] == "workspace" and body["policy"]["max_chars"] == 400
    assert body["effective"]["max_chars"] == {"value": 400, "source": "workspace"}
    assert body["effective"]["top_n"] == {"value": 3, "source": "team"}
    assert agent_client.get(workspace_url("w2")).json()["effective"]["max_chars"] == {"value": 800, "source": "team"}


@pytest.mark.parametrize(("field", "value"), [
    ("top_n", 51), ("top_n", -1), ("max_chars", 100_001), ("max_chars", -1), ("recent_messages", 21),
    ("recent_messages", -1), ("min_confidence", 1.01), ("min_confidence", -0.1),
    *[(f"l{n}_chars", 100_001) for n in range(6)], *[(f"l{n}_chars", -1) for n in range(6)],
])
def test_an_out_of_range_value_is_a_400_saying_the_range(admin_client, field, value):
    response = put(admin_client, workspace_url("w1"), {field: value}, method="patch")
    assert response.status_code == 400
    error = response.json()["error"]
    assert list(error["fields"]) == [field]
    assert error["message"].startswith(f"{field}: must be between 0") and "null to inherit" in error["message"]
    assert not BudgetPolicy.objects.exists()


@pytest.mark.parametrize("body", [{"top_n": "3"}, {"top_n": 2.5}, {"enabled": 1}, {"l1_enabled": "no"},
                                  {"min_confidence": True}, {"topn": 3}, [1, 2]])
def test_a_wrong_type_or_unknown_setting_is_a_400(admin_client, body):
    assert put(admin_client, TEAM_URL, body).status_code == 400


def test_an_agent_key_may_read_but_not_write(agent_client):
    assert agent_client.get(TEAM_URL).status_code == 200
    response = put(agent_client, TEAM_URL, {"top_n": 1})
    assert response.status_code == 403 and response.json()["error"]["message"] == "team admins only"
    assert put(agent_client, workspace_url("w1"), {"top_n": 1}, method="patch").status_code == 403
    assert not BudgetPolicy.objects.exists()


def test_a_logged_in_admin_may_write(client, admin):
    client.force_login(admin)
    response = client.put(workspace_url("w1"), {"top_n": 2}, content_type="application/json")
    assert response.status_code == 200 and response.json()["updated_by"] == "user:ada"


@pytest.mark.parametrize("who", ["viewer", "editor"])
def test_a_logged_in_viewer_or_editor_may_read_but_not_write(client, request, who):
    client.force_login(request.getfixturevalue(who))
    assert client.get(TEAM_URL).status_code == 200
    response = client.put(TEAM_URL, {"top_n": 2}, content_type="application/json")
    assert response.status_code == 403
    assert client.patch(workspace_url("w1"), {"top_n": 2}, content_type="application/json").status_code == 403


def test_a_write_is_audited_with_before_and_after(admin_client):
    put(admin_client, workspace_url("w1"), {"top_n": 2})
    put(admin_client, workspace_url("w1"), {"top_n": 4}, method="patch")
    event = AuditEvent.objects.filter(event_type="memory.policy.updated").order_by("-pk").first()
    assert event.workspace_id == "w1" and event.actor.startswith("key:")
    assert (event.payload["before"]["top_n"], event.payload["after"]["top_n"]) == (2, 4)


def test_a_workspace_limited_key_reads_only_its_workspaces(team):
    limited = key_client(agent_key_create(team=team, name="w1 only", workspace_ids=["w1"])[1])
    assert limited.get(workspace_url("w1")).status_code == 200
    response = limited.get(workspace_url("w2"))
    assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"
    assert limited.get(TEAM_URL).status_code == 403


def test_a_workspace_limited_admin_key_writes_only_its_workspaces(team):
    limited = key_client(agent_key_create(team=team, name="w1 admin", kind="admin", workspace_ids=["w1"])[1])
    assert put(limited, workspace_url("w1"), {"top_n": 2}).status_code == 200
    assert put(limited, workspace_url("w2"), {"top_n": 2}).status_code == 403
    assert put(limited, TEAM_URL, {"top_n": 2}).status_code == 403


def test_another_teams_policy_is_neither_seen_nor_changed(admin_client, client, outsider, other_agent_client):
    put(admin_client, TEAM_URL, {"top_n": 3})
    put(admin_client, workspace_url("w1"), {"max_chars": 400})
    other = other_agent_client.get(workspace_url("w1")).json()
    assert other["effective"]["max_chars"] == {"value": 1200, "source": "default"}
    assert other["effective"]["top_n"] == {"value": 6, "source": "default"}
    client.force_login(outsider)  # an admin of the other team
    assert client.put(workspace_url("w1"), {"max_chars": 50}, content_type="application/json").status_code == 200
    assert admin_client.get(workspace_url("w1")).json()["effective"]["max_chars"] == {"value": 400,
                                                                                       "source": "workspace"}


def test_a_bad_workspace_id_in_the_path_is_a_400(agent_client):
    assert agent_client.get(workspace_url("w1 ")).status_code == 400


def test_an_idempotent_retry_of_a_put_replays_the_answer(admin_client):
    first = admin_client.put(TEAM_URL, {"top_n": 2}, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    again = admin_client.put(TEAM_URL, {"top_n": 2}, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert AuditEvent.objects.filter(event_type="memory.policy.updated").count() == 1


# ---- the context call follows the policy ------------------------------------------------


@pytest.fixture
def two_workspaces(principal):
    """The same standing memory and conversation in w1 and w2, well over 300 characters each."""
    for workspace_id in ("w1", "w2"):
        append(principal, *[f"message {i} about the deploy pipeline " + "x" * 40 for i in range(6)],
               workspace_id=workspace_id, session_id="s1")
        for i in range(8):
            make_node(principal, scope="workspace", workspace_id=workspace_id, type="fact",
                      title=f"fact {i} of the deploy pipeline", content="y" * 60)


def context(client, workspace_id, **body):
    return client.post(reverse("api-context"), {"workspace_id": workspace_id, "user_id": "u1", "session_id": "s1",
                                                "query": "deploy pipeline", **body}, format="json").json()


def test_the_next_context_call_follows_a_workspace_policy(admin_client, agent_client, two_workspaces):
    before = context(agent_client, "w1")
    assert len(before["block"]) > 300

    response = put(admin_client, workspace_url("w1"), {"top_n": 2, "max_chars": 300})
    assert response.status_code == 200
    effective = agent_client.get(workspace_url("w1")).json()["effective"]
    assert effective["top_n"] == {"value": 2, "source": "workspace"}
    assert effective["max_chars"] == {"value": 300, "source": "workspace"}

    after = context(agent_client, "w1")
    assert after["budget"]["top_n"] == {"value": 2, "source": "workspace"}
    assert after["budget"]["max_chars"] == {"value": 300, "source": "workspace"}
    assert 0 < len(after["block"]) <= 300
    assert len(after["relevant_nodes"]) + len(after["relevant_messages"]) <= 2

    other = context(agent_client, "w2")
    assert other["budget"]["max_chars"] == {"value": 1200, "source": "default"}
    assert other["budget"]["top_n"] == {"value": 6, "source": "default"}
    assert len(other["block"]) > 300


def test_a_context_request_may_ask_for_less_than_the_workspace_policy_but_not_more(admin_client, agent_client,
                                                                                   two_workspaces):
    put(admin_client, workspace_url("w1"), {"max_chars": 300})
    less = context(agent_client, "w1", budget={"max_chars": 200})
    assert less["budget"]["max_chars"] == {"value": 200, "source": "request"} and len(less["block"]) <= 200
    more = context(agent_client, "w1", budget={"max_chars": 5000})
    assert more["budget"]["max_chars"] == {"value": 300, "source": "workspace"}
    assert "budget.max_chars=5000 is above the policy's 300; capped" in more["diagnostics"]["warnings"]


def test_the_team_policy_applies_to_context_calls_in_every_workspace(admin_client, agent_client, two_workspaces):
    put(admin_client, TEAM_URL, {"enabled": False})
    body = context(agent_client, "w2")
    assert body["budget"]["enabled"] == {"value": False, "source": "team"}
    assert body["block"] == "" and body["diagnostics"]["store_status"] == "disabled"


def test_the_hit_ledger_records_the_policy_in_force(admin_client, agent_client, two_workspaces):
    put(admin_client, workspace_url("w1"), {"max_chars": 300})
    retrieval_id = context(agent_client, "w1")["retrieval_id"]
    recorded = agent_client.get(reverse("api-retrieval", args=[retrieval_id])).json()["budget"]
    assert recorded["max_chars"] == {"value": 300, "source": "workspace"}


def test_the_team_minimum_confidence_set_by_policy_leaves_weak_nodes_out(admin_client, agent_client, principal):
    weak = make_node(principal, scope="workspace", workspace_id="w1", type="fact", title="deploy pipeline guess",
                     confidence=0.3)
    put(admin_client, TEAM_URL, {"min_confidence": 0.5})
    body = context(agent_client, "w1")
    assert body["budget"]["min_confidence"] == {"value": 0.5, "source": "team"}
    assert weak.pk not in body["used_memory_ids"]
    assert {"node_id": weak.pk, "reason": "low_confidence"} in body["omitted"]
