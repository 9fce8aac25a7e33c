"""Feedback on a context call and the KPIs over the hit ledger (R-CTX, R-UI KPI page; issue 5)."""

from datetime import UTC

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from memory.api import kpi_serializers as k
from memory.api.base import TeamAPIView
from memory.selectors.kpis import kpi_range, kpis
from memory.services.feedback import retrieval_feedback_set


class RetrievalFeedbackView(TeamAPIView):
    """The agent reports which injected memories its answer used (replaces an earlier report)."""

    # As reading the context it comments on: a read-only agent may say what it used.
    required_right = "read"

    @extend_schema(operation_id="retrievals_feedback", request=k.FeedbackInSerializer,
                   responses={200: k.FeedbackOutSerializer, 201: k.FeedbackOutSerializer})
    def post(self, request, retrieval_id: int):
        data = self.body(k.FeedbackInSerializer)
        feedback, created = retrieval_feedback_set(principal=request.principal, retrieval_id=retrieval_id,
                                                   used_node_ids=data["used_node_ids"], helpful=data["helpful"],
                                                   note=data["note"])
        return Response(k.feedback_output(feedback), status=201 if created else 200)


class KpisView(TeamAPIView):
    """Hit rate, injected sizes, budget use, omissions, latency, used-rate, proposals, extraction
    yield and node counts, per UTC day and for the range (default: the last 7 days)."""

    required_right = "read"

    @extend_schema(operation_id="kpis_get", parameters=[k.KpiQuerySerializer], responses={200: k.KpiOutSerializer})
    def get(self, request):
        params = self.query(k.KpiQuerySerializer)
        workspace_id = params.get("workspace_id", "")
        # A key limited to workspaces sees one of its own, never the team's sum over all of them.
        request.principal.check_workspace(workspace_id)
        since, until = kpi_range(since=params.get("since"), until=params.get("until"),
                                 today=timezone.now().astimezone(UTC).date())
        return Response(kpis(team=request.principal.team, workspace_id=workspace_id, since=since, until=until))
