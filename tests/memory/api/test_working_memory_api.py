"""A session's working memory over HTTP: GET/PUT/PATCH /api/v1/sessions/{id}/working-memory
(seed 004 L4 临时工作记忆; R-CTX, R-API, R-TEN, R-STORE forgetting)."""

import json
from urllib.parse import urlencode

import pytest
from django.urls import reverse

from accounts.services import agent_key_create
from memory.models import AuditEvent, IdempotencyRecord, Session
from memory.working_models import WorkingMemory
from tests.conftest import key_client
from tests.helpers import append

OWNER = {"workspace_id": "w1", "user_id": "u1"}
MARKER = "ZEBRA-WM-7"
MARKER_ZH = "斑马工作记忆"
DOCUMENT = {
    "current_goal": "今晚做番茄炒蛋 for 2 people",
    "references": {"它": "番茄炒蛋", "the report": "Q3 report"},
    "slots": {"cuisine": "川菜", "people": 2},
    "scratchpad": "用户说少辣; check the pantry first",
}


def url(session_id="s1", **params):
    return reverse("api-session-working-memory", args=[session_id]) + "?" + urlencode({**OWNER, **params})


def put(client, body, session_id="s1", **headers):
    return client.put(url(session_id), data=json.dumps(body, ensure_ascii=False), content_type="application/json",
                      **headers)


def patch(client, body, session_id="s1", **headers):
    return client.patch(url(session_id), data=json.dumps(body, ensure_ascii=False), content_type="application/json",
                        **headers)


def stored(session_id="s1"):
    return WorkingMemory.objects.filter(session__external_id=session_id).first()


def fields(body):
    return {name: body[name] for name in ("current_goal", "references", "slots", "scratchpad")}


# ---- reading and writing ------------------------------------------------------------------


def test_get_of_a_session_with_nothing_written_is_the_empty_document_at_version_0(agent_client, principal):
    append(principal, "hello", session_id="s1", **OWNER)
    response = agent_client.get(url())
    assert response.status_code == 200
    body = response.json()
    assert fields(body) == {"current_goal": "", "references": {}, "slots": {}, "scratchpad": ""}
    assert body["version"] == 0 and body["updated_at"] is None and body["updated_by"] == ""
    assert response.headers["ETag"] == '"0"'
    assert WorkingMemory.objects.count() == 0


def test_get_of_an_unknown_session_is_404(agent_client, principal):
    append(principal, "hello", session_id="s1", **OWNER)
    assert agent_client.get(url("nope")).status_code == 404
    assert agent_client.get(reverse("api-session-working-memory", args=["s1"])).status_code == 404  # no owner ids


def test_put_then_get_round_trips_chinese_and_english(agent_client, agent_key):
    response = put(agent_client, DOCUMENT)
    assert response.status_code == 200
    assert fields(response.json()) == DOCUMENT and response.json()["version"] == 1
    read = agent_client.get(url())
    body = read.json()
    assert fields(body) == DOCUMENT
    assert body["session_id"] == "s1" and body["workspace_id"] == "w1" and body["user_id"] == "u1"
    assert body["version"] == 1 and body["updated_by"] == f"key:{agent_key[0].prefix}"
    assert read.headers["ETag"] == '"1"'
    assert list(body["references"]) == sorted(DOCUMENT["references"])  # code-point order on every database


def test_put_creates_the_session_as_appending_a_message_does(agent_client, team):
    assert not Session.objects.filter(team=team).exists()
    assert put(agent_client, {"current_goal": "plan dinner"}).status_code == 200
    session = Session.objects.get(team=team)
    assert (session.workspace_id, session.user_id, session.external_id) == ("w1", "u1", "s1")


def test_put_replaces_the_whole_document(agent_client):
    put(agent_client, DOCUMENT)
    response = put(agent_client, {"slots": {"people": 3}})
    assert fields(response.json()) == {"current_goal": "", "references": {}, "slots": {"people": 3}, "scratchpad": ""}
    assert response.json()["version"] == 2


def test_put_stores_a_null_slot_as_asked_but_not_answered(agent_client):
    put(agent_client, {"slots": {"cuisine": None, "people": 2}})
    assert agent_client.get(url()).json()["slots"] == {"cuisine": None, "people": 2}


def test_patch_adds_replaces_and_deletes_keys_with_null(agent_client):
    put(agent_client, DOCUMENT)
    response = patch(agent_client, {"references": {"它": "宫保鸡丁", "the report": None, "that chart": "revenue"},
                                    "slots": {"spicy": "low"}})
    assert response.status_code == 200
    body = response.json()
    assert body["references"] == {"它": "宫保鸡丁", "that chart": "revenue"}
    assert body["slots"] == {"cuisine": "川菜", "people": 2, "spicy": "low"}
    assert body["current_goal"] == DOCUMENT["current_goal"] and body["scratchpad"] == DOCUMENT["scratchpad"]
    assert body["version"] == 2


def test_patch_replaces_text_fields_and_keeps_the_fields_it_does_not_name(agent_client):
    put(agent_client, DOCUMENT)
    body = patch(agent_client, {"current_goal": "find a recipe", "scratchpad": ""}).json()
    assert body["current_goal"] == "find a recipe" and body["scratchpad"] == ""
    assert body["references"] == DOCUMENT["references"] and body["slots"] == DOCUMENT["slots"]


def test_patch_of_a_new_session_merges_into_the_empty_document(agent_client):
    body = patch(agent_client, {"slots": {"people": 2, "cuisine": None}}).json()
    assert body["slots"] == {"people": 2} and body["version"] == 1  # null deletes, even a key never set


def test_an_empty_patch_is_a_400(agent_client):
    put(agent_client, DOCUMENT)
    response = patch(agent_client, {})
    assert response.status_code == 400 and response.json()["error"]["fields"] == {"body": ["may not be empty"]}


def test_a_write_that_changes_nothing_keeps_the_version_and_is_not_audited(agent_client):
    put(agent_client, DOCUMENT)
    events = AuditEvent.objects.filter(event_type="memory.working_memory.updated").count()
    assert put(agent_client, DOCUMENT).json()["version"] == 1
    assert patch(agent_client, {"references": {"它": "番茄炒蛋", "never set": None}}).json()["version"] == 1
    assert AuditEvent.objects.filter(event_type="memory.working_memory.updated").count() == events == 1


def test_each_change_is_audited_with_field_names_and_no_content(agent_client, agent_key):
    put(agent_client, {**DOCUMENT, "current_goal": MARKER})
    patch(agent_client, {"slots": {"people": None}, "scratchpad": MARKER_ZH})
    events = list(AuditEvent.objects.filter(event_type="memory.working_memory.updated").order_by("pk"))
    assert [event.payload for event in events] == [
        {"operation": "put", "fields": ["current_goal", "references", "slots", "scratchpad"], "version": 1},
        {"operation": "patch", "fields": ["slots", "scratchpad"], "version": 2},
    ]
    assert {(e.session_id, e.workspace_id, e.user_id, e.actor_key_id) for e in events} == {
        ("s1", "w1", "u1", agent_key[0].pk)}


# ---- optimistic concurrency ---------------------------------------------------------------


def test_a_stale_expected_version_is_a_409_and_changes_nothing(agent_client):
    put(agent_client, DOCUMENT)
    patch(agent_client, {"current_goal": "newer"})
    response = patch(agent_client, {"current_goal": "from a stale read", "expected_version": 1})
    assert response.status_code == 409 and response.json()["error"]["code"] == "version_conflict"
    assert stored().current_goal == "newer" and stored().version == 2
    assert put(agent_client, {"current_goal": "x", "expected_version": 1}).status_code == 409
    assert patch(agent_client, {"current_goal": "fresh", "expected_version": 2}).json()["version"] == 3


def test_if_match_works_like_expected_version(agent_client):
    etag = put(agent_client, DOCUMENT).headers["ETag"]
    assert patch(agent_client, {"scratchpad": "a"}, HTTP_IF_MATCH=etag).status_code == 200
    response = patch(agent_client, {"scratchpad": "b"}, HTTP_IF_MATCH=etag)
    assert response.status_code == 409 and stored().scratchpad == "a"
    assert put(agent_client, DOCUMENT, HTTP_IF_MATCH='W/"2"').status_code == 200


@pytest.mark.parametrize("header,body,expected", [
    ("*", {}, "If-Match"), ('"one"', {}, "If-Match"), ('"2"', {"expected_version": 1}, "expected_version"),
])
def test_a_bad_or_disagreeing_if_match_is_a_400(agent_client, header, body, expected):
    put(agent_client, DOCUMENT)
    response = patch(agent_client, {"scratchpad": "x", **body}, HTTP_IF_MATCH=header)
    assert response.status_code == 400 and expected in response.json()["error"]["fields"]
    assert stored().version == 1


def test_expected_version_0_writes_only_when_nothing_was_written_yet(agent_client):
    assert put(agent_client, {"current_goal": "first", "expected_version": 0}).status_code == 200
    assert put(agent_client, {"current_goal": "second", "expected_version": 0}).status_code == 409
    assert stored().current_goal == "first"


# ---- limits and types ---------------------------------------------------------------------


BAD = [
    ("current_goal", {"current_goal": "长" * 1001}),
    ("scratchpad", {"scratchpad": "x" * 4001}),
    ("references", {"references": {f"k{i}": i for i in range(51)}}),
    ("slots.{}…".format("k" * 64), {"slots": {"k" * 65: 1}}),  # the field names the key's first 64 characters
    ("slots. ", {"slots": {" ": 1}}),
    ("slots.", {"slots": {"": 1}}),
    ("references.它", {"references": {"它": "x" * 2000}}),  # 2002 characters as JSON
    ("references.deep", {"references": {"deep": [[[[["five levels"]]]]]}}),
    ("references", {"references": ["not", "an", "object"]}),
    ("slots", {"slots": "people=2"}),
    ("current_goal", {"current_goal": 42}),
    ("scratchpad", {"scratchpad": None}),
    ("mood", {"mood": "happy"}),
    ("expected_version", {"expected_version": "1"}),
    ("expected_version", {"expected_version": -1}),
]


@pytest.mark.parametrize("method", [put, patch])
@pytest.mark.parametrize("field,body", BAD, ids=[name for name, _ in BAD])
def test_a_broken_limit_or_type_is_a_400_and_stores_nothing(agent_client, team, method, field, body):
    response = method(agent_client, body)
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"], response.json()
    assert WorkingMemory.objects.count() == 0
    assert not Session.objects.filter(team=team).exists()  # the session a write would create is not created either
    assert not AuditEvent.objects.filter(team=team, event_type__startswith="memory.").exists()


def test_values_at_the_limits_are_accepted(agent_client):
    body = {"current_goal": "长" * 1000, "scratchpad": "x" * 4000,
            "references": {f"{i:064d}": "y" * 1998 for i in range(50)},  # "y…y" is 2000 characters as JSON
            "slots": {"deep": [[[{"a": 1}]]]}}
    response = put(agent_client, body)
    assert response.status_code == 200
    assert fields(response.json()) == body


def test_a_patch_that_would_pass_the_key_limit_is_a_400_and_keeps_the_document(agent_client):
    put(agent_client, {"slots": {f"k{i}": i for i in range(50)}})
    response = patch(agent_client, {"slots": {"one more": 1}})
    assert response.status_code == 400 and "too many keys" in response.json()["error"]["message"]
    assert len(stored().slots) == 50 and stored().version == 1
    assert patch(agent_client, {"slots": {"k0": None, "one more": 1}}).status_code == 200  # a delete makes room


WEIRD = [None, True, -1, 0, 2**70, 1.5, "", "x\u0000", "💥" * 5000, [], [None], {}, {"a": None}, [[[]]]]


@pytest.mark.parametrize("method", [put, patch])
def test_any_field_set_to_anything_is_never_a_500(agent_client, method):
    for name in ("current_goal", "references", "slots", "scratchpad", "expected_version"):
        for value in WEIRD:
            response = method(agent_client, {name: value})
            assert response.status_code < 500, (name, value, response.content[:200])
            assert "error" in response.json() or response.status_code == 200


def test_nul_in_a_key_is_refused_by_the_parser(agent_client):
    response = agent_client.put(url(), data='{"slots": {"a\\u0000b": 1}}', content_type="application/json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "parse_error"
    assert WorkingMemory.objects.count() == 0


# ---- who may read and write ---------------------------------------------------------------


def test_a_read_only_key_may_read_but_gets_403_on_writes(agent_client, readonly_agent_client):
    put(agent_client, DOCUMENT)
    assert readonly_agent_client.get(url()).status_code == 200
    for method in (put, patch):
        assert method(readonly_agent_client, {"current_goal": "x"}).status_code == 403
    assert stored().current_goal == DOCUMENT["current_goal"] and stored().version == 1


def test_a_key_that_may_not_write_session_scope_gets_403(team):
    client = key_client(agent_key_create(team=team, name="user only", writable_scopes=["user"])[1])
    response = put(client, DOCUMENT)
    assert response.status_code == 403 and "session" in response.json()["error"]["message"]
    assert WorkingMemory.objects.count() == 0


def test_a_logged_in_viewer_may_read_and_an_editor_may_write(client, viewer, editor, agent_client):
    put(agent_client, DOCUMENT)
    client.force_login(viewer)
    assert client.get(url()).json()["current_goal"] == DOCUMENT["current_goal"]
    assert put(client, {"current_goal": "x"}).status_code == 403
    client.force_login(editor)
    assert patch(client, {"current_goal": "x"}).json()["updated_by"] == "user:eddie"


def test_another_team_gets_404_and_its_writes_reach_only_its_own_session(agent_client, other_agent_client, team):
    put(agent_client, {**DOCUMENT, "scratchpad": MARKER})
    response = other_agent_client.get(url())
    assert response.status_code == 404 and MARKER not in response.content.decode()
    other = patch(other_agent_client, {"slots": {"people": 9}})
    assert other.status_code == 200 and other.json()["slots"] == {"people": 9} and other.json()["version"] == 1
    mine = WorkingMemory.objects.get(team=team)
    assert mine.slots == DOCUMENT["slots"] and mine.scratchpad == MARKER and mine.version == 1


def test_a_key_limited_to_another_workspace_gets_403(team, agent_client):
    put(agent_client, DOCUMENT)
    client = key_client(agent_key_create(team=team, name="w2 only", workspace_ids=["w2"])[1])
    assert client.get(url()).status_code == 403
    assert put(client, {"current_goal": "x"}).status_code == 403
    assert patch(client, {"current_goal": "x"}).status_code == 403
    assert stored().version == 1


def test_the_same_session_id_of_another_user_is_another_working_memory(agent_client):
    put(agent_client, DOCUMENT)
    other = reverse("api-session-working-memory", args=["s1"]) + "?" + urlencode({"workspace_id": "w1",
                                                                                    "user_id": "u2"})
    assert agent_client.get(other).status_code == 404


# ---- forgetting ---------------------------------------------------------------------------


def forget(client, mode, session_id="s1"):
    return client.delete(reverse("api-session", args=[session_id]) + "?" + urlencode({**OWNER, "mode": mode}))


def test_a_soft_forgotten_session_hides_its_working_memory_and_refuses_writes(agent_client):
    put(agent_client, DOCUMENT)
    response = forget(agent_client, "soft")
    assert response.json()["counts"]["working_memory"] == 1
    assert agent_client.get(url()).status_code == 404
    for method in (put, patch):
        assert method(agent_client, {"current_goal": "x"}).status_code == 409
    assert stored().current_goal == DOCUMENT["current_goal"]  # kept: a soft forget is reversible


def test_a_hard_forget_removes_the_working_memory_and_leaves_no_content_in_the_audit(agent_client, team):
    key = {"HTTP_IDEMPOTENCY_KEY": "wm-1"}
    put(agent_client, {"current_goal": f"goal {MARKER}", "references": {MARKER_ZH: MARKER},
                       "slots": {"dish": MARKER_ZH}, "scratchpad": MARKER}, **key)
    patch(agent_client, {"references": {"它": f"{MARKER_ZH} 2"}})
    assert IdempotencyRecord.objects.filter(team=team, response_body__contains=MARKER).exists()
    response = forget(agent_client, "hard")
    assert response.status_code == 200 and response.json()["counts"]["working_memory"] == 1
    assert not WorkingMemory.objects.filter(team=team).exists()
    events = AuditEvent.objects.filter(team=team).order_by("pk")
    assert [e.event_type for e in events if e.session_id] == ["memory.working_memory.updated"] * 2 + [
        "memory.session.hard_deleted"]
    payloads = [json.dumps(event.payload, ensure_ascii=False) for event in events]
    assert not [text for text in payloads if "zebra" in text.casefold() or "斑马" in text]
    answers = [record.response_body for record in IdempotencyRecord.objects.filter(team=team)]
    assert answers and not [text for text in answers if "ZEBRA" in text or "斑马" in text]
    assert agent_client.get(url()).status_code == 404


def test_after_a_hard_forget_the_same_ids_start_an_empty_working_memory(agent_client):
    put(agent_client, DOCUMENT)
    forget(agent_client, "hard")
    body = patch(agent_client, {"current_goal": "again"}).json()
    assert fields(body) == {"current_goal": "again", "references": {}, "slots": {}, "scratchpad": ""}
    assert body["version"] == 1


def test_a_hard_forget_of_a_soft_forgotten_session_removes_its_working_memory(agent_client, team):
    put(agent_client, DOCUMENT)
    forget(agent_client, "soft")
    response = forget(agent_client, "hard")
    assert response.status_code == 200 and response.json()["counts"]["working_memory"] == 1
    assert not WorkingMemory.objects.filter(team=team).exists()


def test_a_forget_without_working_memory_counts_0(agent_client, principal):
    append(principal, "hello", session_id="s1", **OWNER)
    assert forget(agent_client, "hard").json()["counts"]["working_memory"] == 0


# ---- routes and retries -------------------------------------------------------------------


def test_a_session_id_with_a_slash_has_its_own_working_memory(agent_client):
    assert put(agent_client, {"current_goal": "nested"}, session_id="team/a/s1").status_code == 200
    assert agent_client.get(url("team/a/s1")).json()["session_id"] == "team/a/s1"
    assert agent_client.get(url("team/a")).status_code == 404


def test_delete_names_a_whole_session_even_one_ending_in_working_memory(agent_client, principal, team):
    append(principal, "hello", session_id="s1/working-memory", **OWNER)
    put(agent_client, DOCUMENT)  # session "s1"
    response = agent_client.delete(url("s1", mode="hard"))  # …/sessions/s1/working-memory
    assert response.status_code == 200 and response.json()["session_id"] == "s1/working-memory"
    assert list(Session.objects.filter(team=team).values_list("external_id", flat=True)) == ["s1"]
    assert stored().current_goal == DOCUMENT["current_goal"]


def test_an_idempotency_key_replays_a_put_without_writing_twice(agent_client):
    key = {"HTTP_IDEMPOTENCY_KEY": "put-1"}
    first = put(agent_client, DOCUMENT, **key)
    patch(agent_client, {"current_goal": "moved on"})
    again = put(agent_client, DOCUMENT, **key)
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json() and again.json()["version"] == 1
    assert stored().current_goal == "moved on" and stored().version == 2
    assert AuditEvent.objects.filter(event_type="memory.working_memory.updated").count() == 2
    assert put(agent_client, {"current_goal": "other"}, **key).status_code == 422


def test_the_openapi_document_names_the_three_operations(agent_client):
    schema = agent_client.get(reverse("api-schema"), {"format": "json"}).json()
    operations = schema["paths"]["/api/v1/sessions/{session_id}/working-memory"]
    assert {operations[m]["operationId"] for m in ("get", "put", "patch")} == {
        "sessions_working_memory_get", "sessions_working_memory_put", "sessions_working_memory_patch"}
    assert "delete" not in operations
