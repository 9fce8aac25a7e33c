"""The KPI page (R-UI; seed 004 §7.3; issue 5 item 5): what kpis() — the selector behind
GET /api/v1/kpis — returns for a range of UTC days and a workspace (or the whole team), as
server-rendered SVG charts over the days with the numbers beside each, plus the capture
job backlog as it is now. Every role may read it. GET only: one URL for the page and, for
HTMX, its `results` partial. Bad dates or a range longer than the selector allows are shown
with 400, never a 500.
"""

from datetime import UTC

from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from dashboard.budget_forms import KpiFilterForm
from dashboard.kpi_panels import headline, kpi_panels
from dashboard.teams import team_required
from memory.errors import InvalidInput
from memory.selectors.dashboard_tuning import capture_backlog, known_ids, latest_context_calls
from memory.selectors.kpis import kpis

TEMPLATE = "dashboard/kpis.html"


@vary_on_headers("HX-Request")
@require_GET
@team_required
def kpi_page(request):
    """GET `since`, `until` (YYYY-MM-DD, UTC days, both included; default the last 14 days up
    to today) and `workspace_id` (empty: the whole team): the KPI charts and tables."""
    form = KpiFilterForm(request.GET, today=timezone.now().astimezone(UTC).date())
    context = {"form": form, "data": None, "panels": []}
    status = 200
    if form.is_valid():
        since, until = form.cleaned_data["since"], form.cleaned_data["until"]
        workspace_id = form.cleaned_data["workspace_id"]
        request.principal.check_workspace(workspace_id)
        try:
            data = kpis(team=request.principal.team, workspace_id=workspace_id, since=since, until=until)
        except InvalidInput as error:
            for name, messages in (error.fields or {}).items():
                for message in messages:
                    form.add_error(name if name in form.fields else None, message)
            status = 400
        else:
            backlog = capture_backlog(team=request.principal.team, workspace_id=workspace_id)
            context.update(data=data, headline=headline(data), panels=kpi_panels(data, backlog),
                           latest=latest_context_calls(team=request.principal.team, workspace_id=workspace_id,
                                                       since=since, until=until))
    else:
        status = 400
    template = TEMPLATE
    if request.htmx and not request.htmx.history_restore_request:
        template += "#results"
    else:
        context["known"] = known_ids(principal=request.principal)
    return render(request, template, context, status=status)
