"""Inputs that crashed the service once, by kind: each must be a 4xx in the error shape, with
nothing stored (R-API: never a 500 for anything a client sends)."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from memory.models import Message, Node

MESSAGES = "/api/v1/messages"


def post_raw(client, path, raw):
    return client.post(path, data=raw, content_type="application/json")


@pytest.mark.parametrize("path", [MESSAGES, "/api/v1/context", "/api/v1/memory/search", "/api/v1/memory/propose",
                                  "/api/v1/summaries", "/api/v1/memory/get"])
def test_json_nested_far_too_deep_is_a_400_everywhere(agent_client, path):
    response = post_raw(agent_client, path, "[" * 100_000 + "]" * 100_000)
    assert response.status_code == 400 and response.json()["error"]["code"] == "parse_error"


@pytest.mark.parametrize("field,value", [
    ("metadata", {"a": json.loads("[" * 900 + "]" * 900)}),
    ("metadata", {"x": float("inf")}),
])
def test_deep_or_non_finite_values_inside_a_message_are_refused(agent_client, field, value):
    body = json.dumps({"session_id": "s1", "role": "user", "content": "x", field: value}, allow_nan=True)
    response = post_raw(agent_client, MESSAGES, body)
    assert response.status_code == 400
    assert Message.objects.count() == 0


def test_a_number_too_large_for_a_float_is_refused(agent_client):
    body = '{"operation": "create", "session_id": "s1", "node": {"scope": "session", "type": "fact", "title": "x", ' \
           '"value_json": {"n": 1e400}}}'
    assert post_raw(agent_client, "/api/v1/memory/propose", body).status_code == 400
    assert Node.objects.count() == 0


@pytest.mark.parametrize("name", ["parent_id", "from_message_id"])
def test_ids_beyond_64_bits_are_a_400_not_an_overflow(agent_client, name):
    path = MESSAGES if name == "parent_id" else "/api/v1/summaries"
    body = {"session_id": "s1", "role": "user", "content": "x", name: 10**30}
    if name == "from_message_id":
        body = {"session_id": "s1", "summary": "x", name: 10**30}
    response = agent_client.post(path, body, format="json")
    assert response.status_code == 400 and name in response.json()["error"]["fields"]


@pytest.mark.parametrize("when", ["9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+14:00", "1800-01-01T00:00:00Z"])
def test_times_outside_the_supported_years_are_a_400(agent_client, when):
    response = agent_client.post(MESSAGES, {"session_id": "s1", "role": "user", "content": "x", "occurred_at": when},
                                 format="json")
    assert response.status_code == 400 and "occurred_at" in response.json()["error"]["fields"]
    assert Message.objects.count() == 0


def test_a_huge_category_prefix_is_a_400_not_a_degraded_answer(agent_client):
    response = agent_client.post(reverse("api-context"), {"session_id": "s1", "category_path_prefix": "x" * 200_000},
                                 format="json")
    assert response.status_code == 400 and "category_path_prefix" in response.json()["error"]["fields"]


@pytest.mark.parametrize("value", [" s1", "s1 ", "   ", "a\tb"])
def test_ids_with_surrounding_spaces_or_controls_are_refused_on_reads_and_writes(agent_client, value):
    write = agent_client.post(MESSAGES, {"session_id": value, "role": "user", "content": "x"}, format="json")
    read = agent_client.get(reverse("api-nodes"), {"user_id": value})
    assert write.status_code == 400 and read.status_code == 400


def test_field_paths_in_batch_errors_use_one_style(agent_client):
    response = agent_client.post(MESSAGES, {"messages": [{"session_id": "s1", "role": "user", "content": "ok"},
                                                        {"session_id": "s1", "role": "robot", "content": "x"}]},
                                 format="json")
    assert list(response.json()["error"]["fields"]) == ["messages[1].role"]


WEIRD = [None, True, -1, 0, 2**70, 1.5, "", "x\u0000", " s ", "💥" * 300, [], [None], {}, {"a": None}, [[[]]]]


@pytest.mark.parametrize("path,base", [
    ("/api/v1/memory/propose", {"operation": "create", "session_id": "s1",
                                "node": {"scope": "session", "type": "fact", "title": "t"}}),
    ("/api/v1/memory/forget", {"user_id": "u1", "key": "k"}),
    ("/api/v1/memory/extractions", {"session_id": "s1", "operations": [
        {"operation": "create", "node": {"scope": "session", "type": "fact", "title": "t"}}]}),
])
def test_any_field_of_a_governance_write_set_to_anything_is_never_a_500(agent_client, path, base):
    fields = set(base) | {"id", "scope", "mode", "confirm", "target_id", "explicit_user_intent", "expected_version",
                          "on_nonconforming", "value_json", "source_message_ids", "category_path_prefix", "reason"}
    for name in sorted(fields):
        for value in WEIRD:
            response = agent_client.post(path, {**base, name: value}, format="json")
            assert response.status_code < 500, (path, name, value, response.content[:200])
            assert "error" in response.json() or response.status_code in (200, 201)
    node_fields = ["scope", "type", "key", "value_json", "title", "content", "tags", "entities", "category_path",
                   "confidence", "importance", "expires_at", "source_message_ids", "parent_id", "domain"]
    if "node" in base:
        for name in node_fields:
            for value in WEIRD:
                body = {**base, "node": {**base["node"], name: value}}
                response = agent_client.post(path, body, format="json")
                assert response.status_code < 500, (path, name, value, response.content[:200])
    for node_id in ("0", "-1", "x", "99999999999999999999", "1.5"):
        for method in ("delete", "post"):
            suffix = "" if method == "delete" else "/restore"
            response = getattr(agent_client, method)(f"/api/v1/nodes/{node_id}{suffix}?mode=\u0000")
            assert response.status_code in (400, 404), (node_id, method, response.status_code)


@pytest.mark.parametrize("offset", ["+17:27", "-16:00", "+23:59"])
def test_a_time_with_an_offset_postgresql_cannot_store_is_kept_in_utc(agent_client, offset):
    """ISO 8601 allows offsets up to 23:59, PostgreSQL up to 15:59: every time a client sends is
    stored in UTC (memory.validation.parse_utc_datetime; found by fuzzing on PostgreSQL)."""
    body = {"session_id": "s1", "role": "user", "content": "x", "occurred_at": f"2030-01-03T05:52:55{offset}"}
    response = agent_client.post(MESSAGES, body, format="json")
    assert response.status_code == 201, response.content
    sign = 1 if offset[0] == "+" else -1
    expected = datetime(2030, 1, 3, 5, 52, 55, tzinfo=UTC) - sign * timedelta(hours=int(offset[1:3]),
                                                                             minutes=int(offset[4:6]))
    assert Message.objects.get().occurred_at == expected


@pytest.mark.parametrize("value", ["2025-13-01T00:00:00Z", "2025-01-01T00:00:00+25:00", "9999-12-31T23:00:00-05:00"])
def test_a_time_naming_no_date_or_beyond_the_range_is_a_400(agent_client, value):
    body = {"session_id": "s1", "role": "user", "content": "x", "occurred_at": value}
    response = agent_client.post(MESSAGES, body, format="json")
    assert response.status_code == 400 and "occurred_at" in response.json()["error"]["fields"]
    assert Message.objects.count() == 0
