"""Administration in a real browser (issue 6 page 8): an admin creates an agent key and sees it
once, adds a synonym that the agent API then applies, adds a member, and reads it all back in
the audit log; planted markup stays inert on every administration page."""

import re

from django.urls import reverse
from playwright.sync_api import expect

from memory.schema_defaults import COOKING
from tests.browser.test_xss_browser import assert_inert
from tests.conftest import key_client
from tests.dashboard.xss_admin import plant_admin

RAW_KEY = re.compile(r"^mk_[0-9a-f]{12}_\S+$")


def test_admin_creates_a_key_sees_it_once_adds_a_synonym_and_a_member(tab, team, admin):
    tab.login("ada", "pw-ada")
    tab.open(reverse("dashboard:keys"))
    tab.page.click("text=Create a key…")
    tab.page.fill("#id_create-name", "菜谱助手")
    tab.page.fill("#id_create-workspace_ids", "家里")
    with tab.page.expect_response(lambda response: response.request.method == "POST"):
        tab.page.click("text=Create key")
    shown = tab.page.locator(".new-key input")
    expect(shown).to_be_visible()
    raw = shown.input_value()
    assert RAW_KEY.match(raw)
    tab.screenshot("admin-keys-created")
    tab.open(reverse("dashboard:keys"))
    assert raw not in tab.page.content() and tab.page.locator(".new-key").count() == 0
    tab.page.go_back()  # the creation response was no-store: going back does not bring the key back
    tab.page.wait_for_load_state("networkidle")
    assert raw not in tab.page.content()

    tab.open(reverse("dashboard:schema"))
    synonyms = tab.page.locator("#synonyms")
    synonyms.locator("summary", has_text="Add a key synonym").click()
    tab.page.fill("#id_synonym-domain", COOKING)
    tab.page.fill("#id_synonym-synonym", "no_eat")
    tab.page.fill("#id_synonym-key", "avoid_ingredient")
    with tab.page.expect_response(lambda response: response.request.method == "POST"):
        synonyms.locator("button", has_text="Add").click()
    expect(tab.page.locator("#synonyms .flash")).to_contain_text("Added the key synonym no_eat → avoid_ingredient")
    tab.screenshot("admin-schema")
    agent = key_client(raw)
    said = agent.post(reverse("api-messages"), {"session_id": "做饭-1", "workspace_id": "家里", "user_id": "小明",
                                                "role": "user", "content": "记住，我不吃芫荽"}, format="json").json()
    body = {"workspace_id": "家里", "user_id": "小明", "session_id": "做饭-1", "operation": "create",
            "explicit_user_intent": True, "node": {"domain": COOKING, "type": "preference", "key": "no_eat",
                                                   "value_json": "芫荽", "title": "不吃芫荽",
                                                   "source_message_ids": said["ids"]}}
    answer = agent.post(reverse("api-memory-propose"), body, format="json").json()
    assert answer["accepted"] is True and answer["node"]["key"] == "avoid_ingredient"

    tab.open(reverse("dashboard:members"))
    tab.page.fill("#id_add-username", "nina")
    tab.page.select_option("#id_add-role", "editor")
    tab.page.fill("#id_add-password", "a-long-pass-phrase")
    with tab.page.expect_response(lambda response: response.request.method == "POST"):
        tab.page.click("text=Add member")
    expect(tab.page.locator("#members .flash")).to_contain_text("Added nina (new login) as editor.")
    tab.screenshot("admin-members")

    tab.open(reverse("dashboard:audit"))
    tab.page.fill("#id_event_type", "accounts")
    with tab.page.expect_response(lambda response: "event_type=accounts" in response.url):
        tab.page.press("#id_event_type", "End")
    tab.page.wait_for_load_state("networkidle")
    rows = tab.page.locator("#results tbody tr")
    texts = rows.all_inner_texts()
    assert any("accounts.key.created" in text for text in texts) and any("accounts.member.set" in text for text in texts)
    assert all(raw not in text for text in texts)
    tab.screenshot("admin-audit")
    assert tab.outside == []


def test_planted_markup_never_runs_on_the_administration_pages(tab, team, admin):
    plant_admin(team)
    tab.login("ada", "pw-ada")
    for name in ("audit", "members", "keys", "schema"):
        assert tab.open(reverse(f"dashboard:{name}")).status == 200, name
        assert_inert(tab, name)
    tab.open(reverse("dashboard:audit"))
    tab.page.locator("#results details summary").first.click()
    assert_inert(tab, "audit payload opened")
    tab.screenshot("xss-admin-audit")
