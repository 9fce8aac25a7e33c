"""Issue 6 "Done when", walked in a real browser as a new user would after `make run`.

The data is the demo's own: seed_demo creates the team, the admin login and an agent key and
replays the Chinese cooking conversation through the API, as `make run` does. The user signs
in with the printed password, finds the 香菜 preference by searching 香菜, sees its supersede
chain and source message, previews 今晚吃什么？, simulates and saves a lower max_chars for the
workspace, and then sees the agent's next context call (over HTTP with the printed key) inject
a smaller block, and that call in the KPIs.
"""

import io
import re

import httpx
from django.core.management import call_command
from django.urls import reverse
from playwright.sync_api import expect

# Imported before the test points BASE_DIR elsewhere: the command finds demo/cooking_zh.json
# from BASE_DIR when it is imported.
from memory.management.commands import seed_demo  # noqa: F401
from memory.models import Retrieval

OWNER = {"workspace_id": "home", "user_id": "xiaoming", "session_id": "cooking-1"}
QUESTION = "今晚吃什么？"
LOWER = 250  # characters: under what the demo's call injects in force (314 since the summary gives way to the window)


def make_run_seed(settings, tmp_path) -> tuple[str, str]:
    """seed_demo as `make run` runs it; (password, agent key) read from what it prints. The
    credentials file it writes goes to tmp_path, not the checkout."""
    settings.BASE_DIR = tmp_path
    printed = io.StringIO()
    call_command("seed_demo", stdout=printed)
    text = printed.getvalue()
    assert (tmp_path / ".demo-credentials").read_text() in text
    password = re.search(r"login: admin  password: (\S+)", text).group(1)
    key = re.search(r"Agent key \(team demo\): (\S+)", text).group(1)
    return password, key


def typed(tab, selector: str, text: str) -> None:
    """Fill a live field and wait for the request its keyup triggers (on SQLite the live
    server's threads share one in-memory connection: one request at a time)."""
    tab.page.fill(selector, text)
    with tab.page.expect_response(lambda response: response.request.method == "GET" and "?" in response.url):
        tab.page.press(selector, "End")


def posted(tab, selector: str) -> None:
    with tab.page.expect_response(lambda response: response.request.method == "POST"):
        tab.page.click(selector)


def test_a_new_user_walks_issue_6_done_when_on_the_demo(tab, live_server, settings, tmp_path):
    password, key = make_run_seed(settings, tmp_path)
    page = tab.page

    # Sign in after `make run`.
    tab.open("/")
    assert page.url.startswith(tab.base_url + reverse("login"))
    tab.login("admin", password)
    assert page.url == tab.base_url + reverse("dashboard:memories")
    expect(page.locator("header .team-name")).to_have_text("Team Demo team")

    # Find the 香菜 preference by searching 香菜: the first and the current version.
    typed(tab, "#id_q", "香菜")
    results = page.locator("#results table.nodes tbody")
    expect(results.locator("tr")).to_have_count(2)
    expect(results).to_contain_text("用户不吃香菜")
    expect(results).to_contain_text("用户可接受少量香菜")
    with page.expect_response(lambda response: "q=" in response.url):
        page.locator("#id_q").blur()  # the form's `change` trigger fires once more
    tab.screenshot("done-when-1-search")

    # Its supersede chain and source message.
    page.click("#results a:text('用户不吃香菜')")
    page.wait_for_load_state("networkidle")
    expect(page.locator("#newer-version")).to_contain_text("This version was replaced by")
    expect(page.locator("#newer-version a")).to_contain_text("用户可接受少量香菜")
    chain = page.locator("#chain ol.chain li")
    expect(chain).to_have_count(2)
    expect(chain.nth(0)).to_contain_text("superseded")
    expect(chain.nth(0)).to_contain_text("(this node)")
    expect(chain.nth(1)).to_contain_text("active")
    expect(chain.nth(1)).to_contain_text("用户可接受少量香菜")
    expect(page.locator("#sources")).to_contain_text("以后做饭别给我推荐香菜，我喜欢少油少辣。")
    tab.screenshot("done-when-2-node")
    page.click("#sources .meta a.mono >> nth=0")
    page.wait_for_load_state("networkidle")
    expect(page.locator(".message:target")).to_contain_text("以后做饭别给我推荐香菜，我喜欢少油少辣。")
    tab.screenshot("done-when-3-session")

    # Preview 今晚吃什么？ for that conversation: what would be injected.
    page.click("a.preview-link")
    page.wait_for_load_state("networkidle")
    for name, value in OWNER.items():
        expect(page.locator(f"#id_{name}")).to_have_value(value)
    typed(tab, "#id_q", QUESTION)
    block = page.locator("#preview .side-current pre.block")
    expect(block).to_contain_text("[User preferences]")
    expect(block).to_contain_text("用户可接受少量香菜")
    expect(block).not_to_contain_text("用户不吃香菜")
    in_force = int(page.locator("#preview .side-current .total-chars").inner_text())
    assert in_force > LOWER
    with page.expect_response(lambda response: "q=" in response.url):
        page.locator("#id_q").blur()  # its `change` trigger fires once more; let it end before navigating
    tab.screenshot("done-when-4-preview")

    # Lower max_chars for the workspace after looking at the simulated effect, and save it.
    page.click("nav >> text=Budgets")
    page.wait_for_load_state("networkidle")
    page.click("nav.levels a.inherits:has-text('home')")
    page.wait_for_load_state("networkidle")
    page.fill("#id_max_chars", str(LOWER))
    posted(tab, "button[value=simulate]")
    simulation = page.locator("#simulation")
    expect(simulation).to_be_in_viewport()
    expect(simulation).to_contain_text(f"the last {Retrieval.objects.count()} recorded context calls of this workspace")
    chars_row = simulation.locator("tr", has_text="Injected characters per call")
    expect(chars_row).to_have_class("changed")
    assert float(chars_row.locator("td").nth(2).inner_text()) <= LOWER
    tab.screenshot("done-when-5-simulation")
    posted(tab, "button[value=save]")
    expect(page.locator("#budgets .flash")).to_contain_text("Saved the budget policy of workspace home")
    expect(page.locator("#budgets .flash")).to_be_in_viewport()
    expect(page.locator("#budgets tr.setting-max_chars .source")).to_have_text("workspace")

    # The agent's next call, with the printed key, injects the smaller block.
    answer = httpx.post(f"{tab.base_url}/api/v1/context", headers={"Authorization": f"Bearer {key}"},
                        json={**OWNER, "query": QUESTION}, timeout=30)
    assert answer.status_code == 200
    call = answer.json()
    assert call["budget"]["max_chars"] == {"value": LOWER, "source": "workspace"}
    assert len(call["block"]) <= LOWER < in_force
    assert "用户可接受少量香菜" in call["block"]

    # ...and the KPIs list that call first, under the workspace's max_chars.
    page.click("nav >> text=KPIs")
    page.wait_for_load_state("networkidle")
    newest = page.locator("#kpi-latest tbody tr").first
    expect(newest.locator("td").first).to_have_text(str(call["retrieval_id"]))
    expect(newest.locator("td.max-chars")).to_have_text(f"{LOWER} workspace")
    expect(newest).to_contain_text(QUESTION)
    expect(newest.locator("td").nth(5)).to_have_text(str(call["diagnostics"]["total_chars"]))
    tab.screenshot("done-when-6-kpis")
    assert tab.dialogs == [] and tab.outside == []
