"""Stored XSS: every field renders inert on every dashboard page, full and as a fragment (issue 6)."""

import pytest
from django.urls import reverse

from tests.dashboard.xss import ALL, ATTR, ESCAPED, IMG, SCRIPT, injected, plant


@pytest.fixture
def planted(principal):
    return plant(principal)


def pages(planted):
    """(name, url, params, htmx) of every dashboard page that shows stored or typed text."""
    memories, sessions = reverse("dashboard:memories"), reverse("dashboard:sessions")
    session = reverse("dashboard:session", args=[planted.session.pk])
    return [
        ("memories", memories, {}, False),
        ("memories, filters typed", memories, {"q": ALL, "workspace_id": SCRIPT, "key": IMG, "domain": ATTR}, False),
        ("memories, fragment", memories, {"q": "alert"}, True),
        ("memories, deleted and expired", memories, {"status": "expired"}, False),
        ("node", reverse("dashboard:node", args=[planted.node.pk]), {}, False),
        ("node, superseded", reverse("dashboard:node", args=[planted.old.pk]), {}, False),
        ("node, workspace", reverse("dashboard:node", args=[planted.workspace_node.pk]), {}, False),
        ("node, user", reverse("dashboard:node", args=[planted.user_node.pk]), {}, False),
        ("sessions", sessions, {}, False),
        ("sessions, filters typed", sessions, {"workspace_id": SCRIPT, "user_id": ATTR, "session_id": IMG}, False),
        ("sessions, fragment", sessions, {"user_id": ATTR}, True),
        ("session", session, {}, False),
        ("session, messages fragment", session, {"page": 1}, True),
    ]


def test_every_page_renders_the_payloads_as_text(editor_client, planted):
    for name, url, params, htmx in pages(planted):
        response = editor_client.get(url, params, **({"HTTP_HX_REQUEST": "true"} if htmx else {}))
        html = response.content.decode()
        assert response.status_code == 200, name
        assert injected(html) == {}, name
        assert all(text in html for text in ESCAPED), name


def test_payloads_shown_to_a_viewer_are_inert_too(viewer_client, planted):
    for name, url, params, htmx in pages(planted):
        html = viewer_client.get(url, params, **({"HTTP_HX_REQUEST": "true"} if htmx else {})).content.decode()
        assert injected(html) == {}, name


def test_the_correction_form_echoes_typed_markup_inert(editor_client, planted):
    url = reverse("dashboard:node", args=[planted.node.pk])
    data = {"action": "correct", "correct-title": ALL, "correct-content": ALL, "correct-value_json": ALL,
            "correct-tags": ALL, "correct-reason": ""}
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
        response = editor_client.post(url, data, **headers)
        html = response.content.decode()
        assert response.status_code == 400
        assert injected(html) == {}
        assert "Not valid JSON" in html and ESCAPED[0] in html


def test_a_correction_with_markup_is_stored_and_shown_inert(editor_client, planted):
    url = reverse("dashboard:node", args=[planted.node.pk])
    data = {"action": "correct", "correct-title": IMG, "correct-content": SCRIPT, "correct-value_json": '{"a": "<b>"}',
            "correct-tags": ATTR, "correct-reason": ALL}
    response = editor_client.post(url, data, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert injected(response.content.decode()) == {}
    assert "&lt;b&gt;" in response.content.decode()


def test_flash_messages_quoting_a_session_id_are_inert(editor_client, planted):
    url = reverse("dashboard:session", args=[planted.session.pk])
    response = editor_client.post(url, {"action": "forget", "forget-mode": "soft", "forget-reason": ALL},
                                  HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and "Forgot conversation" in html
    assert injected(html) == {} and ESCAPED[1] in html


def test_ids_in_links_are_url_encoded(editor_client, planted):
    html = editor_client.get(reverse("dashboard:session", args=[planted.session.pk])).content.decode()
    assert "?workspace_id=%3Cscript%3Ealert%281%29%3C%2Fscript%3E" in html


@pytest.mark.parametrize("raw", [SCRIPT, IMG, ATTR.join(['<a href="#x" title=\'', '\'>x</a>'])])
def test_the_probe_finds_markup_that_was_not_escaped(raw):
    assert injected(f"<p>{raw}</p>") != {}
