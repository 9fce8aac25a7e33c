"""The fixed cast every test uses: two teams, logins of each role, agent clients (STYLE.md)."""

import pytest
from django_scopes import scopes_disabled
from rest_framework.test import APIClient

from accounts.models import Role
from accounts.principal import principal_for_key
from accounts.services import agent_key_create, membership_set, team_create


@pytest.fixture(autouse=True)
def _unscoped_test_code(db):
    """Test code reads and writes across teams freely; API and dashboard requests still run
    inside their principal's team scope (the view activates it)."""
    with scopes_disabled():
        yield


@pytest.fixture
def team(db):
    return team_create(slug="acme", name="Acme")


@pytest.fixture
def other_team(db):
    return team_create(slug="globex", name="Globex")


def _member(team, username, role):
    user, _ = membership_set(team=team, username=username, role=role, password="pw-" + username)
    return user


@pytest.fixture
def admin(team):
    return _member(team, "ada", Role.ADMIN)


@pytest.fixture
def editor(team):
    return _member(team, "eddie", Role.EDITOR)


@pytest.fixture
def viewer(team):
    return _member(team, "vera", Role.VIEWER)


@pytest.fixture
def outsider(other_team):
    """An admin of the other team: must never see the first team's data."""
    return _member(other_team, "otto", Role.ADMIN)


def key_client(raw_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return client


@pytest.fixture
def agent_key(team):
    return agent_key_create(team=team, name="agent")


@pytest.fixture
def agent_client(agent_key):
    return key_client(agent_key[1])


@pytest.fixture
def readonly_agent_client(team):
    return key_client(agent_key_create(team=team, name="reader", writable_scopes=[])[1])


@pytest.fixture
def other_agent_client(other_team):
    return key_client(agent_key_create(team=other_team, name="other agent")[1])


@pytest.fixture
def principal(agent_key):
    """The agent key's principal, for calling services and selectors directly."""
    return principal_for_key(agent_key[0])


@pytest.fixture
def other_principal(other_team):
    return principal_for_key(agent_key_create(team=other_team, name="other")[0])


@pytest.fixture
def admin_principal(team):
    """An admin key's principal: may write global (team-wide) memory."""
    return principal_for_key(agent_key_create(team=team, name="admin", kind="admin")[0])
