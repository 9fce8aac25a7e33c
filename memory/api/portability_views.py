"""Export and import over the API (docs/export.md; R-TEN, R-OPS): thin adapters over
memory.services.portability."""

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from memory.api.base import TeamAPIView
from memory.api.parsers import UnreadBodyParser
from memory.selectors.portability import KINDS, ExportRequest
from memory.services.portability.export import (
    CONTENT_TYPE,
    attachment_header,
    export_begin,
    export_filename,
    export_stream,
)
from memory.services.portability.import_ import import_file


class ExportQuerySerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=KINDS)
    workspace_id = serializers.CharField(required=False, default="", allow_blank=True)
    user_id = serializers.CharField(required=False, default="", allow_blank=True)


class ImportOutSerializer(serializers.Serializer):
    kind = serializers.CharField()
    source_team = serializers.CharField()
    counts = serializers.DictField(child=serializers.IntegerField())
    import_event_id = serializers.IntegerField()


def export_response(*, principal, request: ExportRequest) -> StreamingHttpResponse:
    """The streamed file as a download (checked and audited before the first byte)."""
    manifest = export_begin(principal=principal, request=request)
    response = StreamingHttpResponse(export_stream(principal=principal, request=request, manifest=manifest),
                                     content_type=CONTENT_TYPE)
    name = export_filename(team_slug=principal.team.slug, request=request)
    response["Content-Disposition"] = attachment_header(name)
    return response


class ExportView(TeamAPIView):
    """GET: a team, a workspace or one end user's memories as JSON Lines, streamed.

    Team admins (logins, or admin keys not limited to workspaces) export any kind; an admin key
    limited to workspaces exports those workspaces; any login of the team exports the end user
    whose user_id is its username. 400 bad parameters, 403 otherwise."""

    required_right = "read"

    @extend_schema(operation_id="export_get", parameters=[ExportQuerySerializer],
                   responses={(200, CONTENT_TYPE): OpenApiTypes.STR})
    def get(self, request):
        data = self.query(ExportQuerySerializer)
        export = ExportRequest.of(kind=data["kind"], workspace_id=data["workspace_id"], user_id=data["user_id"])
        return export_response(principal=request.principal, request=export)


class ImportView(TeamAPIView):
    """POST an export file (body: the JSON Lines, any content type — application/x-ndjson,
    application/octet-stream, text/plain …) into the caller's team: all or nothing. Team admins
    (a login needs its CSRF token, as for every API write) only. 201 with the counts; 400 a bad file (the message names the
    line), 403 not an admin, 409 the team already holds what the file brings, 413 too large.

    Not replayed by Idempotency-Key: the body may be hundreds of megabytes, and a repeated
    import is refused anyway (409), since the first one filled the target."""

    required_right = "admin"
    replays = False
    parser_classes = [UnreadBodyParser]

    @extend_schema(operation_id="import_post", request={CONTENT_TYPE: OpenApiTypes.STR},
                   parameters=[OpenApiParameter("reason", str, required=False)],
                   responses={201: ImportOutSerializer})
    def post(self, request):
        reason = request.query_params.get("reason", "")[:1000]
        result = import_file(principal=request.principal, stream=request, reason=reason,
                             max_bytes=settings.MEMORY_IMPORT_MAX_BYTES)
        body = {"kind": result.kind, "source_team": result.source_team, "counts": result.counts,
                "import_event_id": result.import_event_id}
        return Response(body, status=201)
