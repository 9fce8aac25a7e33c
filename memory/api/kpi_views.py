"""Feedback on a context call (R-CTX hit ledger; issue 5)."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from memory.api import kpi_serializers as k
from memory.api.base import TeamAPIView
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
