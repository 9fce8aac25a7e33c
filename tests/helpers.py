"""Small builders over the real services, so tests create data the way agents do."""

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.cache import cache
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings

from memory.models import Node
from memory.services.messages import MessageInput, messages_append
from memory.services.nodes import NodeInput, node_create
from memory.services.sessions import SessionRef

SMALL_RATES = {"key": "3/min", "user": "2/min", "anon": "2/min", "login": "2/min"}


@contextmanager
def throttled(rates: dict[str, str | None] = SMALL_RATES) -> Iterator[None]:
    """Rate limits on (the test settings switch them off) at `rates`, from an empty cache."""
    cache.clear()
    with override_settings(MEMORY_THROTTLE=True, MEMORY_RATE_LIMITS=rates):
        yield
    cache.clear()


def make_node(principal, **fields: Any):
    defaults: dict[str, Any] = {"scope": "user", "type": "preference", "user_id": "u1", "title": "a memory"}
    defaults.update(fields)
    return node_create(principal=principal, data=NodeInput(**defaults))


def stored_before(principal, **fields):
    """A note beside its twin, as stores written before writes compared notes without their
    punctuation hold them (migration 0021 gave such twins slots of their own, legacy:<id>)."""
    title = fields.pop("title")
    node = make_node(principal, title=f"{uuid.uuid4().hex} {title}", **fields)
    Node.objects.filter(pk=node.pk).update(title=title, slot=f"legacy:{node.pk}")
    node.refresh_from_db()
    return node


def append(principal, *contents: str, session_id: str = "s1", user_id: str = "u1", workspace_id: str = "",
           role: str = "user", **extra: Any):
    ref = SessionRef(session_id=session_id, user_id=user_id, workspace_id=workspace_id)
    return messages_append(
        principal=principal,
        messages=[MessageInput(session=ref, role=role, content=content, **extra) for content in contents],
    )


def index_hits(model, token: str) -> int:
    """Rows the keyword index itself returns for `token` (FTS5 on SQLite, tsvector on PostgreSQL)."""
    from django.db import connection

    table = model._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f'SELECT count(*) FROM "{table}_fts" WHERE "{table}_fts" MATCH %s', [f'"{token}"'])
        else:
            cursor.execute(f"SELECT count(*) FROM {table} WHERE search_vector @@ to_tsquery('simple', %s)",
                           [f"'{token}'"])
        return cursor.fetchone()[0]


def run_parallel(jobs: list, *, team=None) -> list:
    """Run each callable of `jobs` in its own thread (its own database connection), all
    released at once; returns each one's result or the exception it raised, in order. With
    `team`, each thread enters that team's scope first, as a background worker would."""
    import contextlib
    import threading

    from django.db import connections
    from django_scopes import scope

    barrier = threading.Barrier(len(jobs))
    results: list = [None] * len(jobs)

    def run(index: int) -> None:
        try:
            barrier.wait()
            with scope(team=team) if team is not None else contextlib.nullcontext():
                results[index] = jobs[index]()
        except Exception as error:  # noqa: BLE001 - the result under test
            results[index] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def celery_broker(url: str, *, eager: bool):
    """Point the Celery app at `url` (eager: run tasks in-process) for a test; a context
    manager that restores the settings. Celery caches its connection and producer pools per
    broker, so those caches are dropped on the way in and out."""
    import contextlib

    from config.celery import app

    @contextlib.contextmanager
    def switch():
        before = {key: app.conf[key] for key in ("broker_url", "task_always_eager")}

        def apply(**conf):
            app.conf.update(**conf)
            app._pool = None  # noqa: SLF001 - no public way to drop the cached pools
            app.amqp._producer_pool = None  # noqa: SLF001

        apply(broker_url=url, task_always_eager=eager)
        try:
            yield app
        finally:
            apply(**before)

    return switch()


def migrate_to(target: list[tuple[str, str]]):
    """Migrate the test database to `target` ([(app, migration)]) and return the apps of that
    state, for testing a data migration on rows written the old way (transactional tests)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def latest_migrations() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()
