"""The schema page (issue 6 page 8; R-TOOLS controlled schema): admins list, create, edit and
delete schema rules, key synonyms, value rules and categories through memory.services.schema_edit;
what they save changes what the API's normalisation does."""

import pytest
from django.urls import reverse

from memory.models import AuditEvent, Category, KeySynonym, Node, SchemaRule, ValueRule
from memory.schema_defaults import COOKING
from tests.helpers import append

URL = reverse("dashboard:schema")
HTMX = {"HTTP_HX_REQUEST": "true"}
CTX = {"workspace_id": "home", "user_id": "xiaoming", "session_id": "cook-1"}


def post(client, kind, action="save", htmx=False, row_id=None, url=URL, **fields):
    data = {"kind": kind, "action": action, **{f"{kind}-{name}": value for name, value in fields.items()}}
    if row_id is not None:
        data["id"] = row_id
    return client.post(url, data, **(HTMX if htmx else {}))


def propose(agent_client, said, node):
    body = {**CTX, "operation": "create", "explicit_user_intent": True,
            "node": {"domain": COOKING, "type": "preference", "source_message_ids": [said], **node}}
    return agent_client.post(reverse("api-memory-propose"), body, format="json").json()


@pytest.fixture
def said(principal):
    return append(principal, "记住，我不吃芫荽，口味要麻辣", **CTX)[0].pk


def test_a_viewer_may_not_see_the_schema_page(viewer_client):
    assert viewer_client.get(URL).status_code == 403


def test_an_editor_reads_every_table_without_the_forms(editor_client):
    html = editor_client.get(URL).content.decode()
    assert all(text in html for text in ("avoid_ingredient", "disliked_ingredient", "少辣", "饮食偏好"))
    assert 'name="kind"' not in html and "Edit</a>" not in html


def test_an_admin_sees_a_form_per_table_and_an_edit_link_per_row(admin_client, team):
    html = admin_client.get(URL).content.decode()
    assert html.count('name="action" value="save"') == 4
    rows = sum(model.objects.filter(team=team).count() for model in (SchemaRule, KeySynonym, ValueRule, Category))
    assert html.count("Edit</a>") == rows


def test_a_synonym_added_in_the_dashboard_normalises_the_next_proposal(admin_client, agent_client, said):
    before = propose(agent_client, said, {"key": "no_eat", "value_json": "芫荽", "title": "不吃芫荽"})
    assert before["accepted"] is False and before["reason"] == "key_not_in_schema"
    response = post(admin_client, "synonym", domain=COOKING, synonym="no_eat", key="avoid_ingredient")
    assert response.status_code == 302 and response.url == URL + "#synonyms"
    after = propose(agent_client, said, {"key": "no_eat", "value_json": "芫荽", "title": "不吃芫荽"})
    assert after["accepted"] is True and "key no_eat → avoid_ingredient" in after["notes"]
    assert Node.objects.get(pk=after["node_id"]).key == "avoid_ingredient"
    event = AuditEvent.objects.get(event_type="memory.schema.synonym.created")
    assert event.actor == "user:ada" and event.payload["after"]["synonym"] == "no_eat"


def test_a_value_rule_added_in_the_dashboard_maps_the_next_value(admin_client, agent_client, said):
    response = post(admin_client, "value_rule", htmx=True, domain=COOKING, key="flavor_profile", pattern="麻辣",
                    value_json='{"spicy": "high", "numbing": "high"}')
    assert response.status_code == 200 and "Added the value rule 麻辣" in response.content.decode()
    body = propose(agent_client, said, {"key": "flavor_profile", "value_json": "麻辣", "title": "麻辣"})
    assert Node.objects.get(pk=body["node_id"]).value_json == {"spicy": "high", "numbing": "high"}
    assert AuditEvent.objects.filter(event_type="memory.schema.value_rule.created").count() == 1


def test_a_rule_deleted_in_the_dashboard_frees_its_key(admin_client, agent_client, said, team):
    rule = SchemaRule.objects.create(team=team, domain="园艺", type="preference", key="plant")
    node = {"domain": "园艺", "type": "preference", "key": "flower", "title": "喜欢兰花", "scope": "user",
            "source_message_ids": [said]}
    body = {**CTX, "operation": "create", "explicit_user_intent": True, "node": node}
    refused = agent_client.post(reverse("api-memory-propose"), body, format="json").json()
    assert refused["reason"] == "key_not_in_schema"
    assert post(admin_client, "rule", action="delete", row_id=rule.pk).status_code == 302
    assert not SchemaRule.objects.filter(pk=rule.pk).exists()
    accepted = agent_client.post(reverse("api-memory-propose"), body, format="json").json()
    assert accepted["accepted"] is True
    assert AuditEvent.objects.get(event_type="memory.schema.rule.deleted").payload["before"]["key"] == "plant"


def test_an_admin_creates_and_edits_a_rule(admin_client, team):
    response = post(admin_client, "rule", htmx=True, domain=COOKING, type="preference", key="spice_level",
                    value_shape="string", cardinality="one", default_scope="user", on_conflict="confirm",
                    category_prefix="生活技能/做饭/饮食偏好", requires_explicit_intent="on")
    assert response.status_code == 200
    rule = SchemaRule.objects.get(team=team, key="spice_level")
    assert (rule.category_prefix, rule.requires_explicit_intent, rule.on_conflict) == (
        ["生活技能", "做饭", "饮食偏好"], True, "confirm")
    edit = admin_client.get(URL, {"edit": "rule", "id": rule.pk}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="rules")
    html = edit.content.decode()
    assert html.lstrip().startswith('<section id="rules">') and f'name="id" value="{rule.pk}"' in html
    assert 'value="spice_level"' in html
    post(admin_client, "rule", row_id=rule.pk, domain=COOKING, type="preference", key="spice_level",
         value_shape="string", cardinality="many", default_scope="workspace", on_conflict="supersede")
    rule.refresh_from_db()
    assert (rule.cardinality, rule.default_scope, rule.requires_explicit_intent, rule.category_prefix) == (
        "many", "workspace", False, [])
    types = list(AuditEvent.objects.filter(event_type__startswith="memory.schema.rule").values_list("event_type", flat=True))
    assert types == ["memory.schema.rule.created", "memory.schema.rule.updated"]


def test_a_category_is_added_edited_and_deleted(admin_client, team):
    post(admin_client, "category", domain=COOKING, path="生活技能/做饭/调料", description="家里的调料")
    category = Category.objects.get(team=team, path_text="生活技能/做饭/调料")
    assert category.path == ["生活技能", "做饭", "调料"]
    post(admin_client, "category", row_id=category.pk, domain=COOKING, path="生活技能/做饭/香料")
    category.refresh_from_db()
    assert category.path_text == "生活技能/做饭/香料" and category.description == ""
    post(admin_client, "category", action="delete", row_id=category.pk)
    assert not Category.objects.filter(pk=category.pk).exists()
    assert [event.event_type for event in AuditEvent.objects.filter(event_type__startswith="memory.schema.category")
            .order_by("pk")] == ["memory.schema.category.created", "memory.schema.category.updated",
                                 "memory.schema.category.deleted"]


def test_a_category_a_rule_uses_cannot_be_deleted_409(admin_client, team):
    used = Category.objects.get(team=team, domain=COOKING, path_text="生活技能/做饭")
    response = post(admin_client, "category", action="delete", row_id=used.pk, htmx=True)
    html = response.content.decode()
    assert response.status_code == 409 and "avoid_ingredient" in html and html.lstrip().startswith('<section id="categories">')
    assert Category.objects.filter(pk=used.pk).exists()


@pytest.mark.parametrize("kind, fields, field, message", [
    ("rule", {"domain": COOKING, "type": "preference", "key": "avoid_ingredient", "value_shape": "string",
              "cardinality": "many", "default_scope": "user", "on_conflict": "supersede",
              "category_prefix": "生活技能/做饭"}, "key", "rule for avoid_ingredient already"),
    ("rule", {"domain": COOKING, "type": "preference", "key": "a b", "value_shape": "string", "cardinality": "one",
              "default_scope": "user", "on_conflict": "supersede"}, "key", "printable, no spaces"),
    ("rule", {"domain": COOKING, "type": "preference", "key": "k", "value_shape": "string", "cardinality": "one",
              "default_scope": "user", "on_conflict": "supersede", "category_prefix": "花园"}, "category_prefix",
     "not in the"),
    ("synonym", {"domain": COOKING, "synonym": "hate", "key": "disliked_ingredient"}, "key", "itself a synonym"),
    ("value_rule", {"domain": COOKING, "key": "flavor_profile", "pattern": "麻", "value_json": "{oops"}, "value_json",
     "Not valid JSON"),
    ("value_rule", {"domain": COOKING, "key": "flavor_profile", "pattern": "麻", "value_json": '"text"'},
     "value_json", "value shape"),
    ("category", {"domain": COOKING, "path": "a//b"}, "path", "no empty level"),
    ("category", {"domain": "", "path": "a"}, "domain", "This field is required"),
])
def test_bad_fields_are_shown_on_their_field_with_400(admin_client, kind, fields, field, message):
    response = post(admin_client, kind, htmx=True, **fields)
    html = response.content.decode()
    assert response.status_code == 400, html
    block = html[html.index(f"field-{field} has-errors"):]
    assert message in block[: block.index("</div>")]
    assert not AuditEvent.objects.filter(event_type__startswith="memory.schema").exists()


def test_the_domain_filter_narrows_every_table(admin_client, team):
    SchemaRule.objects.create(team=team, domain="园艺", type="preference", key="plant")
    response = admin_client.get(URL, {"domain": "园艺"})
    assert [rule.key for rule in response.context["rows"].rules] == ["plant"]
    assert not list(response.context["rows"].categories)
    assert "园艺" in response.context["domains"] and COOKING in response.context["domains"]
    fragment = admin_client.get(URL, {"domain": "园艺"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="schema")
    assert fragment.content.decode().lstrip().startswith('<div id="schema">')


def test_a_save_keeps_the_domain_filter(admin_client):
    response = post(admin_client, "synonym", url=URL + "?domain=" + COOKING, domain=COOKING, synonym="yuck",
                    key="avoid_ingredient")
    assert response.status_code == 302 and response.url.endswith("#synonyms") and "domain=" in response.url


def test_viewers_and_editors_may_not_change_the_schema(viewer_client, editor_client, team):
    rule = SchemaRule.objects.filter(team=team).first()
    for client in (viewer_client, editor_client):
        assert post(client, "synonym", domain="", synonym="x1", key="y1").status_code == 403
        assert post(client, "rule", action="delete", row_id=rule.pk).status_code == 403
    assert SchemaRule.objects.filter(pk=rule.pk).exists() and not KeySynonym.objects.filter(synonym="x1").exists()
    assert not AuditEvent.objects.filter(event_type__startswith="memory.schema").exists()


def test_an_editor_asking_for_an_edit_form_gets_the_read_only_page(editor_client, team):
    rule = SchemaRule.objects.filter(team=team).first()
    html = editor_client.get(URL, {"edit": "rule", "id": rule.pk}).content.decode()
    assert 'name="kind"' not in html


def test_another_teams_rows_are_not_found(admin_client, other_team):
    for kind, model in (("rule", SchemaRule), ("synonym", KeySynonym), ("value_rule", ValueRule),
                        ("category", Category)):
        theirs = model.objects.filter(team=other_team).first()
        assert admin_client.get(URL, {"edit": kind, "id": theirs.pk}).status_code == 404
        assert post(admin_client, kind, action="delete", row_id=theirs.pk).status_code == 404
        assert post(admin_client, kind, row_id=theirs.pk, domain="d", synonym="s", key="k", path="p",
                    pattern="p", value_json="1", type="fact", value_shape="any", cardinality="one",
                    default_scope="user", on_conflict="supersede").status_code == 404
        assert model.objects.filter(pk=theirs.pk).exists()


@pytest.mark.parametrize("data", [
    {}, {"kind": "table"}, {"kind": "rule", "action": "drop"}, {"kind": "rule", "action": "delete"},
    {"kind": "rule", "action": "delete", "id": "x"}, {"kind": "rule", "action": "delete", "id": "-1"},
    {"kind": "synonym", "action": "save", "synonym-synonym": "a\x00", "synonym-key": "b"},
    {"kind": "value_rule", "action": "save", "value_rule-domain": "d", "value_rule-pattern": "p",
     "value_rule-value_json": "[" * 40 + "]" * 40},
    {"kind": "value_rule", "action": "save", "value_rule-domain": "d", "value_rule-pattern": "p",
     "value_rule-value_json": "NaN"},
])
def test_malformed_posts_get_a_400_never_a_500(admin_client, data):
    assert admin_client.post(URL, data).status_code == 400


@pytest.mark.parametrize("params", [{"edit": "rule", "id": "x"}, {"edit": "table", "id": "1"},
                                    {"edit": "rule", "id": "99999999999999999999999"}, {"domain": "d" * 500}])
def test_odd_query_strings_show_the_page(admin_client, params):
    assert admin_client.get(URL, params).status_code == 200


def test_the_page_takes_the_same_queries_for_many_rows(admin_client, team, django_assert_max_num_queries):
    for number in range(30):
        SchemaRule.objects.create(team=team, domain=f"d{number}", type="fact", key=f"k{number}")
        KeySynonym.objects.create(team=team, domain=f"d{number}", synonym=f"s{number}", key=f"k{number}")
        Category.objects.create(team=team, domain=f"d{number}", path=["a", "b"], path_text="a/b")
    with django_assert_max_num_queries(8):
        assert admin_client.get(URL).status_code == 200
