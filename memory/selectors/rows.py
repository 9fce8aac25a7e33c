"""Model instances from hand-written SQL, built exactly as the ORM builds them (R-CTX hot path).

The context call reads a few dozen rows in a dozen statements; compiling each statement with
the ORM costs 0.4–1.3 ms of CPU before any row is read (docs/performance.md), more than the
read itself. Its selectors therefore write their SQL out and turn the rows into instances here:
the same database converters (datetimes on SQLite, JSON on both) and what `Model.from_db`
(the ORM's own iterator) makes, so an instance is indistinguishable from the one
`Model.objects.get` returns (columns left out are deferred, loaded on first access); `instances`
skips `Model.__init__` where it would only store the values (see there).

    columns(Node, "n", exclude=("search_tokens",))  →  '"n"."id", "n"."team_id", …'
    instances(Node, rows, using="default", exclude=("search_tokens",))  →  [Node, …]

Each row holds the model's concrete columns in `_meta.concrete_fields` order, less `exclude`
(attnames). Callers put `team_id = %s` in every statement: these helpers only build.
"""

import weakref
from collections.abc import Iterable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from django.db import connections, router
from django.db.models import Field, Model
from django.db.models.base import ModelState
from django.db.models.fields.related_descriptors import ForeignKeyDeferredAttribute
from django.db.models.signals import post_init, pre_init

from memory.models import Message, Node, NodeSource, Session

if TYPE_CHECKING:
    from accounts.principal import Principal


@cache
def fields_of(model: type[Model], exclude: tuple[str, ...] = ()) -> tuple:
    """The concrete fields selected for `model`, in `columns` order."""
    return tuple(field for field in model._meta.concrete_fields if field.attname not in exclude)


@cache
def columns(model: type[Model], alias: str, exclude: tuple[str, ...] = ()) -> str:
    """The select list of `model`'s concrete columns (less `exclude`) from table alias `alias`.
    Both vendors quote with double quotes."""
    return ", ".join(f'"{alias}"."{field.column}"' for field in fields_of(model, exclude))


_CONVERTERS: "weakref.WeakKeyDictionary[Any, dict[tuple, list]]" = weakref.WeakKeyDictionary()


def converters(connection, fields: tuple[Field, ...]) -> list[tuple[int, list, Any]]:
    """What SQLCompiler.get_converters gives for columns of `fields` (backend converters, then
    the field's): (index, converters, column expression) for each field that has any. Kept
    per connection, whose operations the converters are bound to."""
    cached = _CONVERTERS.setdefault(connection, {})
    found = cached.get(fields)
    if found is None:
        found = []
        for index, field in enumerate(fields):
            column = field.get_col(field.model._meta.db_table)
            chain = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
            if chain:
                found.append((index, chain, column))
        cached[fields] = found
    return found


def converted(rows: Iterable[Sequence], width: int, chains: list, connection) -> list[list]:
    """The first `width` values of each row, with `chains` (from `converters`) applied."""
    found = []
    for row in rows:
        values = list(row[:width])
        for index, chain, column in chains:
            value = values[index]
            for convert in chain:
                value = convert(value, column, connection)
            values[index] = value
        found.append(values)
    return found


def values_of(model: type[Model], names: Sequence[str], rows: Iterable[Sequence], *, using: str) -> list[dict[str, Any]]:
    """One dict per row of the columns `names` (attnames, in that order), converted as the
    ORM's values() converts them."""
    connection = connections[using]
    fields = tuple(model._meta.get_field(name) for name in names)
    return [dict(zip(names, values, strict=True))
            for values in converted(rows, len(fields), converters(connection, fields), connection)]


@cache
def _plain(model: type[Model]) -> bool:
    """Whether Model.__init__ only stores `model`'s column values: no __init__ of its own and no
    attribute with a setter but the foreign keys' id attributes (which only drop a cached
    related object, and a new instance has none)."""
    if model.__init__ is not Model.__init__:
        return False
    for field in model._meta.concrete_fields:
        descriptor = model.__dict__.get(field.attname)
        if hasattr(descriptor, "__set__") and not isinstance(descriptor, ForeignKeyDeferredAttribute):
            return False
    return True


def instances(model: type[Model], rows: Iterable[Sequence], *, using: str, exclude: tuple[str, ...] = ()) -> list[Model]:
    """One `model` instance per row, as loaded from database `using`. A row may hold more
    values after the model's columns; they are ignored.

    For a model whose __init__ only stores the values and with no pre_init / post_init receiver,
    the instance is made as Model.from_db makes it without calling __init__ (its column values,
    its state: not adding, from `using`), which costs a third as much."""
    connection = connections[using]
    fields = fields_of(model, exclude)
    names = [field.attname for field in fields]
    rows = converted(rows, len(fields), converters(connection, fields), connection)
    if not _plain(model) or pre_init.has_listeners(model) or post_init.has_listeners(model):
        return [model.from_db(using, names, values) for values in rows]
    built = []
    for values in rows:
        instance = model.__new__(model)
        state = instance._state = ModelState()
        state.adding, state.db = False, using
        instance.__dict__.update(zip(names, values, strict=True))
        built.append(instance)
    return built


def read(model: type[Model], sql: str, params: Sequence, *, exclude: tuple[str, ...] = ()) -> list[Model]:
    """Run `sql` (its select list from `columns(model, …, exclude)`, parameters as %s) on the
    database the router reads `model` from, and return its rows as instances."""
    using = router.db_for_read(model)
    with connections[using].cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return instances(model, rows, using=using, exclude=exclude)


NODE_DEFERRED = ("search_tokens",)  # read by the keyword ranking only, never shown
_NODES, _SESSIONS = Node._meta.db_table, Session._meta.db_table
# A node (alias n) with what serialisers read: its successor's id and its session.
NODE_SELECT = f"{columns(Node, 'n', NODE_DEFERRED)}, successor.id, {columns(Session, 's')}"
NODE_JOINS = (f"LEFT JOIN {_NODES} successor ON successor.supersedes_id = n.id "
              f"LEFT JOIN {_SESSIONS} s ON s.id = n.session_id")


def nodes_of_rows(rows: Sequence[Sequence], *, using: str) -> list[Node]:
    """Rows holding NODE_SELECT's values (from `n` with NODE_JOINS) as nodes, in row order, each
    with what serialisers read already cached as select_related("session", "superseded_by")
    leaves it: its session, and its successor (None, or an instance with only its id loaded)."""
    width = len(fields_of(Node, NODE_DEFERRED))
    nodes = instances(Node, rows, using=using, exclude=NODE_DEFERRED)
    session_rows = {row[width + 1]: row[width + 1:] for row in rows if row[width + 1] is not None}
    session_of = dict(zip(session_rows, instances(Session, session_rows.values(), using=using), strict=True))
    successor_field = Node.superseded_by.related
    for node, row in zip(nodes, rows, strict=True):
        successor = row[width]
        successor_field.set_cached_value(node, None if successor is None else Node.from_db(using, ["id"], [successor]))
        if node.session_id is not None:
            node.session = session_of[node.session_id]
    return nodes


def nodes_by_id(*, team_id: int, pks: Iterable[int]) -> dict[int, Node]:
    """{id: node} for the team's nodes among `pks` (search_tokens deferred, session and successor
    cached: nodes_of_rows), in one statement. Ids of other teams are not returned."""
    wanted = sorted(set(pks))
    if not wanted:
        return {}
    sql = (f"SELECT {NODE_SELECT} FROM {_NODES} n {NODE_JOINS} "
           f"WHERE n.team_id = %s AND n.id IN ({', '.join(['%s'] * len(wanted))})")
    using = router.db_for_read(Node)
    with connections[using].cursor() as cursor:
        cursor.execute(sql, [team_id, *wanted])
        rows = cursor.fetchall()
    return {node.pk: node for node in nodes_of_rows(rows, using=using)}


MESSAGE_DEFERRED = ("search_tokens",)


def messages_with_sessions(sql: str, params: Sequence, *, lead: int = 0) -> list[tuple[tuple, Message]]:
    """Run `sql`, whose select list is `lead` leading values, then
    `columns(Message, "m", MESSAGE_DEFERRED)`, then `columns(Session, "s")` (the message's
    session, joined), and return (leading values, message with its session cached) per row."""
    using = router.db_for_read(Message)
    with connections[using].cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    width = len(fields_of(Message, MESSAGE_DEFERRED))
    messages = instances(Message, [row[lead:] for row in rows], using=using, exclude=MESSAGE_DEFERRED)
    sessions = instances(Session, [row[lead + width:] for row in rows], using=using)
    for message, session in zip(messages, sessions, strict=True):
        message.session = session
    return [(row[:lead], message) for row, message in zip(rows, messages, strict=True)]


def messages_by_id(*, team_id: int, pks: Iterable[int]) -> dict[int, Message]:
    """{id: message} for the team's messages among `pks` (search_tokens deferred), each with its
    session cached, as select_related("session") leaves it; one statement."""
    wanted = sorted(set(pks))
    if not wanted:
        return {}
    sql = (f"SELECT {columns(Message, 'm', MESSAGE_DEFERRED)}, {columns(Session, 's')} "
           f"FROM {Message._meta.db_table} m JOIN {Session._meta.db_table} s ON s.id = m.session_id "
           f"WHERE m.team_id = %s AND m.id IN ({', '.join(['%s'] * len(wanted))})")
    return {message.pk: message for _, message in messages_with_sessions(sql, [team_id, *wanted])}


def prefetch_source_links(nodes: Iterable[Node], *, principal: "Principal") -> None:
    """prefetch_related_objects(nodes, "source_links") in one hand-written statement: each node's
    links (NodeSource, ordered by position) cached, so `node.source_links.all()` reads nothing.
    Only the links `principal` may follow (memory.selectors.nodes.visible_source_links): to a
    message of a conversation not forgotten, in a workspace it may read or in none."""
    pending = [node for node in nodes if "source_links" not in getattr(node, "_prefetched_objects_cache", {})]
    if not pending:
        return
    wanted = sorted({node.pk for node in pending})
    params: list[Any] = list(wanted)
    readable = ""
    if principal.workspace_ids is not None:
        workspaces = sorted(principal.workspace_ids)
        readable = f" AND (s.workspace_id = '' OR s.workspace_id IN ({', '.join(['%s'] * len(workspaces))}))" \
            if workspaces else " AND s.workspace_id = ''"
        params += workspaces
    links = read(NodeSource, f"SELECT {columns(NodeSource, 'l')} FROM {NodeSource._meta.db_table} l "
                             f"JOIN {Message._meta.db_table} m ON m.id = l.message_id "
                             f"JOIN {Session._meta.db_table} s ON s.id = m.session_id "
                             f"WHERE l.node_id IN ({', '.join(['%s'] * len(wanted))}) AND s.deleted_at IS NULL"
                             f"{readable} ORDER BY l.position, l.id",
                 params)
    by_node: dict[int, list[NodeSource]] = {}
    for link in links:
        by_node.setdefault(link.node_id, []).append(link)
    for node in pending:
        cached = node.source_links.all()
        cached._result_cache = by_node.get(node.pk, [])
        cached._prefetch_done = True
        for link in cached._result_cache:
            link.node = node
        if not hasattr(node, "_prefetched_objects_cache"):
            node._prefetched_objects_cache = {}
        node._prefetched_objects_cache["source_links"] = cached
