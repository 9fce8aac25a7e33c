"""The session list and a session's page: messages, the summary chain, forgetting (R-UI, R-STORE)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memory.models import AuditEvent, Message, Node, NodeStatus, Session, Summary
from memory.services.sessions import SessionRef
from memory.services.summaries import SummaryInput, summary_append
from tests.dashboard.conftest import make_message, make_node

LIST = reverse("dashboard:sessions")


def page_url(session, **query) -> str:
    url = reverse("dashboard:session", args=[session.pk])
    return url + ("?" + "&".join(f"{key}={value}" for key, value in query.items()) if query else "")


def conversation(principal, session_id, count, *, workspace_id="proj-a", user_id="u-1", text="message {n}"):
    messages = [make_message(principal, text.format(n=number), session_id=session_id, workspace_id=workspace_id,
                             user_id=user_id, role="user" if number % 2 == 0 else "assistant")
                for number in range(count)]
    return Session.objects.get(pk=messages[0].session_id), messages


def summarise(principal, session, to_message, text):
    ref = SessionRef(session_id=session.external_id, workspace_id=session.workspace_id, user_id=session.user_id)
    return summary_append(principal=principal, data=SummaryInput(session=ref, summary=text, to_message_id=to_message.pk,
                                                                 current_goal="ship it", lists={"decisions": ["use s2"]}))


def shown_sessions(response) -> list[str]:
    return [session.external_id for session in response.context["page_obj"].object_list]


@pytest.fixture
def sessions(principal):
    first, _ = conversation(principal, "chat-a", 3, workspace_id="proj-a", user_id="u-1")
    second, _ = conversation(principal, "chat-b", 2, workspace_id="proj-a", user_id="u-2")
    third, _ = conversation(principal, "chat-c", 1, workspace_id="proj-b", user_id="u-1")
    return first, second, third


def test_session_list_shows_the_teams_conversations_newest_first_with_counts(viewer_client, principal, sessions,
                                                                               other_principal):
    conversation(other_principal, "globex-chat", 1)
    make_node(principal, title="a session memory", scope="session", session_id="chat-a", workspace_id="proj-a",
              user_id="u-1")
    summarise(principal, sessions[0], Message.objects.filter(session=sessions[0]).last(), "first summary")
    response = viewer_client.get(LIST)
    assert response.status_code == 200
    assert shown_sessions(response) == ["chat-c", "chat-b", "chat-a"]
    counts = {row.external_id: (row.message_count, row.summary_count, row.node_count)
              for row in response.context["page_obj"].object_list}
    assert counts == {"chat-a": (3, 1, 1), "chat-b": (2, 0, 0), "chat-c": (1, 0, 0)}
    assert "globex-chat" not in response.content.decode()


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"workspace_id": "proj-a"}, ["chat-b", "chat-a"]),
        ({"user_id": "u-1"}, ["chat-c", "chat-a"]),
        ({"workspace_id": "proj-a", "user_id": "u-1"}, ["chat-a"]),
        ({"session_id": "chat-b"}, ["chat-b"]),
        ({"session_id": "chat"}, []),
        ({"status": "forgotten"}, []),
        ({"status": "all"}, ["chat-c", "chat-b", "chat-a"]),
    ],
)
def test_session_filters_narrow_the_list(viewer_client, sessions, params, expected):
    assert shown_sessions(viewer_client.get(LIST, params)) == expected


def test_invalid_session_filter_is_reported_not_a_500(viewer_client, sessions):
    response = viewer_client.get(LIST, {"status": "exploded", "user_id": "x" * 200})
    assert response.status_code == 200
    assert "not applied" in response.content.decode() and response.context["page_obj"] is None


def test_session_list_as_a_fragment(viewer_client, sessions):
    response = viewer_client.get(LIST, {"user_id": "u-2"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="results">') and "<html" not in html
    assert "chat-b" in html and "chat-a" not in html


def test_session_list_pages_by_fifty(viewer_client, principal):
    for number in range(52):
        make_message(principal, "hi", session_id=f"chat-{number:02d}")
    first = viewer_client.get(LIST)
    assert len(shown_sessions(first)) == 50 and "Page 1 of 2" in first.content.decode()
    assert shown_sessions(viewer_client.get(LIST, {"page": 2})) == ["chat-01", "chat-00"]


def test_session_list_queries_do_not_grow_with_rows(viewer_client, principal):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert viewer_client.get(LIST).status_code == 200
        return len(queries)

    make_message(principal, "hi", session_id="only")
    few = count()
    for number in range(20):
        make_message(principal, "hi", session_id=f"more-{number}")
    assert count() == few


def test_session_page_shows_messages_oldest_first_in_chinese_and_english(viewer_client, principal):
    session, _ = conversation(principal, "chat-zh", 2, text="第{n}条：我不吃香菜 / message {n}")
    html = viewer_client.get(page_url(session)).content.decode()
    assert html.index("第0条：我不吃香菜 / message 0") < html.index("第1条：我不吃香菜 / message 1")
    assert "chat-zh" in html and "proj-a" in html and "u-1" in html


def test_session_messages_page_by_fifty_and_a_message_link_opens_its_page(viewer_client, principal):
    session, messages = conversation(principal, "long", 120)
    first = viewer_client.get(page_url(session)).content.decode()
    assert "message 49<" in first and "message 50<" not in first and "Page 1 of 3" in first
    third = viewer_client.get(page_url(session, page=3)).content.decode()
    assert "message 119<" in third and "message 99<" not in third
    linked = viewer_client.get(page_url(session, message=messages[75].pk))
    assert linked.context["page_obj"].number == 2
    assert f'id="m-{messages[75].pk}"' in linked.content.decode()


@pytest.mark.parametrize("message", ["abc", "99999999999999999999999", "-1", ""])
def test_a_bad_message_link_falls_back_to_the_first_page(viewer_client, principal, message):
    session, _ = conversation(principal, "chat", 3)
    response = viewer_client.get(page_url(session, message=message))
    assert response.status_code == 200 and response.context["page_obj"].number == 1


def test_session_page_queries_do_not_grow_with_messages_or_summaries(viewer_client, principal):
    session, messages = conversation(principal, "chat", 4)
    summarise(principal, session, messages[1], "one")

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert viewer_client.get(page_url(session)).status_code == 200
        return len(queries)

    few = count()
    for number in range(30):
        make_message(principal, f"more {number}", session_id="chat", workspace_id="proj-a", user_id="u-1")
        if number % 10 == 9:
            summarise(principal, session, Message.objects.filter(session=session).last(), f"summary {number}")
    assert count() == few


def test_message_paging_over_htmx_returns_only_the_messages(viewer_client, principal):
    session, _ = conversation(principal, "long", 60)
    response = viewer_client.get(page_url(session, page=2), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="messages">') and "<html" not in html
    assert "message 59<" in html and 'id="summaries"' not in html


def test_summary_chain_is_a_linked_list_with_the_ranges_each_covers(viewer_client, principal):
    session, messages = conversation(principal, "chat", 7)
    first = summarise(principal, session, messages[3], "用户计划部署")
    second = summarise(principal, session, messages[6], "Deployed to s2")
    html = viewer_client.get(page_url(session)).content.decode()
    chain = html[html.index('id="summaries"'):html.index('id="messages"')]
    assert chain.index(f'id="summary-{first.pk}"') < chain.index(f'id="summary-{second.pk}"')
    assert "first of the chain" in chain
    assert f'follows <a href="#summary-{first.pk}">#{first.pk}</a>' in chain
    assert f"#m-{messages[0].pk}\">#{messages[0].pk}</a>–" in chain and f"#m-{messages[3].pk}\">#{messages[3].pk}</a>" in chain
    assert "(4 messages)" in chain and "(3 messages)" in chain
    assert "用户计划部署" in chain and "ship it" in chain and "use s2" in chain
    marks = html[html.index('id="messages"'):]
    assert f"summary #{first.pk} covers from here" in marks and f"summary #{second.pk} covers up to here" in marks


def test_session_page_of_another_team_or_unknown_is_404(viewer_client, other_principal):
    foreign, _ = conversation(other_principal, "globex-chat", 1, text="Globex secret")
    response = viewer_client.get(page_url(foreign))
    assert response.status_code == 404 and "Globex secret" not in response.content.decode()
    assert viewer_client.get(reverse("dashboard:session", args=[999999])).status_code == 404


def forget(client, session, mode, htmx=False, **fields):
    data = {"action": "forget", "forget-mode": mode, **{f"forget-{name}": value for name, value in fields.items()}}
    return client.post(page_url(session), data, **({"HTTP_HX_REQUEST": "true"} if htmx else {}))


def test_editor_forgets_a_conversation_softly(editor_client, principal):
    session, messages = conversation(principal, "chat", 2)
    node = make_node(principal, title="derived", scope="session", session_id="chat", workspace_id="proj-a",
                     user_id="u-1", source_message_ids=[messages[0].pk])
    response = forget(editor_client, session, "soft", htmx=True, reason="user asked")
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<div id="session">')
    assert "Forgot conversation chat (soft): 2 messages, 0 summaries and 1 memories hidden or deleted." in html
    assert "message 0" not in html and "forgotten" in html
    assert Session.objects.get(pk=session.pk).deleted_at is not None
    assert Node.objects.get(pk=node.pk).status == NodeStatus.DELETED
    event = AuditEvent.objects.get(event_type="memory.session.deleted")
    assert (event.reason, event.actor) == ("user asked", "user:eddie")
    assert 'value="soft"' not in html  # only a hard forget is left
    assert shown_sessions(editor_client.get(LIST, {"status": "forgotten"})) == ["chat"]


def test_hard_forget_of_a_conversation_needs_the_word_and_then_erases_it(editor_client, principal):
    session, messages = conversation(principal, "chat", 3)
    summarise(principal, session, messages[2], "summary")
    refused = forget(editor_client, session, "hard", confirm_word="delete")
    assert refused.status_code == 400 and "Type “forget” to erase for good." in refused.content.decode()
    assert Message.objects.filter(session=session).count() == 3
    response = forget(editor_client, session, "hard", htmx=True, reason="gdpr", confirm_word="forget")
    assert response["HX-Redirect"] == LIST
    assert not Session.objects.filter(pk=session.pk).exists()
    assert not Message.objects.filter(pk__in=[message.pk for message in messages]).exists()
    assert not Summary.objects.exists()
    assert AuditEvent.objects.get(event_type="memory.session.hard_deleted").reason == "gdpr"
    assert "Erased conversation chat for good: 3 messages, 1 summaries" in editor_client.get(LIST).content.decode()


def test_a_softly_forgotten_conversation_can_be_erased_for_good(editor_client, principal):
    session, _ = conversation(principal, "chat", 1)
    forget(editor_client, session, "soft")
    assert forget(editor_client, session, "soft").status_code == 400  # soft is no longer a choice
    response = forget(editor_client, session, "hard", confirm_word="forget")
    assert response.status_code == 302 and response.url == LIST
    assert not Session.objects.filter(pk=session.pk).exists()


def test_a_viewer_may_read_a_session_but_not_forget_it(viewer_client, principal):
    session, _ = conversation(principal, "chat", 1)
    assert 'id="actions"' not in viewer_client.get(page_url(session)).content.decode()
    response = forget(viewer_client, session, "hard", htmx=True, confirm_word="forget")
    assert response.status_code == 403 and "reads only" in response.content.decode()
    assert Session.objects.get(pk=session.pk).deleted_at is None


def test_an_editor_cannot_forget_a_conversation_a_global_memory_came_from(editor_client, principal, admin_principal):
    session, messages = conversation(principal, "chat", 1)
    make_node(admin_principal, title="Company rule", scope="global", type="fact", source_message_ids=[messages[0].pk])
    response = forget(editor_client, session, "soft", htmx=True)
    assert response.status_code == 403 and "global-scope memories derived from it" in response.content.decode()
    assert Session.objects.get(pk=session.pk).deleted_at is None


def test_forgetting_another_teams_conversation_is_404(editor_client, other_principal):
    foreign, _ = conversation(other_principal, "globex-chat", 1)
    assert forget(editor_client, foreign, "hard", confirm_word="forget").status_code == 404
    assert Session.objects.filter(pk=foreign.pk).exists()


def test_unknown_session_action_is_400(editor_client, principal):
    session, _ = conversation(principal, "chat", 1)
    assert editor_client.post(page_url(session), {"action": "rename"}).status_code == 400


def test_a_session_page_links_to_its_users_memories_and_to_the_preview_of_its_next_call(viewer_client, principal):
    session, _ = conversation(principal, "做饭-1", 2, workspace_id="家里", user_id="小明")
    html = viewer_client.get(page_url(session)).content.decode()
    assert '<a href="/?user_id=%E5%B0%8F%E6%98%8E">all memories of user 小明</a>' in html
    assert ('<a class="preview-link" href="/preview?workspace_id=%E5%AE%B6%E9%87%8C&amp;user_id=%E5%B0%8F%E6%98%8E'
            '&amp;session_id=%E5%81%9A%E9%A5%AD-1">') in html
    Session.objects.filter(pk=session.pk).update(deleted_at=session.created_at)
    assert 'class="preview-link"' not in viewer_client.get(page_url(session)).content.decode()


def test_a_turn_whose_memory_was_forgotten_is_marked_not_recalled(viewer_client, principal):
    from memory.services.nodes import node_delete

    session, messages = conversation(principal, "chat-f", 2, text="我对花生过敏 {n}")  # user, assistant
    # a third turn that does not say it again (memory.services.forgotten_repeats)
    messages.append(make_message(principal, "今天天气不错", session_id="chat-f", workspace_id="proj-a", user_id="u-1"))
    node = make_node(principal, title="用户对花生过敏", source_message_ids=[messages[0].pk])
    node_delete(principal=principal, node_id=node.pk, mode="soft", reason="the user asked")
    html = viewer_client.get(page_url(session)).content.decode()
    assert html.count("not recalled") == 2 and "context calls no longer recall it" in html  # the turn, its answer
    assert Message.objects.get(pk=messages[2].pk).memory_forgotten_at is None
