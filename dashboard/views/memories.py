"""The memory browser and the team switcher (R-UI): thin adapters that validate, call selectors and render.

Views render eagerly with render() inside the team scope set by @team_required, so lazy
querysets are evaluated while the scope is active.
"""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from accounts.principal import team_choices
from dashboard.forms import NodeFilterForm, TeamSwitchForm
from dashboard.teams import SESSION_TEAM_KEY, team_required
from memory.selectors.dashboard import node_browse, node_status_counts

PAGE_SIZE = 50


@vary_on_headers("HX-Request")
@require_GET
@team_required
def memories(request):
    """The team's memory list with filters, text search, counts per status and paging.

    One URL for the page and its fragment: an HTMX request gets only the `results` partial.
    """
    form = NodeFilterForm(request.GET)
    page_obj = status_counts = None
    if form.is_valid():
        filters, text = form.filters(), form.text()
        nodes = node_browse(principal=request.principal, filters=filters, text=text)
        status_counts = node_status_counts(principal=request.principal, filters=filters, text=text)
        paginator = Paginator(nodes, PAGE_SIZE)
        # The status counts already say how many rows the list has: no second COUNT over the team's nodes.
        paginator.count = status_counts[filters["status"] or "all"]
        page_obj = paginator.get_page(request.GET.get("page"))
    template = "dashboard/memories.html"
    if request.htmx and not request.htmx.history_restore_request:
        template += "#results"
    return render(request, template, {"form": form, "page_obj": page_obj, "status_counts": status_counts})


@require_POST
@login_required
def team_switch(request):
    """Work in another team: one the user belongs to (any team for a superuser), else 403."""
    form = TeamSwitchForm(request.POST)
    allowed = {choice.team.slug for choice in team_choices(request.user)}
    if not form.is_valid() or form.cleaned_data["team"] not in allowed:
        raise PermissionDenied("You are not a member of that team.")
    request.session[SESSION_TEAM_KEY] = form.cleaned_data["team"]
    return redirect("dashboard:memories")
