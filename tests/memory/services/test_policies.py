"""policy_set and policy_get: admins only, partial, validated, audited (R-CTX, R-TEN)."""

import pytest

from accounts.principal import AccessDenied
from accounts.services import agent_key_create
from memory.errors import InvalidInput
from memory.models import AuditEvent, BudgetPolicy
from memory.services.policies import POLICY_UPDATED, policy_get, policy_set


def test_an_admin_sets_a_workspace_policy(admin_principal):
    policy = policy_set(principal=admin_principal, workspace_id="w1", changes={"top_n": 2, "max_chars": 300})
    assert (policy.workspace_id, policy.top_n, policy.max_chars, policy.enabled) == ("w1", 2, 300, None)
    assert policy.updated_by == admin_principal.actor


def test_a_change_is_partial_and_none_clears_a_setting_back_to_inherit(admin_principal):
    policy_set(principal=admin_principal, changes={"top_n": 2, "max_chars": 300})
    policy = policy_set(principal=admin_principal, changes={"top_n": None, "l5_enabled": False})
    assert (policy.top_n, policy.max_chars, policy.l5_enabled) == (None, 300, False)
    assert BudgetPolicy.objects.filter(team=admin_principal.team).count() == 1


def test_an_agent_key_may_not_change_a_policy(principal):
    with pytest.raises(AccessDenied):
        policy_set(principal=principal, changes={"top_n": 2})
    assert not BudgetPolicy.objects.exists()


def test_the_change_is_audited_with_before_and_after(admin_principal):
    policy_set(principal=admin_principal, workspace_id="w1", changes={"top_n": 2})
    policy_set(principal=admin_principal, workspace_id="w1", changes={"top_n": 4, "max_chars": 500})
    event = AuditEvent.objects.filter(event_type=POLICY_UPDATED).order_by("-pk").first()
    assert event.actor == admin_principal.actor and event.workspace_id == "w1"
    assert event.payload["level"] == "workspace" and event.payload["changed"] == ["top_n", "max_chars"]
    assert (event.payload["before"]["top_n"], event.payload["after"]["top_n"]) == (2, 4)
    assert (event.payload["before"]["max_chars"], event.payload["after"]["max_chars"]) == (None, 500)


def test_nothing_is_written_when_nothing_changes(admin_principal):
    policy_set(principal=admin_principal, changes={"top_n": None})
    assert not BudgetPolicy.objects.exists()
    policy_set(principal=admin_principal, changes={"top_n": 2})
    policy_set(principal=admin_principal, changes={"top_n": 2})
    assert AuditEvent.objects.filter(event_type=POLICY_UPDATED).count() == 1


@pytest.mark.parametrize(("changes", "field"), [
    ({"top_n": 51}, "top_n"), ({"top_n": -1}, "top_n"), ({"max_chars": 100_001}, "max_chars"),
    ({"recent_messages": 21}, "recent_messages"), ({"min_confidence": 1.5}, "min_confidence"),
    ({"min_confidence": float("nan")}, "min_confidence"), ({"l3_chars": -5}, "l3_chars"),
    ({"l0_chars": 100_001}, "l0_chars"), ({"top_n": True}, "top_n"), ({"top_n": 2.5}, "top_n"),
    ({"enabled": "yes"}, "enabled"), ({"l4_enabled": 1}, "l4_enabled"), ({"topn": 2}, "topn"),
])
def test_an_invalid_setting_is_refused_naming_the_field(admin_principal, changes, field):
    with pytest.raises(InvalidInput) as error:
        policy_set(principal=admin_principal, changes=changes)
    assert list(error.value.fields) == [field]
    assert not BudgetPolicy.objects.exists()


def test_the_team_minimum_confidence_follows_the_team_policy(admin_principal):
    team = admin_principal.team
    policy_set(principal=admin_principal, changes={"min_confidence": 0.6})
    team.refresh_from_db()
    assert team.min_confidence == 0.6
    policy_set(principal=admin_principal, changes={"min_confidence": None})
    team.refresh_from_db()
    assert team.min_confidence == 0.0


def test_a_workspace_minimum_confidence_leaves_the_team_floor_alone(admin_principal):
    policy_set(principal=admin_principal, workspace_id="w1", changes={"min_confidence": 0.6})
    admin_principal.team.refresh_from_db()
    assert admin_principal.team.min_confidence == 0.0


def test_an_admin_key_limited_to_workspaces_reaches_only_their_policies(team):
    from accounts.principal import principal_for_key

    limited = principal_for_key(agent_key_create(team=team, name="w1 admin", kind="admin", workspace_ids=["w1"])[0])
    policy_set(principal=limited, workspace_id="w1", changes={"top_n": 1})
    with pytest.raises(AccessDenied):
        policy_set(principal=limited, workspace_id="w2", changes={"top_n": 1})
    with pytest.raises(AccessDenied):
        policy_set(principal=limited, changes={"top_n": 1})
    with pytest.raises(AccessDenied):
        policy_get(principal=limited)


def test_policy_get_returns_an_unsaved_empty_policy_when_none_was_set(principal):
    policy = policy_get(principal=principal, workspace_id="w9")
    assert policy.pk is None and set(policy.settings().values()) == {None}


def test_a_bad_workspace_id_is_refused(admin_principal):
    with pytest.raises(InvalidInput):
        policy_set(principal=admin_principal, workspace_id=" w1", changes={"top_n": 1})



def test_the_migration_copies_a_teams_minimum_confidence_into_its_team_policy(team, other_team):
    from importlib import import_module

    from django.apps import apps

    team.min_confidence = 0.4
    team.save()
    import_module("memory.migrations.0010_budget_policy").copy_team_min_confidence(apps, None)
    assert BudgetPolicy.objects.get(team=team, workspace_id="").min_confidence == 0.4
    assert not BudgetPolicy.objects.filter(team=other_team).exists()  # 0.0: nothing to copy


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_admins_creating_a_policy_at_once_leave_one_row_and_every_change_audited():
    from django.db import connection

    from accounts.principal import principal_for_key
    from accounts.services import team_create
    from tests.helpers import run_parallel

    if connection.vendor != "postgresql":
        pytest.skip("needs parallel connections to one database")
    team = team_create(slug="race")
    admin = principal_for_key(agent_key_create(team=team, name="admin", kind="admin")[0])
    jobs = [lambda n=n: policy_set(principal=admin, workspace_id="w1", changes={"top_n": n}) for n in range(1, 7)]
    results = run_parallel(jobs, team=team)
    assert not [result for result in results if isinstance(result, Exception)]
    assert BudgetPolicy.objects.filter(team=team, workspace_id="w1").count() == 1
    events = list(AuditEvent.objects.filter(team=team, event_type=POLICY_UPDATED).order_by("pk"))
    assert len(events) == 6
    assert [event.payload["before"]["top_n"] for event in events[1:]] == [e.payload["after"]["top_n"] for e in events[:-1]]
    assert BudgetPolicy.objects.get(team=team, workspace_id="w1").top_n == events[-1].payload["after"]["top_n"]
