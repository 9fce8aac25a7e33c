"""Two admins changing each other at the same moment never leave a team without an admin
(R-TEN; accounts.services locks the team row). PostgreSQL: the in-memory SQLite test database is
not shared between threads."""

import pytest
from django.db import connection

from accounts.models import Membership, Role
from accounts.services import membership_remove, membership_role_change, membership_set, team_create
from memory.errors import Conflict
from tests.helpers import run_parallel

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs parallel connections to one database"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def two_admins():
    team = team_create(slug="duo")
    for name in ("ann", "ben"):
        membership_set(team=team, username=name, role=Role.ADMIN)
    return team, list(Membership.objects.filter(team=team).order_by("user__username"))


def test_two_admins_demoting_each_other_at_once_leave_one_admin(two_admins):
    team, (ann, ben) = two_admins
    results = run_parallel([
        lambda: membership_role_change(team=team, membership_id=ann.pk, role=Role.EDITOR),
        lambda: membership_role_change(team=team, membership_id=ben.pk, role=Role.VIEWER),
    ])
    assert sum(isinstance(result, Conflict) for result in results) == 1
    assert Membership.objects.filter(team=team, role=Role.ADMIN).count() == 1


def test_two_admins_removing_each_other_at_once_leave_one_admin(two_admins):
    team, (ann, ben) = two_admins
    results = run_parallel([
        lambda: membership_remove(team=team, membership_id=ann.pk),
        lambda: membership_remove(team=team, membership_id=ben.pk),
    ])
    assert sum(isinstance(result, Conflict) for result in results) == 1
    assert Membership.objects.filter(team=team, role=Role.ADMIN).count() == 1
