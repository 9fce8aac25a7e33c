"""The client's tests talk HTTP to pytest-django's live server (a real server on a thread),
with a real agent key of the fixed cast's team. Only transport-failure and backoff tests use
httpx.MockTransport (test_retry.py). Modules mark themselves django_db(transaction=True): the
live server answers from another thread, so test data must be committed for it to see."""

import pytest

from accounts.services import agent_key_create
from memory_client import MemoryClient, RetryPolicy

NO_WAIT = RetryPolicy(max_attempts=3, backoff=0.0, jitter=0.0)
WHO = {"workspace_id": "home", "user_id": "xiaoming"}


@pytest.fixture
def memory(live_server, agent_key):
    """A client of the team `acme` with the cast's agent key."""
    with MemoryClient(live_server.url, agent_key[1], retry=NO_WAIT, timeout=20) as client:
        yield client


@pytest.fixture
def other_memory(live_server, other_team):
    """A client with a key of the other team: must never see the first team's data."""
    with MemoryClient(live_server.url, agent_key_create(team=other_team, name="other agent")[1], retry=NO_WAIT) as client:
        yield client


@pytest.fixture
def said(memory):
    """A user message of session s1 (home, xiaoming) that states a preference; returns its id."""
    return memory.append_message("s1", "user", "我不吃香菜", **WHO).ids[0]


@pytest.fixture
def coriander(memory, said):
    """An accepted user-scope memory bound to `said`; returns the ProposeResult."""
    result = memory.propose(
        "create", session_id="s1", explicit_user_intent=True, reason="the user asked", **WHO,
        node={"scope": "user", "type": "preference", "domain": "生活技能", "key": "avoid_ingredient",
              "value_json": "香菜", "title": "用户不吃香菜", "source_message_ids": [said]},
    )
    assert result.accepted, result.raw
    return result
