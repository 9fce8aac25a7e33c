"""Web security (issue 9 part 4): the deployment checklist under production settings, secrets
only from the environment, TLS switches, the Content Security Policy, CSRF on every form and
HTMX request, and agent keys in no log."""

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client, override_settings
from django.urls import reverse

from accounts.services import agent_key_create, agent_key_revoke
from dashboard.urls import urlpatterns as dashboard_urls
from tests.conftest import key_client
from tests.dashboard.conftest import make_message, make_node

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION = {
    "DJANGO_SETTINGS_MODULE": "config.settings",
    "DEBUG": "false",
    "SECRET_KEY": "k3y-" + "x7Qp9vLm2Rt8" * 5,  # 64 characters of some variety, as check --deploy wants
    "ALLOWED_HOSTS": "memory.example.com",
    "TLS": "true",
}


def _manage(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """manage.py under config.settings with only the given environment (plus PATH and a scratch SQLite)."""
    environment = {"PATH": os.environ["PATH"], "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
                   "MEMORY_VAR_DIR": str(tmp_path), **env}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=environment, capture_output=True,
                          text=True, timeout=120)


def _production_settings(tmp_path, **env: str) -> dict:
    code = ("import json; from django.conf import settings as s; print(json.dumps({name: getattr(s, name, None) "
            "for name in ['SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE', 'SECURE_HSTS_SECONDS', "
            "'SECURE_SSL_REDIRECT', 'SECURE_PROXY_SSL_HEADER', 'DEBUG']}))")
    result = _manage(tmp_path, "shell", "-c", code, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_check_deploy_is_clean_under_production_settings(tmp_path):
    result = _manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_check_deploy_warns_without_tls_so_the_test_above_can_fail(tmp_path):
    result = _manage(tmp_path, "check", "--deploy", **{**PRODUCTION, "TLS": "false"})
    assert "security.W004" in result.stderr + result.stdout  # no HSTS
    assert "security.W008" in result.stderr + result.stdout  # no redirect to HTTPS


def test_production_without_secret_key_fails_loudly(tmp_path):
    env = {name: value for name, value in PRODUCTION.items() if name != "SECRET_KEY"}
    result = _manage(tmp_path, "check", **env)
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY must be set" in result.stderr


def test_production_refuses_the_development_secret_key(tmp_path):
    result = _manage(tmp_path, "check", **{**PRODUCTION, "SECRET_KEY": "insecure-local-development-key-change-me"})
    assert result.returncode != 0
    assert "not the development key" in result.stderr


def test_production_cookies_are_secure_and_tls_turns_on_hsts_and_the_redirect(tmp_path):
    with_tls = _production_settings(tmp_path, **PRODUCTION)
    assert with_tls == {"SESSION_COOKIE_SECURE": True, "CSRF_COOKIE_SECURE": True, "SECURE_HSTS_SECONDS": 31_536_000,
                        "SECURE_SSL_REDIRECT": True, "SECURE_PROXY_SSL_HEADER": None, "DEBUG": False}
    without = _production_settings(tmp_path, **{**PRODUCTION, "TLS": "false"})
    assert (without["SECURE_HSTS_SECONDS"], without["SECURE_SSL_REDIRECT"]) == (0, False)
    assert without["SESSION_COOKIE_SECURE"] is True
    proxied = _production_settings(tmp_path, **PRODUCTION, TLS_PROXY_HEADER="true")
    assert proxied["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]


@override_settings(SECURE_SSL_REDIRECT=True, SECURE_HSTS_SECONDS=31_536_000)
def test_with_tls_http_is_redirected_https_carries_hsts_and_healthz_stays_on_http(client, db):
    plain = client.get(reverse("login"))
    assert plain.status_code == 301 and plain["Location"] == "https://testserver/login"
    secure = client.get(reverse("login"), secure=True)
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert client.get(reverse("healthz")).status_code == 200


def _csp(response) -> dict[str, list[str]]:
    policy = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in policy.split(";") if part.strip()}


def test_pages_carry_a_csp_without_inline_scripts_or_eval(client, viewer):
    client.force_login(viewer)
    policy = _csp(client.get(reverse("dashboard:memories")))
    assert policy["script-src"] == ["'self'"]
    assert policy["default-src"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["object-src"] == ["'none'"]
    assert "'unsafe-inline'" not in policy["style-src"]
    assert "'unsafe-inline'" in policy["style-src-attr"]  # the KPI legend's colour swatches
    assert _csp(client.get(reverse("login")))["script-src"] == ["'self'"]


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.IGNORECASE)


def test_no_page_has_an_inline_script_or_event_handler(admin, principal):
    node = make_node(principal, title="tea", value_json={"text": "green tea"})
    message = make_message(principal, "hello")
    assert INLINE_SCRIPT.findall(Client().get(reverse("login")).content.decode()) == []
    client = Client()
    client.force_login(admin)
    urls = []
    for pattern in dashboard_urls:
        if pattern.name in {"team_switch", "export"}:
            continue  # a POST-only switch and a download
        args = {"node": [node.pk], "session": [message.session_id]}.get(pattern.name, [])
        urls.append(reverse(f"dashboard:{pattern.name}", args=args))
    for url in urls:
        response = client.get(url)
        html = response.content.decode()
        assert response.status_code == 200, url
        assert "<script" in html, url  # htmx, from a static file
        assert not INLINE_SCRIPT.findall(html), url
        assert not HANDLER.findall(html), url
        assert "javascript:" not in html.lower(), url


def _token(client) -> str:
    page = client.get(reverse("dashboard:memories")).content.decode()
    return page.split("hx-headers='{\"X-CSRFToken\": \"", 1)[1].split('"', 1)[0]


def test_every_dashboard_post_without_the_csrf_token_is_403_and_with_it_passes(admin, principal):
    node = make_node(principal, title="tea")
    message = make_message(principal, "hello")
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin)
    token = _token(client)
    urls = [reverse("logout")]
    for pattern in dashboard_urls:
        args = {"node": [node.pk], "session": [message.session_id]}.get(pattern.name, [])
        urls.append(reverse(f"dashboard:{pattern.name}", args=args))
    assert len(urls) == len(dashboard_urls) + 1 >= 14
    for url in urls:
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            assert client.post(url, {"action": "x", "team": "acme"}, **headers).status_code == 403, (url, headers)
    for url in urls[1:]:  # the logout would end the session
        response = client.post(url, {"action": "x", "team": "acme"}, HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=token)
        assert response.status_code != 403, url
    node.refresh_from_db()
    assert node.status == "active"


def test_api_writes_with_a_session_need_the_csrf_token(admin):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin)
    token = _token(client)
    body = {"session_id": "s1", "role": "user", "content": "hi"}
    assert client.post(reverse("api-messages"), body, content_type="application/json").status_code == 403
    response = client.post(reverse("api-messages"), body, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 201


def test_the_login_form_needs_the_csrf_token(viewer):
    client = Client(enforce_csrf_checks=True)
    assert client.post(reverse("login"), {"username": "vera", "password": "pw-vera"}).status_code == 403
    assert "_auth_user_id" not in client.session


@pytest.fixture
def captured_logs():
    """Every record of every logger at DEBUG, SQL included."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(level=logging.DEBUG)
    handler.emit = records.append
    names = ["", "django", "django.request", "django.server", "django.db.backends", "accounts", "memory", "axes"]
    loggers = [logging.getLogger(name) for name in names]
    before = [(logger.level, logger.handlers[:]) for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
        logger.addHandler(handler)
    debug_cursor, connection.force_debug_cursor = connection.force_debug_cursor, True
    yield records
    connection.force_debug_cursor = debug_cursor
    for logger, (level, handlers) in zip(loggers, before, strict=True):
        logger.setLevel(level)
        logger.handlers[:] = handlers


def test_agent_keys_never_appear_in_logs_even_at_debug(team, captured_logs):
    key, raw = agent_key_create(team=team, name="logged")
    revoked_key, revoked = agent_key_create(team=team, name="revoked")
    agent_key_revoke(key=revoked_key)
    secret = raw.split("_", 2)[2]
    client = key_client(raw)
    assert client.post(reverse("api-messages"), {"session_id": "s1", "role": "user", "content": "hi"},
                       format="json").status_code == 201
    assert client.get(reverse("api-nodes")).status_code == 200
    assert key_client(revoked).get(reverse("api-nodes")).status_code == 401
    assert key_client(raw[:-1] + "x").get(reverse("api-nodes")).status_code == 401
    assert key_client("mk_" + secret).get(reverse("api-nodes")).status_code == 401
    text = "\n".join(f"{record.getMessage()} {record.args!r} {getattr(record, 'sql', '')}" for record in captured_logs)
    assert "accounts_agentkey" in text  # the SQL of the key lookups was captured
    assert "Unauthorized: /api/v1/nodes" in text
    for raw_key in (raw, revoked):
        assert raw_key not in text
        assert raw_key.split("_", 2)[2] not in text
