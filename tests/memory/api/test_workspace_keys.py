"""A key limited to workspaces names one of them in every call (403 otherwise) and reads that
workspace's and its sessions' memory, plus user and global memory (README, R-TEN). A newcomer
found /nodes, /nodes/{id}, its history, memory_get by id and /capture/stats answering such a
key without a workspace, with user memory of users never seen there and team-wide job counts,
while search, messages and the KPIs said 403; and /nodes?workspace_id= disagreeing with the
unfiltered listing."""

import json

import pytest
from django.urls import reverse

from accounts.services import agent_key_create
from tests.conftest import key_client
from tests.helpers import append, make_node

PASS_WORKSPACE = "this key is limited to named workspaces; pass workspace_id"
U1 = {"user_id": "u1", "session_id": "s1"}


@pytest.fixture
def w1_client(team):
    return key_client(agent_key_create(team=team, name="w1 only", workspace_ids=["w1"])[1])


@pytest.fixture
def memories(principal, admin_principal):
    """Nodes of every scope in w1 and w2, for u1 and u2, by title."""
    made = {
        "w1 workspace": make_node(principal, scope="workspace", workspace_id="w1", type="fact"),
        "w2 workspace": make_node(principal, scope="workspace", workspace_id="w2", type="fact"),
        "w1 session of u2": make_node(principal, scope="session", workspace_id="w1", user_id="u2", session_id="s2",
                                      type="fact"),
        "w2 session of u1": make_node(principal, scope="session", workspace_id="w2", user_id="u1", session_id="s1",
                                      type="fact"),
        "u1 user": make_node(principal, scope="user", user_id="u1", type="fact"),
        "u2 user": make_node(principal, scope="user", user_id="u2", type="fact"),
        "team global": make_node(admin_principal, scope="global", type="fact"),
    }
    for title, node in made.items():
        type(node).objects.filter(pk=node.pk).update(title=title)
    return {title: node.pk for title, node in made.items()}


def calls_without_a_workspace(node_id: int) -> list[tuple[str, str, dict | None]]:
    """Every call a key limited to workspaces may make that needs a workspace, naming none."""
    node = str(node_id)
    return [
        ("get", reverse("api-messages"), U1),
        ("post", reverse("api-messages"), {**U1, "role": "user", "content": "x"}),
        ("get", reverse("api-session-working-memory", args=["s1"]) + "?user_id=u1", None),
        ("put", reverse("api-session-working-memory", args=["s1"]) + "?user_id=u1", {"current_goal": "x"}),
        ("patch", reverse("api-session-working-memory", args=["s1"]) + "?user_id=u1", {"current_goal": "x"}),
        ("delete", reverse("api-session", args=["s1"]) + "?user_id=u1", None),
        ("get", reverse("api-summaries"), U1),
        ("post", reverse("api-summaries"), {**U1, "summary": "x"}),
        ("get", reverse("api-summary-latest"), U1),
        ("post", reverse("api-context"), {**U1, "query": "x"}),
        ("post", reverse("api-memory-search"), {**U1, "query_text": "x"}),
        ("post", reverse("api-memory-get"), {"id": node_id}),
        ("post", reverse("api-memory-get"), {**U1, "id": node_id}),
        ("post", reverse("api-memory-get"), {**U1, "key": "k"}),
        ("post", reverse("api-memory-propose"), {**U1, "operation": "update", "target_id": node_id,
                                                 "node": {"title": "y"}, "explicit_user_intent": True}),
        ("post", reverse("api-memory-forget"), {"id": node_id, "confirm": True}),
        ("post", reverse("api-memory-extractions"), {**U1, "operations": [
            {"operation": "create", "node": {"scope": "session", "type": "fact", "title": "x"}}]}),
        ("get", reverse("api-kpis"), None),
        ("get", reverse("api-capture-stats"), None),
        ("get", reverse("api-nodes"), None),
        ("get", reverse("api-nodes"), {"user_id": "u1"}),
        ("get", reverse("api-node", args=[node]), None),
        ("get", reverse("api-node", args=[node]), {"user_id": "u1"}),
        ("delete", reverse("api-node", args=[node]), None),
        ("post", reverse("api-node-restore", args=[node]), {}),
        ("get", reverse("api-node-history", args=[node]), None),
        ("get", reverse("api-profile", args=["u1"]), None),
        ("get", reverse("api-profile-versions", args=["u1"]), None),
        ("post", reverse("api-profile-rollback", args=["u1"]), {"version": 1}),
        ("get", reverse("api-instructions"), None),
    ]


def send(client, method, url, body):
    if method in ("get", "delete"):
        return getattr(client, method)(url, body or {})
    return getattr(client, method)(url, data=json.dumps(body or {}), content_type="application/json")


@pytest.mark.parametrize("index", range(len(calls_without_a_workspace(1))))
def test_every_call_without_a_workspace_is_refused_with_the_same_message(w1_client, memories, index):
    method, url, body = calls_without_a_workspace(memories["u1 user"])[index]
    response = send(w1_client, method, url, body)
    assert response.status_code == 403, (method, url, response.content)
    assert response.json()["error"]["message"].endswith(PASS_WORKSPACE), (method, url)


def test_every_url_pattern_is_either_refused_without_a_workspace_or_listed_as_needing_none(memories):
    """A new endpoint must be added to one list or the other."""
    from django.urls import resolve

    refused = {resolve(url.split("?")[0]).url_name for _, url, _ in calls_without_a_workspace(memories["u1 user"])}
    # Records that carry their own workspace, read by id (404 outside the key's workspaces);
    # tool definitions and synonym sets (configuration, no memory); the policies' own 403;
    # admin-only endpoints; the public schema and the JSON 404.
    needing_none = {"api-retrieval", "api-retrieval-feedback", "api-tools", "api-lexicon", "api-lexicon-set",
                    "api-policies", "api-policy-workspace", "api-policy-simulate", "api-export", "api-import",
                    "api-schema", "api-unknown"}
    from memory.api import urls as api_urls

    assert refused | needing_none == {pattern.name for pattern in api_urls.urlpatterns}
    assert not refused & needing_none


@pytest.mark.parametrize("title", ["w2 workspace", "w2 session of u1", "u2 user"])
def test_by_id_a_node_outside_what_the_named_workspace_and_user_reach_is_not_found(w1_client, memories, title):
    who = {"workspace_id": "w1", "user_id": "u1"}
    node_id = memories[title]
    assert w1_client.get(reverse("api-node", args=[node_id]), who).status_code == 404
    assert w1_client.get(reverse("api-node-history", args=[node_id]), who).status_code == 404
    response = w1_client.post(reverse("api-memory-get"), {**who, "id": node_id}, format="json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("title", ["w1 workspace", "u1 user", "team global"])
def test_by_id_a_node_the_named_workspace_and_user_reach_is_read(w1_client, memories, title):
    who = {"workspace_id": "w1", "user_id": "u1"}
    node_id = memories[title]
    assert w1_client.get(reverse("api-node", args=[node_id]), who).json()["title"] == title
    assert [n["title"] for n in w1_client.get(reverse("api-node-history", args=[node_id]), who).json()["chain"]] == [title]
    assert w1_client.post(reverse("api-memory-get"), {**who, "id": node_id}, format="json").json()["title"] == title


def test_the_listing_names_the_workspace_and_user_it_reads_for(w1_client, memories):
    listed = w1_client.get(reverse("api-nodes"), {"workspace_id": "w1", "user_id": "u1"})
    assert listed.status_code == 200
    assert sorted(n["title"] for n in listed.json()["results"]) == [
        "team global", "u1 user", "w1 session of u2", "w1 workspace"]
    without_user = w1_client.get(reverse("api-nodes"), {"workspace_id": "w1"}).json()["results"]
    assert sorted(n["title"] for n in without_user) == ["team global", "w1 session of u2", "w1 workspace"]
    by_scope = w1_client.get(reverse("api-nodes"), {"workspace_id": "w1", "user_id": "u1", "scope": "user"})
    assert [n["title"] for n in by_scope.json()["results"]] == ["u1 user"]


def test_the_listing_of_a_workspace_outside_the_limit_is_refused(w1_client, memories):
    response = w1_client.get(reverse("api-nodes"), {"workspace_id": "w2"})
    assert response.status_code == 403 and "'w2'" in response.json()["error"]["message"]


def test_an_unrestricted_key_lists_and_reads_as_before(agent_client, memories):
    filtered = agent_client.get(reverse("api-nodes"), {"workspace_id": "w1"}).json()["results"]
    assert sorted(n["title"] for n in filtered) == ["w1 session of u2", "w1 workspace"]
    everything = agent_client.get(reverse("api-nodes")).json()["results"]
    assert len(everything) == len(memories)
    assert agent_client.get(reverse("api-node", args=[memories["u2 user"]])).json()["title"] == "u2 user"
    assert agent_client.post(reverse("api-memory-get"), {"id": memories["w2 workspace"]},
                             format="json").json()["title"] == "w2 workspace"
    assert agent_client.get(reverse("api-capture-stats")).status_code == 200


def test_capture_stats_count_only_the_named_workspace(w1_client, agent_client, principal):
    append(principal, "remember tea", workspace_id="w1", session_id="a")
    append(principal, "remember coffee", workspace_id="w2", session_id="b")
    append(principal, "remember water", workspace_id="w2", session_id="c")
    assert w1_client.get(reverse("api-capture-stats"), {"workspace_id": "w1"}).json()["jobs"]["pending"] == 1
    assert agent_client.get(reverse("api-capture-stats"), {"workspace_id": "w2"}).json()["jobs"]["pending"] == 2
    assert agent_client.get(reverse("api-capture-stats")).json()["jobs"]["pending"] == 3
    assert w1_client.get(reverse("api-capture-stats"), {"workspace_id": "w2"}).status_code == 403
