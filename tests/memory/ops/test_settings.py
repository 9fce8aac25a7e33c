"""Deployment settings read from the environment (R-OPS): the PostgreSQL pool and pgbouncer."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PRINT = ("import json; from django.conf import settings; db = settings.DATABASES['default'];"
         " print(json.dumps({'options': db.get('OPTIONS', {}), 'age': db['CONN_MAX_AGE'],"
         " 'no_cursors': db.get('DISABLE_SERVER_SIDE_CURSORS')}))")


def database_settings(**env: str) -> dict:
    base = {key: value for key, value in os.environ.items() if not key.startswith(("DATABASE_", "CONN_MAX_AGE"))}
    result = subprocess.run([sys.executable, "-c", PRINT], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", **env})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_pool_max_turns_on_the_psycopg_pool_without_persistent_connections():
    found = database_settings(DATABASE_URL="postgres://memory@db.internal:5432/memory", DATABASE_POOL_MAX="4",
                              DATABASE_POOL_MIN="2", CONN_MAX_AGE="60")
    assert found["options"]["pool"] == {"min_size": 2, "max_size": 4, "timeout": 10}
    assert found["age"] == 0


def test_without_pool_max_there_is_no_pool():
    found = database_settings(DATABASE_URL="postgres://memory@db.internal:5432/memory", CONN_MAX_AGE="60")
    assert "pool" not in found["options"]
    assert found["age"] == 60
    assert found["no_cursors"] is False


def test_pgbouncer_transaction_mode_disables_server_side_cursors():
    found = database_settings(DATABASE_URL="postgres://memory@127.0.0.1:6432/memory", DATABASE_DISABLE_SERVER_SIDE_CURSORS="true")
    assert found["no_cursors"] is True


def test_prepared_statements_bind_on_the_server_only_when_asked():
    assert "server_side_binding" not in database_settings(DATABASE_URL="postgres://memory@db.internal:5432/memory")["options"]
    found = database_settings(DATABASE_URL="postgres://memory@db.internal:5432/memory", DATABASE_PREPARED_STATEMENTS="true",
                              DATABASE_POOL_MAX="4")
    assert found["options"]["server_side_binding"] is True and found["options"]["prepare_threshold"] == 5
    assert found["options"]["pool"]["max_size"] == 4
    sqlite = database_settings(DATABASE_URL="sqlite:////tmp/x.sqlite3", DATABASE_PREPARED_STATEMENTS="true")
    assert "server_side_binding" not in sqlite["options"]


def test_preparing_every_statement_at_once_is_refused():
    """psycopg with prepare_threshold 0 prepares the schema editor's two-command statements
    too, and PostgreSQL refuses them: `migrate` would fail (a newcomer's finding)."""
    result = subprocess.run([sys.executable, "-c", PRINT], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
                                 "DATABASE_URL": "postgres://m@h:5432/m", "DATABASE_PREPARED_STATEMENTS": "true",
                                 "DATABASE_PREPARE_THRESHOLD": "0"})
    assert result.returncode != 0
    assert "DATABASE_PREPARE_THRESHOLD must be >= 1, got 0" in result.stderr
    assert database_settings(DATABASE_URL="postgres://m@h:5432/m", DATABASE_PREPARED_STATEMENTS="true",
                             DATABASE_PREPARE_THRESHOLD="1")["options"]["prepare_threshold"] == 1


def test_a_pool_smaller_than_its_minimum_fails_loudly():
    result = subprocess.run([sys.executable, "-c", PRINT], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
                                 "DATABASE_URL": "postgres://m@h:5432/m", "DATABASE_POOL_MAX": "2", "DATABASE_POOL_MIN": "3"})
    assert result.returncode != 0
    assert "DATABASE_POOL_MIN must be <= 2, got 3" in result.stderr


REPLICA = ("import json; from django.conf import settings; dbs = settings.DATABASES;"
           " print(json.dumps({'aliases': sorted(dbs), 'reads': settings.MEMORY_REPLICA_READS,"
           " 'pin': settings.MEMORY_REPLICA_PIN_SECONDS, 'routers': settings.DATABASE_ROUTERS,"
           " 'replica': {k: dbs['replica'].get(k) for k in ('HOST', 'NAME', 'OPTIONS')} if 'replica' in dbs else None}))")


def replica_settings(**env: str) -> subprocess.CompletedProcess:
    base = {key: value for key, value in os.environ.items() if not key.startswith(("DATABASE_", "CONN_MAX_AGE"))}
    return subprocess.run([sys.executable, "-c", REPLICA], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", **env})


def test_without_a_replica_url_there_is_one_database_and_no_replica_reads():
    found = json.loads(replica_settings(DATABASE_URL="postgres://memory@db.internal:5432/memory").stdout)
    assert (found["aliases"], found["reads"], found["replica"]) == (["default"], False, None)


def test_a_replica_url_adds_the_replica_alias_with_the_primarys_pool():
    found = json.loads(replica_settings(DATABASE_URL="postgres://memory@db.internal:5432/memory",
                                        DATABASE_REPLICA_URL="postgres://memory@replica.internal:5432/memory",
                                        DATABASE_POOL_MAX="4", DATABASE_REPLICA_PIN_SECONDS="5").stdout)
    assert (found["aliases"], found["reads"], found["pin"]) == (["default", "replica"], True, 5)
    assert found["replica"]["HOST"] == "replica.internal"
    assert found["replica"]["OPTIONS"]["pool"] == {"min_size": 1, "max_size": 4, "timeout": 10}
    assert found["routers"] == ["config.db_router.DashboardReplicaRouter"]


def test_a_replica_on_another_engine_fails_loudly():
    result = replica_settings(DATABASE_URL="postgres://memory@db.internal:5432/memory",
                              DATABASE_REPLICA_URL="sqlite:////tmp/replica.sqlite3")
    assert result.returncode != 0
    assert "DATABASE_REPLICA_URL must use the same engine as DATABASE_URL" in result.stderr
