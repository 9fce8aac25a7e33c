"""What an import checks beyond one record's own fields (docs/export.md, "Import"):

- rights: the importing principal must be allowed to write every row the file brings, by the
  same rules as the API's writes (accounts.principal: writable scopes, workspace limits);
- owners: a node's owner columns agree with its scope (global: none; workspace: a workspace
  and no user; user: a user and no workspace; session: its session's workspace and user), and
  rows hanging from a session (capture jobs, summary ranges, message and summary parents,
  a session memory's source messages) stay inside that session;
- chains: no record is its own parent or supersedes itself, no parent or supersede chain
  loops, and no record is the one-to-one target (supersedes, summary parent) of two others.

Every failure names the file's line; the import then stores nothing (one transaction).
"""

from collections.abc import Iterable
from typing import Any

from accounts.principal import AccessDenied, Principal
from memory.errors import InvalidInput
from memory.models import Scope, Session

# Links that may point at one record of their type only once (OneToOneField).
ONE_TO_ONE = {("node", "supersedes"), ("summary", "parent")}


def bad_line(line: int, message: str) -> InvalidInput:
    return InvalidInput(f"line {line}: {message}", fields={"file": [f"line {line}: {message}"]})


def check_rights(principal: Principal, line: int, spec_name: str, values: dict[str, Any]) -> None:
    """Raise AccessDenied (naming the line) unless `principal` may write this row: its
    workspace (a key limited to workspaces: one of those) and, for a node, its scope."""
    try:
        if "workspace_id" in values:
            principal.check_workspace(values["workspace_id"])
        if spec_name == "node":
            principal.check_write_scope(values["scope"])
    except AccessDenied as error:
        raise AccessDenied(f"line {line}: {spec_name} record: {error}") from None


def _owner_problem(scope: str, workspace_id: str, user_id: str, session: Session | None) -> str | None:
    if scope == Scope.SESSION:
        if session is None:
            return "a session memory needs its session"
        if (workspace_id, user_id) != (session.workspace_id, session.user_id):
            return (f"a session memory of workspace {workspace_id!r} and user {user_id!r} in a session of "
                    f"workspace {session.workspace_id!r} and user {session.user_id!r}")
        return None
    if session is not None:
        return f"a {scope} memory may not belong to a session"
    expected = {Scope.GLOBAL: (False, False), Scope.WORKSPACE: (True, False), Scope.USER: (False, True)}[scope]
    if (bool(workspace_id), bool(user_id)) != expected:
        wants = {(False, False): "no workspace_id and no user_id", (True, False): "a workspace_id and no user_id",
                 (False, True): "a user_id and no workspace_id"}[expected]
        return f"a {scope} memory needs {wants} (has workspace_id {workspace_id!r}, user_id {user_id!r})"
    return None


def check_owner(line: int, spec_name: str, row: Any, session: Session | None) -> None:
    """A node's owner columns must match its scope; a capture job's, its session's."""
    if spec_name == "node":
        problem = _owner_problem(row.scope, row.workspace_id, row.user_id, session)
        if problem:
            raise bad_line(line, f"node record: {problem}")
    elif spec_name == "capture_job" and session is not None and (
            (row.workspace_id, row.user_id) != (session.workspace_id, session.user_id)):
        raise bad_line(line, f"capture_job record: workspace {row.workspace_id!r} and user {row.user_id!r} differ "
                             f"from its session's ({session.workspace_id!r}, {session.user_id!r})")


def check_same_session(line: int, what: str, session_pk: int | None, others: Iterable[tuple[str, int | None]]) -> None:
    """Each (description, session pk) of `others` must be `session_pk`."""
    for name, other in others:
        if other is not None and other != session_pk:
            raise bad_line(line, f"{what}: {name} is in another session")


def check_chains(type_name: str, links: list[tuple[int, int, str, int]]) -> None:
    """`links`: (line, source id, link name, target source id) of one record type's links to
    records of the same type. Refuses self-links, loops, and a one-to-one target claimed twice."""
    graphs: dict[str, dict[int, tuple[int, int]]] = {}
    claimed: dict[str, dict[int, int]] = {}  # link name → target → the record naming it
    for line, source, name, target in links:
        if source == target:
            raise bad_line(line, f"{type_name} {source} names itself as its {name}")
        if (type_name, name) in ONE_TO_ONE:
            other = claimed.setdefault(name, {}).setdefault(target, source)
            if other != source:
                raise bad_line(line, f"{type_name} {target} is named as {name} by both {type_name} {other} and {source}")
        graphs.setdefault(name, {})[source] = (target, line)
    for name, graph in graphs.items():
        done: set[int] = set()
        for start in graph:
            path: list[int] = []
            on_path: set[int] = set()
            current = start
            while current in graph and current not in done and current not in on_path:
                path.append(current)
                on_path.add(current)
                current = graph[current][0]
            if current in on_path:
                raise bad_line(graph[current][1], f"{type_name} {current}: its {name} chain loops back to itself")
            done.update(path)
