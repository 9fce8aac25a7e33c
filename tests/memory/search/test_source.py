"""The keyword search's hand-written statements (memory.search.source, query.node_rows) read
the rows, values and counts the ORM's filters give, and only the caller's team's."""

import itertools

from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.models import Message, Node, Scope, Session
from memory.search.fields import TokenQuery
from memory.search.source import Rows
from memory.selectors.messages import _REACH_COLUMNS, _REACH_FIELDS, _SESSION_JOIN
from memory.selectors.nodes import Owner
from memory.selectors.query import _ORDER_FIELDS, MemoryQuery, _filtered, node_rows
from tests.helpers import append, make_node


def _ids(rows: Rows, tokens: tuple[str, ...] = ("tea",)) -> list[int]:
    return [row[0] for row in rows.fetch(TokenQuery(tokens), 1000)]


def test_node_rows_hold_exactly_the_orms_filtered_nodes(principal, other_principal):
    append(principal, "hi", session_id="s1", workspace_id="w1")
    for who in (principal, other_principal):
        make_node(who, title="tea at noon", tags=["food", "drink"], entities=["tea"], category_path=["life", "food"])
        make_node(who, scope="workspace", type="fact", user_id="", workspace_id="w1", title="tea for guests",
                  domain="home", tags=["drink"], category_path=["life"])
        make_node(who, scope="workspace", type="decision", user_id="", workspace_id="w2", title="tea budget")
    make_node(principal, scope="session", type="task", session_id="s1", workspace_id="w1", title="buy tea",
              category_path=["life", "food_x"])
    gone = make_node(principal, title="old tea habit")
    Node.objects.filter(pk=gone.pk).update(status="deleted")
    session = Session.objects.get(team=principal.team, external_id="s1")
    owners = [Owner(user_id="u1"), Owner(workspace_id="w1", user_id="u1", session_id="s1"), Owner(workspace_id="w2")]
    shapes = [{}, {"scopes": (Scope.USER,)}, {"domain": "home"}, {"category_path_prefix": ("life",)},
              {"category_path_prefix": ("life", "food")}, {"types": ("fact", "task")}, {"tags": ("drink",)},
              {"tags": ("food", "drink")}, {"entities": ("tea",)}, {"scopes": (Scope.WORKSPACE,), "tags": ("drink",)}]
    for owner, shape in itertools.product(owners, shapes):
        query = MemoryQuery(owner=owner, query_text="tea", **shape)
        with_session = session if owner.session_id else None
        expected = list(_filtered(principal, query, with_session).filter(title__contains="tea")
                        .order_by("-pk").values_list("pk", flat=True))
        assert _ids(node_rows(principal, query, with_session)) == expected, (owner, shape)


def test_fetched_values_are_the_orms_values(principal):
    make_node(principal, title="tea with lemon", confidence=0.7, importance=0.2)
    append(principal, "tea time?", session_id="s4")
    query = MemoryQuery(owner=Owner(user_id="u1"), query_text="tea")
    fetched = node_rows(principal, query, None).fetch(TokenQuery(("tea",)), 10)
    expected = list(Node.objects.filter(team=principal.team).order_by("-pk").values_list("pk", "search_tokens",
                                                                                            *_ORDER_FIELDS))
    assert fetched == expected
    messages = Rows(Message, '"memory_message"."team_id" = %s', (principal.team.pk,), joins=_SESSION_JOIN,
                    columns=_REACH_COLUMNS)
    assert messages.fetch(TokenQuery(("tea",)), 10) == list(
        Message.objects.filter(team=principal.team).order_by("-pk").values_list("pk", "search_tokens", *_REACH_FIELDS))


def test_counts_are_capped_per_token_and_keep_to_the_condition(principal, other_principal):
    for index in range(3):
        make_node(principal, title=f"tea {index}")
    make_node(principal, title="lemon")
    make_node(other_principal, title="tea elsewhere")
    rows = node_rows(principal, MemoryQuery(owner=Owner(user_id="u1"), query_text="tea"), None)
    queries = [TokenQuery((token,)) for token in ("tea", "lemon", "juice")]
    assert rows.counts(queries, 2) == [2, 1, 0]
    assert rows.counts(queries, 200) == [3, 1, 0]


def test_counts_run_one_statement_whose_text_does_not_grow_with_the_queries(principal):
    """On PostgreSQL the tsqueries are one array parameter, so the server can prepare the
    statement once (docs/performance.md); elsewhere one statement still counts them all."""
    make_node(principal, title="tea lemon")
    rows = node_rows(principal, MemoryQuery(owner=Owner(user_id="u1"), query_text="tea"), None)
    texts = []
    for tokens in (("tea",), ("tea", "lemon", "juice", "honey")):
        with CaptureQueriesContext(connection) as captured:
            counts = rows.counts([TokenQuery((token,)) for token in tokens], 200)
        assert len(captured.captured_queries) == 1
        texts.append(captured.captured_queries[0]["sql"])
        assert counts == [1, 1, 0, 0][: len(tokens)]
    assert rows.counts([], 200) == []
    if connection.vendor == "postgresql":
        # the logged text has the parameters filled in: compare it without the array
        assert texts[0].split("unnest")[0] == texts[1].split("unnest")[0]
        assert len(texts[1]) - len(texts[0]) < 60


def test_statements_are_parameterised(principal):
    rows = node_rows(principal, MemoryQuery(owner=Owner(user_id="u1'; DROP TABLE memory_node; --"),
                                            domain="x' OR '1'='1", query_text="tea"), None)
    make_node(principal, title="tea")
    assert _ids(rows) == []
    assert connection.introspection.table_names().count("memory_node") == 1
