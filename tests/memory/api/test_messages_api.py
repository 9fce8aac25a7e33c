import json

import pytest
from django.urls import reverse

from memory.models import AuditEvent, Message, Session

URL = "/api/v1/messages"


def post(client, body, **extra):
    return client.post(URL, data=json.dumps(body), content_type="application/json", **extra)


def test_append_one_message_returns_its_id(agent_client):
    response = post(agent_client, {"session_id": "s1", "user_id": "u1", "role": "user", "content": "你好"})
    assert response.status_code == 201
    body = response.json()
    assert body["ids"] == [Message.objects.get().pk]
    assert body["messages"][0]["session_id"] == "s1" and body["messages"][0]["content"] == "你好"
    assert body["messages"][0]["created_at"].endswith("Z")


def test_append_a_batch_returns_ids_in_order(agent_client):
    messages = [{"session_id": "s1", "role": "user", "content": f"m{i}"} for i in range(3)]
    ids = post(agent_client, {"messages": messages}).json()["ids"]
    assert ids == sorted(ids) and [Message.objects.get(pk=i).content for i in ids] == ["m0", "m1", "m2"]


def test_a_batch_with_a_nul_byte_is_refused_whole(agent_client):
    messages = [{"session_id": "s1", "role": "user", "content": c} for c in ("a", "abc\u0000def", "c")]
    response = post(agent_client, {"messages": messages})
    assert response.status_code == 400
    assert "U+0000" in response.json()["error"]["message"]
    assert Message.objects.count() == 0 and Session.objects.count() == 0


def test_a_lone_surrogate_is_refused(agent_client):
    raw = '{"session_id": "s1", "role": "user", "content": "bad \\ud800"}'
    response = agent_client.post(URL, data=raw, content_type="application/json")
    assert response.status_code == 400
    assert "surrogate" in response.json()["error"]["message"]
    assert Message.objects.count() == 0


def test_invalid_utf8_is_refused(agent_client):
    response = agent_client.post(URL, data=b'{"session_id": "s1", "role": "user", "content": "\xff"}',
                                 content_type="application/json")
    assert response.status_code == 400


@pytest.mark.parametrize("body,field", [
    ({}, "session_id"),
    ({"session_id": "s1", "role": "user"}, "content"),
    ({"session_id": "s1", "role": "user", "content": ""}, "content"),
    ({"session_id": "s1", "role": "robot", "content": "x"}, "role"),
    ({"session_id": 5, "role": "user", "content": "x"}, "session_id"),
    ({"session_id": "s1", "role": "user", "content": 123}, "content"),
    ({"session_id": "s1", "role": "user", "content": "x", "surprise": 1}, "surprise"),
    ({"session_id": "s1", "role": "user", "content": "x", "occurred_at": "2025-06-01T08:00:00"}, "occurred_at"),
    ({"session_id": "x" * 129, "role": "user", "content": "x"}, "session_id"),
    ({"session_id": "s\t1", "role": "user", "content": "x"}, "session_id"),
    ({"session_id": "s1", "role": "user", "content": "x", "parent_id": "1"}, "parent_id"),
    ({"messages": []}, "messages"),
])
def test_bad_messages_get_400_naming_the_field_and_store_nothing(agent_client, body, field):
    response = post(agent_client, body)
    assert response.status_code == 400, response.content
    assert field in json.dumps(response.json()["error"])
    assert Message.objects.count() == 0


def test_a_json_array_body_is_refused(agent_client):
    response = agent_client.post(URL, data="[1, 2]", content_type="application/json")
    assert response.status_code == 400


def test_malformed_json_is_a_parse_error(agent_client):
    response = agent_client.post(URL, data="{nope", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"


def test_an_oversized_body_gets_413_and_nothing_is_stored(agent_client, settings):
    body = {"session_id": "s1", "role": "user", "content": "字" * 2_000_000}
    response = post(agent_client, body)
    assert response.status_code == 413
    assert str(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) in response.json()["error"]["message"]
    assert Message.objects.count() == 0


def test_a_200k_character_message_is_refused_with_the_maximum_and_the_follow_up_is_stored(agent_client):
    long_text = ("混合中文 and English text " * 10_000)[:199_988] + "END_MARKER_7"
    response = post(agent_client, {"session_id": "s1", "role": "user", "content": long_text})
    assert response.status_code == 400
    assert "100000" in response.json()["error"]["message"]
    assert post(agent_client, {"session_id": "s1", "role": "user", "content": "short follow-up"}).status_code == 201
    assert list(Message.objects.values_list("content", flat=True)) == ["short follow-up"]


def test_the_end_of_a_maximum_size_message_is_searchable(agent_client):
    long_text = ("混合中文 and English text " * 5_000)[:99_988] + "END_MARKER_7"
    assert post(agent_client, {"session_id": "old", "user_id": "u1", "role": "user", "content": long_text}).status_code == 201
    post(agent_client, {"session_id": "s1", "user_id": "u1", "role": "user", "content": "hi"})
    context = agent_client.post(reverse("api-context"), {"session_id": "s1", "user_id": "u1", "query": "end_marker_7"},
                                format="json").json()
    assert context["relevant_messages"] and context["relevant_messages"][0]["content"].endswith("END_MARKER_7")


def test_recent_messages_page_back_with_next(agent_client):
    post(agent_client, {"messages": [{"session_id": "s1", "role": "user", "content": f"m{i}"} for i in range(5)]})
    first = agent_client.get(URL, {"session_id": "s1", "limit": 2}).json()
    assert [m["content"] for m in first["results"]] == ["m3", "m4"]
    second = agent_client.get(first["next"]).json()
    assert [m["content"] for m in second["results"]] == ["m1", "m2"]
    third = agent_client.get(second["next"]).json()
    assert [m["content"] for m in third["results"]] == ["m0"] and third["next"] is None


def test_another_users_session_with_the_same_id_is_not_visible(agent_client):
    post(agent_client, {"session_id": "s1", "user_id": "u1", "role": "user", "content": "my badge number is B1"})
    response = agent_client.get(URL, {"session_id": "s1", "user_id": "u2"})
    assert response.status_code == 200 and response.json()["results"] == []


def test_a_nul_byte_in_a_query_parameter_is_refused(agent_client):
    assert agent_client.get(URL + "?session_id=s%00").status_code == 400


def test_append_is_audited_with_the_key(agent_client, agent_key):
    post(agent_client, {"session_id": "s1", "role": "user", "content": "x"})
    assert AuditEvent.objects.get(event_type="memory.messages.appended").actor == f"key:{agent_key[0].prefix}"
