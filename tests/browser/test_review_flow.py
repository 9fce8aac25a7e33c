"""An editor's review in a real browser: sign in, filter by a Chinese word, open a node, follow
its source into the session, forget it with the typed confirmation (issue 6 browser tests)."""

from django.urls import reverse
from playwright.sync_api import expect

from memory.models import Node
from tests.dashboard.conftest import make_message, make_node

# Two different Chinese characters drawn in the page's font must differ: with no CJK font
# both come out as the same empty box.
CJK_GLYPHS_JS = """() => {
  const canvas = document.createElement('canvas');
  canvas.width = 64; canvas.height = 64;
  const pen = canvas.getContext('2d');
  const family = getComputedStyle(document.body).fontFamily;
  const draw = text => { pen.clearRect(0, 0, 64, 64); pen.font = `32px ${family}`; pen.fillText(text, 0, 40);
                         return pen.getImageData(0, 0, 64, 64).data.join(','); };
  return draw('香') !== draw('菜');
}"""


def cooking(principal):
    message = make_message(principal, "记住，我以后做饭不要香菜。", session_id="做饭-1", workspace_id="家里", user_id="小明")
    node = make_node(principal, title="用户不吃香菜", content="推荐菜谱时避开香菜。", scope="session", session_id="做饭-1",
                     workspace_id="家里", user_id="小明", tags=["忌口"], key="diet.avoid", value_json={"避开": "香菜"},
                     source_message_ids=[message.pk])
    make_node(principal, title="Deploy to staging first", scope="workspace", workspace_id="proj-a")
    return node, message


def test_editor_filters_by_chinese_opens_a_node_and_forgets_it_with_confirmation(tab, principal, editor):
    node, message = cooking(principal)
    tab.open(reverse("dashboard:memories"))
    assert tab.page.url.startswith(tab.base_url + reverse("login"))
    tab.screenshot("login")
    tab.login("eddie", "pw-eddie")
    assert tab.page.url == tab.base_url + reverse("dashboard:memories")
    assert tab.page.evaluate(CJK_GLYPHS_JS), "Chinese renders as boxes: install fonts-wqy-microhei"

    tab.page.fill("#id_q", "香菜")
    with tab.page.expect_response(lambda response: "q=" in response.url):
        tab.page.press("#id_q", "End")
    # The swap follows the response. Background capture also remembered the message's wish
    # (the rule extractor, run when the test's transaction committed): both rows say 香菜.
    expect(tab.page.locator("#results")).not_to_contain_text("Deploy to staging first")
    expect(tab.page.locator("#results table.nodes tbody tr")).to_have_count(2)
    assert tab.page.locator("#results table.nodes tbody tr", has_text="香菜").count() == 2
    assert "q=%E9%A6%99%E8%8F%9C" in tab.page.url  # the filter is in the address bar (hx-push-url)
    # Leaving the box fires the form's `change` trigger once more; let it finish before the
    # click: on SQLite the live server's threads share one in-memory connection.
    with tab.page.expect_response(lambda response: "q=" in response.url):
        tab.page.locator("#id_q").blur()
    tab.screenshot("memories-filtered")

    tab.page.click(f"#results a[href='{reverse('dashboard:node', args=[node.pk])}'] >> nth=1")
    tab.page.wait_for_load_state("networkidle")
    assert tab.page.get_by_role("heading", level=1).inner_text().startswith("active")
    assert "记住，我以后做饭不要香菜。" in tab.page.locator("#sources").inner_text()
    assert '"避开": "香菜"' in tab.page.locator("pre.json").first.inner_text()
    tab.screenshot("node")

    tab.page.click(f"#sources a[href$='#m-{message.pk}']")
    tab.page.wait_for_load_state("networkidle")
    assert tab.page.url.endswith(f"?message={message.pk}#m-{message.pk}")
    assert tab.page.locator(f"#m-{message.pk}").inner_text().endswith("记住，我以后做饭不要香菜。")
    tab.screenshot("session")
    tab.page.go_back()
    tab.page.wait_for_load_state("networkidle")

    tab.page.click("text=Forget…")
    tab.page.check("input[name='forget-mode'][value='hard']")
    tab.page.fill("#id_forget-confirm_word", "yes")
    with tab.page.expect_response(lambda response: response.request.method == "POST") as refused:
        tab.page.click("button:has-text('Forget')")
    assert refused.value.status == 400
    expect(tab.page.locator("#actions .field-error")).to_have_text("Type “forget” to erase for good.")
    assert Node.objects.filter(pk=node.pk).exists()

    tab.page.fill("#id_forget-confirm_word", "forget")
    tab.page.fill("#id_forget-reason", "用户要求删除")
    with tab.page.expect_navigation(url=tab.base_url + reverse("dashboard:memories")):
        tab.page.click("button:has-text('Forget')")
    assert f"Erased #{node.pk} for good" in tab.page.locator(".flash").inner_text()
    assert not Node.objects.filter(pk=node.pk).exists()
    assert tab.dialogs == [] and tab.outside == []


def test_viewer_reads_without_actions_and_sessions_page_through(tab, principal, viewer):
    node, message = cooking(principal)
    for number in range(60):
        make_message(principal, f"turn {number}", session_id="做饭-1", workspace_id="家里", user_id="小明")
    tab.login("vera", "pw-vera")
    tab.open(reverse("dashboard:node", args=[node.pk]))
    assert tab.page.locator("#actions").count() == 0
    tab.page.click("nav >> text=Sessions")
    tab.page.wait_for_load_state("networkidle")
    assert "做饭-1" in tab.page.locator("#results").inner_text()
    tab.screenshot("sessions")
    tab.page.click("#results >> text=做饭-1")
    tab.page.wait_for_load_state("networkidle")
    assert tab.page.locator("#actions").count() == 0
    with tab.page.expect_response(lambda response: "page=2" in response.url):
        tab.page.click("text=Later →")
    expect(tab.page.locator("#messages")).to_contain_text("turn 59")
    assert tab.page.url.endswith("?page=2")
    assert tab.dialogs == [] and tab.outside == []


def test_back_after_a_correction_shows_the_old_version_superseded(tab, principal, editor):
    """A review's find: correct #147 (the address becomes the new version's), press Back, and
    #147 came back "active" with its Correct form open, whose save then failed with a 409: htmx
    restored its snapshot of the page. Back now loads the page anew."""
    node = make_node(principal, title="Staging server", content="staging-1", scope="workspace", workspace_id="proj-a")
    tab.login("eddie", "pw-eddie")
    tab.open(reverse("dashboard:node", args=[node.pk]))
    tab.page.click("text=Correct…")
    tab.page.fill("#id_correct-content", "staging-2")
    tab.page.fill("#id_correct-reason", "moved")
    with tab.page.expect_response(lambda response: response.request.method == "POST"):
        tab.page.click("button:has-text('Save correction')")
    successor = Node.objects.get(supersedes=node)
    expect(tab.page.locator("body")).to_contain_text(f"superseded by #{successor.pk}")
    assert tab.page.url == tab.base_url + reverse("dashboard:node", args=[successor.pk])
    tab.page.go_back()
    tab.page.wait_for_url(tab.base_url + reverse("dashboard:node", args=[node.pk]))
    tab.page.wait_for_load_state("networkidle")
    expect(tab.page.get_by_role("heading", level=1)).to_contain_text("superseded")
    assert tab.page.locator("text=Correct…").count() == 0
    assert tab.dialogs == [] and tab.outside == []
