"""Stored XSS on the administration pages (issue 6 quality bar): markup planted in member
usernames, key names and workspace limits, schema rule keys and descriptions, synonyms, value
rules, category names, and audit reasons and payloads renders inert, full page and fragment."""

import pytest
from django.urls import reverse

from memory.models import Category, KeySynonym, SchemaRule, ValueRule
from tests.dashboard.xss import ALL, ATTR, ESCAPED, IMG, SCRIPT, injected
from tests.dashboard.xss_admin import plant_admin


@pytest.fixture
def planted(team, admin):
    plant_admin(team)


def pages():
    audit, members = reverse("dashboard:audit"), reverse("dashboard:members")
    keys, schema = reverse("dashboard:keys"), reverse("dashboard:schema")
    return [
        ("audit", audit, {}, {}),
        ("audit, filters typed", audit, {"event_type": SCRIPT[:64], "actor": IMG, "session_id": ATTR}, {}),
        ("audit, actor filter", audit, {"actor": "alert"}, {"HTTP_HX_REQUEST": "true"}),
        ("members", members, {}, {}),
        ("members, fragment", members, {}, {"HTTP_HX_REQUEST": "true"}),
        ("keys", keys, {}, {}),
        ("keys, fragment", keys, {}, {"HTTP_HX_REQUEST": "true"}),
        ("schema", schema, {}, {}),
        ("schema, domain typed", schema, {"domain": ALL}, {}),
        ("schema, domain", schema, {"domain": SCRIPT}, {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "schema"}),
    ]


def test_every_admin_page_renders_the_payloads_as_text(admin_client, planted):
    for name, url, params, headers in pages():
        response = admin_client.get(url, params, **headers)
        html = response.content.decode()
        assert response.status_code == 200, name
        assert injected(html) == {}, name
        assert all(text in html for text in ESCAPED), name


def test_the_edit_forms_hold_the_payloads_inert(admin_client, team, planted):
    schema = reverse("dashboard:schema")
    for kind, model in (("rule", SchemaRule), ("synonym", KeySynonym), ("value_rule", ValueRule),
                        ("category", Category)):
        for row in model.objects.filter(team=team):
            html = admin_client.get(schema, {"edit": kind, "id": row.pk}).content.decode()
            assert injected(html) == {}, (kind, row.pk)


def test_the_editor_view_is_inert_too(editor_client, planted):
    for name, url, params, headers in pages():
        assert injected(editor_client.get(url, params, **headers).content.decode()) == {}, name


def test_typed_markup_echoed_by_a_refused_form_is_inert(admin_client):
    posts = [
        (reverse("dashboard:members"), {"action": "add", "add-username": ALL, "add-role": "viewer"}),
        (reverse("dashboard:keys"), {"action": "create", "create-name": ALL, "create-kind": "agent",
                                     "create-workspace_ids": "w" * 130 + SCRIPT}),
        (reverse("dashboard:schema"), {"kind": "rule", "action": "save", "rule-domain": ALL, "rule-key": ALL,
                                       "rule-type": "fact", "rule-category_prefix": IMG}),
        (reverse("dashboard:schema"), {"kind": "value_rule", "action": "save", "value_rule-domain": "d",
                                       "value_rule-pattern": ALL, "value_rule-value_json": ALL}),
    ]
    for url, data in posts:
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            response = admin_client.post(url, data, **headers)
            html = response.content.decode()
            assert response.status_code == 400, (url, data)
            assert injected(html) == {}, (url, data)


def test_markup_saved_through_the_schema_forms_is_stored_as_text_and_shown_inert(admin_client, team):
    schema = reverse("dashboard:schema")
    response = admin_client.post(schema, {"kind": "synonym", "action": "save", "synonym-domain": IMG[:64],
                                          "synonym-synonym": SCRIPT, "synonym-key": "safe_key"},
                                 HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and injected(html) == {} and ESCAPED[0] in html
    assert KeySynonym.objects.filter(team=team, synonym=SCRIPT).exists()
    created = admin_client.post(reverse("dashboard:keys"), {"action": "create", "create-name": ALL,
                                                            "create-kind": "agent"}, HTTP_HX_REQUEST="true")
    assert created.status_code == 201 and injected(created.content.decode()) == {}
