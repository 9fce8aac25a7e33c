"""The hit preview, budgets and KPIs in a real browser: an admin types a question and sees the
block update, compares a draft, simulates and saves a workspace budget, and sees the preview
follow it (issue 6 browser tests)."""

from django.urls import reverse
from playwright.sync_api import expect

from memory.models import Retrieval
from tests.helpers import append, make_node

CALL = {"workspace_id": "w1", "user_id": "u1", "session_id": "s1"}


def launch(principal):
    append(principal, "planning the launch", **CALL)
    for index in range(4):
        make_node(principal, user_id="u1", type="fact", key=f"launch{index}", title=f"launch fact {index}",
                  content="the launch is on Friday")


def typed(tab, selector: str, text: str) -> None:
    """Type into a field and wait for the preview request it triggers (keyup, after the delay);
    on SQLite the live server's threads share one in-memory connection."""
    tab.page.fill(selector, text[:-1])
    with tab.page.expect_response(lambda response: "/preview?" in response.url):
        tab.page.press(selector, text[-1])


def test_typing_a_question_updates_the_preview_and_a_saved_budget_changes_it(tab, principal, admin, agent_client):
    launch(principal)
    tab.login("ada", "pw-ada")
    tab.open(reverse("dashboard:preview"))
    for name, value in CALL.items():
        typed(tab, f"#id_{name}", value)
    expect(tab.page.locator("#preview .side-current pre.block")).not_to_contain_text("launch fact")
    typed(tab, "#id_q", "launch")
    block = tab.page.locator("#preview .side-current pre.block")
    expect(block).to_contain_text("[Relevant memories]")
    expect(block).to_contain_text("launch fact 3")
    assert "q=launch" in tab.page.url

    tab.page.click("text=Draft budget")
    typed(tab, "#id_draft-top_n", "1")
    expect(tab.page.locator("#preview .side-draft")).to_contain_text("Draft (workspace policy)")
    expect(tab.page.locator("#preview .side-current li.item.removed")).to_have_count(3)
    tab.screenshot("preview")
    assert Retrieval.objects.count() == 0  # previews are never recorded

    agent_client.post("/api/v1/context", {**CALL, "query": "launch"}, format="json")
    tab.open(reverse("dashboard:budgets") + "?workspace_id=w1")
    tab.page.fill("#id_top_n", "1")
    with tab.page.expect_response(lambda response: response.request.method == "POST"):
        tab.page.click("button[value=simulate]")
    expect(tab.page.locator("#simulation")).to_contain_text("Memories per call")
    tab.screenshot("budgets-simulation")
    with tab.page.expect_response(lambda response: response.request.method == "POST"):
        tab.page.click("button[value=save]")
    expect(tab.page.locator("#budgets .flash")).to_contain_text("Saved the budget policy of workspace w1")
    expect(tab.page.locator("#budgets tr.setting-top_n .source")).to_have_text("workspace")

    tab.open(reverse("dashboard:preview") + "?workspace_id=w1&user_id=u1&session_id=s1&q=launch")
    expect(tab.page.locator("#preview .side-current li.item", has_text="launch fact")).to_have_count(1)

    tab.open(reverse("dashboard:kpis"))
    expect(tab.page.locator("#kpi-calls svg.chart rect")).to_have_count(1)
    tab.screenshot("kpis")
    assert tab.dialogs == [] and tab.outside == []


def test_a_value_pasted_or_stepped_without_a_key_updates_the_preview(tab, principal, admin):
    """A newcomer's draft max_chars, set without a key press (a paste, a number field's arrows),
    left the page as it was until Preview was clicked: the preview listens to input events."""
    launch(principal)
    tab.login("ada", "pw-ada")
    tab.open(reverse("dashboard:preview") + "?workspace_id=w1&user_id=u1&session_id=s1&q=launch")
    tab.page.click("text=Draft budget")
    with tab.page.expect_response(lambda response: "/preview?" in response.url and "draft-max_chars=150" in response.url):
        tab.page.fill("#id_draft-max_chars", "150")  # an input event, no key
    expect(tab.page.locator("#preview .side-draft")).to_contain_text("max_chars 150")
    assert tab.dialogs == [] and tab.outside == []
