"""The dashboard's read replica (config/db_router.py; docs/deploy.md "Read replicas").

In the test settings "replica" is a TEST mirror of default: the same test database through a
second connection. Tests that read through it commit their rows (transaction=True), and tell
where each query went by capturing both connections.
"""

import os
import shutil
import subprocess

import pytest
from django.contrib.sessions.models import Session
from django.db import connections, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from config.db_router import PIN_COOKIE, DashboardReplicaRouter, _replica_reads
from memory.models import Node
from memory.services.lexicon import lexicon_set_save
from tests.dashboard.conftest import make_message, make_node

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "replica"])


@pytest.fixture(autouse=True)
def replica_on(settings):
    settings.MEMORY_REPLICA_READS = True
    settings.MEMORY_REPLICA_PIN_SECONDS = 7


@pytest.fixture
def fact(principal):
    message = make_message(principal, "The staging server is staging-2 now", session_id="s-9")
    return make_node(principal, title="Staging server", content="staging-1", key="ops.staging",
                     value_json={"host": "s1"}, explicit=True, source_message_ids=[message.pk])


class Queries:
    """The SQL each alias ran inside the block: .default, .replica (lists of strings)."""

    def __enter__(self):
        self._captures = {alias: CaptureQueriesContext(connections[alias]) for alias in ("default", "replica")}
        for capture in self._captures.values():
            capture.__enter__()
        return self

    def __exit__(self, *exc):
        for capture in self._captures.values():
            capture.__exit__(*exc)
        self.default = [query["sql"] for query in self._captures["default"].captured_queries]
        self.replica = [query["sql"] for query in self._captures["replica"].captured_queries]


def reads_of(queries: list[str], table: str) -> list[str]:
    return [sql for sql in queries if sql.lstrip().upper().startswith("SELECT") and f'"{table}"' in sql]


def test_a_dashboard_page_reads_the_memories_from_the_replica(editor_client, fact):
    with Queries() as queries:
        response = editor_client.get(reverse("dashboard:memories"))
    assert response.status_code == 200 and b"Staging server" in response.content
    assert reads_of(queries.replica, "memory_node")
    assert reads_of(queries.default, "memory_node") == []
    # The login's tables stay on the primary: a fresh session is never missing from a lagging replica.
    assert reads_of(queries.default, "django_session") and reads_of(queries.replica, "django_session") == []


def memory_tables(queries: list[str]) -> list[str]:
    """The statements over the memory and accounts apps' tables, ORM and raw SQL alike."""
    return [sql for sql in queries if "memory_" in sql or "accounts_" in sql]


@pytest.mark.parametrize("page", ["dashboard:sessions", "dashboard:audit", "dashboard:kpis", "dashboard:preview"])
def test_the_other_read_only_pages_read_the_replica_too(admin_client, fact, page):
    with Queries() as queries:
        response = admin_client.get(reverse(page), {"user_id": "u1", "query": "staging"})
    assert response.status_code == 200
    assert memory_tables(queries.replica)
    assert memory_tables(queries.default) == []


def test_the_node_page_with_its_version_chain_reads_the_replica(editor_client, fact, principal):
    with Queries() as queries:
        response = editor_client.get(reverse("dashboard:node", args=[fact.pk]))
    assert response.status_code == 200 and b"Staging server" in response.content
    assert any("WITH RECURSIVE" in sql for sql in queries.replica)  # the chain's raw SQL too
    assert memory_tables(queries.default) == []


def test_an_htmx_fragment_reads_the_replica(editor_client, fact):
    with Queries() as queries:
        response = editor_client.get(reverse("dashboard:memories"), {"q": "staging"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and b"Staging server" in response.content
    assert reads_of(queries.replica, "memory_node") and reads_of(queries.default, "memory_node") == []


def test_agent_api_calls_never_touch_the_replica(agent_client, fact):
    with Queries() as queries:
        listed = agent_client.get(reverse("api-nodes"))
        context = agent_client.post(reverse("api-context"), {"session_id": "s-9", "query": "staging"}, format="json")
    assert (listed.status_code, context.status_code) == (200, 200)
    assert queries.replica == []
    assert reads_of(queries.default, "memory_node")


def test_a_dashboard_post_uses_the_primary_and_pins_the_browser_to_it(editor_client, fact):
    with Queries() as queries:
        response = editor_client.post(reverse("dashboard:node", args=[fact.pk]), {
            "action": "correct", "correct-title": "Staging server", "correct-content": "staging-2",
            "correct-value_json": '{"host": "s2"}', "correct-tags": "", "correct-reason": "moved"})
    assert response.status_code == 302
    assert queries.replica == []
    cookie = response.cookies[PIN_COOKIE]
    assert (cookie.value, cookie["max-age"], cookie["httponly"], cookie["samesite"]) == ("1", 7, True, "Lax")


def test_the_page_after_a_write_reads_the_primary_then_the_replica_once_the_pin_expires(editor_client, fact):
    posted = editor_client.post(reverse("dashboard:node", args=[fact.pk]), {
        "action": "correct", "correct-title": "Staging server", "correct-content": "staging-2",
        "correct-value_json": '{"host": "s2"}', "correct-tags": "", "correct-reason": "moved"})
    successor = Node.objects.get(supersedes=fact)
    assert posted.url == reverse("dashboard:node", args=[successor.pk])
    with Queries() as pinned:
        redirected = editor_client.get(posted.url)
    assert redirected.status_code == 200 and b"staging-2" in redirected.content
    assert pinned.replica == [] and reads_of(pinned.default, "memory_node")

    del editor_client.cookies[PIN_COOKIE]  # what the browser does after max-age seconds
    with Queries() as later:
        editor_client.get(posted.url)
    assert reads_of(later.replica, "memory_node") and reads_of(later.default, "memory_node") == []


def test_the_api_does_not_pin_and_login_does(client, agent_client, editor):
    api = agent_client.post(reverse("api-context"), {"session_id": "s-1"}, format="json")
    assert api.status_code == 200 and PIN_COOKIE not in api.cookies
    login = client.post(reverse("login"), {"username": editor.username, "password": "pw-" + editor.username})
    assert PIN_COOKIE in login.cookies


def test_with_replica_reads_off_nothing_reads_the_replica_and_nothing_is_pinned(settings, editor_client, fact):
    settings.MEMORY_REPLICA_READS = False
    with Queries() as queries:
        page = editor_client.get(reverse("dashboard:memories"))
        posted = editor_client.post(reverse("dashboard:node", args=[fact.pk]), {"action": "expire", "expire-reason": "old"})
    assert page.status_code == 200 and queries.replica == []
    assert PIN_COOKIE not in posted.cookies


def test_the_router_keeps_transactions_writes_and_login_tables_on_the_primary():
    router = DashboardReplicaRouter()
    assert router.db_for_read(Node) is None  # outside a replica-safe request: the default alias
    token = _replica_reads.set(True)
    try:
        assert router.db_for_read(Node) == "replica"
        assert router.db_for_read(Session) is None
        with transaction.atomic():
            assert router.db_for_read(Node) == "default"
        assert router.db_for_write(Node) == "default"
    finally:
        _replica_reads.reset(token)
    assert (router.allow_migrate("replica", "memory"), router.allow_migrate("default", "memory")) == (False, True)


def _dsn(settings_dict: dict, name: str) -> list[str]:
    return ["-h", settings_dict["HOST"] or "127.0.0.1", "-p", str(settings_dict["PORT"] or 5432),
            "-U", settings_dict["USER"] or "postgres", "-d", name]


@pytest.fixture
def real_replica(principal, fact):
    """The "replica" alias pointed at mt_ops2_replica: a copy of the test database (pg_dump), not
    a mirror, so a row written there is on the replica only. Dropped afterwards."""
    primary = connections["default"]
    if primary.vendor != "postgresql" or not shutil.which("pg_dump"):
        pytest.skip("needs PostgreSQL and pg_dump")
    name = "mt_ops2_replica"
    with primary.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        cursor.execute(f"CREATE DATABASE {name}")
    env = {**os.environ, "PGPASSWORD": primary.settings_dict["PASSWORD"] or ""}
    dump = subprocess.run(["pg_dump", "--no-owner", *_dsn(primary.settings_dict, primary.settings_dict["NAME"])],
                          capture_output=True, check=True, env=env, timeout=120)
    subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", *_dsn(primary.settings_dict, name)], input=dump.stdout,
                   capture_output=True, check=True, env=env, timeout=120)
    replica = connections["replica"]
    replica.close()
    mirrored = replica.settings_dict["NAME"]
    replica.settings_dict["NAME"] = name
    try:
        yield replica
    finally:
        replica.close()
        replica.settings_dict["NAME"] = mirrored
        with primary.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_on_postgresql_a_dashboard_page_shows_what_only_the_replica_has(editor_client, fact, real_replica):
    only_there = Node.objects.using("replica").get(pk=fact.pk)
    only_there.pk, only_there.key, only_there.title = None, "ops.replica", "Seen on the replica only"
    only_there.save(using="replica")
    assert not Node.objects.filter(title="Seen on the replica only").exists()  # the primary has no such row

    page = editor_client.get(reverse("dashboard:memories"))
    assert page.status_code == 200 and b"Seen on the replica only" in page.content and b"Staging server" in page.content
    api = editor_client.get(reverse("api-nodes"))  # the API, even with a session, reads the primary
    assert api.status_code == 200 and "Staging server" in api.content.decode()
    assert "Seen on the replica only" not in api.content.decode()

    posted = editor_client.post(reverse("dashboard:node", args=[fact.pk]), {"action": "expire", "expire-reason": "old"})
    assert posted.status_code == 302
    pinned = editor_client.get(reverse("dashboard:memories"))
    assert b"Seen on the replica only" not in pinned.content


@pytest.fixture
def lagging_lexicon():
    """The replica has not yet received the team's synonym sets (nor their version row)."""

    def hide(execute, sql, params, many, context):
        if sql.lstrip().upper().startswith("SELECT") and "memory_lexicon" in sql:
            sql = sql.replace(" WHERE ", " WHERE 1 = 0 AND ", 1)
        return execute(sql, params, many, context)

    with connections["replica"].execute_wrapper(hide):
        yield


def test_a_preview_on_a_lagging_replica_leaves_the_api_its_new_synonyms(admin_client, agent_client, admin_principal,
                                                                        principal, lagging_lexicon):
    said = make_message(principal, "I have a peanut intolerance", session_id="s-1")
    lexicon_set_save(principal=admin_principal, terms=["allergy", "intolerance"])
    owner = {"workspace_id": "proj-b", "user_id": "u-2"}

    page = admin_client.get(reverse("dashboard:preview"), {**owner, "session_id": "s-2", "q": "allergy"})
    context = agent_client.post(reverse("api-context"), {**owner, "session_id": "s-2", "query": "allergy"},
                                format="json")

    assert (page.status_code, context.status_code) == (200, 200)
    assert [item["id"] for item in context.json()["items"] if item["kind"] == "message"] == [said.pk]


def test_a_replica_that_cannot_be_reached_moves_the_pages_to_the_primary_for_a_while(editor_client, fact,
                                                                                      monkeypatch, caplog):
    from django.db import OperationalError

    import config.db_router as router

    attempts = []

    def refuse():
        attempts.append(1)
        raise OperationalError("connection refused")

    monkeypatch.setattr(router, "_replica_down_until", 0.0)
    monkeypatch.setattr(connections["replica"], "ensure_connection", refuse)
    for _ in range(2):  # any read of the replica would raise too: a 200 means none was tried
        with CaptureQueriesContext(connections["default"]) as primary:
            page = editor_client.get(reverse("dashboard:memories"))
        assert page.status_code == 200 and "Staging server" in page.content.decode()
        assert reads_of([query["sql"] for query in primary.captured_queries], "memory_node")
    assert len(attempts) == 1  # the second page did not try again within REPLICA_RETRY_SECONDS
    assert "read replica unreachable" in caplog.text
    monkeypatch.setattr(router, "_replica_down_until", 0.0)  # the retry time has passed
    monkeypatch.undo()
    with Queries() as queries:
        editor_client.get(reverse("dashboard:memories"))
    assert reads_of(queries.replica, "memory_node")
