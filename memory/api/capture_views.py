"""Background capture's visibility (R-EXTRACT): job counts and extraction yield for the KPI page."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from memory.api.base import TeamAPIView
from memory.api.fields import IdentityField
from memory.api.serializers import StrictSerializer
from memory.capture.jobs import jobs_stats


class CaptureStatsQuerySerializer(StrictSerializer):
    workspace_id = IdentityField(required=False, help_text="one workspace's jobs; absent: the team's (a key limited "
                                                           "to workspaces must name one of them)")


class CaptureStatsView(TeamAPIView):
    """Jobs by status (pending, done, failed) and what extraction yielded: proposals made,
    accepted, and refused by reason."""

    @extend_schema(operation_id="capture_stats", parameters=[CaptureStatsQuerySerializer],
                   responses={200: inline_serializer("CaptureStats", {
                       "jobs": serializers.DictField(child=serializers.IntegerField()),
                       "proposals": serializers.IntegerField(),
                       "accepted": serializers.IntegerField(),
                       "outcomes": serializers.DictField(child=serializers.IntegerField()),
                   })})
    def get(self, request):
        workspace_id = self.query(CaptureStatsQuerySerializer).get("workspace_id", "")
        # As the KPIs: a key limited to workspaces sees one of its own, never the team's sum.
        request.principal.check_workspace(workspace_id)
        return Response(jobs_stats(team=request.principal.team, workspace_id=workspace_id or None))
