"""Review actions on the node page: each through the API's service, audited, by role (R-UI, R-TEN)."""

import pytest
from django.test import Client
from django.urls import reverse

from memory.models import AuditEvent, Node, NodeStatus
from memory.services.nodes import node_supersede, supersede_input
from tests.dashboard.conftest import make_message, make_node


def url(node) -> str:
    return reverse("dashboard:node", args=[node.pk if isinstance(node, Node) else node])


def post(client, node, action, htmx=False, **fields):
    data = {"action": action, **{f"{action}-{name}": value for name, value in fields.items()}}
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(url(node), data, **headers)


def events(node, event_type):
    return list(AuditEvent.objects.filter(node_id=node.pk, event_type=event_type))


def status_of(node) -> str:
    return Node.objects.get(pk=node.pk).status


@pytest.fixture
def fact(principal):
    message = make_message(principal, "The staging server is staging-2 now", session_id="s-9")
    return make_node(principal, title="Staging server", content="staging-1", key="ops.staging", value_json={"host": "s1"},
                     tags=["ops"], explicit=True, source_message_ids=[message.pk])


def test_editor_corrects_a_node_into_a_new_version_with_the_reason_audited(editor_client, fact):
    response = post(editor_client, fact, "correct", title="Staging server", content="staging-2",
                    value_json='{"host": "s2"}', tags="ops, 部署", reason="moved to the new host")
    successor = Node.objects.get(supersedes=fact)
    assert response.status_code == 302 and response.url == url(successor)
    assert status_of(fact) == NodeStatus.SUPERSEDED
    assert (successor.status, successor.content, successor.value_json, successor.tags) == (
        NodeStatus.ACTIVE, "staging-2", {"host": "s2"}, ["ops", "部署"])
    assert successor.explicit is True and successor.key == "ops.staging"
    [superseded] = events(fact, "memory.node.superseded")
    assert superseded.reason == "moved to the new host" and superseded.actor == "user:eddie"
    assert superseded.payload["superseded_by"] == successor.pk
    page = editor_client.get(response.url).content.decode()
    assert f"Corrected: #{fact.pk} is superseded by #{successor.pk}." in page


def test_a_corrected_version_cites_the_same_turns_and_goes_with_their_conversation(editor_client, principal):
    """A review's find: a typo fix ("dauhgter") gave a successor with no source message, so a
    hard forget of the conversation erased the old version and kept the corrected one, which
    the next context call injected."""
    from memory.services.forget import session_forget
    from memory.services.sessions import SessionRef

    said = make_message(principal, "Please remember my daughter is named Emma.", session_id="typo-1",
                        workspace_id="home", user_id="dana")
    node = make_node(principal, scope="user", workspace_id="", user_id="dana", title="Dana's dauhgter is Emma",
                     explicit=True, source_message_ids=[said.pk])
    post(editor_client, node, "correct", title="Dana's daughter is Emma", content="", value_json="",
         tags="", reason="typo")
    successor = Node.objects.get(supersedes=node)
    assert list(successor.source_links.values_list("message_id", flat=True)) == [said.pk]
    session_forget(principal=principal, ref=SessionRef("typo-1", "home", "dana"), mode="hard")
    assert not Node.objects.filter(pk__in=[node.pk, successor.pk]).exists()


def test_correct_over_htmx_returns_the_new_versions_fragment_and_pushes_its_url(editor_client, fact):
    response = post(editor_client, fact, "correct", htmx=True, title="Staging server", content="staging-2",
                    value_json='{"host": "s1"}', tags="ops", reason="typo")
    successor = Node.objects.get(supersedes=fact)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="node">') and "<html" not in html
    assert response["HX-Push-Url"] == url(successor)
    assert f"#{successor.pk}</small>" in html and "Corrected:" in html


def test_correct_counts_as_a_proposal_like_the_api(editor_client, fact):
    from memory.kpi_models import ProposalOutcome

    post(editor_client, fact, "correct", title="Staging server 2", value_json='{"host": "s1"}', tags="ops", reason="r")
    outcome = ProposalOutcome.objects.get()
    assert (outcome.operation, outcome.accepted) == ("supersede", True)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"title": "Staging server", "content": "staging-1", "value_json": '{"host": "s1"}', "tags": "ops", "reason": "r"},
         "Nothing changed"),
        ({"title": "x", "value_json": "{host: s2}", "tags": "", "reason": "r"}, "Not valid JSON"),
        ({"title": "x", "value_json": "", "tags": "", "reason": ""}, "This field is required"),
        ({"title": "x\x00y", "value_json": "", "tags": "", "reason": "r"}, "Null characters are not allowed"),
        ({"title": "x" * 201, "value_json": "", "tags": "", "reason": "r"}, "at most 200 characters"),
    ],
    ids=["unchanged", "bad-json", "no-reason", "nul", "too-long"],
)
def test_a_bad_correction_is_a_400_with_the_reason_and_changes_nothing(editor_client, fact, fields, problem):
    response = post(editor_client, fact, "correct", **fields)
    assert response.status_code == 400
    assert problem in response.content.decode()
    assert status_of(fact) == NodeStatus.ACTIVE and Node.objects.count() == 1


def test_a_correction_the_policy_refuses_is_shown_with_its_reason(editor_client, principal):
    node = make_node(principal, title="Likes tea", scope="workspace", type="preference", workspace_id="proj-a")
    response = post(editor_client, node, "correct", title="Likes green tea", value_json="", tags="", reason="r")
    html = response.content.decode()
    assert response.status_code == 400
    assert "type_not_allowed_in_scope" in html and 'role="alert"' in html
    assert status_of(node) == NodeStatus.ACTIVE


def test_a_sensitive_correction_asks_for_confirmation_then_goes_through(editor_client, fact):
    fields = {"title": "Staging password is hunter2", "value_json": '{"host": "s1"}', "tags": "ops", "reason": "r"}
    first = post(editor_client, fact, "correct", htmx=True, **fields)
    assert first.status_code == 409
    assert "sensitive_needs_confirmation" in first.content.decode()
    assert 'name="correct-confirm"' in first.content.decode()
    assert status_of(fact) == NodeStatus.ACTIVE
    second = post(editor_client, fact, "correct", htmx=True, confirm="on", **fields)
    assert second.status_code == 200
    assert Node.objects.get(supersedes=fact).title == "Staging password is hunter2"


def test_the_confirm_box_is_not_offered_before_the_service_asks(editor_client, fact):
    assert 'name="correct-confirm"' not in editor_client.get(url(fact)).content.decode()


def test_editor_expires_a_node_with_an_audited_reason(editor_client, fact):
    response = post(editor_client, fact, "expire", reason="host retired")
    assert response.status_code == 302 and response.url == url(fact)
    assert status_of(fact) == NodeStatus.EXPIRED
    assert events(fact, "memory.node.expired")[0].reason == "host retired"


def test_expiring_an_expired_node_is_a_409_message_not_a_500(editor_client, fact):
    post(editor_client, fact, "expire", reason="")
    response = post(editor_client, fact, "expire", htmx=True, reason="again")
    assert response.status_code == 409
    assert "only an active node can expire" in response.content.decode()


def test_soft_forget_then_restore_bring_the_node_back(editor_client, fact):
    forgotten = post(editor_client, fact, "forget", htmx=True, mode="soft", reason="user asked")
    assert forgotten.status_code == 200 and "Forgot #" in forgotten.content.decode()
    assert status_of(fact) == NodeStatus.DELETED
    assert events(fact, "memory.node.deleted")[0].reason == "user asked"
    assert 'value="restore"' in forgotten.content.decode()
    restored = post(editor_client, fact, "restore", reason="mistake")
    assert restored.status_code == 302
    assert status_of(fact) == NodeStatus.ACTIVE
    assert events(fact, "memory.node.restored")[0].reason == "mistake"


def test_restoring_a_forgotten_expired_memory_brings_it_back_expired(editor_client, fact):
    """A review's find: Expire, Forget (soft), Restore made the memory active and injected
    again, and the page said "it is active again"; restoring undoes the forget, not the expiry."""
    assert post(editor_client, fact, "expire", reason="outdated").status_code == 302
    assert post(editor_client, fact, "forget", mode="soft", reason="user asked").status_code == 302
    restored = post(editor_client, fact, "restore", htmx=True, reason="mistake")
    assert restored.status_code == 200 and f"Restored #{fact.pk}: it is expired again." in restored.content.decode()
    assert status_of(fact) == NodeStatus.EXPIRED
    [event] = events(fact, "memory.node.restored")
    assert event.payload["status"] == NodeStatus.EXPIRED
    again = post(editor_client, fact, "restore", reason="twice")  # nothing deleted to restore now
    assert again.status_code == 409 and status_of(fact) == NodeStatus.EXPIRED


def test_hard_forget_needs_the_confirmation_word(editor_client, fact):
    for word in ("", "yes", "forgot"):
        response = post(editor_client, fact, "forget", mode="hard", reason="gdpr", confirm_word=word)
        assert response.status_code == 400
        assert "Type “forget” to erase for good." in response.content.decode()
    assert Node.objects.filter(pk=fact.pk).exists()


def test_hard_forget_erases_the_node_and_its_older_versions(editor_client, principal, fact):
    newer = node_supersede(principal=principal, old_node_id=fact.pk, reason="r",
                           data=supersede_input(fact, {"value_json": {"host": "s2"}}, {}))
    response = post(editor_client, newer, "forget", htmx=True, mode="hard", reason="gdpr", confirm_word=" Forget ")
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("dashboard:memories")
    assert not Node.objects.filter(pk__in=[fact.pk, newer.pk]).exists()
    assert {event.node_id for event in AuditEvent.objects.filter(event_type="memory.node.hard_deleted")} == {
        fact.pk, newer.pk}
    page = editor_client.get(reverse("dashboard:memories")).content.decode()
    assert f"Erased #{newer.pk} with 1 other version of it for good" in page


def test_soft_forget_is_not_offered_for_a_superseded_node_and_refused_if_posted(editor_client, principal, fact):
    node_supersede(principal=principal, old_node_id=fact.pk, reason="r",
                   data=supersede_input(fact, {"value_json": {"host": "s2"}}, {}))
    html = editor_client.get(url(fact)).content.decode()
    assert 'value="hard"' in html and 'name="forget-mode" value="soft"' not in html
    response = post(editor_client, fact, "forget", mode="soft", reason="")
    assert response.status_code == 400
    assert status_of(fact) == NodeStatus.SUPERSEDED


def test_restoring_a_superseded_node_makes_a_new_current_version(editor_client, principal, fact):
    newer = node_supersede(principal=principal, old_node_id=fact.pk, reason="r",
                           data=supersede_input(fact, {"value_json": {"host": "s2"}}, {}))
    response = post(editor_client, fact, "restore", htmx=True, reason="the old host is back")
    restored = Node.objects.get(supersedes=newer)
    assert response.status_code == 200 and response["HX-Push-Url"] == url(restored)
    assert restored.value_json == {"host": "s1"} and status_of(newer) == NodeStatus.SUPERSEDED
    assert f"Restored #{fact.pk} as #{restored.pk}" in response.content.decode()


@pytest.mark.parametrize("action", ["correct", "keep", "expire", "forget", "restore"])
def test_a_viewer_posting_an_action_gets_403_and_nothing_changes(viewer_client, fact, action):
    fields = {"correct": {"title": "x", "reason": "r"}, "forget": {"mode": "hard", "confirm_word": "forget"}}.get(action, {})
    response = post(viewer_client, fact, action, htmx=True, **fields)
    assert response.status_code == 403
    assert "reads only" in response.content.decode()
    assert status_of(fact) == NodeStatus.ACTIVE and Node.objects.count() == 1
    assert not AuditEvent.objects.filter(actor="user:vera").exists()


def test_viewer_sees_no_actions_and_editor_does(viewer_client, editor_client, fact):
    assert 'id="actions"' not in viewer_client.get(url(fact)).content.decode()
    html = editor_client.get(url(fact)).content.decode()
    for action in ("correct", "expire", "forget"):
        assert f'name="action" value="{action}"' in html
    assert 'name="action" value="restore"' not in html  # nothing to restore on an active node


def test_an_editor_may_not_touch_global_memory_but_an_admin_may(editor_client, admin_client, admin_principal):
    node = make_node(admin_principal, title="Company holidays", scope="global", type="fact")
    assert 'id="actions"' not in editor_client.get(url(node)).content.decode()
    refused = post(editor_client, node, "expire", htmx=True, reason="")
    assert refused.status_code == 403 and status_of(node) == NodeStatus.ACTIVE
    assert 'id="actions"' in admin_client.get(url(node)).content.decode()
    assert post(admin_client, node, "expire", reason="").status_code == 302
    assert status_of(node) == NodeStatus.EXPIRED


@pytest.mark.parametrize("action", ["correct", "keep", "expire", "forget", "restore"])
def test_an_action_on_another_teams_node_is_404(editor_client, other_principal, action):
    foreign = make_node(other_principal, title="Globex plan")
    response = post(editor_client, foreign, action, reason="r", mode="hard", confirm_word="forget", title="x")
    assert response.status_code == 404
    assert status_of(foreign) == NodeStatus.ACTIVE and "Globex plan" not in response.content.decode()


def test_unknown_action_and_unknown_node_are_4xx(editor_client, fact):
    assert editor_client.post(url(fact), {"action": "explode"}).status_code == 400
    assert editor_client.post(url(999999), {"action": "expire"}).status_code == 404


def test_an_error_is_shown_in_the_full_page_without_htmx(editor_client, fact):
    response = post(editor_client, fact, "forget", mode="hard", confirm_word="no")
    html = response.content.decode()
    assert response.status_code == 400 and "<html" in html
    assert "<details class=\"action\" open>" in html  # the failed form stays open with its errors


def test_actions_post_with_the_csrf_header_htmx_sends(editor, fact):
    client = Client(enforce_csrf_checks=True)
    client.force_login(editor)
    page = client.get(url(fact)).content.decode()
    token = page.split("hx-headers='{\"X-CSRFToken\": \"", 1)[1].split('"', 1)[0]
    data = {"action": "expire", "expire-reason": ""}
    assert client.post(url(fact), data, HTTP_HX_REQUEST="true").status_code == 403
    assert status_of(fact) == NodeStatus.ACTIVE
    assert client.post(url(fact), data, HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=token).status_code == 200
    assert status_of(fact) == NodeStatus.EXPIRED


def test_source_messages_and_the_session_link_into_the_session_page(viewer_client, principal):
    message = make_message(principal, "我不吃香菜", session_id="chat-7")
    node = make_node(principal, title="不吃香菜", scope="session", session_id="chat-7", workspace_id="proj-b",
                     user_id="u-2", source_message_ids=[message.pk])
    html = viewer_client.get(url(node)).content.decode()
    session_url = reverse("dashboard:session", args=[message.session_id])
    assert f'href="{session_url}?message={message.pk}#m-{message.pk}"' in html
    assert f'href="{session_url}"' in html


def test_node_page_queries_do_not_grow_with_the_chain_audit_and_sources(editor_client, principal, fact):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def count(node) -> int:
        with CaptureQueriesContext(connection) as queries:
            assert editor_client.get(url(node)).status_code == 200
        return len(queries)

    short = count(fact)
    sources = [make_message(principal, f"message {number}", session_id="s-9").pk for number in range(5)]
    node = make_node(principal, title="Many sources", source_message_ids=sources)
    assert count(node) <= short


def test_a_form_post_that_is_not_utf8_is_refused_and_changes_nothing(editor_client, fact):
    """A review's find: correct-title=%ED%A0%80abc (a lone surrogate as bytes) was stored as
    '\\ufffd\\ufffd\\ufffdabc' and injected; the API refuses the same text with a 400."""
    for body in ("action=correct&correct-title=%ED%A0%80abc&correct-reason=typo",
                 "action=correct&correct-title=%FFabc&correct-reason=typo"):
        response = editor_client.post(url(fact), body, content_type="application/x-www-form-urlencoded")
        assert response.status_code == 400 and "not valid UTF-8" in response.content.decode()
    assert status_of(fact) == NodeStatus.ACTIVE and not Node.objects.filter(supersedes=fact).exists()
    fine = editor_client.post(url(fact), "action=correct&correct-title=%E9%A6%99%E8%8F%9C+ok&correct-content=staging-1"
                              "&correct-value_json=%7B%22host%22%3A+%22s1%22%7D&correct-tags=ops&correct-reason=typo",
                              content_type="application/x-www-form-urlencoded")
    assert fine.status_code == 302 and Node.objects.get(supersedes=fact).title == "香菜 ok"


def test_a_merged_duplicate_names_the_memory_it_was_merged_into_and_offers_no_restore(editor_client, principal):
    """A review's find: 48 capture copies merged into the agent's notes showed as plain
    "deleted" with "said by node 66" and a Restore that answered 409 every time."""
    from memory.services.audit import MERGED_EVENT, audit_record

    survivor = make_node(principal, title="User lives in Berlin")
    twin = make_node(principal, title="The user lives in Berlin, Germany")
    Node.objects.filter(pk=twin.pk).update(status=NodeStatus.DELETED)
    audit_record(principal=principal, event_type=MERGED_EVENT, node=Node.objects.get(pk=twin.pk),
                 reason=f"said by node {survivor.pk}", payload={"merged_into": survivor.pk})
    html = editor_client.get(url(twin)).content.decode()
    assert 'id="merged-into"' in html and f'href="{url(survivor)}"' in html
    assert 'value="restore"' not in html
    again = post(editor_client, Node.objects.get(pk=twin.pk), "forget", htmx=True, mode="soft", reason="dup")
    assert again.status_code == 409
    assert f"already forgotten (soft); it was merged into #{survivor.pk}, which says it" in again.content.decode()
    forgotten = make_node(principal, title="Deploy on Fridays")
    Node.objects.filter(pk=forgotten.pk).update(status=NodeStatus.DELETED)
    plain = editor_client.get(url(forgotten)).content.decode()
    assert 'id="merged-into"' not in plain and 'value="restore"' in plain


def test_a_second_soft_forget_says_the_memory_is_already_forgotten(editor_client, fact):
    assert post(editor_client, fact, "forget", mode="soft", reason="user asked").status_code == 302
    again = post(editor_client, fact, "forget", htmx=True, mode="soft", reason="user asked")
    assert again.status_code == 409
    assert f"#{fact.pk} is already forgotten (soft)" in again.content.decode()
    assert "not one of the available choices" not in again.content.decode()


def test_the_utf8_check_reads_the_content_type_as_django_does(editor_client, fact):
    """A breaker's find: Application/X-WWW-Form-Urlencoded and multipart bodies passed the check
    and were stored with U+FFFD."""
    bad = "action=correct&correct-title=%ED%A0%80abc&correct-reason=typo"
    response = editor_client.post(url(fact), bad, content_type="Application/X-WWW-Form-Urlencoded")
    assert response.status_code == 400
    boundary = "XyZ"
    multipart = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"action\"\r\n\r\ncorrect\r\n"
                 f"--{boundary}\r\nContent-Disposition: form-data; name=\"correct-title\"\r\n\r\n").encode() + \
        b"\xed\xa0\x80abc" + f"\r\n--{boundary}--\r\n".encode()
    response = editor_client.post(url(fact), multipart, content_type=f"multipart/form-data; boundary={boundary}")
    assert response.status_code == 400
    assert not Node.objects.filter(supersedes=fact).exists()
