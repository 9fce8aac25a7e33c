"""Schemathesis against the API's own OpenAPI document, in-process (issue 9 part 1; R-API, R-TEN).

Every operation of /api/v1/schema is fuzzed with the keys of two teams: team B (an agent key
and an admin key) with positive and negative data, half of B's positive cases carrying team
A's identifiers (node ids, retrieval ids, session/workspace/user ids) so that they aim at A's
rows; then team A's admin key, positive and negative, over A's own data. Every response is
checked for a 5xx, for conformance to the schema (status, content type, headers, body) and,
for team B, for team A's canary string. Requests go straight to the WSGI application: no
server, no network.
"""

import json
import logging
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import schemathesis
from django.core.signals import got_request_exception, request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import Failure
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from memory.api.schema import IDENTITY_FORMAT
from memory.limits import IDENTITY_MAX
from memory.validation import identity_problem

SCHEMA_PATH = "/api/v1/schema?format=json"
CANARY = "CANARY-a7f3-香菜"  # planted in every kind of team A's rows; never in a response to team B
A_CTX = {"workspace_id": "w-alpha", "user_id": "u-alpha", "session_id": "s-alpha"}
CONFORMANCE = [status_code_conformance, content_type_conformance, response_headers_conformance,
               response_schema_conformance]
# Names under which a request carries an identifier of another object: team B's aimed cases
# replace them with team A's.
AIMED = {"node_id": "node", "id": "node", "target_id": "node", "retrieval_id": "retrieval",
         "parent_id": "message", "from_message_id": "message", **{name: name for name in A_CTX}}


@dataclass(frozen=True)
class Caller:
    """One key the fuzzer sends requests with."""

    name: str
    raw_key: str
    watch_leaks: bool  # True for team B: no response may carry team A's canary


@dataclass
class Report:
    requests: int = 0
    aimed: int = 0  # team B requests that carried team A's identifiers
    operations: set[str] = field(default_factory=set)
    statuses: Counter = field(default_factory=Counter)
    server_errors: Counter = field(default_factory=Counter)  # "METHOD path: exception" → count
    violations: Counter = field(default_factory=Counter)  # "METHOD path: check title" → count
    leaks: Counter = field(default_factory=Counter)
    # Positive (schema-valid) requests refused with 400, by operation and message: where the
    # schema promises more than the server accepts. Reported, not failed: a valid shape may
    # still break a rule no schema can state (a range's order, a slot already taken).
    valid_refused: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)  # finding → one reproducing request
    seconds: float = 0.0

    @property
    def findings(self) -> int:
        return sum(self.server_errors.values()) + sum(self.violations.values()) + sum(self.leaks.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests, "aimed_at_team_a": self.aimed, "operations": len(self.operations),
            "status_counts": dict(sorted(self.statuses.items())),
            "server_errors": sum(self.server_errors.values()), "schema_violations": sum(self.violations.values()),
            "leaks": sum(self.leaks.values()), "seconds": round(self.seconds, 1),
            "schema_valid_refused_400": dict(self.valid_refused.most_common()),
            "findings": {**self.server_errors, **self.violations, **self.leaks}, "examples": self.examples,
        }

    def summary(self, verbose: int = 0) -> str:
        lines = [f"requests: {self.requests} (aimed at team A's ids: {self.aimed})",
                 f"operations: {len(self.operations)}",
                 f"statuses: {dict(sorted(self.statuses.items()))}",
                 f"5xx: {sum(self.server_errors.values())}",
                 f"schema violations: {sum(self.violations.values())}",
                 f"leaks: {sum(self.leaks.values())}",
                 f"seconds: {self.seconds:.1f}"]
        for finding, count in [*self.server_errors.items(), *self.violations.items(), *self.leaks.items()]:
            lines.append(f"  {count:5d} × {finding}\n          e.g. {self.examples.get(finding, '')[:600]}")
        refused = sum(self.valid_refused.values())
        lines.append(f"schema-valid requests refused with 400: {refused}")
        for finding, count in self.valid_refused.most_common(verbose):
            lines.append(f"  {count:5d} × {finding}")
        return "\n".join(lines)


@contextmanager
def connection_kept():
    """Requests go through the real WSGI handler, whose request signals close "obsolete"
    connections; inside a test transaction the test's own looks obsolete, and on PostgreSQL
    closing it ends the test. Django's test client disconnects the same receivers per request
    (and connects them again after, so this wraps every batch of requests)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def identity_values() -> st.SearchStrategy[str]:
    """Valid values of the schema's `identity` format (memory.api.schema): printable, trimmed."""
    return st.text(min_size=1, max_size=IDENTITY_MAX).filter(lambda value: identity_problem(value) is None)


def load_schema():
    """The WSGI application and its schema. The import file (JSON Lines) is sent as plain text;
    identity fields are generated by their rule."""
    schemathesis.serializer.alias("application/x-ndjson", "text/plain")
    schemathesis.openapi.format(IDENTITY_FORMAT, identity_values())
    app = get_wsgi_application()
    with connection_kept():
        return app, schemathesis.openapi.from_wsgi(SCHEMA_PATH, app)


def _aim(case, targets: dict[str, Any]) -> bool:
    """Replace the identifiers `case` carries with team A's (path, query and top-level body)."""
    changed = False
    for container in (case.path_parameters, case.query, case.body if isinstance(case.body, dict) else None):
        if not container:
            continue
        for name in list(container):
            kind = AIMED.get(name)
            if kind in targets and container[name] != targets[kind]:
                container[name] = targets[kind]
                changed = True
    return changed


def _describe(case, response) -> str:
    body = response.text if hasattr(response, "text") else ""
    return json.dumps({"method": case.method, "path": case.formatted_path, "query": case.query,
                       "body": case.body if not isinstance(case.body, bytes) else repr(case.body[:200]),
                       "status": response.status_code, "response": body[:300]}, ensure_ascii=False, default=repr)


def fuzz_operation(operation, caller: Caller, mode: GenerationMode, *, examples: int, fuzz_seed: int,
                   targets: dict[str, Any], report: Report) -> None:
    """Send up to `examples` generated requests to `operation` as `caller`, recording findings."""
    label = f"{operation.method.upper()} {operation.path}"
    headers = {"Authorization": f"Bearer {caller.raw_key}"}
    checks = [not_a_server_error, *CONFORMANCE]
    if mode == GenerationMode.NEGATIVE:
        checks.append(negative_data_rejection)
    raised: list[BaseException] = []

    def on_exception(sender, request=None, **kwargs):
        import sys

        raised.append(sys.exc_info()[1])

    @seed(fuzz_seed)
    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
              report_multiple_bugs=False)
    @given(case=operation.as_strategy(generation_mode=mode, headers=headers), aim=st.booleans())
    def run(case, aim):
        aimed = caller.watch_leaks and mode == GenerationMode.POSITIVE and aim and _aim(case, targets)
        raised.clear()
        response = case.call(headers=headers)
        report.requests += 1
        report.aimed += int(aimed)
        report.operations.add(label)
        report.statuses[response.status_code] += 1
        if response.status_code >= 500:
            cause = type(raised[0]).__name__ + ": " + str(raised[0])[:120] if raised else "no exception"
            _record(report.server_errors, f"{label}: {response.status_code} {cause}", case, response, report)
            return
        if mode == GenerationMode.POSITIVE and response.status_code == 400:
            message = _error_message(response)[:90]
            report.valid_refused[f"{label}: {message}"] += 1
        if caller.watch_leaks and CANARY in response.text:
            _record(report.leaks, f"{label}: team A's canary in team B's response", case, response, report)
        try:
            case.validate_response(response, checks=checks, headers=headers)
        except BaseExceptionGroup as group:
            for failure in group.exceptions:
                _record(report.violations, f"{label}: {getattr(failure, 'title', type(failure).__name__)}",
                        case, response, report, getattr(failure, "message", str(failure)))
        except Failure as failure:
            _record(report.violations, f"{label}: {failure.title}", case, response, report, failure.message)

    got_request_exception.connect(on_exception)
    try:
        run()
    except Unsatisfiable:  # no parameter or body to make invalid (negative mode of e.g. GET /api/v1/tools)
        pass
    finally:
        got_request_exception.disconnect(on_exception)


def _error_message(response) -> str:
    try:
        return str(json.loads(response.text)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text[:90]


def _record(counter: Counter, finding: str, case, response, report: Report, why: str = "") -> None:
    counter[finding] += 1
    report.examples.setdefault(finding, (why[:400] + " | " if why else "") + _describe(case, response))


def fuzz(*, schema, passes: list[tuple[Caller, GenerationMode]], examples: int, fuzz_seed: int,
         targets: dict[str, Any], only: str = "", report: Report | None = None) -> Report:
    """Run every (caller, mode) pass over every operation of `schema`, adding to `report` (or a
    new one); `only` keeps the operations whose path contains it."""
    report = report or Report()
    started = time.monotonic() - report.seconds
    operations = [result.ok() for result in schema.get_all_operations()]
    logger = logging.getLogger("django.request")
    level = logger.level
    logger.setLevel(logging.ERROR)  # thousands of 4xx warnings are the point of the run; 5xx still show
    try:
        with connection_kept():
            for caller, mode in passes:
                for operation in operations:
                    if only and only not in operation.path:
                        continue
                    fuzz_operation(operation, caller, mode, examples=examples, fuzz_seed=fuzz_seed,
                                   targets=targets, report=report)
    finally:
        logger.setLevel(level)
    report.seconds = time.monotonic() - started
    return report
