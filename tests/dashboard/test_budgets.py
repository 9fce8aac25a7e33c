"""Budget configuration: every setting with its value in force and its source, saving through
policy_set (audited, admins only), and the simulation before saving (R-UI, R-CTX, R-TEN)."""

import pytest
from django.urls import reverse

from dashboard.views.budgets import simulation_table
from memory.models import AuditEvent, Retrieval
from memory.policy_models import POLICY_FIELDS, BudgetPolicy
from memory.selectors.budget import budget_resolve
from memory.selectors.simulation import policy_simulate
from memory.services.policies import POLICY_UPDATED, policy_set
from tests.dashboard.conftest import logged_in
from tests.dashboard.xss import ALL, ESCAPED, SCRIPT, injected
from tests.helpers import append, make_node

URL = reverse("dashboard:budgets")
CALL = {"workspace_id": "w1", "user_id": "u1", "session_id": "s1"}


def form_data(action: str, workspace_id: str = "", **settings) -> dict:
    """Every setting empty (inherit) but those given, as the page's form posts them."""
    data = {name: "" for name in POLICY_FIELDS}
    data.update({name: str(value) for name, value in settings.items()})
    return {**data, "action": action, "workspace_id": workspace_id}


@pytest.fixture
def traffic(agent_client, principal):
    """Three recorded context calls in w1: two queries that hit four user facts, one without a query."""
    append(principal, "planning the launch", **CALL)
    for index in range(4):
        make_node(principal, user_id="u1", type="fact", key=f"launch{index}", title=f"launch fact {index}",
                  content="the launch is on Friday " * 3)
    for query in ("launch", "friday launch", ""):
        agent_client.post("/api/v1/context", {**CALL, "query": query}, format="json")


def test_every_setting_shows_its_value_in_force_and_its_source(viewer_client, admin_principal, settings):
    settings.USER_MEMORY_PREINJECT_TOPN = 9
    policy_set(principal=admin_principal, changes={"recent_messages": 3, "l2_enabled": False})
    policy_set(principal=admin_principal, workspace_id="w1", changes={"max_chars": 500})
    response = viewer_client.get(URL, {"workspace_id": "w1"})
    assert response.status_code == 200
    rows = {row["name"]: (row["value"], row["source"]) for row in response.context["rows"]}
    assert list(rows) == list(POLICY_FIELDS)
    assert rows == {name: (entry["value"], entry["source"]) for name, entry in
                    budget_resolve(team=admin_principal.team, workspace_id="w1").as_dict().items()}
    assert rows["top_n"] == (9, "environment") and rows["max_chars"] == (500, "workspace")
    assert rows["recent_messages"] == (3, "team") and rows["l2_enabled"] == (False, "team")
    assert rows["enabled"] == (True, "default") and rows["l5_chars"] == (None, "default")
    html = response.content.decode()
    assert 'source-environment">environment' in html and 'source-workspace">workspace' in html
    assert response.context["overrides"] == [("w1", {"max_chars": 500})]


def test_the_form_starts_from_the_levels_stored_settings(admin_client, admin_principal):
    policy_set(principal=admin_principal, workspace_id="w1", changes={"top_n": 2, "l3_enabled": False})
    form = admin_client.get(URL, {"workspace_id": "w1"}).context["form"]
    assert form["top_n"].value() == 2 and form["l3_enabled"].value() == "off" and form["max_chars"].value() == ""


@pytest.mark.parametrize("role", ["viewer", "editor"])
def test_only_admins_save_or_simulate(request, role, traffic):
    client = logged_in(request.getfixturevalue(role))
    assert 'value="save"' not in client.get(URL).content.decode()
    for action in ("save", "simulate"):
        response = client.post(URL, form_data(action, "w1", top_n=1))
        assert response.status_code == 403
        assert "only team admins change budgets" in response.content.decode()
    assert not BudgetPolicy.objects.exists() and not AuditEvent.objects.filter(event_type=POLICY_UPDATED).exists()


def test_an_admins_save_is_audited_and_the_next_context_call_follows_it(admin_client, agent_client, traffic):
    response = admin_client.post(URL, form_data("save", "w1", top_n=1, max_chars=300, l3_enabled="off"))
    assert response.status_code == 302 and response["Location"] == URL + "?workspace_id=w1"
    policy = BudgetPolicy.objects.get(workspace_id="w1")
    assert (policy.top_n, policy.max_chars, policy.l3_enabled, policy.enabled) == (1, 300, False, None)
    event = AuditEvent.objects.get(event_type=POLICY_UPDATED)
    assert event.actor == "user:ada" and event.payload["changed"] == ["top_n", "max_chars", "l3_enabled"]
    body = agent_client.post("/api/v1/context", {**CALL, "query": "launch"}, format="json").json()
    assert body["budget"]["top_n"] == {"value": 1, "source": "workspace"}
    assert body["budget"]["max_chars"] == {"value": 300, "source": "workspace"}
    assert len(body["block"]) <= 300 and "[Recent messages]" not in body["block"]
    page = admin_client.get(response["Location"])
    assert "Saved the budget policy of workspace w1" in page.content.decode()


def test_an_htmx_save_returns_the_page_fragment_with_the_message(admin_client):
    response = admin_client.post(URL, form_data("save", top_n=4), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<div id="budgets">') and "<html" not in html
    assert "Saved the budget policy of the team" in html
    assert {row["name"]: row["source"] for row in response.context["rows"]}["top_n"] == "team"


def test_an_empty_field_inherits_again(admin_client, admin_principal):
    policy_set(principal=admin_principal, changes={"top_n": 3})
    policy_set(principal=admin_principal, workspace_id="w1", changes={"top_n": 2, "max_chars": 400})
    admin_client.post(URL, form_data("save", "w1", max_chars=400))
    policy = BudgetPolicy.objects.get(workspace_id="w1")
    assert policy.top_n is None and policy.max_chars == 400
    assert budget_resolve(team=admin_principal.team, workspace_id="w1").as_dict()["top_n"] == {"value": 3, "source": "team"}


@pytest.mark.parametrize(("settings", "field", "message"), [
    ({"top_n": 999}, "top_n", "must be between 0 and 50, or null to inherit"),
    ({"max_chars": "9" * 30}, "max_chars", "must be between 0 and 100000, or null to inherit"),
    ({"min_confidence": 1.5}, "min_confidence", "must be between 0.0 and 1.0, or null to inherit"),
    ({"l0_chars": -1}, "l0_chars", "must be between 0 and 100000, or null to inherit"),
    ({"max_chars": "abc"}, "max_chars", "Enter a whole number."),
    ({"min_confidence": "inf"}, "min_confidence", "Enter a number."),
    ({"l4_enabled": "yes"}, "l4_enabled", "Select a valid choice."),
])
@pytest.mark.parametrize("action", ["save", "simulate"])
def test_bad_values_come_back_on_their_field_with_400(admin_client, settings, field, message, action):
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
        response = admin_client.post(URL, form_data(action, "w1", **settings), **headers)
        assert response.status_code == 400
        assert any(error.startswith(message) for error in response.context["form"].errors[field])
        assert response.context["simulation"] is None
    assert not BudgetPolicy.objects.exists()


def test_simulate_shows_the_figures_policy_simulate_computes_and_writes_nothing(admin_client, admin_principal, traffic):
    ledger, events = Retrieval.objects.count(), AuditEvent.objects.count()
    response = admin_client.post(URL, form_data("simulate", "w1", top_n=0, max_chars=200, last=10))
    assert response.status_code == 200
    shown = response.context["simulation"]
    expected = policy_simulate(principal=admin_principal, workspace_id="w1", last=10,
                               changes={name: None for name in POLICY_FIELDS} | {"top_n": 0, "max_chars": 200})
    assert shown["result"]["before"] == expected["before"] and shown["result"]["after"] == expected["after"]
    assert shown["result"]["per_call"] == expected["per_call"] and expected["calls"] == 3
    rows = {row["label"]: (row["before"], row["after"]) for row in shown["rows"]}
    assert rows["Calls rebuilt"] == ("3", "3") and rows["Hit rate"] == ("100.0%", "0.0%")
    html = response.content.decode()
    assert "<td>Hit rate</td><td class=\"num\">100.0%</td><td class=\"num\">0.0%</td>" in html
    differing = [call for call in expected["per_call"] if call["before"] != call["after"]]
    assert shown["per_call"] == differing and shown["changed_calls"] == len(differing) >= 2
    removed = differing[0]["removed_ids"][0]
    assert f'href="{reverse("dashboard:node", args=[removed])}"' in html
    assert Retrieval.objects.count() == ledger and AuditEvent.objects.count() == events
    assert not BudgetPolicy.objects.exists()


def test_a_simulation_without_recorded_calls_says_so(admin_client):
    response = admin_client.post(URL, form_data("simulate", top_n=1), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "No context calls recorded yet" in response.content.decode()


@pytest.mark.parametrize(("last", "message"), [("0", "last must be 1–500"), ("501", "last must be 1–500"),
                                               ("x", "Enter a whole number.")])
def test_a_bad_number_of_calls_to_rebuild_is_a_400(admin_client, last, message):
    response = admin_client.post(URL, form_data("simulate", last=last))
    assert response.status_code == 400 and message in response.content.decode()


@pytest.mark.parametrize("params", [{"workspace_id": "x" * 200}, {"workspace_id": "a\tb"}, {"workspace_id": ".."}])
def test_a_bad_workspace_id_is_a_400_not_a_500(viewer_client, admin_client, params):
    assert viewer_client.get(URL, params).status_code == 400
    response = admin_client.post(URL, form_data("save", top_n=1) | params)
    assert response.status_code == 400 and not BudgetPolicy.objects.exists()


def test_an_unknown_action_is_a_400(admin_client):
    assert admin_client.post(URL, form_data("explode", top_n=1)).status_code == 400
    assert not BudgetPolicy.objects.exists()


def test_another_teams_policies_never_show_nor_change(admin_client, outsider, other_principal):
    other_admin = logged_in(outsider)
    other_admin.post(URL, form_data("save", "globex-ws", top_n=2))
    assert BudgetPolicy.objects.get(workspace_id="globex-ws").team == other_principal.team
    html = admin_client.get(URL).content.decode()
    assert "globex-ws" not in html
    admin_client.post(URL, form_data("save", "globex-ws", top_n=7))
    rows = {policy.team_id: policy.top_n for policy in BudgetPolicy.objects.filter(workspace_id="globex-ws")}
    assert rows[other_principal.team.pk] == 2 and len(rows) == 2  # acme got its own override, globex's is untouched


def test_payloads_in_workspace_ids_and_queries_render_inert(admin_client, admin_principal, agent_client):
    policy_set(principal=admin_principal, workspace_id=SCRIPT, changes={"top_n": 1})
    make_node(admin_principal, scope="workspace", workspace_id=SCRIPT, type="fact", title=ALL)
    agent_client.post("/api/v1/context", {"workspace_id": SCRIPT, "session_id": "s", "query": ALL}, format="json")
    pages = [admin_client.get(URL), admin_client.get(URL, {"workspace_id": SCRIPT}),
             admin_client.post(URL, form_data("simulate", SCRIPT, top_n=0, max_chars=10)),
             admin_client.post(URL, form_data("save", SCRIPT, top_n=999), HTTP_HX_REQUEST="true")]
    for response in pages:
        html = response.content.decode()
        assert injected(html) == {} and ESCAPED[0] in html


def test_the_page_lists_the_first_twenty_calls_that_change_and_counts_them_all():
    same = {"chars": 10, "memories": 1, "hit": True}
    calls = [{"retrieval_id": n, "query": "q", "workspace_id": "", "before": same,
              "after": {**same, "chars": 5} if n % 2 else same, "added_ids": [], "removed_ids": []} for n in range(60)]
    totals = {"calls": 60, "hit_rate": 1.0, "l5_hit_rate": 1.0, "injected_chars_mean": 10.0, "memories_per_call": 1.0,
              "omitted_by_reason": {"over_limit": 2}}
    table = simulation_table({"before": totals, "after": {**totals, "injected_chars_mean": 7.5, "omitted_by_reason": {},
                                                          "l5_hit_rate": 0.5},
                              "per_call": calls, "calls": 60})
    assert table["changed_calls"] == 30 and [call["retrieval_id"] for call in table["per_call"]] == list(range(1, 40, 2))
    rows = {row["label"]: (row["before"], row["after"], row["delta"]) for row in table["rows"]}
    assert rows["Injected characters per call"] == ("10", "7.5", "−2.5")
    assert rows["Omitted: over_limit"] == ("2", "0", "−2") and rows["Hit rate"] == ("100.0%", "100.0%", "")
    assert rows["L5 hit rate (earlier messages too)"] == ("100.0%", "50.0%", "−50.0%")


def test_after_an_htmx_simulate_or_save_the_browser_scrolls_to_what_changed(admin_client, traffic):
    simulated = admin_client.post(URL, form_data("simulate", "w1", max_chars=200), HTTP_HX_REQUEST="true")
    assert simulated.status_code == 200 and simulated["HX-Reswap"] == "outerHTML show:#simulation:top"
    assert 'id="simulation"' in simulated.content.decode()
    saved = admin_client.post(URL, form_data("save", "w1", max_chars=200), HTTP_HX_REQUEST="true")
    assert saved.status_code == 200 and saved["HX-Reswap"] == "outerHTML show:#budgets:top"
    assert "HX-Reswap" not in admin_client.post(URL, form_data("save", "w1", max_chars=200))


def test_workspaces_in_use_without_a_policy_are_linked_beside_the_overrides(viewer_client, admin_principal):
    append(admin_principal, "hi", session_id="做饭-1", workspace_id="家里", user_id="小明")
    append(admin_principal, "hi", session_id="s9", workspace_id="w9", user_id="u9")
    policy_set(principal=admin_principal, workspace_id="w9", changes={"max_chars": 300})
    html = viewer_client.get(URL).content.decode()
    levels = html[html.index('<nav class="levels"'):html.index("</nav>", html.index('<nav class="levels"'))]
    assert 'href="/budgets?workspace_id=%E5%AE%B6%E9%87%8C"' in levels
    assert '家里 <small class="muted">inherits</small>' in levels
    assert 'href="/budgets?workspace_id=w9"' in levels and "w9 <small class=\"muted\">1 set</small>" in levels
    assert levels.count('href="/budgets?workspace_id=w9"') == 1
