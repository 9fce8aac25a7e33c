"""The audit log page (issue 6 page 8; R-UI, R-TEN): filters, paging, links, roles, ownership."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from accounts.principal import system_principal
from memory.models import AuditEvent
from memory.services.audit import audit_record
from memory.services.forgetting import ForgetSelector, memory_forget
from tests.dashboard.conftest import make_message, make_node

URL = reverse("dashboard:audit")


def record(team, event_type, *, actor_job="setup", days_ago=0, **fields):
    with transaction.atomic():
        event = audit_record(principal=system_principal(team, actor_job), event_type=event_type, **fields)
    if days_ago:
        AuditEvent.objects.filter(pk=event.pk).update(created_at=timezone.now() - timedelta(days=days_ago))
    return event


def listed(response) -> list[int]:
    return [event.pk for event in response.context["page_obj"].object_list]


@pytest.fixture
def events(team):
    AuditEvent.objects.filter(team=team).delete()  # the team's creation event
    return {
        "node": record(team, "memory.node.created", node_id=7, payload={"title": "a"}),
        "superseded": record(team, "memory.node.superseded", node_id=7, actor_job="capture", days_ago=3),
        "member": record(team, "accounts.member.set", payload={"username": "bob"}, days_ago=10),
        "session": record(team, "memory.session.deleted", workspace_id="w", user_id="u", days_ago=1),
    }


def test_a_viewer_may_not_read_the_audit_log(viewer_client, events):
    assert viewer_client.get(URL).status_code == 403


def test_an_anonymous_visitor_is_sent_to_the_login(client, db):
    response = client.get(URL)
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_editors_and_admins_read_every_event_newest_first(editor_client, admin_client, events):
    for client in (editor_client, admin_client):
        response = client.get(URL)
        assert response.status_code == 200
        assert listed(response)[:4] == [events["node"].pk, events["session"].pk, events["superseded"].pk,
                                        events["member"].pk]


def test_event_type_filters_by_the_type_or_a_dotted_prefix(editor_client, events):
    assert listed(editor_client.get(URL, {"event_type": "memory.node"})) == [events["node"].pk, events["superseded"].pk]
    assert listed(editor_client.get(URL, {"event_type": "memory.node.superseded"})) == [events["superseded"].pk]
    assert listed(editor_client.get(URL, {"event_type": "memory.no"})) == []


def test_actor_filters_by_part_of_the_actor(editor_client, events):
    assert listed(editor_client.get(URL, {"actor": "CAPTURE"})) == [events["superseded"].pk]


def test_node_id_filters_the_events_of_one_node(editor_client, events):
    assert listed(editor_client.get(URL, {"node_id": "7"})) == [events["node"].pk, events["superseded"].pk]


def test_date_range_includes_both_days(editor_client, events):
    today = timezone.now().date()
    since, until = today - timedelta(days=3), today - timedelta(days=1)
    response = editor_client.get(URL, {"since": since.isoformat(), "until": until.isoformat()})
    assert listed(response) == [events["session"].pk, events["superseded"].pk]


def test_bad_filters_are_reported_and_list_nothing(editor_client, events):
    for params in ({"node_id": "x"}, {"node_id": "99999999999999999999999"}, {"since": "2026-13-01"},
                   {"since": "2026-05-02", "until": "2026-05-01"}, {"event_type": "x" * 65}):
        response = editor_client.get(URL, params)
        assert response.status_code == 200 and response.context["page_obj"] is None, params
        assert "These filters were not applied" in response.content.decode()


def test_another_teams_events_are_never_listed(editor_client, events, other_team):
    theirs = record(other_team, "memory.node.created", node_id=7)
    pks = listed(editor_client.get(URL, {"node_id": "7"}))
    assert theirs.pk not in pks and len(pks) == 2


def test_fifty_events_a_page(editor_client, team, events):
    for number in range(47):
        record(team, "memory.messages.appended", payload={"n": number})
    first = editor_client.get(URL)
    assert len(listed(first)) == 50 and first.context["page_obj"].paginator.count == 51
    assert listed(editor_client.get(URL, {"page": 2})) == [events["member"].pk]


def test_the_fragment_is_the_results_only(editor_client, events):
    response = editor_client.get(URL, {"event_type": "memory"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<div id="results">') and "<html" not in html


def test_events_link_to_their_node_and_conversation_while_they_exist(editor_client, principal):
    message = make_message(principal, "hello", session_id="s-link", workspace_id="w1", user_id="u1")
    kept = make_node(principal, title="kept")
    gone = make_node(principal, title="gone")
    memory_forget(principal=principal, selector=ForgetSelector(node_id=gone.pk), mode="hard", confirm=True)
    html = editor_client.get(URL).content.decode()
    assert f'href="{reverse("dashboard:node", args=[kept.pk])}"' in html
    assert f'href="{reverse("dashboard:node", args=[gone.pk])}"' not in html and f"#{gone.pk}" in html
    assert f'href="{reverse("dashboard:session", args=[message.session_id])}"' in html


def test_payloads_are_shown_as_indented_json(editor_client, team):
    record(team, "memory.policy.updated", payload={"max_chars": 800, "说明": "少一点"})
    html = editor_client.get(URL, {"event_type": "memory.policy"}).content.decode()
    assert "max_chars, 说明" in html and '&quot;max_chars&quot;: 800' in html and "少一点" in html


def test_the_page_takes_the_same_queries_for_many_events(editor_client, team, principal, django_assert_max_num_queries):
    for number in range(60):
        node = make_node(principal, title=f"n{number}")
        make_message(principal, f"m{number}", session_id=f"s{number}")
        record(team, "memory.node.updated", node_id=node.pk)
    with django_assert_max_num_queries(8):
        assert editor_client.get(URL).status_code == 200
