"""What a newcomer's attempt to break the governance work found, each kept as a test of its
whole kind (issue 3 review)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.services import agent_key_create
from memory.models import Node, NodeStatus, Session
from tests.conftest import key_client
from tests.helpers import append, make_node

PROPOSE, FORGET = "/api/v1/memory/propose", "/api/v1/memory/forget"
CTX = {"workspace_id": "home", "user_id": "alice", "session_id": "a1"}
COOKING = {"domain": "生活技能", "type": "preference"}


@pytest.fixture
def said(principal):
    return append(principal, "记住这些", **CTX)[0].pk


def create(client, said, node, ctx=CTX, **extra):
    return client.post(PROPOSE, {**ctx, "operation": "create", "explicit_user_intent": True,
                                 "node": {"source_message_ids": [said], **node}, **extra}, format="json").json()


def active(key):
    return sorted(Node.objects.filter(key=key, status=NodeStatus.ACTIVE).values_list("value_json", flat=True), key=str)


def test_a_correction_of_a_many_valued_key_must_name_its_target(agent_client, said):
    for item in ("香菜", "蒜"):
        create(agent_client, said, {**COOKING, "key": "avoid_ingredient", "value_json": item, "title": item})
    body = create(agent_client, said, {**COOKING, "type": "correction", "key": "avoid_ingredient", "value_json": "葱",
                                       "title": "葱"})
    assert (body["accepted"], body["reason"]) == (False, "correction_ambiguous")
    assert active("avoid_ingredient") == ["蒜", "香菜"]


def test_a_correction_is_checked_as_the_type_it_corrects_and_keeps_one_node_per_value(agent_client, said):
    create(agent_client, said, {**COOKING, "key": "avoid_ingredient", "value_json": "香菜", "title": "香菜"})
    fixed = create(agent_client, said, {**COOKING, "type": "correction", "key": "avoid_ingredient", "value_json": "葱",
                                        "title": "葱"})
    assert fixed["reason"] == "corrected"
    again = create(agent_client, said, {**COOKING, "key": "avoid_ingredient", "value_json": "葱", "title": "葱"})
    assert again["reason"] == "duplicate" and again["node_id"] == fixed["node_id"]
    assert active("avoid_ingredient") == ["葱"]
    create(agent_client, said, {**COOKING, "key": "flavor_profile", "value_json": "少辣", "title": "少辣"})
    wrong = create(agent_client, said, {**COOKING, "type": "correction", "key": "flavor_profile", "value_json": 12345,
                                        "title": "x"})
    assert (wrong["accepted"], wrong["reason"]) == (False, "value_shape_mismatch")


def test_a_refused_correction_leaves_no_session_behind(agent_client):
    response = agent_client.post(PROPOSE, {"session_id": "ghost", "operation": "create", "node": {
        "scope": "session", "type": "correction", "key": "k", "value_json": 1, "title": "x",
        "source_message_ids": [999999]}}, format="json")
    assert response.status_code == 400
    assert not Session.objects.filter(external_id="ghost").exists()


def test_get_search_and_forget_understand_the_words_a_proposal_accepts(agent_client, said):
    create(agent_client, said, {**COOKING, "key": "disliked_ingredient", "value_json": "香菜", "title": "不吃香菜"})
    create(agent_client, said, {**COOKING, "key": "taste", "value_json": "少辣", "title": "口味少辣"})
    got = agent_client.post("/api/v1/memory/get", {**CTX, "domain": "生活技能", "key": "disliked_ingredient",
                                                   "value_json": "香菜"}, format="json")
    assert got.status_code == 200 and got.json()["key"] == "avoid_ingredient"
    found = agent_client.post("/api/v1/memory/search", {**CTX, "key": "taste", "value_json": "少辣"}, format="json")
    assert [node["value_json"] for node in found.json()["exact"]] == [{"spicy": "low"}]
    gone = agent_client.post(FORGET, {**CTX, "domain": "生活技能", "key": "disliked_ingredient", "value_json": "香菜"},
                             format="json").json()
    assert len(gone["deleted_ids"]) == 1 and active("avoid_ingredient") == []


def test_a_users_own_statement_defaults_to_their_memory_not_the_workspace(agent_client, principal, said):
    body = create(agent_client, said, {"domain": "生活技能", "type": "constraint", "key": "allergy", "value_json": "花生",
                                       "title": "用户对花生过敏"})
    node = Node.objects.get(pk=body["node_id"])
    assert (node.scope, node.user_id, node.workspace_id) == ("user", "alice", "")
    bob = {"workspace_id": "home", "user_id": "bob", "session_id": "b1"}
    append(principal, "今晚吃什么", **bob)
    block = agent_client.post("/api/v1/context", {**bob, "query": "晚饭 花生"}, format="json").json()["block"]
    assert "花生过敏" not in block


def test_a_controlled_domain_refuses_unknown_keys_of_every_type_outside_the_session(agent_client, said):
    body = create(agent_client, said, {"domain": "生活技能", "type": "fact", "key": "flavor_profile",
                                       "value_json": "重辣", "title": "口味重辣"})
    assert (body["accepted"], body["reason"]) == (False, "key_not_in_schema")
    session = create(agent_client, said, {"domain": "生活技能", "type": "fact", "scope": "session", "key": "stove",
                                          "value_json": "gas", "title": "燃气灶"})
    assert session["accepted"] is True


@pytest.mark.parametrize("text,value", [
    ("less spicy", {"spicy": "low"}), ("Less Oil and less spicy", {"oil": "low", "spicy": "low"}),
    ("少油、少辣", {"oil": "low", "spicy": "low"}), ("ＬＥＳＳ ＳＰＩＣＹ", {"spicy": "low"}),
])
def test_value_rules_match_english_and_chinese_phrases(agent_client, said, text, value):
    body = create(agent_client, said, {**COOKING, "key": "flavor_profile", "value_json": text, "title": text})
    assert body["accepted"] is True, body
    assert Node.objects.get(pk=body["node_id"]).value_json == value


@pytest.mark.parametrize("title", ["从今天开始我不吃香菜了", "From today on, Caroline is vegetarian",
                                   "以后每天晚上都不吃辣", "Starting today I run every morning"])
def test_lasting_changes_that_start_now_are_not_temporary(agent_client, said, title):
    body = create(agent_client, said, {"type": "fact", "scope": "user", "key": "habit", "title": title})
    assert body["accepted"] is True, body


def test_the_readme_allergy_example_is_stored(agent_client, said):
    body = agent_client.post(PROPOSE, {
        "operation": "create", **CTX, "explicit_user_intent": True, "reason": "the user asked to remember it",
        "node": {"scope": "user", "type": "constraint", "domain": "生活技能", "key": "allergy", "value_json": "花生",
                 "title": "用户对花生过敏", "content": "推荐菜谱时不要用花生。", "source_message_ids": [said]}},
        format="json").json()
    assert body["accepted"] is True and body["created"] is True


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete", "get"])
@pytest.mark.parametrize("path", ["/api/v1", "/api"])
def test_the_api_root_without_a_slash_is_a_json_404_for_every_method(agent_client, method, path):
    response = getattr(agent_client, method)(path)
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("session_id", [".", ".."])
def test_dot_ids_are_refused_because_they_name_paths(agent_client, session_id):
    response = agent_client.post("/api/v1/messages", {"session_id": session_id, "role": "user", "content": "x"},
                                 format="json")
    assert response.status_code == 400 and "session_id" in response.json()["error"]["fields"]


def test_forget_by_id_stays_within_the_named_owner_and_selector(agent_client, principal, said):
    alices = make_node(principal, user_id="alice", key="secret", value_json="x", title="alice's")
    bob = {"user_id": "bob", "session_id": "b1"}
    assert agent_client.post(FORGET, {**bob, "id": alices.pk, "mode": "hard", "confirm": True},
                             format="json").status_code == 404
    assert agent_client.post(FORGET, {**CTX, "id": alices.pk, "key": "other", "confirm": True},
                             format="json").status_code == 404
    assert Node.objects.filter(pk=alices.pk, status="active").exists()
    done = agent_client.post(FORGET, {**CTX, "id": alices.pk, "key": "secret"}, format="json").json()
    assert done["deleted_ids"] == [alices.pk]


def test_a_hard_forget_asks_about_every_version_it_will_erase(agent_client, principal, said):
    old = make_node(principal, user_id="alice", key="city", value_json="berlin", title="berlin")
    new = agent_client.post(PROPOSE, {**CTX, "operation": "supersede", "target_id": old.pk, "explicit_user_intent": True,
                                      "node": {"value_json": "munich", "title": "munich", "source_message_ids": [said]}},
                            format="json").json()["node_id"]
    ask = agent_client.post(FORGET, {**CTX, "id": new, "mode": "hard"}, format="json").json()
    assert ask["candidate_count"] == 2 and {c["id"] for c in ask["candidates"]} == {old.pk, new}


def test_an_already_expired_value_is_refused_instead_of_retiring_the_current_one(agent_client, said):
    create(agent_client, said, {"type": "fact", "scope": "user", "key": "city", "value_json": "berlin", "title": "b"})
    past = (timezone.now() - timedelta(days=1)).isoformat()
    response = agent_client.post(PROPOSE, {**CTX, "operation": "create", "explicit_user_intent": True, "node": {
        "type": "fact", "scope": "user", "key": "city", "value_json": "paris", "title": "p", "expires_at": past,
        "source_message_ids": [said]}}, format="json")
    assert response.status_code == 400 and "node.expires_at" in response.json()["error"]["fields"]
    assert active("city") == ["berlin"]


def test_a_parent_in_a_workspace_the_key_cannot_read_looks_absent(team, principal):
    office = make_node(principal, scope="workspace", workspace_id="office", type="fact", title="office plan")
    client = key_client(agent_key_create(team=team, name="home only", workspace_ids=["home"])[1])
    response = client.post(PROPOSE, {"workspace_id": "home", "operation": "create", "node": {
        "scope": "workspace", "type": "fact", "title": "child", "parent_id": office.pk}}, format="json")
    assert response.status_code == 400 and "parent_id" in response.json()["error"]["fields"]


def test_a_node_of_a_forgotten_session_cannot_be_restored(agent_client, principal):
    node = make_node(principal, scope="session", session_id="a1", workspace_id="home", user_id="alice", title="tmp")
    agent_client.delete("/api/v1/sessions/a1?workspace_id=home&user_id=alice&mode=soft")
    node.refresh_from_db()
    assert node.status == "deleted"
    assert agent_client.post(f"/api/v1/nodes/{node.pk}/restore", {}, format="json").status_code == 409


def test_a_blank_key_is_refused_not_turned_into_a_keyless_node(agent_client, said):
    response = agent_client.post(PROPOSE, {**CTX, "operation": "create", "node": {
        "scope": "session", "type": "fact", "key": " ", "title": "x"}}, format="json")
    assert response.status_code == 400 and Node.objects.count() == 0


@pytest.mark.parametrize("title", ["记住我的银行卡号是6222020000000000000", "记住我的手机号 13800138000",
                                   "My password is hunter2", "身份证 11010519491231002X"])
def test_secrets_and_identifiers_need_confirmation_beyond_the_session(agent_client, said, title):
    body = create(agent_client, said, {"type": "fact", "scope": "user", "key": "k", "title": title})
    assert (body["accepted"], body["reason"]) == (False, "sensitive_needs_confirmation")
    assert Node.objects.count() == 0
    confirmed = create(agent_client, said, {"type": "fact", "scope": "user", "key": "k", "title": title}, confirm=True)
    assert confirmed["accepted"] is True
