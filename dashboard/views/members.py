"""Members and roles (R-UI Administration, R-TEN): who belongs to the team and with which role.

Editors and admins read the page; only admins change it (viewers get 403 on GET, editors on
POST). One URL, one view, one template: GET shows the members; POST runs one `action` —
`add` (an existing login, or a new one with its password: accounts.services.member_add),
`role` (membership_role_change) or `remove` (membership_remove). The services lock the team,
write and audit in one transaction, and refuse to demote or remove the team's last admin
(409 with the reason). An HTMX request gets the `members` partial back; a plain form post is
redirected to the page with a message.
"""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect

from accounts.selectors import member_list
from accounts.services import member_add, membership_remove, membership_role_change
from dashboard.admin_forms import MemberAddForm, MemberRemoveForm, MemberRoleForm
from dashboard.teams import EDIT_ROLES, admin_refusal, require_admin_reader, team_required
from dashboard.views.admin_common import Outcome, run_service, template_for

TEMPLATE = "dashboard/members.html"
ACTIONS = ("add", "role", "remove")


def _render(request, *, status: int = 200, add_form: MemberAddForm | None = None, problem: str = ""):
    context = {
        "members": member_list(team=request.team),
        "add_form": add_form or MemberAddForm(prefix="add"),
        "role_choices": MemberRoleForm.base_fields["role"].choices,
        "can_admin": admin_refusal(request) is None,
        "problem": problem,
    }
    return render(request, template_for(request, TEMPLATE, "members"), context, status=status)


def _add(request) -> tuple[Outcome, MemberAddForm]:
    form = MemberAddForm(request.POST, prefix="add")
    if not form.is_valid():
        return Outcome(status=400), form
    data = form.cleaned_data
    outcome = run_service(form, lambda: member_add(team=request.team, username=data["username"], role=data["role"],
                                                   password=data["password"], actor=request.principal))
    if outcome.ok:
        user, created = outcome.result
        outcome = Outcome(f"Added {user.get_username()}{' (new login)' if created else ''} as {data['role']}.")
    return outcome, form


def _role(request) -> tuple[Outcome, None]:
    form = MemberRoleForm(request.POST)
    if not form.is_valid():
        return Outcome(status=400, problem="Pick a member and one of the roles."), None
    data = form.cleaned_data
    outcome = run_service(None, lambda: membership_role_change(
        team=request.team, membership_id=data["member"], role=data["role"], actor=request.principal))
    if outcome.ok:
        outcome = Outcome(f"{outcome.result.user.get_username()} is now {outcome.result.role}.")
    return outcome, None


def _remove(request) -> tuple[Outcome, None]:
    form = MemberRemoveForm(request.POST)
    if not form.is_valid():
        return Outcome(status=400, problem="Pick a member to remove."), None
    outcome = run_service(None, lambda: membership_remove(
        team=request.team, membership_id=form.cleaned_data["member"], actor=request.principal))
    if outcome.ok:
        outcome = Outcome(f"Removed {outcome.result.user.get_username()} from the team.")
    return outcome, None


HANDLERS = {"add": _add, "role": _role, "remove": _remove}


def _own_role(request) -> str | None:
    """The login's role in the team now (after a change it made to itself): "admin" for a
    superuser, None once it is no longer a member."""
    if request.user.is_superuser:
        return "admin"
    membership = request.user.memberships.filter(team=request.team).first()
    return membership.role if membership is not None else None


@vary_on_headers("HX-Request")
@require_http_methods(["GET", "POST"])
@team_required
def members_page(request):
    """GET: the team's members with their roles. POST `action` = add (`add-username`,
    `add-role`, `add-password`) | role (`member`, `role`) | remove (`member`). 403 for a viewer
    (any method) or an editor (POST); 404 for another team's membership; 400 for a bad form;
    409 for the last admin or a login that is a member already."""
    require_admin_reader(request)
    if request.method == "GET":
        return _render(request)
    action = request.POST.get("action", "")
    if action not in HANDLERS:
        return _render(request, status=400, problem=f"Unknown action; use one of {', '.join(ACTIONS)}.")
    refusal = admin_refusal(request)
    if refusal:
        return _render(request, status=403, problem=refusal)
    outcome, add_form = HANDLERS[action](request)
    if not outcome.ok:
        return _render(request, status=outcome.status, add_form=add_form, problem=outcome.problem)
    messages.success(request, outcome.result)
    role = _own_role(request)
    if role == request.team_role:
        return _render(request) if request.htmx else redirect("dashboard:members")
    # The admin changed their own membership: the next page is built for the role they have now.
    url = reverse("dashboard:members" if role in EDIT_ROLES else "dashboard:memories")
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
