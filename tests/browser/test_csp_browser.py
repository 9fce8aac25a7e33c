"""The Content Security Policy in a real browser: the dashboard and htmx work under it with no
violation, and an inline script is refused (issue 9 part 4)."""

from django.urls import reverse
from playwright.sync_api import expect

from tests.dashboard.conftest import make_node

# Listens for violations from now on, then tries what the policy forbids.
TRY_INLINE_JS = """() => new Promise(resolve => {
  const seen = [];
  document.addEventListener('securitypolicyviolation', event => seen.push(event.violatedDirective));
  const script = document.createElement('script');
  script.textContent = 'window.__inlineRan = true';
  document.body.appendChild(script);
  setTimeout(() => resolve({inlineRan: window.__inlineRan === true, seen}), 200);
})"""


def test_dashboard_and_htmx_work_under_the_policy_without_violations(tab, principal, editor):
    make_node(principal, title="绿茶", value_json={"text": "只喝绿茶"})
    make_node(principal, title="coffee", key="drink.coffee", value_json={"text": "no coffee"})
    violations: list[str] = []
    tab.page.on("console", lambda message: violations.append(message.text)
                if "Content Security Policy" in message.text else None)
    tab.login("eddie", "pw-eddie")
    for name in ("memories", "sessions", "preview", "budgets", "kpis"):
        response = tab.open(reverse(f"dashboard:{name}"))
        assert response.status == 200, name
        assert "script-src 'self'" in response.headers["content-security-policy"], name
    tab.open(reverse("dashboard:memories"))
    tab.page.fill("#id_q", "绿茶")
    with tab.page.expect_response(lambda response: "q=" in response.url) as swap:
        tab.page.press("#id_q", "End")
    assert swap.value.request.headers.get("hx-request") == "true"  # htmx, from its static file, sent it
    expect(tab.page.locator("#results table.nodes tbody tr")).to_have_count(1)
    assert violations == []
    assert tab.outside == []


def test_an_inline_script_is_refused(tab, editor):
    tab.login("eddie", "pw-eddie")
    tab.open(reverse("dashboard:memories"))
    result = tab.page.evaluate(TRY_INLINE_JS)
    assert result["inlineRan"] is False
    assert "script-src-elem" in result["seen"]
