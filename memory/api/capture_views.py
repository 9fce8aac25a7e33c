"""Background capture's visibility (R-EXTRACT): job counts and extraction yield for the KPI page."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from memory.api.base import TeamAPIView
from memory.capture.jobs import jobs_stats


class CaptureStatsView(TeamAPIView):
    """Jobs by status (pending, done, failed) and what extraction yielded: proposals made,
    accepted, and refused by reason."""

    @extend_schema(operation_id="capture_stats", responses={200: inline_serializer("CaptureStats", {
        "jobs": serializers.DictField(child=serializers.IntegerField()),
        "proposals": serializers.IntegerField(),
        "accepted": serializers.IntegerField(),
        "outcomes": serializers.DictField(child=serializers.IntegerField()),
    })})
    def get(self, request):
        return Response(jobs_stats(team=request.principal.team))
