"""GET /api/v1/profiles/{user_id}, …/versions and POST …/rollback (seed 004 L2; R-API)."""

import pytest
from django.urls import reverse

from accounts.services import agent_key_create
from memory.capture.consolidate import profile_consolidate
from memory.models import AuditEvent, UserProfileVersion
from tests.conftest import key_client
from tests.helpers import make_node


@pytest.fixture
def profile(team, principal):
    """u1's profile in two versions: 8 memories, then one more (in Chinese)."""
    for index in range(8):
        make_node(principal, type="fact", title=f"note {index}", importance=0.5)
    profile_consolidate(team=team, user_id="u1")
    make_node(principal, title="用户不吃香菜", content="推荐菜谱时避免香菜。", importance=0.9)
    return profile_consolidate(team=team, user_id="u1", force=True).version


def test_the_current_version_is_served(agent_client, profile):
    body = agent_client.get(reverse("api-profile", args=["u1"])).json()
    assert body["version"] == 2 and body["reason"] == "consolidate" and body["user_id"] == "u1"
    assert body["content"].startswith("## general\n- 用户不吃香菜: 推荐菜谱时避免香菜。\n- note 7")
    assert body["summary"].startswith("用户不吃香菜; note 7")
    assert body["created_at"].endswith("Z") and len(body["source_node_ids"]) == 9
    assert body["changed_since_layout"] is None  # every memory it names holds


def test_the_current_version_is_served_as_it_holds_now_and_the_stored_one_as_written(agent_client, principal, profile):
    # A mem0 or Zep user reads the profile after a correction: not the corrected value.
    from memory.services.nodes import node_delete, node_supersede, supersede_input

    coriander = UserProfileVersion.objects.get(user_id="u1", version=2).lines[0]["node_id"]
    nodes = {node.title: node for node in profile_nodes(principal)}
    newer = node_supersede(principal=principal, old_node_id=coriander, data=supersede_input(
        nodes["用户不吃香菜"], {"title": "用户可接受少量香菜"}, {}))
    node_delete(principal=principal, node_id=nodes["note 7"].pk, mode="soft")
    body = agent_client.get(reverse("api-profile", args=["u1"])).json()
    assert body["summary"].startswith("用户可接受少量香菜; note 6") and "不吃香菜" not in body["content"]
    assert body["changed_since_layout"] == {"replaced": [[coriander, newer.pk]], "edited": [],
                                            "left_out": [nodes["note 7"].pk]}
    stored = agent_client.get(reverse("api-profile", args=["u1"]), {"version": 2}).json()
    assert stored["summary"].startswith("用户不吃香菜; note 7") and stored["changed_since_layout"] is None


def profile_nodes(principal):
    from memory.models import Node

    return Node.objects.filter(team=principal.team, user_id="u1", scope="user")


def test_an_earlier_version_is_served_when_asked_for(agent_client, profile):
    body = agent_client.get(reverse("api-profile", args=["u1"]), {"version": 1}).json()
    assert body["version"] == 1 and "香菜" not in body["content"]


def test_a_user_without_a_profile_gets_404(agent_client, profile):
    response = agent_client.get(reverse("api-profile", args=["u2"]))
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert agent_client.get(reverse("api-profile", args=["u1"]), {"version": 3}).status_code == 404


def test_versions_are_listed_newest_first_without_content(agent_client, profile):
    body = agent_client.get(reverse("api-profile-versions", args=["u1"])).json()
    assert [item["version"] for item in body["results"]] == [2, 1]
    assert "content" not in body["results"][0] and body["results"][0]["content_chars"] == len(profile.content)


def test_versions_page_with_a_cursor(agent_client, profile):
    first = agent_client.get(reverse("api-profile-versions", args=["u1"]), {"limit": 1}).json()
    second = agent_client.get(first["next"]).json()
    assert [item["version"] for item in first["results"] + second["results"]] == [2, 1]


def test_rollback_appends_a_copy_of_the_version_named(agent_client, profile):
    response = agent_client.post(reverse("api-profile-rollback", args=["u1"]), {"version": 1, "reason": "bad merge"},
                                 format="json")
    assert response.status_code == 201
    body = response.json()
    first = UserProfileVersion.objects.get(user_id="u1", version=1)
    assert (body["version"], body["reason"], body["rolled_back_from"]) == (3, "rollback", 1)
    assert (body["summary"], body["content"]) == (first.summary, first.content)
    assert agent_client.get(reverse("api-profile", args=["u1"])).json()["version"] == 3
    assert UserProfileVersion.objects.filter(user_id="u1").count() == 3
    event = AuditEvent.objects.filter(event_type="memory.profile.versioned").latest("pk")
    assert event.actor.startswith("key:") and event.payload["note"] == "bad merge"


@pytest.mark.parametrize("body", [{}, {"version": "1"}, {"version": 0}, {"version": 1, "extra": True}])
def test_a_bad_rollback_body_is_a_400(agent_client, profile, body):
    response = agent_client.post(reverse("api-profile-rollback", args=["u1"]), body, format="json")
    assert response.status_code == 400


def test_rolling_back_to_a_missing_version_is_a_404(agent_client, profile):
    response = agent_client.post(reverse("api-profile-rollback", args=["u1"]), {"version": 7}, format="json")
    assert response.status_code == 404
    assert UserProfileVersion.objects.filter(user_id="u1").count() == 2


def test_rollback_needs_the_write_right(readonly_agent_client, client, viewer, profile):
    url = reverse("api-profile-rollback", args=["u1"])
    assert readonly_agent_client.post(url, {"version": 1}, format="json").status_code == 403
    client.force_login(viewer)
    assert client.get(reverse("api-profile", args=["u1"])).status_code == 200
    assert client.post(url, {"version": 1}, content_type="application/json").status_code == 403
    assert UserProfileVersion.objects.filter(user_id="u1").count() == 2


def test_rollback_needs_the_right_to_write_user_memory(team, profile):
    session_only = key_client(agent_key_create(team=team, name="session only", writable_scopes=["session"])[1])
    response = session_only.post(reverse("api-profile-rollback", args=["u1"]), {"version": 1}, format="json")
    assert response.status_code == 403


def test_another_team_gets_404_and_nothing(other_agent_client, profile):
    assert other_agent_client.get(reverse("api-profile", args=["u1"])).status_code == 404
    assert other_agent_client.get(reverse("api-profile-versions", args=["u1"])).json()["results"] == []
    response = other_agent_client.post(reverse("api-profile-rollback", args=["u1"]), {"version": 1}, format="json")
    assert response.status_code == 404
    assert UserProfileVersion.objects.filter(user_id="u1").count() == 2


def test_a_key_with_an_empty_workspace_list_reads_no_profile(team, profile):
    """It can name no workspace of its own, so every profile call is refused (README: a key
    limited to workspaces names one of them in every call)."""
    empty = key_client(agent_key_create(team=team, name="nothing", workspace_ids=[])[1])
    for query in ({}, {"workspace_id": "w1"}):
        assert empty.get(reverse("api-profile", args=["u1"]), query).status_code == 403
        assert empty.get(reverse("api-profile-versions", args=["u1"]), query).status_code == 403
        assert empty.post(reverse("api-profile-rollback", args=["u1"]), {"version": 1, **query},
                          format="json").status_code == 403


def test_user_ids_may_hold_slashes_and_bad_ones_are_a_400(team, principal, agent_client):
    for index in range(8):
        make_node(principal, type="fact", title=f"note {index}", user_id="org/42")
    profile_consolidate(team=team, user_id="org/42")
    assert agent_client.get(reverse("api-profile", args=["org/42"])).json()["user_id"] == "org/42"
    assert agent_client.get(reverse("api-profile-versions", args=["org/42"])).json()["results"][0]["version"] == 1
    response = agent_client.get("/api/v1/profiles/%20padded%20")
    assert response.status_code == 400 and "user_id" in response.json()["error"]["fields"]
