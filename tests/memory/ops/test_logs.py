"""Structured request logs (R-OPS): the fields, the request id, and never a key."""

import io
import json
import logging
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from config.env import env_choice
from memory.ops.logs import JsonFormatter

ROOT = Path(__file__).resolve().parents[3]
CONTEXT = {"workspace_id": "home", "user_id": "xiaoming", "session_id": "s1", "query": "dinner"}


@contextmanager
def json_lines():
    """Every record any logger writes while the block runs, formatted as the JSON handler would."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    loggers = [logging.getLogger(), logging.getLogger("django"), logging.getLogger("celery")]
    for logger in loggers:
        logger.addHandler(handler)
    lines: list[dict] = []
    try:
        yield lines
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    lines.extend(json.loads(line) for line in stream.getvalue().splitlines())


def request_lines(lines: list[dict]) -> list[dict]:
    return [line for line in lines if line["logger"] == "memory.request"]


def test_an_agent_request_is_one_json_line_with_team_principal_and_timing(agent_client):
    with json_lines() as lines:
        response = agent_client.post("/api/v1/context", CONTEXT, format="json")
    [line] = request_lines(lines)
    assert line["method"] == "POST"
    assert line["path"] == "/api/v1/context"
    assert line["route"] == "api/v1/context"
    assert line["status"] == 200
    assert line["team"] == "acme"
    assert line["principal"] == "agent"
    assert 0 < line["duration_ms"] < 60_000
    assert line["level"] == "INFO"
    assert line["request_id"] == response["X-Request-ID"]
    assert len(line["request_id"]) == 32


def test_a_dashboard_page_logs_the_user_principal(client, admin):
    client.force_login(admin)
    with json_lines() as lines:
        assert client.get(reverse("dashboard:memories")).status_code == 200
    [line] = request_lines(lines)
    assert (line["team"], line["principal"], line["status"]) == ("acme", "user", 200)


def test_an_anonymous_request_has_no_team(client, db):
    with json_lines() as lines:
        client.get(reverse("healthz"))
    [line] = request_lines(lines)
    assert (line["team"], line["principal"]) == ("", "anonymous")


def test_the_callers_request_id_is_kept_and_echoed(agent_client):
    with json_lines() as lines:
        response = agent_client.post("/api/v1/context", CONTEXT, format="json", HTTP_X_REQUEST_ID="trace-42.a:b")
    assert response["X-Request-ID"] == "trace-42.a:b"
    assert request_lines(lines)[0]["request_id"] == "trace-42.a:b"


def test_a_request_id_that_could_forge_log_lines_is_replaced(agent_client):
    response = agent_client.post("/api/v1/context", CONTEXT, format="json", HTTP_X_REQUEST_ID='x"\n{"level":"ERROR"}')
    assert response["X-Request-ID"] != 'x"\n{"level":"ERROR"}'
    assert len(response["X-Request-ID"]) == 32


def test_lines_written_during_a_request_carry_its_request_id(agent_client):
    with json_lines() as lines:
        response = agent_client.get("/api/v1/memory/999999")
    assert response.status_code == 404
    assert lines and all(line.get("request_id") == response["X-Request-ID"] for line in lines)
    assert any(line["logger"] == "django.request" for line in lines)  # Django's own 404 warning


def test_no_log_line_holds_an_agent_key_or_authorization_header(agent_key, client):
    raw = agent_key[1]
    with json_lines() as lines:
        for path, body, key in [("/api/v1/context", CONTEXT, raw), ("/api/v1/context", CONTEXT, raw + "x"),
                                ("/api/v1/messages", {"bad": "body"}, raw)]:
            client.post(path, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    text = json.dumps(lines)
    assert [line["status"] for line in request_lines(lines)] == [200, 401, 400]
    assert raw not in text
    assert raw[len(raw) // 2:] not in text
    assert "Bearer" not in text
    assert "Authorization" not in text and "HTTP_AUTHORIZATION" not in text


def test_an_exception_is_one_line_with_its_traceback():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("tests.ops")
    logger.addHandler(handler)
    try:
        try:
            raise ValueError("broken 香菜")
        except ValueError:
            logger.exception("failed", extra={"job_id": 7})
    finally:
        logger.removeHandler(handler)
    [raw_line] = stream.getvalue().splitlines()
    line = json.loads(raw_line)
    assert (line["message"], line["job_id"], line["level"]) == ("failed", 7, "ERROR")
    assert "ValueError: broken 香菜" in line["exc"]


def test_log_format_must_be_json_or_text(monkeypatch):
    monkeypatch.setenv("MEMORY_LOG_FORMAT", "xml")
    with pytest.raises(ImproperlyConfigured, match="MEMORY_LOG_FORMAT must be one of text, json"):
        env_choice("MEMORY_LOG_FORMAT", "text", ("text", "json"))
    monkeypatch.setenv("MEMORY_LOG_FORMAT", " JSON ")
    assert env_choice("MEMORY_LOG_FORMAT", "text", ("text", "json")) == "json"


def test_log_level_is_read_in_any_case_as_gunicorn_reads_it(tmp_path):
    code = "import django, logging; django.setup(); print(logging.getLogger('memory').getEffectiveLevel())"
    env = {**os.environ, "LOG_LEVEL": "warning", "DJANGO_SETTINGS_MODULE": "config.settings",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == str(logging.WARNING)
    env["LOG_LEVEL"] = "loud"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "LOG_LEVEL must be one of debug, info, warning" in result.stderr


def test_the_json_setting_turns_every_logger_into_json_lines(tmp_path):
    code = "import django, logging; django.setup(); logging.getLogger('memory.capture').warning('sweep %s', 'late')"
    env = {**os.environ, "MEMORY_LOG_FORMAT": "json", "DJANGO_SETTINGS_MODULE": "config.settings",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    [line] = [json.loads(raw) for raw in result.stderr.splitlines()]
    assert (line["logger"], line["level"], line["message"]) == ("memory.capture", "WARNING", "sweep late")
