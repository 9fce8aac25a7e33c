"""One fact keeps one key whoever writes it (R-STORE one active value per key, R-TOOLS), as a
review of the agent tools found it did not:
- an agent's fav_colour, home_city, 住址 or job_title is the key capture writes for the same fact
  (memory.key_spelling, memory.schema_defaults.FACT_SYNONYMS), so a new value supersedes the old
  one instead of standing beside it in the prompt (fav_color red, favourite_colour green and
  favorite_color blue were all injected);
- memories stored under the key as sent stay found by it, and a key the schema controls is never
  renamed;
- memory_get by a key of several values names them all instead of answering one;
- a value said again with other spacing is a repeat, not a new version."""

from importlib import import_module

import pytest
from django.apps import apps
from django_scopes import scopes_disabled

from memory.key_spelling import favorite_key, key_spelling
from memory.models import AuditEvent, KeySynonym, Node
from memory.services.nodes import node_supersede, supersede_input
from memory.services.proposals import Proposal, proposal_apply
from tests.helpers import append, make_node
from tests.memory.capture.test_twins import capture

CTX = {"session_id": "s1", "user_id": "u1", "workspace_id": "w1"}


@pytest.mark.parametrize(("key", "spelled"), [
    ("favorite_color", "favorite_color"),
    ("favourite_colour", "favorite_color"),
    ("fav_color", "favorite_color"),
    ("favoriteColor", "favorite_color"),
    ("FAVORITE_COLORS", "favorite_color"),
    ("favourite-hobbies", "favorite_hobby"),
    ("favorite_TV_shows", "favorite_tv_show"),
    ("favorite_dishes", "favorite_dish"),
    ("favorite_movies", "favorite_movie"),
    ("favorite_cookies", "favorite_cookie"),
    ("fav_cities", "favorite_city"),
    ("FAV-COLORS", "favorite_color"),
    ("FavouriteColors", "favorite_color"),
    ("favorite_glasses", "favorite_glass"),
    ("favorite_series", "favorite_series"),
    ("favorite_bus", "favorite_bus"),
    ("favorite_colour_scheme", "favorite_color_scheme"),
    ("favorite_颜色", "favorite_color"),  # 我最喜欢的颜色 and "my favorite color": one fact
    ("fav_電影", "favorite_movie"),
    ("favorite_京剧", "favorite_京剧"),  # not listed: as said
    # not a favorite's key: as written
    ("favorites", "favorites"),
    ("favoritism", "favoritism"),
    ("favor_x", "favor_x"),
    ("fav", "fav"),
    ("favorite_", "favorite_"),
    ("Home_City", "Home_City"),
    ("FAVOR_X", "FAVOR_X"),
    ("FAVICON_URL", "FAVICON_URL"),
    ("favIcon", "favIcon"),
    ("FAVORED", "FAVORED"),
    ("favorite_physics", "favorite_physics"),
    ("favorite_heroes", "favorite_hero"),
    ("favorite_buses", "favorite_bus"),
    ("fav\ncolor", "fav\ncolor"),  # validation refuses it as sent
    ("fav color", "fav color"),
    ("fav_" + "a" * 124, "fav_" + "a" * 124),  # favorite_… would pass the 128 characters
])
def test_a_favorite_key_is_spelled_one_way(key, spelled):
    assert key_spelling(key) == spelled


def test_capture_spells_a_favorite_as_an_agent_s_key_is_spelled():
    assert favorite_key("colours") == favorite_key("color") == key_spelling("favouriteColour") == "favorite_color"


def _propose(principal, said: int, key: str, value, **node):
    return proposal_apply(principal=principal, proposal=Proposal(
        operation="create", explicit_user_intent=True, reason="the user said so", **CTX,
        node={"scope": "user", "type": node.pop("type", "fact"), "key": key, "value_json": value,
              "title": f"{key}: {value}", "source_message_ids": [said], **node}))


def _active(key: str) -> list:
    return list(Node.objects.filter(key=key, status="active").values_list("value_json", flat=True))


@pytest.mark.parametrize(("said", "captured_key", "variant", "value"), [
    ("Remember: my favourite colour is blue.", "favorite_color", "fav_colour", "green"),
    ("记住，我最喜欢的颜色是蓝色。", "favorite_color", "favourite_colour", "green"),
    ("Remember: I live in Berlin.", "home", "home_city", "Munich"),
    ("Remember: I work at Siemens.", "workplace", "employer", "Bosch"),
    ("记住，我住在杭州。", "home", "居住地", "上海"),
])
def test_an_agent_s_variant_key_supersedes_what_capture_stored(principal, said, captured_key, variant, value):
    message, = append(principal, said, **CTX)
    capture()
    assert len(_active(captured_key)) == 1
    result = _propose(principal, message.pk, variant, value, type=Node.objects.get(key=captured_key).type)
    assert result.accepted and result.superseded_id is not None
    assert _active(captured_key) == [value] and not Node.objects.filter(key=variant).exists()
    assert f"key {variant} → {captured_key}" in result.notes


def test_variants_written_one_after_another_leave_one_value_in_the_prompt(agent_client, principal):
    said, = append(principal, "Remember: my favorite color is red.", **CTX)
    for key, value in (("favorite_color", "blue"), ("favourite_colour", "green"), ("fav_color", "red")):
        assert _propose(principal, said.pk, key, value, type="preference").accepted
    assert _active("favorite_color") == ["red"]
    block = agent_client.post("/api/v1/context", {**CTX, "session_id": "s2", "query": "what colour do I like?"},
                              format="json").json()["block"]
    assert "- fav_color: red" in block and "green" not in block and "blue" not in block


def test_a_variant_key_reads_and_forgets_the_fact(agent_client, principal):
    said, = append(principal, "Remember: I am a nurse.", **CTX)
    node = _propose(principal, said.pk, "occupation", "nurse").node
    for key in ("job_title", "profession", "职业"):
        found = agent_client.post("/api/v1/memory/get", {**CTX, "key": key}, format="json")
        assert (found.status_code, found.json()["id"]) == (200, node.pk), key
    gone = agent_client.post("/api/v1/memory/forget", {**CTX, "key": "job_title", "mode": "soft",
                                                       "reason": "asked", "confirm": True}, format="json")
    assert gone.status_code == 200 and gone.json()["deleted_ids"] == [node.pk]


def test_a_cooking_synonym_stays_in_its_domain(principal):
    said, = append(principal, "Remember: I am allergic to kiwi.", **CTX)
    cooking = _propose(principal, said.pk, "allergies", "kiwi", type="constraint", domain="生活技能")
    general = _propose(principal, said.pk, "allergies", "pollen", type="constraint", domain="general")
    assert (cooking.node.key, general.node.key) == ("allergy", "allergies")


def _migrate():
    with scopes_disabled():
        import_module("memory.migrations.0029_fact_key_synonyms").add_fact_synonyms(apps, None)


def test_the_migration_leaves_a_team_s_own_keys_and_synonyms_alone(principal, team):
    with scopes_disabled():
        KeySynonym.objects.filter(team=team, key__in=["home", "workplace", "occupation", "name", "allergy"]).delete()
        KeySynonym.objects.create(team=team, domain="", synonym="company", key="employer_name")
        KeySynonym.objects.create(team=team, domain="", synonym="profession", key="job_kind")
        KeySynonym.objects.create(team=team, domain="生活技能", synonym="home_city", key="delivery_city")
    make_node(principal, type="fact", key="residence", value_json="Berlin", title="residence")
    make_node(principal, type="constraint", key="allergies", value_json="pollen", title="pollen")
    _migrate()
    with scopes_disabled():
        synonyms = dict(KeySynonym.objects.filter(team=team, domain="").values_list("synonym", "key"))
    assert synonyms["current_city"] == "home" and synonyms["employer"] == "workplace"
    # the team has home_city in another domain: a lookup without a domain would no longer follow it
    assert "home_city" not in synonyms
    # the team stores memories under residence and (in general) allergies: lookups keep finding them
    assert "residence" not in synonyms
    assert not KeySynonym.objects.filter(team=team, synonym="allergies").exists()
    assert synonyms["company"] == "employer_name" and synonyms["profession"] == "job_kind"  # the team's own
    assert "job_title" in synonyms
    _migrate()  # and again: nothing doubles
    with scopes_disabled():
        assert KeySynonym.objects.filter(team=team, synonym="current_city").count() == 1


def test_memory_get_by_a_key_of_several_values_names_them_all(agent_client, principal):
    """A review's find: memory_get {key: allergy} answered shellfish alone for a user allergic to
    peanuts too; an agent checking allergies that way missed one."""
    said, = append(principal, "Remember that I'm allergic to peanuts and shellfish.", **CTX)
    capture()
    answer = agent_client.post("/api/v1/memory/get", {**CTX, "key": "allergy"}, format="json")
    error = answer.json()["error"]
    assert (answer.status_code, error["code"]) == (409, "several_values")
    assert '"peanuts"' in error["message"] and '"shellfish"' in error["message"]
    assert "memory_search" in error["message"]
    one = agent_client.post("/api/v1/memory/get", {**CTX, "key": "allergy", "value_json": "peanuts"}, format="json")
    assert (one.status_code, one.json()["value_json"]) == (200, "peanuts")
    everything = agent_client.post("/api/v1/memory/search", {**CTX, "key": "allergy"}, format="json").json()
    assert sorted(item["value_json"] for item in everything["exact"]) == ["peanuts", "shellfish"]


def test_a_value_said_again_with_other_spacing_is_a_repeat_not_a_new_version(principal):
    """A review's find: "green" and " green " each superseded the one before. A new spelling
    ("McDonald" after "mcdonald") is kept: case can be what the user corrected."""
    said, = append(principal, "Remember: my favorite color is green.", **CTX)
    first = _propose(principal, said.pk, "favorite_color", "green", type="preference")
    for value in (" green ", "green.", "green  "):
        again = _propose(principal, said.pk, "favorite_color", value, type="preference")
        assert (again.accepted, again.created, again.node.pk) == (True, False, first.node.pk), value
    assert Node.objects.filter(key="favorite_color").count() == 1
    _propose(principal, said.pk, "surname", "mcdonald")
    assert _propose(principal, said.pk, "surname", "McDonald").superseded_id is not None
    assert _active("surname") == ["McDonald"]
    for value in ("C++", "C#"):  # marks that make another value are no spacing
        assert _propose(principal, said.pk, "favorite_language", value, type="preference").created
    assert _active("favorite_language") == ["C#"]


def test_an_agent_s_住址_takes_capture_s_home_and_a_later_move_still_replaces_it(principal):
    """A review's find: the agent's 住址 = 杭州 absorbed capture's `home` as a twin, so 我搬到上海了
    found no home to replace and stayed in its session; a new session was told 杭州."""
    said, = append(principal, "记住，我住在杭州。", **CTX)
    capture()
    home, = Node.objects.filter(key="home", status="active")
    agent = _propose(principal, said.pk, "住址", "杭州")
    assert (agent.node.key, agent.superseded_id) == ("home", home.pk)
    append(principal, "我搬到上海了", **CTX)
    capture()
    moved, = Node.objects.filter(key="home", status="active")
    assert (moved.value_json, moved.scope, moved.supersedes_id) == ({"lives": "上海"}, "user", agent.node.pk)


def test_a_memory_stored_under_the_key_as_sent_is_still_read_and_forgotten_by_it(agent_client, principal):
    """A review's find: a node stored as fav_color before keys were spelled one way answered 404
    to memory_get {key: fav_color}, and a forget by that key deleted nothing."""
    old = make_node(principal, user_id="u1", workspace_id="w1", type="preference", key="fav_color",
                    value_json="teal", title="teal")
    found = agent_client.post("/api/v1/memory/get", {**CTX, "key": "fav_color"}, format="json")
    assert (found.status_code, found.json()["id"]) == (200, old.pk)
    searched = agent_client.post("/api/v1/memory/search", {**CTX, "key": "fav_color"}, format="json").json()
    assert [item["id"] for item in searched["exact"]] == [old.pk]
    gone = agent_client.post("/api/v1/memory/forget", {**CTX, "key": "fav_color", "mode": "soft", "reason": "asked",
                                                       "confirm": True}, format="json")
    assert gone.status_code == 200 and gone.json()["deleted_ids"] == [old.pk]


def test_a_key_an_admin_s_rule_controls_is_never_renamed(principal, admin_principal):
    """A review's find: an admin's rule for `employer` in domain crm refused every write of it as
    key_not_in_schema, the default synonym having renamed it to workplace first."""
    from memory.services.schema_edit import SchemaRuleInput, schema_rule_save

    schema_rule_save(principal=admin_principal, data=SchemaRuleInput(
        domain="crm", type="fact", key="employer", value_shape="string", cardinality="one", default_scope="user"))
    said, = append(principal, "Remember: I work for Acme.", **CTX)
    crm = _propose(principal, said.pk, "employer", "Acme", domain="crm")
    general = _propose(principal, said.pk, "employer", "Acme")
    assert crm.accepted and (crm.node.domain, crm.node.key) == ("crm", "employer")
    assert (general.node.domain, general.node.key) == ("general", "workplace")


def test_memory_get_answers_one_value_per_domain_as_before(agent_client, principal):
    said, = append(principal, "Remember: my name is Ann.", **CTX)
    ann = _propose(principal, said.pk, "name", "Ann")
    _propose(principal, said.pk, "name", "Apollo", domain="project", scope="workspace")
    found = agent_client.post("/api/v1/memory/get", {**CTX, "key": "name", "domain": "general"}, format="json")
    assert (found.status_code, found.json()["id"]) == (200, ann.node.pk)
    either = agent_client.post("/api/v1/memory/get", {**CTX, "key": "name"}, format="json")
    assert either.status_code == 200  # one value of each domain: each its own fact, precedence picks


def test_the_migration_respells_stored_favorites_and_audits_each(principal):
    """A breaker's find: a favorite stored as fav_color before stayed active beside the
    favorite_color a new write made of it."""
    said, = append(principal, "Remember: my favorite color is teal.", **CTX)
    old = make_node(principal, user_id="u1", type="preference", key="fav_color", value_json="teal", title="teal")
    kept = make_node(principal, user_id="u2", type="preference", key="favourite_colour", value_json="red", title="r")
    make_node(principal, user_id="u2", type="preference", key="favorite_color", value_json="blue", title="b")
    with scopes_disabled():
        import_module("memory.migrations.0030_favorite_key_spelling").respell(apps, None)
    old.refresh_from_db()
    kept.refresh_from_db()
    assert (old.key, kept.key) == ("favorite_color", "favourite_colour")  # u2 holds both: left for an editor
    event = AuditEvent.objects.get(event_type="memory.node.updated", node_id=old.pk)
    assert event.payload["before"] == {"key": "fav_color"} and event.payload["after"] == {"key": "favorite_color"}
    newer = _propose(principal, said.pk, "fav_colour", "navy", type="preference")
    assert newer.superseded_id == old.pk and sorted(_active("favorite_color")) == ["blue", "navy"]


def test_a_team_s_own_synonym_of_a_fav_key_comes_before_the_spelling(agent_client, principal, team):
    """A breaker's find: the team's synonym fav_drink → usual_drink was never followed once keys
    were respelled first, so a forget by fav_drink deleted nothing."""
    KeySynonym.objects.create(team=team, domain="", synonym="fav_drink", key="usual_drink")
    said, = append(principal, "Remember: I usually drink coffee.", **CTX)
    written = _propose(principal, said.pk, "fav_drink", "coffee")
    assert written.node.key == "usual_drink" and "key fav_drink → usual_drink" in written.notes
    found = agent_client.post("/api/v1/memory/get", {**CTX, "key": "fav_drink"}, format="json")
    assert (found.status_code, found.json()["id"]) == (200, written.node.pk)
    gone = agent_client.post("/api/v1/memory/forget", {**CTX, "key": "fav_drink", "mode": "hard", "reason": "asked",
                                                       "confirm": True}, format="json")
    assert gone.json()["deleted_ids"] == [written.node.pk]


def test_a_forget_by_a_key_a_rule_controls_does_not_follow_a_default_synonym(agent_client, principal,
                                                                             admin_principal):
    """A breaker's find: with an admin's rule tax/fact/residence, a forget of `residence` without a
    domain followed the default synonym residence → home and deleted the user's home too."""
    from memory.services.schema_edit import SchemaRuleInput, schema_rule_save

    schema_rule_save(principal=admin_principal, data=SchemaRuleInput(domain="tax", type="fact", key="residence"))
    said, = append(principal, "Remember: I live in Berlin and I am tax resident in Ireland.", **CTX)
    home = _propose(principal, said.pk, "home", "Berlin")
    tax = _propose(principal, said.pk, "residence", "Ireland", domain="tax")
    assert (tax.node.key, tax.node.domain) == ("residence", "tax")
    gone = agent_client.post("/api/v1/memory/forget", {**CTX, "key": "residence", "mode": "soft", "reason": "asked",
                                                       "confirm": True}, format="json")
    assert gone.json()["deleted_ids"] == [tax.node.pk]
    assert _active("home") == ["Berlin"] and home.node.pk in set(Node.objects.filter(status="active").values_list(
        "pk", flat=True))


def test_the_migration_keeps_controlled_keys_applies_synonyms_and_renames_chains_whole(principal, admin_principal):
    from memory.services.schema_edit import SchemaRuleInput, schema_rule_save

    schema_rule_save(principal=admin_principal, data=SchemaRuleInput(domain="crm", type="preference",
                                                                      key="favorite_colors"))
    controlled = make_node(principal, user_id="u1", type="preference", domain="crm", key="favorite_colors",
                           value_json="teal", title="teal")
    cuisine = make_node(principal, user_id="u1", type="preference", domain="生活技能", key="fav_cuisine",
                        value_json="川菜", title="川菜", category_path=["生活技能", "做饭"])
    teal = make_node(principal, user_id="u3", type="preference", key="fav_color", value_json="teal", title="teal")
    red = node_supersede(principal=principal, old_node_id=teal.pk,
                         data=supersede_input(teal, {"value_json": "red", "title": "red"}, {}))
    make_node(principal, user_id="u3", type="preference", key="favorite_color", value_json="blue", title="blue")
    with scopes_disabled():
        import_module("memory.migrations.0030_favorite_key_spelling").respell(apps, None)
    keys = dict(Node.objects.filter(pk__in=[controlled.pk, cuisine.pk, teal.pk, red.pk]).values_list("pk", "key"))
    assert keys == {controlled.pk: "favorite_colors", cuisine.pk: "preferred_cuisine",
                    teal.pk: "fav_color", red.pk: "fav_color"}  # u3's chain collides: left whole
