"""Rate limits (accounts.throttling): per agent key, per dashboard user, per address for
refused credentials and for login; 429 in the API's error shape with Retry-After."""

import pytest
from django.test import override_settings
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.services import agent_key_create
from tests.conftest import key_client
from tests.helpers import SMALL_RATES, throttled

RATES = SMALL_RATES


@pytest.fixture(autouse=True)
def _throttled():
    with throttled(RATES):
        yield


def _search(client, **extra):
    return client.post(reverse("api-memory-search"), {"query_text": "tea"}, format="json", **extra)


def test_an_agent_key_past_its_rate_gets_429_with_retry_after_in_the_error_shape(agent_client):
    assert [_search(agent_client).status_code for _ in range(3)] == [200, 200, 200]
    response = _search(agent_client)
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "throttled"
    assert "Expected available in" in response.json()["error"]["message"]
    assert 1 <= int(response["Retry-After"]) <= 60


def test_the_limit_is_per_key_so_another_key_of_the_team_is_not_throttled(team, agent_client):
    for _ in range(3):
        _search(agent_client)
    assert _search(agent_client).status_code == 429
    second = key_client(agent_key_create(team=team, name="second")[1])
    assert _search(second).status_code == 200


def test_every_method_counts_against_the_key(agent_client):
    agent_client.get(reverse("api-nodes"))
    agent_client.post(reverse("api-messages"), {"session_id": "s1", "role": "user", "content": "hi"}, format="json")
    agent_client.get(reverse("api-messages"), {"session_id": "s1"})
    response = agent_client.post(reverse("api-messages"), {"session_id": "s1", "role": "user", "content": "again"},
                                 format="json")
    assert response.status_code == 429


def test_a_throttled_write_stores_nothing(agent_client):
    from memory.models import Message

    for index in range(4):
        agent_client.post(reverse("api-messages"), {"session_id": "s1", "role": "user", "content": f"m{index}"},
                          format="json")
    assert sorted(Message.objects.values_list("content", flat=True)) == ["m0", "m1", "m2"]


def test_a_scope_set_to_none_is_not_limited(agent_client):
    with override_settings(MEMORY_RATE_LIMITS={**RATES, "key": None}):
        assert {_search(agent_client).status_code for _ in range(6)} == {200}


def test_throttle_switch_off_lets_everything_through(agent_client):
    with override_settings(MEMORY_THROTTLE=False):
        assert {_search(agent_client).status_code for _ in range(6)} == {200}


def test_a_dashboard_user_calling_the_api_has_the_user_budget(client, viewer):
    client.force_login(viewer)
    assert [client.get(reverse("api-nodes")).status_code for _ in range(3)] == [200, 200, 429]


def test_refused_credentials_spend_the_address_budget_then_get_429(db):
    stranger = key_client("mk_nope_guessed")
    assert [_search(stranger).status_code for _ in range(2)] == [401, 401]
    response = _search(stranger)
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "throttled"
    assert int(response["Retry-After"]) >= 1
    assert _search(APIClient()).status_code == 429  # no credentials at all: the same address budget


def test_a_valid_key_from_a_refused_address_still_works(agent_client):
    stranger = key_client("mk_nope_guessed")
    for _ in range(3):
        _search(stranger)
    assert _search(agent_client).status_code == 200


def test_the_address_budget_is_per_address(db):
    stranger = key_client("mk_nope_guessed")
    for _ in range(3):
        _search(stranger, REMOTE_ADDR="10.0.0.1")
    assert _search(stranger, REMOTE_ADDR="10.0.0.1").status_code == 429
    assert _search(stranger, REMOTE_ADDR="10.0.0.2").status_code == 401


def test_a_forged_forwarded_for_header_does_not_escape_the_address_budget(db):
    stranger = key_client("mk_nope_guessed")
    codes = [_search(stranger, HTTP_X_FORWARDED_FOR=f"203.0.113.{n}").status_code for n in range(3)]
    assert codes == [401, 401, 429]


def test_login_submissions_past_the_address_rate_get_429_without_checking_the_password(client, viewer):
    url = reverse("login")
    assert client.post(url, {"username": "vera", "password": "wrong"}).status_code == 200
    assert client.post(url, {"username": "vera", "password": "wrong"}).status_code == 200
    response = client.post(url, {"username": "vera", "password": "pw-vera"})
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60
    assert "Too many login attempts from your address" in response.content.decode()
    assert "_auth_user_id" not in client.session
    assert 'value="pw-vera"' not in response.content.decode()


def test_login_page_views_are_not_counted(client, viewer):
    for _ in range(5):
        assert client.get(reverse("login")).status_code == 200
    response = client.post(reverse("login"), {"username": "vera", "password": "pw-vera"})
    assert response.status_code == 302


def test_unauthenticated_endpoints_are_not_throttled(db):
    anonymous = APIClient()
    assert {anonymous.get(reverse("healthz")).status_code for _ in range(5)} == {200}


def test_the_openapi_schema_documents_429_with_retry_after_on_every_operation(db):
    import json

    schema = json.loads(APIClient().get(reverse("api-schema"), {"format": "json"}).content)
    operations = [(path, method, operation) for path, methods in schema["paths"].items()
                  if path.startswith("/api/v1/") and path != "/api/v1/schema" for method, operation in methods.items()]
    assert len(operations) > 30
    for path, method, operation in operations:
        answer = operation["responses"]["429"]
        assert answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}, (path, method)
        assert answer["headers"]["Retry-After"]["schema"] == {"type": "integer"}, (path, method)
