"""Browser tests: sync Playwright driving Debian's Chromium against pytest-django's live server.

No browser is downloaded (never `playwright install`): the system Chromium at CHROMIUM is
launched headless, without sandbox, GPU or background networking, and every request that is
not for the live server is refused and recorded, so a page that reaches for a CDN fails its
test. Screenshots go to artifacts/screenshots/ (ignored by git). See ../shared/STACK-NOTES.md.
"""

import os
from pathlib import Path

import pytest
from django.urls import reverse

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per test module. While it runs, Playwright's event loop sits on the
    test thread, so the test's own database calls need DJANGO_ALLOW_ASYNC_UNSAFE; it is set for
    this module only and restored after."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium fonts-wqy-microhei (.ci/run does it)")
    from playwright.sync_api import sync_playwright

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
            yield launched
            launched.close()


class Tab:
    """A page of a fresh browser context with what the tests look at: dialogs that fired and
    requests that tried to leave the live server."""

    def __init__(self, page, base_url: str):
        self.page = page
        self.base_url = base_url
        self.dialogs: list[str] = []
        self.outside: list[str] = []
        page.on("dialog", self._dialog)
        page.route("**/*", self._route)

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _route(self, route) -> None:
        if route.request.url.startswith(self.base_url):
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def open(self, path: str):
        response = self.page.goto(self.base_url + path)
        self.page.wait_for_load_state("networkidle")
        return response

    def login(self, username: str, password: str) -> None:
        self.open(reverse("login"))
        self.page.fill("#id_username", username)
        self.page.fill("#id_password", password)
        with self.page.expect_navigation():
            self.page.click("button[type=submit]")

    def screenshot(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


@pytest.fixture
def tab(browser, live_server):
    context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 900})
    try:
        yield Tab(context.new_page(), live_server.url)
    finally:
        context.close()
