"""Backups: dump one snapshot, restore it into a fresh database, and get the same context calls
(R-OPS; deploy/backup.sh, deploy/restore.sh, memory.ops.backup)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from accounts.principal import principal_for_key
from memory.ops.backup import fingerprints_compare, store_fingerprint
from tests.helpers import make_node

ROOT = Path(__file__).resolve().parents[3]
TURNS = [
    ("home", "xiaoming", "cook-1", "以后做饭别给我推荐香菜，我喜欢少油少辣。"),
    ("home", "xiaoming", "cook-1", "周末想做一道清淡的鱼。"),
    ("home", "lily", "trip-7", "I am allergic to peanuts, please remember that."),
    ("work", "lily", "plan-2", "The quarterly review moved to Thursday at 10am."),
]
QUERIES = ["晚饭吃什么", "香菜", "snacks for the flight", "when is the review", ""]


def converse(agent_client) -> int:
    """Messages and context calls through the API, as an agent would; returns the calls made."""
    calls = 0
    for workspace, user, session, content in TURNS:
        owner = {"workspace_id": workspace, "user_id": user, "session_id": session}
        message = {**owner, "role": "user", "content": content}
        assert agent_client.post("/api/v1/messages", message, format="json").status_code == 201
        for query in QUERIES:
            assert agent_client.post("/api/v1/context", {**owner, "query": query}, format="json").status_code == 200
            calls += 1
    return calls


def test_the_same_store_gives_the_same_fingerprint(agent_client, other_agent_client):
    calls = converse(agent_client) + converse(other_agent_client)
    result = fingerprints_compare(store_fingerprint(), store_fingerprint())
    assert result.same
    assert (result.teams, result.contexts, result.identical) == (2, calls, calls)


def test_a_changed_memory_shows_in_the_comparison(agent_client, agent_key):
    converse(agent_client)
    before = store_fingerprint()
    make_node(principal_for_key(agent_key[0]), user_id="xiaoming", title="不吃葱", key="food.avoid", value_json="葱")
    result = fingerprints_compare(before, store_fingerprint())
    assert not result.same
    nodes = before["teams"]["acme"]["counts"]["nodes"]
    assert f"acme: nodes {nodes} rows before, {nodes + 1} after" in result.differences
    assert result.identical < result.contexts
    assert any(line.startswith("acme: context of retrieval:") for line in result.differences)


def _url(name: str) -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{name}"


@pytest.fixture
def fresh_database():
    name = f"{connection.settings_dict['NAME']}_restored"
    admin = _url("postgres")
    subprocess.run(["psql", admin, "-XAtqc", f'DROP DATABASE IF EXISTS "{name}"'], check=True)
    subprocess.run(["psql", admin, "-XAtqc", f'CREATE DATABASE "{name}"'], check=True)
    yield _url(name)
    subprocess.run(["psql", admin, "-XAtqc", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'], check=True)


@pytest.mark.postgres_only
@pytest.mark.skipif(connection.vendor != "postgresql", reason="pg_dump and pg_restore need PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_restored_database_answers_every_context_call_identically(agent_client, other_agent_client, fresh_database,
                                                                  tmp_path):
    calls = converse(agent_client) + converse(other_agent_client)
    (tmp_path / "before.json").write_text(json.dumps(store_fingerprint()))
    dump = tmp_path / "memory.dump"
    env = {**os.environ, "DATABASE_URL": _url(connection.settings_dict["NAME"]), "DJANGO_SETTINGS_MODULE": "config.settings"}

    subprocess.run(["deploy/backup.sh", str(dump)], cwd=ROOT, env=env, check=True, capture_output=True)
    subprocess.run(["deploy/restore.sh", str(dump), fresh_database], cwd=ROOT, env=env, check=True, capture_output=True)
    check = subprocess.run([sys.executable, "manage.py", "backup_fingerprint", "--compare", str(tmp_path / "before.json")],
                           cwd=ROOT, env={**env, "DATABASE_URL": fresh_database}, capture_output=True, text=True)

    assert check.returncode == 0, check.stdout + check.stderr
    assert f"compared: 2 teams, row counts of 6 tables per team, {calls} of {calls} context calls identical" in check.stdout
    assert not list(tmp_path.glob("*.partial"))


@pytest.mark.postgres_only
@pytest.mark.skipif(connection.vendor != "postgresql", reason="pg_dump and pg_restore need PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_restore_refuses_a_database_that_has_tables(agent_client, tmp_path):
    converse(agent_client)
    env = {**os.environ, "DATABASE_URL": _url(connection.settings_dict["NAME"])}
    dump = tmp_path / "memory.dump"
    subprocess.run(["deploy/backup.sh", str(dump)], cwd=ROOT, env=env, check=True, capture_output=True)
    again = subprocess.run(["deploy/restore.sh", str(dump), env["DATABASE_URL"]], cwd=ROOT, env=env,
                           capture_output=True, text=True)
    assert again.returncode == 3
    assert "already has" in again.stderr
