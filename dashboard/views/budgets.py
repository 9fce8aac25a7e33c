"""Budget configuration (R-UI, R-CTX; seed 004 §7 配置项, §10 preInject): the team's policy and
each workspace's override, every setting of POLICY_FIELDS with the value in force and where
it comes from (default, environment, team, workspace), as budget_resolve reports it.

One URL, one view, one template. GET `?workspace_id=` picks the level (empty: the team's).
POST `action=simulate` rebuilds the last recorded context calls under the form's policy with
policy_simulate (nothing is written); POST `action=save` saves the form through policy_set,
which checks the ranges and audits `memory.policy.updated`. The whole level is saved: an
empty field inherits from the level below. Every role reads the page; only team admins
simulate and save (403 otherwise). Bad values come back on their fields with 400, never a
500. An HTMX POST gets the `budgets` partial back; a plain POST is redirected after a save.
"""

from typing import Any

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers

from dashboard.budget_forms import LABELS, LevelForm, PolicyForm, as_choice
from dashboard.charts import number
from dashboard.teams import admin_refusal, team_required
from memory.errors import InvalidInput
from memory.policy_models import POLICY_FIELDS
from memory.selectors.budget import budget_resolve
from memory.selectors.dashboard_tuning import known_ids, policy_overrides
from memory.selectors.simulation import policy_simulate
from memory.services.policies import policy_get, policy_set

TEMPLATE = "dashboard/budgets.html"
ACTIONS = ("save", "simulate")
PER_CALL_SHOWN = 20
OTHER_WORKSPACES_SHOWN = 8  # workspaces without a policy of their own, linked beside the overrides


def _delta(before: float | None, after: float | None, *, percent: bool = False) -> str:
    if before is None or after is None or before == after:
        return ""
    change = after - before
    return ("+" if change > 0 else "−") + number(abs(change), percent=percent)


def simulation_table(result: dict[str, Any]) -> dict[str, Any]:
    """policy_simulate's answer laid out for the page: before/after rows with the change, and
    the first PER_CALL_SHOWN calls the draft changes (of `changed_calls`)."""
    before, after = result["before"], result["after"]
    rows = [{"label": "Calls rebuilt", "before": number(before["calls"]), "after": number(after["calls"]), "delta": ""}]
    for key, label, percent in (("hit_rate", "Hit rate", True), ("l5_hit_rate", "L5 hit rate (earlier messages too)", True),
                                ("injected_chars_mean", "Injected characters per call", False),
                                ("memories_per_call", "Memories per call", False)):
        rows.append({"label": label, "before": number(before[key], percent=percent),
                     "after": number(after[key], percent=percent), "delta": _delta(before[key], after[key], percent=percent)})
    for reason in sorted(set(before["omitted_by_reason"]) | set(after["omitted_by_reason"])):
        old, new = before["omitted_by_reason"].get(reason, 0), after["omitted_by_reason"].get(reason, 0)
        rows.append({"label": f"Omitted: {reason}", "before": number(old), "after": number(new), "delta": _delta(old, new)})
    changed = [call for call in result["per_call"]
               if call["before"] != call["after"] or call["added_ids"] or call["removed_ids"]]
    return {"result": result, "rows": rows, "changed_calls": len(changed), "per_call": changed[:PER_CALL_SHOWN]}


def _render(request, workspace_id: str, *, level: LevelForm, form: PolicyForm | None = None, status: int = 200,
            problem: str = "", simulation: dict[str, Any] | None = None):
    principal = request.principal
    policy = policy_get(principal=principal, workspace_id=workspace_id)
    if form is None:
        form = PolicyForm(initial={name: as_choice(value) for name, value in policy.settings().items()})
    effective = budget_resolve(team=principal.team, workspace_id=workspace_id).as_dict()
    rows = [{"field": form[name], "label": LABELS[name], "name": name, **effective[name]} for name in POLICY_FIELDS]
    context = {
        "level": level,
        "workspace_id": workspace_id,
        "level_name": "workspace" if workspace_id else "team",
        "policy": policy,
        "form": form,
        "rows": rows,
        "overrides": policy_overrides(principal=principal),
        "can_edit": admin_refusal(request, "budgets") is None,
        "problem": problem,
        "simulation": simulation_table(simulation) if simulation is not None else None,
    }
    known = known_ids(principal=principal)
    overridden = {workspace for workspace, _ in context["overrides"]}
    context["known"] = known
    context["other_workspaces"] = [workspace for workspace in known.workspaces
                                   if workspace not in overridden][:OTHER_WORKSPACES_SHOWN]
    fragment = request.htmx and request.method == "POST"
    response = render(request, TEMPLATE + "#budgets" if fragment else TEMPLATE, context, status=status)
    if fragment:
        # The form is long: bring the simulation, or the message after a save, into view.
        response["HX-Reswap"] = "outerHTML show:#simulation:top" if simulation is not None else "outerHTML show:#budgets:top"
    return response


@vary_on_headers("HX-Request")
@require_http_methods(["GET", "POST"])
@team_required
def budgets(request):
    """GET: the level's policy (`?workspace_id=`, empty: the team's) with every setting in
    force and its source, and the workspaces that override the team's. POST `action` =
    simulate | save with every setting (empty inherits), `workspace_id` and, to simulate,
    `last` (recorded calls, 1–500): see the module docstring."""
    level = LevelForm(request.POST if request.method == "POST" else request.GET)
    if not level.is_valid():
        return _render(request, "", level=level, status=400,
                       problem="That workspace id is not valid; the team's policy is shown.")
    workspace_id = level.cleaned_data["workspace_id"]
    if request.method == "GET":
        return _render(request, workspace_id, level=level)
    action = request.POST.get("action")
    if action not in ACTIONS:
        return _render(request, workspace_id, level=level, status=400, problem="Unknown action; use simulate or save.")
    refusal = admin_refusal(request, "budgets")
    if refusal:
        return _render(request, workspace_id, level=level, status=403, problem=refusal)
    form = PolicyForm(request.POST)
    if not form.is_valid():
        return _render(request, workspace_id, level=level, form=form, status=400)
    try:
        if action == "simulate":
            result = policy_simulate(principal=request.principal, workspace_id=workspace_id, changes=form.settings(),
                                     last=form.last_calls())
            return _render(request, workspace_id, level=level, form=form, simulation=result)
        policy_set(principal=request.principal, workspace_id=workspace_id, changes=form.settings())
    except InvalidInput as error:
        form.add_service_errors(error.fields)
        return _render(request, workspace_id, level=level, form=form, status=400, problem=error.message)
    where = f"workspace {workspace_id}" if workspace_id else "the team"
    messages.success(request, f"Saved the budget policy of {where}; the next context call follows it.")
    if request.htmx:
        return _render(request, workspace_id, level=level)
    url = reverse("dashboard:budgets") + (f"?{urlencode({'workspace_id': workspace_id})}" if workspace_id else "")
    return redirect(url)
