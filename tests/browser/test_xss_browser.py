"""Stored XSS in a real browser: the planted payloads never run and never become elements (issue 6)."""

from django.urls import reverse

from tests.dashboard.xss import ALL, ATTR, IMG, SCRIPT, plant

# Everything in the DOM that injected markup would have made: inline scripts, images, and any
# attribute named on… (an event handler), wherever it sits.
INJECTED_JS = """() => ({
  inlineScripts: [...document.scripts].filter(script => !script.src).length,
  images: document.images.length,
  handlers: [...document.querySelectorAll('*')].flatMap(element =>
    [...element.attributes].filter(attribute => attribute.name.startsWith('on')).map(attribute => attribute.name)),
})"""
NOTHING = {"inlineScripts": 0, "images": 0, "handlers": []}


# An injected onmouseover would fire here, on whichever element it landed.
HOVER_EVERYTHING_JS = """() => document.querySelectorAll('body *').forEach(element =>
  element.dispatchEvent(new MouseEvent('mouseover', {bubbles: true})))"""


def assert_inert(tab, where: str) -> None:
    tab.page.evaluate(HOVER_EVERYTHING_JS)
    assert tab.page.evaluate(INJECTED_JS) == NOTHING, where
    assert tab.dialogs == [], where


def test_payloads_render_as_text_and_never_run(tab, principal, editor):
    planted = plant(principal)
    tab.login("eddie", "pw-eddie")
    pages = {
        "memories": reverse("dashboard:memories"),
        "node": reverse("dashboard:node", args=[planted.node.pk]),
        "node-superseded": reverse("dashboard:node", args=[planted.old.pk]),
        "sessions": reverse("dashboard:sessions"),
        "session": reverse("dashboard:session", args=[planted.session.pk]),
    }
    for name, path in pages.items():
        assert tab.open(path).status == 200, name
        assert_inert(tab, name)
        tab.screenshot(f"xss-{name}")
    tab.open(pages["node"])
    assert tab.page.get_by_role("heading", level=1).inner_text().count(SCRIPT) == 1
    assert tab.page.locator(".tag", has_text=IMG).count() >= 1
    tab.open(pages["node-superseded"])
    assert ATTR in tab.page.locator("#sources").inner_text()
    assert tab.outside == []


def test_typed_markup_in_live_filters_and_a_correction_stays_inert(tab, principal, editor):
    planted = plant(principal)
    tab.login("eddie", "pw-eddie")
    tab.open(reverse("dashboard:memories"))
    tab.page.fill("#id_q", ALL)
    with tab.page.expect_response(lambda response: "q=" in response.url):
        tab.page.press("#id_q", "End")  # the filter follows keyup
    with tab.page.expect_response(lambda response: "q=" in response.url):
        tab.page.locator("#id_q").blur()  # and `change`: let it finish before leaving the page
    tab.page.wait_for_load_state("networkidle")
    assert_inert(tab, "memories filtered live")
    tab.open(reverse("dashboard:node", args=[planted.node.pk]))
    tab.page.click("text=Correct…")
    tab.page.fill("#id_correct-title", IMG + ATTR)
    tab.page.fill("#id_correct-reason", ALL)
    with tab.page.expect_response(lambda response: response.request.method == "POST"):
        tab.page.click("text=Save correction")
    tab.page.wait_for_load_state("networkidle")
    assert "Corrected:" in tab.page.locator("#node .flash").inner_text()
    assert tab.page.get_by_role("heading", level=1).inner_text().count(IMG + ATTR) == 1
    assert_inert(tab, "node after an HTMX correction")
    tab.screenshot("xss-node-corrected")
