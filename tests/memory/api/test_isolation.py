"""Every API endpoint under every kind of principal: another team's ids give 404 or nothing,
never data; anonymous and revoked keys get 401; a key limited to another workspace gets 403."""

import json

import pytest
from django.urls import URLPattern, get_resolver, reverse

from accounts.services import agent_key_create, agent_key_revoke
from memory.api import urls as api_urls
from memory.models import BudgetPolicy, LexiconSet, Message, UserProfile, UserProfileVersion
from memory.services.sessions import SessionRef
from memory.services.summaries import SummaryInput, summary_append
from memory.services.working_memory import working_memory_put
from memory.working_models import WorkingMemory
from tests.conftest import key_client
from tests.helpers import append, make_node

SECRET = "SECRET_香菜_acme"
CTX = {"workspace_id": "w1", "user_id": "u1", "session_id": "s1"}


@pytest.fixture
def world(principal):
    """Team acme's data in workspace w1: a message, a summary, a node, a retrieval, the session's
    working memory, a profile, budget policies."""
    message = append(principal, f"my note {SECRET}", **CTX)[0]
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "w1", "u1"), summary=SECRET))
    working_memory_put(principal=principal, ref=SessionRef("s1", "w1", "u1"),
                       data={"current_goal": SECRET, "references": {"它": SECRET}})
    node = make_node(principal, scope="workspace", workspace_id="w1", type="fact", title=SECRET,
                     source_message_ids=[message.pk])
    # u1's profile document, written directly so that no user-scope node (which keys limited to
    # a workspace may read) carries the secret into the node listings below.
    UserProfile.objects.create(team=principal.team, user_id="u1", current_version=1)
    UserProfileVersion.objects.create(team=principal.team, user_id="u1", version=1, summary=SECRET, content=SECRET,
                                      reason="consolidate", actor="system:consolidation")
    # Policies of the team and of w1 (more generous than the defaults, so no probe below sees
    # less), marked so that a leak would show.
    BudgetPolicy.objects.create(team=principal.team, workspace_id="", top_n=10, updated_by=SECRET)
    BudgetPolicy.objects.create(team=principal.team, workspace_id="w1", max_chars=2000, updated_by=SECRET)
    lexicon = LexiconSet.objects.create(team=principal.team, workspace_id="w1", terms=[SECRET, "香菜"],
                                        terms_key="isolation", updated_by=SECRET)
    return {"message": message, "node": node, "lexicon": lexicon}


def requests_for(world, retrieval_id):
    node_id = world["node"].pk
    return {
        "api-messages": [("get", reverse("api-messages"), {**CTX}),
                         ("post", reverse("api-messages"), {**CTX, "role": "user", "content": "x"})],
        "api-session": [("delete", reverse("api-session", args=["s1"]) + "?workspace_id=w1&user_id=u1&mode=hard",
                         None)],
        "api-session-working-memory": [
            ("get", reverse("api-session-working-memory", args=["s1"]) + "?workspace_id=w1&user_id=u1", None),
            ("put", reverse("api-session-working-memory", args=["s1"]) + "?workspace_id=w1&user_id=u1",
             {"current_goal": "x"}),
            ("patch", reverse("api-session-working-memory", args=["s1"]) + "?workspace_id=w1&user_id=u1",
             {"slots": {"people": 2}})],
        "api-summaries": [("get", reverse("api-summaries"), {**CTX}),
                          ("post", reverse("api-summaries"), {**CTX, "summary": "x"})],
        "api-summary-latest": [("get", reverse("api-summary-latest"), {**CTX})],
        "api-context": [("post", reverse("api-context"), {**CTX, "query": "香菜 secret"})],
        "api-retrieval": [("get", reverse("api-retrieval", args=[retrieval_id]), None)],
        "api-retrieval-feedback": [("post", reverse("api-retrieval-feedback", args=[retrieval_id]),
                                    {"used_node_ids": []})],
        "api-kpis": [("get", reverse("api-kpis"), None), ("get", reverse("api-kpis"), {"workspace_id": "w1"})],
        "api-memory-search": [("post", reverse("api-memory-search"), {**CTX, "query_text": "secret 香菜"})],
        "api-memory-get": [("post", reverse("api-memory-get"), {"id": node_id})],
        "api-memory-propose": [("post", reverse("api-memory-propose"),
                                {**CTX, "operation": "supersede", "target_id": node_id, "node": {"title": "x"}})],
        "api-memory-forget": [("post", reverse("api-memory-forget"), {**CTX, "id": node_id, "confirm": True}),
                              ("post", reverse("api-memory-forget"), {**CTX, "scope": "workspace", "confirm": True})],
        "api-memory-extractions": [("post", reverse("api-memory-extractions"), {**CTX, "operations": [
            {"operation": "supersede", "target_id": node_id, "node": {"title": "x"}}]})],
        "api-tools": [("get", reverse("api-tools"), None)],
        "api-capture-stats": [("get", reverse("api-capture-stats"), None)],
        "api-nodes": [("get", reverse("api-nodes"), {"q": "secret"})],
        "api-node": [("get", reverse("api-node", args=[node_id]), None),
                     ("delete", reverse("api-node", args=[node_id]) + "?mode=hard", None)],
        "api-node-restore": [("post", reverse("api-node-restore", args=[node_id]), {})],
        "api-node-history": [("get", reverse("api-node-history", args=[node_id]), None)],
        "api-profile": [("get", reverse("api-profile", args=["u1"]), None),
                        ("get", reverse("api-profile", args=["u1"]), {"version": 1})],
        "api-profile-versions": [("get", reverse("api-profile-versions", args=["u1"]), None)],
        "api-profile-rollback": [("post", reverse("api-profile-rollback", args=["u1"]), {"version": 1})],
        "api-policies": [("get", reverse("api-policies"), None)],
        "api-policy-workspace": [("get", reverse("api-policy-workspace", args=["w1"]), None)],
        "api-instructions": [("get", reverse("api-instructions") + "?workspace_id=w1", None)],
        # Writes are for team admins (403 for agent keys): tests/memory/api/test_lexicon_api.py.
        "api-lexicon": [("get", reverse("api-lexicon"), None)],
        "api-lexicon-set": [("get", reverse("api-lexicon-set", args=[world["lexicon"].pk]), None)],
        "api-policy-simulate": [],  # team admins only (403 for agent keys): tests/memory/api/test_policy_simulation.py
        "api-export": [],  # team admins only (403 for agent keys): tests/memory/api/test_portability_api.py
        "api-import": [],  # team admins only, likewise
        "api-schema": [],  # public: the OpenAPI document holds no team data
        "api-unknown": [],  # any other path: a JSON 404 for everyone (test_unknown_api_paths…)
    }


def send(client, method, url, body):
    if method in ("get", "delete"):
        return getattr(client, method)(url, body or {})
    return getattr(client, method)(url, data=json.dumps(body or {}), content_type="application/json")


def test_every_api_url_has_an_isolation_entry(world):
    names = {pattern.name for pattern in api_urls.urlpatterns if isinstance(pattern, URLPattern)}
    assert names == set(requests_for(world, 1))


def test_another_team_never_sees_this_teams_data(agent_client, other_agent_client, world):
    retrieval_id = agent_client.post(reverse("api-context"), {**CTX, "query": "x"}, format="json").json()["retrieval_id"]
    for name, calls in requests_for(world, retrieval_id).items():
        for method, url, body in calls:
            response = send(other_agent_client, method, url, body)
            assert response.status_code in (200, 201, 400, 404), (name, response.status_code)
            assert SECRET not in response.content.decode(), (name, response.content)
            assert str(world["message"].pk) not in json.dumps(response.json().get("used_memory_ids", [])), name
    world["node"].refresh_from_db()
    assert world["node"].status == "active" and world["node"].title == SECRET  # nothing another team sent changed it
    assert Message.objects.filter(pk=world["message"].pk).exists()  # its forget reached its own "s1" only
    mine = WorkingMemory.objects.get(team=world["node"].team)
    assert (mine.current_goal, mine.version) == (SECRET, 1)  # its writes reached its own "s1" only


@pytest.mark.parametrize("auth", [None, "Bearer nonsense", "Bearer mk_abcdef123456_wrong", "Basic Zm9vOmJhcg=="])
def test_missing_or_bad_credentials_get_401_everywhere(world, client, auth):
    headers = {"HTTP_AUTHORIZATION": auth} if auth else {}
    for name, calls in requests_for(world, 1).items():
        for method, url, body in calls:
            response = getattr(client, method)(url, body or {}, content_type="application/json", **headers) \
                if method in ("post", "put", "patch") else getattr(client, method)(url, body or {}, **headers)
            assert response.status_code == 401, (name, auth, response.status_code)
            assert response.json()["error"]["code"] == "unauthenticated"


def test_a_revoked_key_gets_401(team, world):
    key, raw = agent_key_create(team=team, name="soon revoked")
    client = key_client(raw)
    assert client.get(reverse("api-nodes")).status_code == 200
    agent_key_revoke(key=key)
    response = client.get(reverse("api-nodes"))
    assert response.status_code == 401 and "revoked" in response.json()["error"]["message"]


def test_a_key_limited_to_another_workspace_is_refused(team, world):
    client = key_client(agent_key_create(team=team, name="w2 only", workspace_ids=["w2"])[1])
    for name in ("api-messages", "api-summaries", "api-summary-latest", "api-context", "api-memory-search",
                 "api-session-working-memory", "api-policies", "api-policy-workspace",
                 "api-kpis"):
        for method, url, body in requests_for(world, 1)[name]:
            response = send(client, method, url, body)
            assert response.status_code == 403, (name, response.status_code)
    for name in ("api-node", "api-node-history", "api-memory-get"):
        method, url, body = requests_for(world, 1)[name][0]
        assert send(client, method, url, {**(body or {}), "workspace_id": "w2"}).status_code == 404, name
    method, url, body = requests_for(world, 1)["api-retrieval-feedback"][0]
    assert send(client, method, url, body).status_code == 404
    listing = client.get(reverse("api-nodes"), {"q": "secret", "workspace_id": "w2"})
    assert listing.status_code == 200 and listing.json()["results"] == []


def test_a_key_with_an_empty_workspace_list_is_denied_everything(team, world):
    client = key_client(agent_key_create(team=team, name="nothing", workspace_ids=[])[1])
    assert client.post(reverse("api-memory-search"), {**CTX, "query_text": "secret"}, format="json").status_code == 403
    assert client.post(reverse("api-memory-search"), {"query_text": "secret"}, format="json").status_code == 403
    assert client.get(reverse("api-nodes")).status_code == 403
    assert client.get(reverse("api-nodes"), {"workspace_id": "w1"}).status_code == 403


def test_search_scoped_to_a_workspace_returns_no_other_workspace_items(agent_client, principal, world):
    make_node(principal, scope="workspace", workspace_id="w2", type="fact", title="PROJECT_P in w2")
    append(principal, "PROJECT_P discussed in w2", workspace_id="w2", user_id="u1", session_id="s1")
    make_node(principal, scope="workspace", workspace_id="w1", type="fact", title="PROJECT_P in w1")
    append(principal, "PROJECT_P discussed in w1", **CTX)
    body = agent_client.post(reverse("api-context"), {**CTX, "query": "project_p"}, format="json").json()
    assert "w2" not in body["block"]
    for section in ("relevant_nodes", "workspace_memory", "relevant_messages", "recent_messages"):
        assert all(item.get("workspace_id") in ("w1", "") for item in body[section]), section
    search = agent_client.post(reverse("api-memory-search"), {**CTX, "query_text": "project_p"}, format="json").json()
    assert [n["title"] for n in search["relevant"]] == ["PROJECT_P in w1"]


def test_a_logged_in_viewer_may_read_but_not_write_through_the_api(client, viewer, world):
    client.force_login(viewer)
    assert client.get(reverse("api-nodes")).status_code == 200
    response = client.post(reverse("api-memory-propose"), {**CTX, "operation": "create",
                                                           "node": {"scope": "session", "type": "fact", "title": "x"}},
                           content_type="application/json")
    assert response.status_code == 403


def test_a_logged_in_user_of_another_team_sees_nothing(client, outsider, world):
    client.force_login(outsider)
    assert client.get(reverse("api-node", args=[world["node"].pk])).status_code == 404
    assert SECRET not in client.get(reverse("api-nodes")).content.decode()


def test_session_authenticated_writes_need_csrf(world, editor):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(editor)
    response = client.post(reverse("api-messages"), {**CTX, "role": "user", "content": "x"},
                           content_type="application/json")
    assert response.status_code == 403


def test_all_api_routes_are_under_api_v1():
    api = [p for p in get_resolver().url_patterns if str(p.pattern) == "api/v1/"]
    assert api, "the agent API is mounted at /api/v1/"


def test_history_does_not_follow_a_chain_into_a_workspace_the_key_cannot_read(team, principal):
    from memory.services.nodes import node_supersede, supersede_input

    old = make_node(principal, scope="user", user_id="u1", type="fact", title="user fact")
    node_supersede(principal=principal, old_node_id=old.pk, data=supersede_input(
        old, {"scope": "workspace", "title": "secret in B"}, {"workspace_id": "B"}))
    client = key_client(agent_key_create(team=team, name="A only", workspace_ids=["A"])[1])
    response = client.get(reverse("api-node-history", args=[old.pk]), {"workspace_id": "A", "user_id": "u1"})
    assert response.status_code == 200
    assert "secret in B" not in response.content.decode()
    assert [n["id"] for n in response.json()["chain"]] == [old.pk]


def test_an_empty_workspace_limit_reads_no_user_or_global_memory_either(team, principal, admin_principal):
    make_node(principal, scope="user", user_id="u1", type="fact", title="user fact")
    make_node(admin_principal, scope="global", type="fact", title="team fact")
    empty = key_client(agent_key_create(team=team, name="nothing", workspace_ids=[])[1])
    assert empty.get(reverse("api-nodes")).status_code == 403
    limited = key_client(agent_key_create(team=team, name="w1", workspace_ids=["w1"])[1])
    listed = limited.get(reverse("api-nodes"), {"workspace_id": "w1", "user_id": "u1"}).json()["results"]
    assert sorted(n["title"] for n in listed) == ["team fact", "user fact"]


def test_a_limited_key_cannot_read_a_retrieval_made_without_a_workspace(team, agent_client):
    retrieval_id = agent_client.post(reverse("api-context"), {"session_id": "s9", "query": "x"},
                                     format="json").json()["retrieval_id"]
    limited = key_client(agent_key_create(team=team, name="w1", workspace_ids=["w1"])[1])
    assert limited.get(reverse("api-retrieval", args=[retrieval_id])).status_code == 404


@pytest.mark.parametrize("path", ["/api/v1/nope", "/api/v1/nodes/-1", "/api/v1/nodes/99999999999999999999",
                                  "/api/v1/retrievals/0", "/api/v2/context"])
def test_unknown_api_paths_and_out_of_range_ids_are_json_404s(client, agent_client, path):
    for who in (client, agent_client):
        response = who.get(path)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


def test_the_bearer_scheme_name_is_case_insensitive(agent_key):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"bearer {agent_key[1]}")
    assert client.get(reverse("api-nodes")).status_code == 200


def test_memory_get_naming_a_workspace_outside_the_keys_limit_is_refused(team, principal):
    """A newcomer's key limited to "home" read a user's memory with workspace_id "school" by its
    id (200), where search, context and forget said 403; user memory it still reads naming its
    own workspace, as it follows the user across workspaces."""
    node = make_node(principal, scope="user", user_id="bart", type="constraint", title="对花生过敏")
    client = key_client(agent_key_create(team=team, name="home only", workspace_ids=["home"])[1])
    refused = client.post(reverse("api-memory-get"), {"workspace_id": "school", "user_id": "bart", "id": node.pk},
                          format="json")
    assert refused.status_code == 403 and "school" in refused.json()["error"]["message"]
    allowed = client.post(reverse("api-memory-get"), {"workspace_id": "home", "user_id": "bart", "id": node.pk},
                          format="json")
    assert allowed.status_code == 200 and allowed.json()["title"] == "对花生过敏"
