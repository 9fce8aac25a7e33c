"""The OpenAPI document states what the server accepts (R-API), by kind of rule found wanting
by fuzzing (tests/fuzz): closed request bodies, identity fields, Idempotency-Key where honoured."""

import json

import pytest
from django.urls import reverse

from accounts.services import agent_key_create
from memory.limits import IDENTITY_MAX
from tests.conftest import key_client

IDENTITY_NAMES = ("workspace_id", "user_id", "session_id")
CTX = {"workspace_id": "w1", "user_id": "u1", "session_id": "s1"}


@pytest.fixture
def schema(client, db):
    return json.loads(client.get(reverse("api-schema"), {"format": "json"}).content)


def json_bodies(schema):
    """(path, method, component name) of every operation with a JSON request body."""
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" in content:
                yield path, method, content["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]


def test_every_json_request_body_is_closed_as_the_server_refuses_unknown_fields(schema):
    bodies = list(json_bodies(schema))
    assert len(bodies) >= 19
    for path, method, name in bodies:
        component = schema["components"]["schemas"][name]
        # A body of several shapes (one message, or a batch) is closed when each shape is.
        shapes = [schema["components"]["schemas"][one["$ref"].rsplit("/", 1)[1]] for one in component.get("oneOf", [])]
        for shape in shapes or [component]:
            assert shape.get("additionalProperties") is False, (path, method, name)


def test_every_operation_with_a_json_body_refuses_an_unknown_field_with_a_400(schema, team, agent_client):
    """The behaviour the closed schema promises, operation by operation, as an admin key (so
    that no permission check answers first) on objects that exist."""
    admin = key_client(agent_key_create(team=team, name="admin", kind="admin")[1])
    agent_client.post(reverse("api-messages"), {**CTX, "role": "user", "content": "hello"}, format="json")
    retrieval = agent_client.post(reverse("api-context"), {**CTX, "query": "hello"}, format="json").json()
    node = admin.post(reverse("api-memory-propose"), {**CTX, "operation": "create", "node": {
        "scope": "workspace", "type": "fact", "title": "a fact"}}, format="json").json()["node_id"]
    lexicon_set = admin.post(reverse("api-lexicon"), {"terms": ["过敏", "敏感"]}, format="json").json()["id"]
    ids = {"node_id": node, "retrieval_id": retrieval["retrieval_id"], "user_id": "u1", "session_id": "s1",
           "workspace_id": "w1", "set_id": lexicon_set}
    for path, method, _name in json_bodies(schema):
        url = path.format(**ids) + "?workspace_id=w1&user_id=u1"
        response = getattr(admin, method)(url, data=json.dumps({"zz_unknown": 1}), content_type="application/json")
        assert response.status_code == 400, (path, method, response.status_code, response.content[:200])
        assert "zz_unknown" in response.json()["error"]["fields"], (path, method, response.json())


def identity_inputs(schema):
    """(where, schema, required) of every identity field a client sends: request body
    properties, path and query parameters."""
    for name, component in schema["components"]["schemas"].items():
        if name.endswith("Request"):
            for field, item in component.get("properties", {}).items():
                if field in IDENTITY_NAMES:
                    yield f"{name}.{field}", item, field in component.get("required", [])
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if parameter["name"] in IDENTITY_NAMES:
                    yield f"{method} {path} {parameter['name']}", parameter["schema"], parameter.get("required", False)


def test_every_identity_field_a_client_sends_carries_the_identity_rule(schema):
    found = list(identity_inputs(schema))
    assert len(found) >= 60
    for where, item, required in found:
        if required:
            rule = item
        else:  # the rule, or "" (absent): exactly one branch matches any value
            assert "oneOf" in item and item["oneOf"][1] == {"type": "string", "maxLength": 0}, where
            rule = item["oneOf"][0]
        assert (rule["format"], rule["minLength"], rule["maxLength"]) == ("identity", 1, IDENTITY_MAX), where


@pytest.mark.parametrize("value", ["tab\there", "x" * (IDENTITY_MAX + 1), " padded", "私\u200b"])
def test_values_outside_the_identity_rule_are_400_as_the_schema_says(agent_client, value):
    response = agent_client.get(reverse("api-messages"), {"session_id": value})
    assert response.status_code == 400 and "session_id" in response.json()["error"]["message"]
