"""The audit log (R-UI Administration, R-STORE audit events): every change to the team's
memories, conversations, members, keys, budgets and schema — who, when, why and what.

Editors and admins read it; viewers get 403 (its payloads include member, key and schema
changes). Filters by event type (or a dotted prefix), actor, node id, session id and date
range; 50 events a page, newest first; each payload shown as indented, escaped JSON; nodes and
conversations that still exist are linked. One URL: an HTMX request gets the `results` partial.
"""

from django.core.paginator import Paginator
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from dashboard.admin_forms import AuditFilterForm
from dashboard.teams import require_admin_reader, team_required
from dashboard.views.admin_common import template_for
from memory.selectors.audit import audit_browse, audit_event_types, audit_links

PAGE_SIZE = 50


@vary_on_headers("HX-Request")
@require_GET
@team_required
def audit_page(request):
    """GET with the filters of AuditFilterForm and `page`. Filters that do not validate are
    reported and nothing is listed (never a 500). Queries: the count, the page, the event
    types, and two for the page's links."""
    require_admin_reader(request)
    form = AuditFilterForm(request.GET)
    page_obj = links = None
    if form.is_valid():
        events = audit_browse(principal=request.principal, filters=form.cleaned_data)
        page_obj = Paginator(events, PAGE_SIZE).get_page(request.GET.get("page"))
        links = audit_links(principal=request.principal, events=page_obj.object_list)
        for event in page_obj.object_list:
            event.node_exists = event.node_id in links.node_ids
            event.session_pk = links.sessions.get((event.workspace_id, event.user_id, event.session_id))
    context = {
        "form": form,
        "page_obj": page_obj,
        "event_types": audit_event_types(principal=request.principal),
    }
    return render(request, template_for(request, "dashboard/audit.html", "results"), context)
