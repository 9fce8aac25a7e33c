"""The node page's "Keep for <user>": a reviewer confirms that what the user said in one
conversation is the user's memory (memory.services.keep.keep_for_user; R-UI, seed 000
权限和确认策略)."""

import pytest

from memory.models import AuditEvent, Node, NodeStatus
from tests.dashboard.test_node_actions import post, url
from tests.helpers import append, make_node
from tests.memory.capture.test_rules_apply import OWNER, capture

KEEP_FORM = 'name="action" value="keep"'


@pytest.fixture
def said(principal):
    capture(principal, "我对虾过敏，上次吃了起了一身疹子。")
    return Node.objects.get(key="allergy", status=NodeStatus.ACTIVE)


def test_an_editor_keeps_an_allergy_for_the_user_and_lands_on_the_new_version(editor_client, said):
    page = editor_client.get(url(said)).content.decode()
    assert KEEP_FORM in page and "Keep for xiaoming" in page

    response = post(editor_client, said, "keep", reason="an allergy lasts")

    kept = Node.objects.get(supersedes=said)
    assert response.status_code == 302 and response.url == url(kept)
    assert (kept.scope, kept.user_id, kept.status) == ("user", "xiaoming", NodeStatus.ACTIVE)
    [event] = AuditEvent.objects.filter(node_id=said.pk, event_type="memory.node.superseded")
    assert (event.actor, event.reason) == ("user:eddie", "an allergy lasts")
    shown = editor_client.get(response.url).content.decode()
    assert f"Kept for user xiaoming: #{kept.pk} replaces #{said.pk}" in shown
    assert KEEP_FORM not in shown  # the user's memory has nothing more to keep


def test_keep_over_htmx_returns_the_new_versions_fragment(editor_client, said):
    response = post(editor_client, said, "keep", htmx=True, reason="")
    kept = Node.objects.get(supersedes=said)
    assert response.status_code == 200 and response["HX-Push-Url"] == url(kept)
    assert response.content.decode().lstrip().startswith('<div id="node">')
    assert AuditEvent.objects.get(node_id=said.pk, event_type="memory.node.superseded").reason == (
        "kept for the user: confirmed in review")


def test_a_slot_the_user_already_fills_is_a_409_on_the_page_and_nothing_changes(editor_client, principal):
    capture(principal, "我在医院当护士。")
    said = Node.objects.get(key="occupation")
    capture(principal, "记住，我是老师。", owner={**OWNER, "session_id": "work-1"})
    teacher = Node.objects.get(key="occupation", scope="user")
    response = post(editor_client, said, "keep", htmx=True, reason="")
    assert response.status_code == 409
    assert f"node {teacher.pk} already holds this slot" in response.content.decode()
    assert Node.objects.get(pk=said.pk).status == NodeStatus.ACTIVE


def test_keep_is_offered_only_on_a_users_conversation_memory(editor_client, principal):
    capture(principal, "记住，我对花生过敏。")
    users_own = Node.objects.get(key="allergy")
    capture(principal, "我对虾过敏。", owner={**OWNER, "user_id": ""})
    without_user = Node.objects.get(key="allergy", scope="session")
    for node in (users_own, without_user):
        assert KEEP_FORM not in editor_client.get(url(node)).content.decode()
        assert post(editor_client, node, "keep", htmx=True, reason="").status_code == 409
    assert Node.objects.count() == 2



def test_a_secret_asks_for_the_confirm_box_then_goes_through(editor_client, principal):
    [stated] = append(principal, "my password is hunter2", **OWNER)
    said = make_node(principal, scope="session", type="fact", title="User's password is hunter2",
                     source_message_ids=[stated.pk], **OWNER)
    assert 'name="keep-confirm"' not in editor_client.get(url(said)).content.decode()
    refused = post(editor_client, said, "keep", htmx=True, reason="")
    html = refused.content.decode()
    assert refused.status_code == 409 and "sensitive_needs_confirmation" in html and 'name="keep-confirm"' in html
    assert post(editor_client, said, "keep", reason="", confirm="on").status_code == 302
    assert Node.objects.get(supersedes=said).scope == "user"


def test_keep_is_not_offered_on_a_passing_state(editor_client, principal):
    capture(principal, "我今天有点发烧。")
    state = Node.objects.get(status=NodeStatus.ACTIVE)
    assert KEEP_FORM not in editor_client.get(url(state)).content.decode()
    response = post(editor_client, state, "keep", htmx=True, reason="")
    assert response.status_code == 409 and "passing state" in response.content.decode()


def test_hard_forget_on_the_conversations_version_erases_the_kept_copy(editor_client, said):
    kept = Node.objects.get(pk=int(post(editor_client, said, "keep", reason="").url.rsplit("/", 1)[1]))
    page = editor_client.get(url(said)).content.decode()
    assert f"and #{kept.pk}, the copy that keeps it for xiaoming," in page
    response = post(editor_client, said, "forget", mode="hard", confirm_word="forget")
    assert response.status_code == 302
    assert not Node.objects.filter(pk__in=[said.pk, kept.pk]).exists()
