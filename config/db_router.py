"""Read replica for the dashboard's read-only pages (docs/deploy.md, "Read replicas").

With `DATABASE_REPLICA_URL` set, settings define a second alias, "replica", and
settings.MEMORY_REPLICA_READS is true. Then, and only then:

- ReplicaReadMiddleware marks a request as replica-safe while its view runs: a GET or HEAD of a
  page in the "dashboard" namespace, from a browser that has not written in the last
  settings.MEMORY_REPLICA_PIN_SECONDS seconds (see below);
- DashboardReplicaRouter sends the ORM reads of such a request to "replica", for the models of
  the apps in REPLICA_APPS only, and only outside a transaction.

Everything else reads and writes `default`: every write, every `/api/` request, MCP, Celery
tasks, management commands, the dashboard's POSTs, any read inside `transaction.atomic()`, and
the login's own tables (sessions, users: a fresh login must not be refused because the replica
has not seen it yet).

Read-your-writes: a non-GET request outside `/api/` (a dashboard action, login, logout) sets
the `memory_primary` cookie for MEMORY_REPLICA_PIN_SECONDS seconds; while a browser sends it,
its dashboard pages read the primary, so the page it is redirected to shows what it just did.
The cookie only ever moves reads to the primary: forging it gains nothing.

A replica that cannot be reached moves the pages to the primary for REPLICA_RETRY_SECONDS
(replica_reachable), logged as a warning, instead of failing them.
"""

import logging
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections
from django.http import HttpRequest, HttpResponse

logger = logging.getLogger(__name__)

REPLICA = "replica"
PIN_COOKIE = "memory_primary"
REPLICA_APPS = frozenset({"memory", "accounts"})  # the dashboard's data: nodes, sessions, audit, KPIs, teams
SAFE_METHODS = frozenset({"GET", "HEAD"})
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

REPLICA_RETRY_SECONDS = 30  # after a failed connection, pages read the primary this long before trying again

_replica_reads: ContextVar[bool] = ContextVar("memory_replica_reads", default=False)
_replica_down_until = 0.0  # time.monotonic() until which the replica is taken for down (per process)


def replica_reachable() -> bool:
    """Whether the replica's connection is (or can be) opened: a replica that is down moves the
    dashboard to the primary for REPLICA_RETRY_SECONDS instead of failing its pages. Only the
    connection is checked, once per request that would read it; a replica that fails in the
    middle of a page still fails that page."""
    global _replica_down_until
    if time.monotonic() < _replica_down_until:
        return False
    try:
        connections[REPLICA].ensure_connection()
    except DatabaseError as error:
        _replica_down_until = time.monotonic() + REPLICA_RETRY_SECONDS
        logger.warning("read replica unreachable (%s); dashboard pages read the primary for %d s",
                       type(error).__name__, REPLICA_RETRY_SECONDS)
        return False
    return True


def replica_enabled() -> bool:
    """True when a "replica" alias is configured and settings.MEMORY_REPLICA_READS is on."""
    return bool(getattr(settings, "MEMORY_REPLICA_READS", False)) and REPLICA in settings.DATABASES


class DashboardReplicaRouter:
    """Django database router: reads of replica-safe requests go to "replica", nothing else does."""

    def db_for_read(self, model: type, **hints: Any) -> str | None:
        if not _replica_reads.get() or model._meta.app_label not in REPLICA_APPS:
            return None
        # A read inside a transaction belongs with the transaction's writes (select, then update).
        if connections["default"].in_atomic_block:
            return "default"
        return REPLICA

    def db_for_write(self, model: type, **hints: Any) -> str:
        return "default"

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        # Both aliases hold the same rows (streaming replication): relations across them are fine.
        return True

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        # A streaming replica is read-only and receives the schema from the primary.
        return db != REPLICA


class ReplicaReadMiddleware:
    """Marks replica-safe dashboard requests (see the module docstring) and pins a browser to the
    primary for MEMORY_REPLICA_PIN_SECONDS seconds after it writes. Place it after
    AuthenticationMiddleware; it does nothing unless replica_enabled()."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _replica_reads.set(False)
        try:
            response = self.get_response(request)
        finally:
            _replica_reads.reset(token)
        if request.method in UNSAFE_METHODS and not request.path.startswith("/api/") and replica_enabled():
            seconds = settings.MEMORY_REPLICA_PIN_SECONDS
            if seconds:
                response.set_cookie(PIN_COOKIE, "1", max_age=seconds, httponly=True, samesite="Lax",
                                    secure=settings.SESSION_COOKIE_SECURE)
        return response

    def process_view(self, request: HttpRequest, view: Callable, args: tuple, kwargs: dict) -> None:
        match = request.resolver_match
        if (request.method in SAFE_METHODS and match is not None and match.namespace == "dashboard"
                and PIN_COOKIE not in request.COOKIES and replica_enabled() and replica_reachable()):
            _replica_reads.set(True)
