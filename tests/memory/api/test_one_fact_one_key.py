"""One fact keeps one key whoever writes it (R-STORE one active value per key, R-TOOLS), as a
review of the agent tools found it did not:
- an agent's fav_colour, home_city, 住址 or job_title is the key capture writes for the same fact
  (memory.key_spelling, memory.schema_defaults.FACT_SYNONYMS), so a new value supersedes the old
  one instead of standing beside it in the prompt (fav_color red, favourite_colour green and
  favorite_color blue were all injected);
- a key the schema controls, sent without a domain, takes the schema's domain (an agent's
  allergies were one-valued keys in `general`, out of reach of a forget of `allergy`);
- memory_get by a key of several values names them all instead of answering one;
- a value said again in another case or spacing is a repeat, not a new version."""

from importlib import import_module

import pytest
from django.apps import apps
from django_scopes import scopes_disabled

from memory.key_spelling import favorite_key, key_spelling
from memory.models import KeySynonym, Node
from memory.services.proposals import Proposal, proposal_apply
from tests.helpers import append, make_node
from tests.memory.capture.test_twins import capture

CTX = {"session_id": "s1", "user_id": "u1", "workspace_id": "w1"}


@pytest.mark.parametrize(("key", "spelled"), [
    ("favorite_color", "favorite_color"),
    ("favourite_colour", "favorite_color"),
    ("fav_color", "favorite_color"),
    ("favColour", "favorite_color"),
    ("favoriteColor", "favorite_color"),
    ("FAVORITE_COLORS", "favorite_color"),
    ("favourite-hobbies", "favorite_hobby"),
    ("favorite_TV_shows", "favorite_tv_show"),
    ("favorite_dishes", "favorite_dish"),
    ("favorite_movies", "favorite_movie"),
    ("favorite_cookies", "favorite_cookie"),
    ("fav_cities", "favorite_city"),
    ("favorite_glasses", "favorite_glass"),
    ("favorite_series", "favorite_series"),
    ("favorite_bus", "favorite_bus"),
    ("favorite_colour_scheme", "favorite_color_scheme"),
    ("favorite_颜色", "favorite_颜色"),
    # not a favorite's key: as written
    ("favorites", "favorites"),
    ("favoritism", "favoritism"),
    ("favor_x", "favor_x"),
    ("fav", "fav"),
    ("favorite_", "favorite_"),
    ("Home_City", "Home_City"),
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
        KeySynonym.objects.filter(team=team, key__in=["home", "workplace", "occupation"]).delete()
        KeySynonym.objects.create(team=team, domain="", synonym="company", key="employer_name")
        KeySynonym.objects.create(team=team, domain="", synonym="profession", key="job_kind")
    make_node(principal, type="fact", key="address", value_json="Berlin", title="address")
    _migrate()
    with scopes_disabled():
        synonyms = dict(KeySynonym.objects.filter(team=team, domain="").values_list("synonym", "key"))
    assert synonyms["home_city"] == "home" and synonyms["employer"] == "workplace"
    assert "address" not in synonyms  # the team stores memories under address: its lookups keep finding them
    assert synonyms["company"] == "employer_name" and synonyms["profession"] == "job_kind"  # the team's own
    assert "job_title" in synonyms
    _migrate()  # and again: nothing doubles
    with scopes_disabled():
        assert KeySynonym.objects.filter(team=team, synonym="home_city").count() == 1


def test_a_key_the_schema_controls_takes_the_schema_s_domain_when_none_is_sent(agent_client, principal):
    """A review's find: the agent's `allergies` and `allergy` went to domain general, where each key
    is one-valued (a second allergy replaced the first) and a forget of capture's `allergy` missed them."""
    said, = append(principal, "Remember that I'm allergic to peanuts and shellfish.", **CTX)
    capture()
    first = _propose(principal, said.pk, "allergies", "sesame", type="constraint")
    second = _propose(principal, said.pk, "allergy", "kiwi", type="constraint")
    assert first.accepted and second.accepted and second.superseded_id is None
    assert "domain set to 生活技能 (its schema has the key allergy)" in first.notes
    assert "key allergies → allergy" in first.notes
    assert sorted(_active("allergy")) == ["kiwi", "peanuts", "sesame", "shellfish"]
    assert {node.domain for node in Node.objects.filter(key="allergy")} == {"生活技能"}
    gone = agent_client.post("/api/v1/memory/forget", {**CTX, "key": "allergies", "mode": "soft", "reason": "asked",
                                                       "confirm": True}, format="json")
    assert gone.status_code == 200 and len(gone.json()["deleted_ids"]) == 4 and _active("allergy") == []


@pytest.mark.parametrize(("node", "domain", "key"), [
    ({"type": "fact", "key": "allergy"}, "general", "allergy"),  # no rule of that type: as before
    ({"type": "constraint", "key": "allergy", "domain": "health"}, "health", "allergy"),  # a domain sent is kept
    ({"type": "preference", "key": "dietary_restriction"}, "生活技能", "dietary_restriction"),
    ({"type": "preference", "key": "diet"}, "general", "diet"),  # one value: not the schema's many
])
def test_the_domain_is_inferred_only_from_a_rule_of_the_node_s_type(principal, node, domain, key):
    said, = append(principal, "Remember this.", **CTX)
    node = {**node}
    result = _propose(principal, said.pk, node.pop("key"), "x", **node)
    assert result.accepted and (result.node.domain, result.node.key) == (domain, key)


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


def test_a_value_said_again_in_other_case_or_spacing_is_a_repeat_not_a_new_version(principal):
    """A review's find: "green", "Green" and " green " each superseded the one before."""
    said, = append(principal, "Remember: my favorite color is green.", **CTX)
    first = _propose(principal, said.pk, "favorite_color", "green", type="preference")
    for value in ("Green", " green ", "GREEN."):
        again = _propose(principal, said.pk, "favorite_color", value, type="preference")
        assert (again.accepted, again.created, again.node.pk) == (True, False, first.node.pk), value
    assert Node.objects.filter(key="favorite_color").count() == 1
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
