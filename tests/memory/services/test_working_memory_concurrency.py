"""Working-memory writes racing each other and a forget, on real parallel connections
(PostgreSQL: the in-memory SQLite test database is not shared between threads)."""

import pytest
from django.db import connection

from accounts.principal import principal_for_key
from accounts.services import agent_key_create, team_create
from memory.errors import Conflict
from memory.services.forget import session_forget
from memory.services.sessions import SessionRef
from memory.services.working_memory import working_memory_patch, working_memory_put
from memory.working_models import WorkingMemory
from tests.helpers import run_parallel

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs parallel connections to one database"),
    pytest.mark.django_db(transaction=True),
]

REF = SessionRef("s1", "w1", "u1")


@pytest.fixture
def racer():
    team = team_create(slug="race")
    return principal_for_key(agent_key_create(team=team, name="racer")[0])


def test_parallel_patches_of_different_keys_all_land(racer):
    jobs = [lambda index=index: working_memory_patch(principal=racer, ref=REF, changes={"slots": {f"k{index}": index}})
            for index in range(8)]
    results = run_parallel(jobs, team=racer.team)
    assert all(isinstance(result, WorkingMemory) for result in results), results
    memory = WorkingMemory.objects.get(team=racer.team)
    assert memory.slots == {f"k{index}": index for index in range(8)} and memory.version == 8


def test_parallel_writes_from_one_read_version_let_exactly_one_win(racer):
    working_memory_put(principal=racer, ref=REF, data={"current_goal": "start"})
    jobs = [lambda index=index: working_memory_put(principal=racer, ref=REF, data={"current_goal": f"g{index}"},
                                                   expected_version=1) for index in range(6)]
    results = run_parallel(jobs, team=racer.team)
    winners = [result for result in results if isinstance(result, WorkingMemory)]
    assert len(winners) == 1 and all(isinstance(r, Conflict) for r in results if r not in winners), results
    assert WorkingMemory.objects.get(team=racer.team).current_goal == winners[0].current_goal


def test_a_write_racing_a_hard_forget_runs_wholly_before_or_after_it(racer):
    for _ in range(5):
        working_memory_put(principal=racer, ref=REF, data={"current_goal": "before"})
        results = run_parallel([
            lambda: session_forget(principal=racer, ref=REF, mode="hard"),
            lambda: working_memory_patch(principal=racer, ref=REF, changes={"scratchpad": "racing"}),
        ], team=racer.team)
        assert not isinstance(results[0], Exception), results
        rows = list(WorkingMemory.objects.filter(team=racer.team))
        # Before: the forget took the patched row. After: a new session with only the patch.
        assert rows == [] or [(r.current_goal, r.scratchpad, r.version) for r in rows] == [("", "racing", 1)]
        WorkingMemory.objects.filter(team=racer.team).delete()
