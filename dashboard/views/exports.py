"""Downloads of memories as JSON Lines from the dashboard (docs/export.md; R-UI, R-TEN): the
right to a copy, next to the right to be forgotten.

Logins and the end users agents name (user_id) are not linked in this product, so: any
login may download the end user whose user_id equals its username ("Download my data");
team admins may download any end user, a workspace or the whole team, from the sessions
pages. The rights are checked by memory.services.portability.export.export_check, which also
audits every download.
"""

from django.http import HttpResponseBadRequest, StreamingHttpResponse
from django.views.decorators.http import require_GET

from dashboard.teams import team_required
from memory.errors import InvalidInput
from memory.selectors.portability import ExportRequest
from memory.services.portability.export import (
    CONTENT_TYPE,
    attachment_header,
    export_begin,
    export_filename,
    export_stream,
)


@require_GET
@team_required
def export_download(request):
    """GET `kind` = team | workspace | user with `workspace_id` or `user_id`: the file, streamed
    as an attachment. 400 for bad parameters (as text), 403 when the login may not export it."""
    try:
        export = ExportRequest.of(kind=request.GET.get("kind", ""), workspace_id=request.GET.get("workspace_id", ""),
                                  user_id=request.GET.get("user_id", ""))
    except InvalidInput as error:
        return HttpResponseBadRequest(error.message, content_type="text/plain; charset=utf-8")
    manifest = export_begin(principal=request.principal, request=export)
    response = StreamingHttpResponse(export_stream(principal=request.principal, request=export, manifest=manifest),
                                     content_type=CONTENT_TYPE)
    filename = export_filename(team_slug=request.team.slug, request=export)
    response["Content-Disposition"] = attachment_header(filename)
    return response
