"""A database restart mid-request answers 503 with Retry-After, which clients retry, not the 500 of a bug (make faults)."""

from django.db import InterfaceError, OperationalError
from django.urls import reverse

from memory.api import errors, views

BODY = {"session_id": "s1", "user_id": "u1", "role": "user", "content": "hello"}


def test_a_dropped_database_connection_in_a_view_is_a_503_to_retry(agent_client, monkeypatch):
    for error in (OperationalError("server closed the connection unexpectedly"), InterfaceError("connection already closed")):
        def fail(error=error, **kwargs):
            raise error

        monkeypatch.setattr(views, "messages_append", fail)
        response = agent_client.post(reverse("api-messages"), BODY, format="json")
        assert response.status_code == 503 and response["Retry-After"] == "1"
        assert response.json() == {"error": {"code": "unavailable", "message": errors.UNAVAILABLE_MESSAGE}}


def test_outside_a_view_the_site_handler_says_503_for_the_database_and_500_for_a_bug(rf):
    request = rf.post("/api/v1/messages")
    for raised, status, code in ((OperationalError("terminating connection"), 503, "unavailable"),
                                 (ValueError("a bug"), 500, "server_error")):
        try:
            raise raised
        except Exception:  # Django calls handler500 inside its own except block
            response = errors.server_error_view(request)
        assert response.status_code == status
        assert b'"code": "%s"' % code.encode() in response.content

