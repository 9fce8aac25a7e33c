"""The synonym lexicon over HTTP (seed 004 BusinessLexicon; R-QUERY, R-API): any key of the team
reads, admins write, every write is audited with its change, bad input is a 400 in the one
error shape and another team's set is a 404."""

import json

import pytest
from django.urls import reverse

from accounts.services import agent_key_create
from memory import limits
from memory.models import AuditEvent, LexiconSet
from tests.conftest import key_client

LIST = reverse("api-lexicon")


def one(set_id: int) -> str:
    return reverse("api-lexicon-set", args=[set_id])


@pytest.fixture
def admin_client(team):
    return key_client(agent_key_create(team=team, name="admin", kind="admin")[1])


@pytest.fixture
def other_admin_client(other_team):
    return key_client(agent_key_create(team=other_team, name="b admin", kind="admin")[1])


@pytest.fixture
def created(admin_client):
    response = admin_client.post(LIST, {"terms": ["過敏", " 敏感 ", "Allergy"]}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_an_admin_adds_a_set_stored_normalised_and_audited(created, team):
    assert created["terms"] == ["过敏", "敏感", "allergy"] and created["workspace_id"] == ""
    event = AuditEvent.objects.get(team=team, event_type="memory.lexicon.created")
    assert event.payload == {"before": None, "after": {"id": created["id"], "workspace_id": "",
                                                        "terms": ["过敏", "敏感", "allergy"]}}
    assert event.actor.startswith("key:")


def test_any_key_of_the_team_reads_the_sets(created, agent_client, readonly_agent_client):
    for client in (agent_client, readonly_agent_client):
        body = client.get(LIST).json()
        assert [item["terms"] for item in body["results"]] == [created["terms"]] and body["next"] is None
        assert client.get(one(created["id"])).json()["terms"] == created["terms"]


def test_an_agent_key_may_not_write(created, agent_client):
    assert agent_client.post(LIST, {"terms": ["a1", "b1"]}, format="json").status_code == 403
    response = agent_client.put(one(created["id"]), {"terms": ["a1", "b1"]}, format="json")
    assert response.status_code == 403 and response.json()["error"]["code"]
    assert agent_client.delete(one(created["id"])).status_code == 403
    assert LexiconSet.objects.get(pk=created["id"]).terms == created["terms"]


def test_put_replaces_and_patch_changes_what_is_sent_each_audited(created, admin_client, team):
    response = admin_client.put(one(created["id"]), {"terms": ["过敏", "敏感"], "workspace_id": "w1"}, format="json")
    assert response.json()["terms"] == ["过敏", "敏感"] and response.json()["workspace_id"] == "w1"
    response = admin_client.patch(one(created["id"]), {"terms": ["过敏", "过敏症"]}, format="json")
    assert response.json() | {"updated_at": None} == response.json() | {
        "terms": ["过敏", "过敏症"], "workspace_id": "w1", "updated_at": None}
    events = AuditEvent.objects.filter(team=team, event_type="memory.lexicon.updated").order_by("pk")
    assert [event.payload["after"]["terms"] for event in events] == [["过敏", "敏感"], ["过敏", "过敏症"]]
    assert events[0].payload["before"]["workspace_id"] == "" and events[0].workspace_id == "w1"


def test_delete_removes_the_set_and_is_audited(created, admin_client, team):
    assert admin_client.delete(one(created["id"])).status_code == 204
    assert not LexiconSet.objects.filter(pk=created["id"]).exists()
    event = AuditEvent.objects.get(team=team, event_type="memory.lexicon.deleted")
    assert event.payload["before"]["terms"] == created["terms"] and event.payload["after"] is None
    assert admin_client.get(one(created["id"])).status_code == 404


def test_another_teams_set_is_404_for_every_method(created, other_admin_client):
    url = one(created["id"])
    assert other_admin_client.get(url).status_code == 404
    assert other_admin_client.put(url, {"terms": ["a1", "b1"]}, format="json").status_code == 404
    assert other_admin_client.patch(url, {"terms": ["a1", "b1"]}, format="json").status_code == 404
    assert other_admin_client.delete(url).status_code == 404
    assert other_admin_client.get(LIST).json()["results"] == []
    assert LexiconSet.objects.get(pk=created["id"]).terms == created["terms"]


@pytest.mark.parametrize(("terms", "says"), [
    ([], "2–32 terms"),
    (["过敏"], "2–32 terms"),
    (["过敏", "  "], "is empty"),
    (["过敏", "過敏"], "repeats term 1"),
    (["Allergy", "ALLERGY"], "repeats term 1"),
    (["过敏", "敏\x00感"], "NUL"),
    (["过敏", "敏\ud800感"], "lone surrogate"),
    (["过敏", "敏\x01感"], "control characters"),
    (["过敏", "敏\x7f感"], "control characters"),
    (["过敏", "x" * (limits.LEXICON_TERM_MAX + 1)], "more than 64 characters"),
    (["过敏", "the"], "no searchable word"),
    (["过敏", "!!!"], "no searchable word"),
    ([f"term{i}" for i in range(limits.LEXICON_TERMS_MAX + 1)], "32"),
    (["过敏", 12], "string"),
    ("过敏, 敏感", "list"),
])
def test_bad_terms_are_a_400_in_the_one_error_shape_and_store_nothing(admin_client, terms, says):
    # ASCII JSON: a lone surrogate travels as its \u escape, as a client would send it.
    response = admin_client.post(LIST, json.dumps({"terms": terms}), content_type="application/json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert set(error) >= {"code", "message"} and says.lower() in str(error).lower()
    assert not LexiconSet.objects.exists() and not AuditEvent.objects.filter(event_type__startswith="memory.lexicon")


def test_the_same_set_twice_at_one_level_is_a_400_but_another_level_is_fine(created, admin_client):
    response = admin_client.post(LIST, {"terms": ["allergy", "敏感", "过敏"]}, format="json")
    assert response.status_code == 400 and "already" in response.json()["error"]["message"]
    assert admin_client.post(LIST, {"terms": ["allergy", "敏感", "过敏"], "workspace_id": "w1"},
                             format="json").status_code == 201


def test_unknown_fields_and_bad_workspaces_are_400(admin_client):
    assert admin_client.post(LIST, {"terms": ["a1", "b1"], "term": "x"}, format="json").status_code == 400
    assert admin_client.post(LIST, {"terms": ["a1", "b1"], "workspace_id": " w"}, format="json").status_code == 400
    assert admin_client.get(LIST, {"nope": "1"}).status_code == 400


def test_a_team_holds_at_most_the_limit_of_sets(admin_client, team, monkeypatch):
    monkeypatch.setattr(limits, "LEXICON_SETS_MAX", 1)
    assert admin_client.post(LIST, {"terms": ["a1", "b1"]}, format="json").status_code == 201
    response = admin_client.post(LIST, {"terms": ["a2", "b2"]}, format="json")
    assert response.status_code == 400 and "at most 1" in response.json()["error"]["message"]


def test_a_key_limited_to_workspaces_reads_team_wide_and_its_own_sets_only(admin_client, team):
    admin_client.post(LIST, {"terms": ["team1", "team2"]}, format="json")
    admin_client.post(LIST, {"terms": ["mine1", "mine2"], "workspace_id": "w1"}, format="json")
    hidden = admin_client.post(LIST, {"terms": ["else1", "else2"], "workspace_id": "w2"}, format="json").json()
    limited = key_client(agent_key_create(team=team, name="w1 only", workspace_ids=["w1"])[1])
    assert [item["terms"][0] for item in limited.get(LIST).json()["results"]] == ["team1", "mine1"]
    assert limited.get(one(hidden["id"])).status_code == 404


def test_the_list_pages_with_a_cursor_oldest_first(admin_client):
    for index in range(3):
        admin_client.post(LIST, {"terms": [f"a{index}", f"b{index}"]}, format="json")
    first = admin_client.get(LIST, {"limit": 2}).json()
    assert [item["terms"][0] for item in first["results"]] == ["a0", "a1"]
    second = admin_client.get(first["next"]).json()
    assert [item["terms"][0] for item in second["results"]] == ["a2"]


def test_a_dashboard_admin_may_write_with_csrf_and_a_viewer_may_only_read(client, admin, viewer):
    client.force_login(viewer)
    assert client.get(LIST).status_code == 200
    assert client.post(LIST, {"terms": ["a1", "b1"]}, content_type="application/json").status_code == 403
    client.force_login(admin)
    assert client.post(LIST, {"terms": ["a1", "b1"]}, content_type="application/json").status_code == 201


def test_a_patch_of_the_workspace_keeps_terms_changed_since_the_request_began(created, admin_client, monkeypatch):
    from memory.services import lexicon as service

    locked = service._get

    def changed_meanwhile(principal, set_id):
        # Another admin's PUT commits between this PATCH's first read and its lock.
        LexiconSet.objects.filter(pk=set_id).update(terms=["过敏", "过敏症"])
        return locked(principal, set_id)

    monkeypatch.setattr(service, "_get", changed_meanwhile)
    response = admin_client.patch(one(created["id"]), {"workspace_id": "w1"}, format="json")

    assert response.status_code == 200
    assert (response.json()["terms"], response.json()["workspace_id"]) == (["过敏", "过敏症"], "w1")
    assert LexiconSet.objects.get(pk=created["id"]).terms == ["过敏", "过敏症"]
