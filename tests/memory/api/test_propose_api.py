import pytest
from django.urls import reverse

from memory.models import AuditEvent, Node, NodeStatus
from tests.helpers import append, make_node

URL = "/api/v1/memory/propose"
CONTEXT = {"workspace_id": "home", "user_id": "xiaoming", "session_id": "cook-1"}
AVOID = {"scope": "user", "domain": "生活技能", "category_path": ["生活技能", "做饭", "饮食偏好"], "type": "preference",
         "key": "avoid_ingredient", "value_json": "香菜", "title": "用户不吃香菜", "content": "推荐菜谱时避免香菜。",
         "confidence": 0.98, "importance": 0.9, "tags": ["忌口"], "entities": ["香菜"]}


def propose(client, **body):
    return client.post(URL, {**CONTEXT, **body}, format="json")


@pytest.fixture
def source(principal):
    return append(principal, "记住，我以后做饭不要香菜", **CONTEXT)[0]


def test_explicit_user_preference_is_stored_bound_to_its_source(agent_client, source):
    response = propose(agent_client, operation="create", explicit_user_intent=True, reason="用户明确要求",
                       node={**AVOID, "source_message_ids": [source.pk]})
    assert response.status_code == 201
    body = response.json()
    assert body["accepted"] is True and body["created"] is True
    node = Node.objects.get(pk=body["node_id"])
    assert (node.scope, node.user_id, node.workspace_id, node.explicit) == ("user", "xiaoming", "", True)
    assert node.source_message_ids == [source.pk]
    assert AuditEvent.objects.get(node_id=node.pk).reason == "用户明确要求"


def test_an_identical_proposal_returns_the_existing_node(agent_client, source):
    node = {**AVOID, "source_message_ids": [source.pk]}
    first = propose(agent_client, operation="create", explicit_user_intent=True, node=node).json()
    again = propose(agent_client, operation="create", explicit_user_intent=True, node=node)
    assert again.status_code == 200
    assert again.json()["node_id"] == first["node_id"] and again.json()["reason"] == "duplicate"
    assert Node.objects.count() == 1


@pytest.mark.parametrize("node,explicit,reason", [
    ({**AVOID, "source_message_ids": "SOURCE"}, False, "explicit_intent_required"),
    ({**AVOID}, True, "source_required"),
    ({**AVOID, "scope": "workspace"}, True, "type_not_allowed_in_scope"),
    ({**AVOID, "scope": "global"}, True, "global_admin_only"),
])
def test_policy_refusals_say_why_and_store_nothing(agent_client, source, node, explicit, reason):
    if node.get("source_message_ids") == "SOURCE":
        node = {**node, "source_message_ids": [source.pk]}
    response = propose(agent_client, operation="create", explicit_user_intent=explicit, node=node)
    assert response.status_code == 200
    assert response.json()["accepted"] is False and response.json()["reason"] == reason
    assert Node.objects.count() == 0


def test_session_scope_is_always_allowed(agent_client):
    response = propose(agent_client, operation="create",
                       node={"scope": "session", "type": "constraint", "title": "今天有点胃不舒服"})
    assert response.json()["accepted"] is True
    assert Node.objects.get().session.external_id == "cook-1"


def test_a_key_without_user_scope_is_refused_user_memory(team, source):
    from accounts.services import agent_key_create
    from tests.conftest import key_client

    client = key_client(agent_key_create(team=team, name="session only", writable_scopes=["session"])[1])
    response = propose(client, operation="create", explicit_user_intent=True,
                       node={**AVOID, "source_message_ids": [source.pk]})
    assert response.json() == {**response.json(), "accepted": False, "reason": "scope_not_allowed"}


def test_a_workspace_limited_key_can_supersede_user_memory_it_may_reach(team, principal):
    from accounts.services import agent_key_create
    from tests.conftest import key_client

    client = key_client(agent_key_create(team=team, name="w1", workspace_ids=["w1"])[1])
    ctx = {"workspace_id": "w1", "user_id": "xiaoming", "session_id": "cook-1"}
    message = append(principal, "记住，我不吃香菜", **ctx)[0]
    created = client.post(URL, {**ctx, "operation": "create", "explicit_user_intent": True,
                                "node": {**AVOID, "source_message_ids": [message.pk]}}, format="json").json()
    assert created["accepted"] is True
    superseded = client.post(URL, {**ctx, "operation": "supersede", "target_id": created["node_id"],
                                   "explicit_user_intent": True,
                                   "node": {"value_json": "少量香菜", "source_message_ids": [message.pk]}}, format="json")
    assert superseded.status_code == 201, superseded.content
    assert client.post(URL, {**ctx, "workspace_id": "w2", "operation": "supersede", "target_id": superseded.json()["node_id"],
                             "node": {"value_json": "x"}}, format="json").status_code == 403


def test_an_agent_cannot_change_global_memory_even_by_moving_it(team, agent_client):
    from accounts.principal import principal_for_key
    from accounts.services import agent_key_create

    admin = principal_for_key(agent_key_create(team=team, name="admin", kind="admin")[0])
    fact = make_node(admin, scope="global", type="fact", title="公司在上海")
    for node in ({"title": "公司在北京"}, {"scope": "workspace", "title": "公司在北京"}):
        response = propose(agent_client, operation="supersede", target_id=fact.pk, node=node)
        assert response.status_code == 200 and response.json()["reason"] == "global_admin_only"


def test_admin_key_may_write_global_memory(team):
    from accounts.services import agent_key_create
    from tests.conftest import key_client

    client = key_client(agent_key_create(team=team, name="admin", kind="admin")[1])
    response = propose(client, operation="create", node={"scope": "global", "type": "fact", "title": "公司在上海"})
    assert response.json()["accepted"] is True


def test_read_only_key_gets_403(readonly_agent_client):
    response = propose(readonly_agent_client, operation="create", node={"scope": "session", "type": "fact", "title": "x"})
    assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"


def test_supersede_then_the_old_one_cannot_be_superseded_again(agent_client, source):
    created = propose(agent_client, operation="create", explicit_user_intent=True,
                      node={**AVOID, "source_message_ids": [source.pk]}).json()
    change = {"value_json": "少量香菜", "title": "用户可接受少量香菜", "content": "香菜可以接受一点，但不要太多。",
              "source_message_ids": [source.pk]}
    first = propose(agent_client, operation="supersede", target_id=created["node_id"], explicit_user_intent=True,
                    node=change)
    assert first.status_code == 201
    assert first.json()["node"]["supersedes_id"] == created["node_id"]
    second = propose(agent_client, operation="supersede", target_id=created["node_id"], explicit_user_intent=True,
                     node=change)
    assert second.status_code == 409
    assert Node.objects.filter(status=NodeStatus.ACTIVE).count() == 1


def test_update_changes_text_in_place_but_not_the_value(agent_client, source):
    created = propose(agent_client, operation="create", explicit_user_intent=True,
                      node={**AVOID, "source_message_ids": [source.pk]}).json()
    ok = propose(agent_client, operation="update", target_id=created["node_id"], node={"content": "完全不要香菜"})
    assert ok.json()["node"]["version"] == 2 and ok.json()["node"]["content"] == "完全不要香菜"
    refused = propose(agent_client, operation="update", target_id=created["node_id"], node={"value_json": "葱"})
    assert refused.status_code == 400 and "supersede" in refused.json()["error"]["message"]
    stale = propose(agent_client, operation="update", target_id=created["node_id"], expected_version=1,
                    node={"content": "again"})
    assert stale.status_code == 409
    for fixed in ({"source_message_ids": [source.pk]}, {"parent_id": created["node_id"]}, {}):
        assert propose(agent_client, operation="update", target_id=created["node_id"], node=fixed).status_code == 400
    assert propose(agent_client, operation="create", target_id=created["node_id"], explicit_user_intent=True,
                   node={**AVOID, "source_message_ids": [source.pk]}).status_code == 400


@pytest.mark.parametrize("body", [
    {"operation": "create", "node": {"scope": "user"}},
    {"operation": "create", "node": {**AVOID, "confidence": "high"}},
    {"operation": "create", "node": {**AVOID, "tags": "忌口"}},
    {"operation": "create", "node": {**AVOID, "expires_at": "2030-01-01T00:00:00"}},
    {"operation": "create", "node": {**AVOID, "source_message_ids": [10**9]}},
    {"operation": "create", "node": {**AVOID, "value_json": {"note": "x\u0000y"}}},
    {"operation": "create", "node": {**AVOID, "value_json": {"text": "长" * 50_000}}},
    {"operation": "create", "node": {**AVOID, "colour": "red"}},
    {"operation": "supersede", "node": {"title": "x"}},
    {"operation": "explode", "node": AVOID},
])
def test_malformed_proposals_are_400_and_store_nothing(agent_client, body):
    response = propose(agent_client, explicit_user_intent=True, **body)
    assert response.status_code == 400, response.content
    assert Node.objects.count() == 0


def test_unknown_target_is_404(agent_client):
    assert propose(agent_client, operation="supersede", target_id=10**6, node={"title": "x"}).status_code == 404


def test_the_cooking_flow_through_get_then_supersede(agent_client, source):
    propose(agent_client, operation="create", explicit_user_intent=True, node={**AVOID, "source_message_ids": [source.pk]})
    found = agent_client.post(reverse("api-memory-get"), {**CONTEXT, "type": "preference", "key": "avoid_ingredient",
                                                          "value_json": "香菜"}, format="json").json()
    result = propose(agent_client, operation="supersede", target_id=found["id"], explicit_user_intent=True,
                     node={"value_json": "少量香菜", "content": "香菜可以接受一点，但不要太多。",
                           "source_message_ids": [source.pk]}).json()
    block = agent_client.post(reverse("api-context"), {**CONTEXT, "query": "今晚吃什么"}, format="json").json()["block"]
    assert "香菜可以接受一点" in block and "推荐菜谱时避免香菜" not in block
    assert result["node"]["key"] == "avoid_ingredient" and result["node"]["user_id"] == "xiaoming"
