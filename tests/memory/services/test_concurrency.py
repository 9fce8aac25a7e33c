"""Races through real parallel database connections (PostgreSQL: the in-memory SQLite test
database is not shared between threads)."""

import threading

import pytest
from django.db import connection

from accounts.principal import principal_for_key
from accounts.services import agent_key_create, team_create
from memory.errors import Conflict, InvalidInput
from memory.models import AuditEvent, Message, Node, NodeStatus, Session
from memory.services.forget import session_forget
from memory.services.messages import MessageInput, messages_append
from memory.services.nodes import NodeInput, node_supersede, node_update, supersede_input
from memory.services.sessions import SessionRef
from memory.services.upsert import node_upsert
from tests.helpers import run_parallel

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs parallel connections to one database"),
    pytest.mark.django_db(transaction=True),
]


def in_parallel(count: int, work, team) -> list:
    return run_parallel([work] * count, team=team)


@pytest.fixture
def racer():
    team = team_create(slug="race")
    return principal_for_key(agent_key_create(team=team, name="racer")[0])


def test_parallel_identical_creates_leave_one_active_node(racer):
    data = NodeInput(scope="user", user_id="u1", type="fact", key="dup", value_json={"x": 1}, title="dup")
    for _ in range(5):
        results = in_parallel(8, lambda: node_upsert(principal=racer, data=data), racer.team)
        assert all(not isinstance(result, Exception) for result in results), results
        assert len({result.node.pk for result in results}) == 1
    assert Node.objects.filter(key="dup", status=NodeStatus.ACTIVE).count() == 1


def test_parallel_supersedes_of_one_node_leave_one_successor(racer):
    for round_number in range(20):
        old = node_upsert(principal=racer, data=NodeInput(scope="user", user_id="u1", type="fact",
                                                            key=f"k{round_number}", value_json="old", title="old")).node
        results = in_parallel(2, lambda old=old: node_supersede(
            principal=racer, old_node_id=old.pk, data=supersede_input(old, {"value_json": "new"}, {})), racer.team)
        winners = [result for result in results if isinstance(result, Node)]
        losers = [result for result in results if isinstance(result, Conflict)]
        assert len(winners) == 1 and len(losers) == 1, results
        assert Node.objects.filter(key=f"k{round_number}", status=NodeStatus.ACTIVE).count() == 1
        assert Node.objects.get(pk=old.pk).status == NodeStatus.SUPERSEDED


def _chain_is_linear(key: str) -> None:
    nodes = list(Node.objects.filter(key=key).order_by("pk"))
    successors = [node.supersedes_id for node in nodes if node.supersedes_id]
    assert len(successors) == len(set(successors))  # no node was superseded twice (no fork)
    assert sum(1 for node in nodes if node.supersedes_id is None) == 1  # one root
    assert [node.status for node in nodes].count(NodeStatus.ACTIVE) == 1


def test_parallel_different_values_of_a_one_valued_key_leave_one_active_value_and_a_chain(racer):
    for round_number in range(5):
        key = f"diet{round_number}"

        def write(index: int, key=key):
            data = NodeInput(scope="user", user_id="u1", type="fact", key=key, value_json=f"v{index}", title=f"v{index}")
            return node_upsert(principal=racer, data=data)

        counter = iter(range(8))
        results = in_parallel(8, lambda counter=counter: write(next(counter)), racer.team)
        assert all(not isinstance(result, Exception) for result in results), results
        _chain_is_linear(key)
        assert Node.objects.filter(key=key).count() == 8  # every value was kept in the history


def test_parallel_identical_keyless_notes_are_stored_once(racer):
    data = NodeInput(scope="user", user_id="u1", type="fact", title="Likes hiking", content="on weekends")
    for _ in range(5):
        results = in_parallel(6, lambda: node_upsert(principal=racer, data=data), racer.team)
        assert all(not isinstance(result, Exception) for result in results), results
        assert len({result.node.pk for result in results}) == 1
    assert Node.objects.filter(title="Likes hiking").count() == 1


def test_parallel_updates_at_one_version_let_exactly_one_win(racer):
    node = node_upsert(principal=racer, data=NodeInput(scope="user", user_id="u1", type="fact", key="v",
                                                       value_json=1, title="v")).node
    for round_number in range(10):
        version = Node.objects.get(pk=node.pk).version
        counter = iter(range(2))
        results = in_parallel(2, lambda counter=counter, round_number=round_number, version=version: node_update(
            principal=racer, node_id=node.pk, changes={"title": f"edit {round_number}.{next(counter)}"},
            expected_version=version), racer.team)
        assert sum(isinstance(result, Node) for result in results) == 1, results
        assert sum(isinstance(result, Conflict) for result in results) == 1, results
        assert Node.objects.get(pk=node.pk).version == version + 1


def jobs(*callables):
    """One callable per parallel worker, handed out in order."""
    pending = list(callables)
    lock = threading.Lock()

    def work():
        with lock:
            job = pending.pop(0)
        return job()

    return work


def test_appends_racing_a_hard_forget_never_fail_and_lose_nothing_unaccounted(racer):
    ref = SessionRef("s1", "w1", "u1")

    def append():
        return messages_append(principal=racer, messages=[MessageInput(session=ref, role="user", content="hi")])

    for _ in range(5):
        append()
        results = in_parallel(6, jobs(lambda: session_forget(principal=racer, ref=ref, mode="hard"),
                                      *[append] * 5), racer.team)
        assert all(not isinstance(result, Exception) for result in results), results
        forgot = next(result for result in results if not isinstance(result, list))
        # Each append landed either before the forget (and went with it) or after it, in a new session.
        assert Session.objects.filter(team=racer.team).count() <= 1
        assert forgot.counts["messages"] + Message.objects.filter(team=racer.team).count() == 6
        if Session.objects.filter(team=racer.team).exists():  # a clean slate for the next round
            session_forget(principal=racer, ref=ref, mode="hard")


def test_parallel_soft_forgets_of_one_session_leave_one_winner(racer):
    ref = SessionRef("s1", "w1", "u1")
    messages_append(principal=racer, messages=[MessageInput(session=ref, role="user", content="hi")])
    results = in_parallel(4, lambda: session_forget(principal=racer, ref=ref, mode="soft"), racer.team)
    assert sum(isinstance(result, Conflict) for result in results) == 3, results
    assert AuditEvent.objects.filter(team=racer.team, event_type="memory.session.deleted").count() == 1


def test_memories_citing_a_conversation_racing_its_hard_forget_never_fail_or_outlive_it(racer):
    ref = SessionRef("s1", "w1", "u1")
    for round_number in range(5):
        message = messages_append(principal=racer, messages=[MessageInput(session=ref, role="user", content="hi")])[0]

        def cite(index: int, message_id: int = message.pk, round_number: int = round_number):
            return node_upsert(principal=racer, data=NodeInput(
                scope="user", user_id="u1", type="fact", title=f"fact {round_number}.{index}",
                source_message_ids=[message_id]))

        results = in_parallel(5, jobs(lambda: session_forget(principal=racer, ref=ref, mode="hard"),
                                      *[lambda index=index: cite(index) for index in range(4)]), racer.team)
        assert all(not isinstance(result, Exception) or isinstance(result, InvalidInput) for result in results), results
        # A memory written before the forget went with it; one written after found no source to cite.
        assert Node.objects.filter(team=racer.team).count() == 0


def test_parallel_creates_at_the_lexicon_limit_leave_the_team_at_the_limit(racer, monkeypatch):
    from memory import limits
    from memory.lexicon_models import LexiconSet
    from memory.services.lexicon import lexicon_set_save

    monkeypatch.setattr(limits, "LEXICON_SETS_MAX", 1)
    admin = principal_for_key(agent_key_create(team=racer.team, name="lexicon admin", kind="admin")[0])
    for round_number in range(5):
        LexiconSet.objects.filter(team=racer.team).delete()
        jobs = [lambda terms=[f"r{round_number}a{index}", f"r{round_number}b{index}"]: lexicon_set_save(
                    principal=admin, terms=terms) for index in range(8)]
        results = run_parallel(jobs, team=racer.team)
        assert sum(isinstance(result, InvalidInput) for result in results) == 7, results
        assert LexiconSet.objects.filter(team=racer.team).count() == 1
