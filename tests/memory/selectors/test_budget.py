"""The budget in force: default < environment < team policy < workspace policy < request (R-CTX)."""

import pytest

from memory.policy_models import POLICY_FIELDS, BudgetPolicy
from memory.selectors.budget import budget_resolve


@pytest.fixture
def team_policy(team):
    return BudgetPolicy.objects.create(team=team, workspace_id="", top_n=3, max_chars=900, l1_chars=200)


@pytest.fixture
def w1_policy(team):
    return BudgetPolicy.objects.create(team=team, workspace_id="w1", max_chars=500, recent_messages=2)


def sources(budget):
    return {name: entry["source"] for name, entry in budget.as_dict().items()}


def test_without_a_team_every_value_is_the_builtin_default():
    budget = budget_resolve()
    assert (budget.enabled, budget.top_n, budget.max_chars, budget.recent_messages) == (True, 6, 1200, 6)
    assert (budget.min_confidence, budget.summary_enabled, budget.l3_enabled, budget.l5_chars) == (0.0, True, True, None)
    assert set(sources(budget).values()) == {"default"}


def test_as_dict_reports_every_setting_with_value_and_source():
    assert list(budget_resolve().as_dict()) == list(POLICY_FIELDS)
    assert budget_resolve().as_dict()["l2_chars"] == {"value": None, "source": "default"}


def test_the_environment_overrides_the_default(settings):
    settings.USER_MEMORY_PREINJECT_TOPN = 4
    settings.USER_MEMORY_PREINJECT_MAXCHARS = 800
    settings.USER_MEMORY_PREINJECT_ENABLED = False
    budget = budget_resolve()
    assert budget.as_dict()["top_n"] == {"value": 4, "source": "environment"}
    assert budget.as_dict()["max_chars"] == {"value": 800, "source": "environment"}
    assert budget.as_dict()["enabled"] == {"value": False, "source": "environment"}
    assert budget.as_dict()["recent_messages"] == {"value": 6, "source": "default"}


def test_the_team_policy_overrides_the_environment(settings, team, team_policy):
    settings.USER_MEMORY_PREINJECT_TOPN = 4
    budget = budget_resolve(team=team)
    assert budget.as_dict()["top_n"] == {"value": 3, "source": "team"}
    assert budget.as_dict()["l1_chars"] == {"value": 200, "source": "team"}
    assert budget.as_dict()["recent_messages"] == {"value": 6, "source": "default"}


def test_a_team_policy_may_raise_a_value_above_the_environment(settings, team):
    settings.USER_MEMORY_PREINJECT_MAXCHARS = 800
    BudgetPolicy.objects.create(team=team, max_chars=5000)
    assert budget_resolve(team=team).as_dict()["max_chars"] == {"value": 5000, "source": "team"}


def test_the_workspace_policy_overrides_the_team_policy_for_that_workspace_only(team, team_policy, w1_policy):
    w1 = budget_resolve(team=team, workspace_id="w1")
    assert w1.as_dict()["max_chars"] == {"value": 500, "source": "workspace"}
    assert w1.as_dict()["recent_messages"] == {"value": 2, "source": "workspace"}
    assert w1.as_dict()["top_n"] == {"value": 3, "source": "team"}  # None in w1's policy: inherited
    w2 = budget_resolve(team=team, workspace_id="w2")
    assert w2.as_dict()["max_chars"] == {"value": 900, "source": "team"}
    assert budget_resolve(team=team).as_dict()["max_chars"] == {"value": 900, "source": "team"}


def test_a_setting_left_null_inherits_from_the_level_below(settings, team):
    settings.USER_MEMORY_PREINJECT_TOPN = 4
    BudgetPolicy.objects.create(team=team, workspace_id="", top_n=None, max_chars=None)
    BudgetPolicy.objects.create(team=team, workspace_id="w1", top_n=None)
    budget = budget_resolve(team=team, workspace_id="w1")
    assert budget.as_dict()["top_n"] == {"value": 4, "source": "environment"}
    assert budget.as_dict()["max_chars"] == {"value": 1200, "source": "default"}


def test_another_teams_policy_does_not_apply(team, other_team):
    BudgetPolicy.objects.create(team=other_team, workspace_id="w1", top_n=1)
    BudgetPolicy.objects.create(team=other_team, workspace_id="", max_chars=10)
    budget = budget_resolve(team=team, workspace_id="w1")
    assert (budget.top_n, budget.max_chars) == (6, 1200)


def test_both_policies_are_read_in_one_query(team, team_policy, w1_policy, django_assert_num_queries):
    with django_assert_num_queries(1):
        budget_resolve({"top_n": 1}, team=team, workspace_id="w1")


def test_the_request_may_ask_for_less_than_the_workspace_policy(team, team_policy, w1_policy):
    budget = budget_resolve({"max_chars": 300, "top_n": 1, "enabled": False}, team=team, workspace_id="w1")
    assert budget.as_dict()["max_chars"] == {"value": 300, "source": "request"}
    assert budget.as_dict()["top_n"] == {"value": 1, "source": "request"}
    assert budget.as_dict()["enabled"] == {"value": False, "source": "request"}
    assert budget.warnings == ()


def test_a_request_for_more_is_capped_at_the_policy_with_a_warning(team, team_policy, w1_policy):
    budget = budget_resolve({"max_chars": 10_000, "recent_messages": 2}, team=team, workspace_id="w1")
    assert budget.as_dict()["max_chars"] == {"value": 500, "source": "workspace"}
    assert budget.as_dict()["recent_messages"] == {"value": 2, "source": "workspace"}  # equal: not a request value
    assert budget.warnings == ("budget.max_chars=10000 is above the policy's 500; capped",)


def test_a_request_cannot_switch_on_what_the_policy_switched_off(team):
    BudgetPolicy.objects.create(team=team, enabled=False, l2_enabled=False)
    budget = budget_resolve({"enabled": True, "l2_enabled": True}, team=team)
    assert (budget.enabled, budget.l2_enabled) == (False, False)
    assert budget.sources["enabled"] == "team" and budget.sources["l2_enabled"] == "team"
    assert len(budget.warnings) == 2 and "cannot enable" in budget.warnings[0]


def test_a_request_may_only_raise_the_minimum_confidence(team):
    BudgetPolicy.objects.create(team=team, min_confidence=0.5)
    higher = budget_resolve({"min_confidence": 0.8}, team=team)
    assert higher.as_dict()["min_confidence"] == {"value": 0.8, "source": "request"}
    lower = budget_resolve({"min_confidence": 0.1}, team=team)
    assert lower.as_dict()["min_confidence"] == {"value": 0.5, "source": "team"}
    assert "below the policy's 0.5" in lower.warnings[0]


def test_a_request_may_cap_a_layer_the_policy_left_uncapped(team, team_policy):
    budget = budget_resolve({"l4_chars": 100, "l1_chars": 500}, team=team)
    assert budget.as_dict()["l4_chars"] == {"value": 100, "source": "request"}
    assert budget.as_dict()["l1_chars"] == {"value": 200, "source": "team"}
    assert budget.layer_chars("L4") == 100 and budget.layer_chars("L0") is None


def test_layer_switches_and_the_summary_switch_come_from_the_policy(team):
    BudgetPolicy.objects.create(team=team, workspace_id="w1", l5_enabled=False, summary_enabled=False, l0_chars=0)
    budget = budget_resolve(team=team, workspace_id="w1")
    assert budget.layer_enabled("L5") is False and budget.layer_enabled("L1") is True
    assert budget.as_dict()["summary_enabled"] == {"value": False, "source": "workspace"}
    assert budget.as_dict()["l0_chars"] == {"value": 0, "source": "workspace"}
