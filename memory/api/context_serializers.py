"""Request and response shapes of the context call and its ledger (R-CTX, R-API): the budget a
call may override, the call itself, its answer and the retrieval it records. Adapters only."""

from rest_framework import serializers

from memory import limits
from memory.api.fields import CategoryPrefixField, StrictBooleanField, StrictCharField, StrictFloatField, StrictIntegerField
from memory.api.serializers import (
    MessageOutSerializer,
    NodeOutSerializer,
    OmissionSerializer,
    RelevantNodeOutSerializer,
    SessionFields,
    StrictSerializer,
    SummaryOutSerializer,
)


class BudgetInSerializer(StrictSerializer):
    enabled = StrictBooleanField(required=False)
    top_n = StrictIntegerField(required=False, min_value=0, max_value=1_000_000_000)
    max_chars = StrictIntegerField(required=False, min_value=0, max_value=1_000_000_000)
    recent_messages = StrictIntegerField(required=False, min_value=0, max_value=1_000_000_000)
    min_confidence = StrictFloatField(required=False, min_value=0, max_value=1)
    summary_enabled = StrictBooleanField(required=False)
    l0_enabled = StrictBooleanField(required=False)
    l1_enabled = StrictBooleanField(required=False)
    l2_enabled = StrictBooleanField(required=False)
    l3_enabled = StrictBooleanField(required=False)
    l4_enabled = StrictBooleanField(required=False)
    l5_enabled = StrictBooleanField(required=False)
    l0_chars = StrictIntegerField(required=False, min_value=0, max_value=1_000_000_000)
    l1_chars = StrictIntegerField(required=False, min_value=0, max_value=1_000_000_000)
    l2_chars = StrictIntegerField(required=False, min_value=0, max_value=1_000_000_000)
    l3_chars = StrictIntegerField(required=False, min_value=0, max_value=1_000_000_000)
    l4_chars = StrictIntegerField(required=False, min_value=0, max_value=1_000_000_000)
    l5_chars = StrictIntegerField(required=False, min_value=0, max_value=1_000_000_000)


class ContextInSerializer(SessionFields):
    query = StrictCharField(max_length=limits.QUERY_TEXT_MAX, required=False, allow_blank=True, default="",
                            trim_whitespace=False)
    domain = StrictCharField(max_length=limits.NODE_DOMAIN_MAX, required=False, allow_blank=True, default="")
    category_path_prefix = CategoryPrefixField(required=False)
    budget = BudgetInSerializer(required=False)
    timezone = StrictCharField(
        max_length=64, required=False, allow_blank=True, default="",
        help_text="The end user's IANA time zone, e.g. Asia/Shanghai (default: the deployment's MEMORY_TIME_ZONE, "
                  "else UTC): earlier messages are dated, and dates the query names ('yesterday', '上周', 'on May 3') "
                  "are read, in it.")


class ContextItemSerializer(serializers.Serializer):
    section = serializers.CharField()
    layer = serializers.CharField()
    kind = serializers.CharField()
    id = serializers.IntegerField()
    text = serializers.CharField()
    why = serializers.CharField()


class ContextOutSerializer(serializers.Serializer):
    retrieval_id = serializers.IntegerField(allow_null=True)
    block = serializers.CharField(allow_blank=True)
    latest_summary = SummaryOutSerializer(allow_null=True)
    recent_messages = MessageOutSerializer(many=True)
    session_memory = NodeOutSerializer(many=True)
    workspace_memory = NodeOutSerializer(many=True)
    preferences = NodeOutSerializer(many=True)
    profile = serializers.DictField(allow_null=True, help_text="the user's profile document: version and summary (L2)")
    corrections = NodeOutSerializer(many=True, help_text="the user's latest corrections (L2)")
    working_memory = serializers.ListField(child=serializers.CharField(), help_text="the session's working memory lines (L4)")
    relevant_nodes = RelevantNodeOutSerializer(many=True)
    relevant_messages = MessageOutSerializer(many=True)
    used_memory_ids = serializers.ListField(child=serializers.IntegerField())
    omitted = OmissionSerializer(many=True)
    items = ContextItemSerializer(many=True)
    budget = serializers.JSONField()
    diagnostics = serializers.JSONField()


class RetrievalOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    actor = serializers.CharField()
    session_id = serializers.CharField()
    workspace_id = serializers.CharField()
    user_id = serializers.CharField()
    query = serializers.CharField()
    budget = serializers.JSONField()
    used = serializers.JSONField()
    omitted = serializers.JSONField()
    chars_by_layer = serializers.JSONField()
    tokens_by_layer = serializers.JSONField()
    total_chars = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    truncated = serializers.BooleanField()
    store_status = serializers.CharField()
    warnings = serializers.ListField(child=serializers.CharField())
    latency_ms = serializers.FloatField()
    feedback = serializers.JSONField(allow_null=True, help_text="the agent's report on what its answer used, if any")
