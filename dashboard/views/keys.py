"""Agent API keys (R-UI Administration, R-TEN): the team's keys, a new key, revoking one.

Editors and admins read the list (name, kind, prefix, workspace limit, writable scopes,
creator, created, last used, revoked); only admins create or revoke (viewers get 403 on GET,
editors on POST). One URL, one view, one template; POST `action` = create | revoke through
accounts.services.agent_key_create / agent_key_revoke, which write and audit in one
transaction (the audit names the key by its prefix).

The raw key exists only in the response to its creation (201): it is never stored, put in
the session (which keeps only the prefix a create form made, so that sending that form again
makes no second key), a flash message or a log, and that response is marked no-store so that the
browser's back button or a reload does not show it again. An HTMX request gets the `keys`
partial back.
"""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers

from accounts.models import AgentKey
from accounts.selectors import agent_key_list
from accounts.services import agent_key_create, agent_key_revoke
from dashboard.admin_forms import AgentKeyCreateForm, AgentKeyRevokeForm
from dashboard.teams import admin_refusal, require_admin_reader, team_required
from dashboard.views.admin_common import run_service, template_for
from memory.errors import NotFound

TEMPLATE = "dashboard/keys.html"
CREATED_FROM = "keys_created_from"  # session: the create forms already sent, {token: "prefix (name)"}
CREATED_FROM_KEPT = 20
ACTIONS = ("create", "revoke")


def _render(request, *, status: int = 200, form: AgentKeyCreateForm | None = None, problem: str = "",
            created: AgentKey | None = None, raw_key: str = ""):
    context = {
        "keys": agent_key_list(team=request.team),
        "form": form or AgentKeyCreateForm(prefix="create"),
        "can_admin": admin_refusal(request) is None,
        "problem": problem,
        "created": created,
        "raw_key": raw_key,
        "open_create": form is not None and raw_key == "",
    }
    response = render(request, template_for(request, TEMPLATE, "keys"), context, status=status)
    add_never_cache_headers(response)
    return response


def _create(request):
    form = AgentKeyCreateForm(request.POST, prefix="create")
    if not form.is_valid():
        return _render(request, status=400, form=form)
    data = form.cleaned_data
    made = request.session.get(CREATED_FROM, {})
    if data["once"] and data["once"] in made:
        return _render(request, status=409, problem=(
            f"This form was already sent: it created key {made[data['once']]}, whose raw key was shown once. "
            "Revoke that key if the raw key was lost, then create another."))
    outcome = run_service(form, lambda: agent_key_create(
        team=request.team, name=data["name"], kind=data["kind"], workspace_ids=data["workspace_ids"],
        writable_scopes=data["writable_scopes"], actor=request.principal))
    if not outcome.ok:
        return _render(request, status=outcome.status, form=form, problem=outcome.problem)
    key, raw_key = outcome.result
    if data["once"]:  # the prefix only: the raw key is never kept
        request.session[CREATED_FROM] = {**dict(list(made.items())[-(CREATED_FROM_KEPT - 1):]),
                                         data["once"]: f"{key.prefix} ({key.name})"}
    return _render(request, status=201, created=key, raw_key=raw_key)


def _revoke(request):
    form = AgentKeyRevokeForm(request.POST)
    if not form.is_valid():
        return _render(request, status=400, problem="Pick a key to revoke.")
    key = AgentKey.objects.select_related("team").filter(team=request.team, pk=form.cleaned_data["key"]).first()
    if key is None:
        raise NotFound("no such key in this team")
    outcome = run_service(None, lambda: agent_key_revoke(key=key, actor=request.principal))
    if not outcome.ok:
        return _render(request, status=outcome.status, problem=outcome.problem)
    messages.success(request, f"Revoked key {key.prefix} ({key.name}): the API refuses it from now on.")
    return _render(request) if request.htmx else redirect("dashboard:keys")


@vary_on_headers("HX-Request")
@require_http_methods(["GET", "POST"])
@team_required
def keys_page(request):
    """GET: the team's keys. POST `action` = create (`create-name`, `create-kind`,
    `create-workspace_ids`, `create-writable_scopes`…) → 201 with the raw key shown once, or
    revoke (`key`). 403 for a viewer (any method) or an editor (POST); 404 for another team's
    key; 400 for a bad form; 409 for a key revoked already."""
    require_admin_reader(request)
    if request.method == "GET":
        return _render(request)
    action = request.POST.get("action", "")
    if action not in ACTIONS:
        return _render(request, status=400, problem=f"Unknown action; use one of {', '.join(ACTIONS)}.")
    refusal = admin_refusal(request)
    if refusal:
        return _render(request, status=403, problem=refusal)
    return _create(request) if action == "create" else _revoke(request)
