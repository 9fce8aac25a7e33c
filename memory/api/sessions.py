"""DELETE /api/v1/sessions/{session_id}: forget a conversation (R-STORE, R-API).

Beside views.py (which is near its size limit) and written like it: a thin adapter over
memory.services.forget.session_forget, with its own strict query and output shapes.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from memory import limits
from memory.api.base import TeamAPIView, session_ref
from memory.api.fields import StrictCharField
from memory.api.serializers import OwnerFields
from memory.services.forget import session_forget


class SessionForgetQuerySerializer(OwnerFields):
    """The query string; the session id is in the path."""

    mode = serializers.ChoiceField(choices=["soft", "hard"], required=False, default="soft",
                                   help_text="soft: hidden everywhere, kept in the store; hard: removed for good")
    reason = StrictCharField(max_length=limits.REASON_MAX, required=False, allow_blank=True, default="",
                             trim_whitespace=False)


class SessionForgetCountsSerializer(serializers.Serializer):
    messages = serializers.IntegerField(help_text="hidden (soft) or removed (hard)")
    summaries = serializers.IntegerField(help_text="hidden (soft) or removed (hard)")
    working_memory = serializers.IntegerField(help_text="the session's working memory, 0 or 1: hidden (soft) or "
                                                        "removed (hard)")
    nodes = serializers.IntegerField(help_text="marked deleted (soft) or removed (hard)")
    source_links = serializers.IntegerField(help_text="links from nodes to the removed messages (hard)")
    retrievals_redacted = serializers.IntegerField(help_text="hit-ledger rows whose text or ids were forgotten (hard)")
    audit_events_redacted = serializers.IntegerField(help_text="earlier audit events whose content was redacted (hard)")


class SessionForgetOutSerializer(serializers.Serializer):
    session_id = serializers.CharField(source="ref.session_id")
    workspace_id = serializers.CharField(source="ref.workspace_id")
    user_id = serializers.CharField(source="ref.user_id")
    mode = serializers.CharField()
    counts = SessionForgetCountsSerializer()
    node_ids = serializers.ListField(child=serializers.IntegerField(), help_text="nodes deleted with the session")
    kept_node_ids = serializers.ListField(
        child=serializers.IntegerField(), help_text="nodes that also cite another session: kept (hard: minus those links)"
    )


class SessionView(TeamAPIView):
    required_right = "write"

    @extend_schema(
        operation_id="sessions_forget",
        parameters=[SessionForgetQuerySerializer],
        responses={200: SessionForgetOutSerializer},
        description=(
            "Forget the session named by session_id (path) with workspace_id and user_id. soft (default): hidden "
            "from every read, the memories derived only from it marked deleted (kept in the store, not restorable "
            "one by one); 409 when already soft-deleted. hard: its messages, summaries and the memories derived "
            "only from it are removed and redacted from the audit and the hit ledger; memories that also cite "
            "another session stay, without those links. Returns counts per kind."
        ),
    )
    def delete(self, request, session_id: str):
        params = self.query(SessionForgetQuerySerializer)
        result = session_forget(
            principal=request.principal,
            ref=session_ref({**params, "session_id": session_id}),
            mode=params["mode"],
            reason=params["reason"],
        )
        return Response(SessionForgetOutSerializer(result).data)
