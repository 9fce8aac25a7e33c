"""Request and response shapes of forgetting, restore and extraction batches (R-TOOLS, R-API).

The memory_forget tool definition served at /api/v1/tools is generated from ForgetInSerializer.
"""

from rest_framework import serializers

from memory import limits
from memory.api.fields import CategoryPrefixField, StrictBooleanField, StrictCharField, StrictIntegerField
from memory.api.serializers import OwnerFields, ProposeInSerializer, ProposeOutSerializer, identity
from memory.models import NodeType, Scope
from memory.services.forgetting import FORGET_MAX, MODES


class ForgetInSerializer(OwnerFields):
    """memory_forget: forget one memory by id, or the memories a selector names."""

    id = StrictIntegerField(required=False, min_value=1, help_text="the node to forget")
    session_id = identity()
    scope = serializers.ChoiceField(choices=Scope.choices, required=False, help_text="only memories of this scope")
    domain = StrictCharField(max_length=limits.NODE_DOMAIN_MAX, required=False, help_text="only this domain")
    category_path_prefix = CategoryPrefixField(required=False, help_text='only under this category: "a/b" or ["a", "b"]')
    type = serializers.ChoiceField(choices=NodeType.choices, required=False, help_text="only this type")
    key = StrictCharField(max_length=limits.NODE_KEY_MAX, required=False, help_text="only this key")
    value_json = serializers.JSONField(required=False, allow_null=True, help_text="only this exact value")
    source_message_ids = serializers.ListField(
        child=StrictIntegerField(min_value=1), required=False, max_length=limits.NODE_SOURCES_MAX,
        help_text="only memories derived from these messages",
    )
    mode = serializers.ChoiceField(choices=list(MODES), required=False, default="soft",
                                   help_text="soft: hide and keep for audit and restore; hard: erase for good")
    reason = StrictCharField(max_length=limits.REASON_MAX, required=False, allow_blank=True, default="",
                             help_text="why, in a few words; kept in the audit trail")
    confirm = StrictBooleanField(required=False, default=False,
                                 help_text="the user confirmed: forget every candidate (needed for several, or hard)")


class ForgetCandidateSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    scope = serializers.CharField()
    type = serializers.CharField()
    key = serializers.CharField()
    title = serializers.CharField()
    status = serializers.CharField()


class ForgetOutSerializer(serializers.Serializer):
    mode = serializers.CharField()
    deleted_ids = serializers.ListField(child=serializers.IntegerField())
    count = serializers.IntegerField()
    requires_confirmation = serializers.BooleanField()
    candidate_count = serializers.IntegerField(help_text=f"at most {FORGET_MAX}")
    candidates = ForgetCandidateSerializer(many=True)
    message = serializers.CharField()


class NodeDeleteQuerySerializer(OwnerFields):
    mode = serializers.ChoiceField(choices=list(MODES), required=False, default="soft")
    reason = StrictCharField(max_length=limits.REASON_MAX, required=False, allow_blank=True, default="")


class RestoreInSerializer(OwnerFields):
    reason = StrictCharField(max_length=limits.REASON_MAX, required=False, allow_blank=True, default="")


class ExtractionOperationSerializer(ProposeInSerializer):
    """One operation of a batch: a proposal; owner fields default to the batch's."""

    workspace_id = identity()
    user_id = identity()


class ExtractionInSerializer(OwnerFields):
    """A MemoryExtraction: many proposals from one turn, applied all or nothing."""

    session_id = identity()
    operations = serializers.ListField(child=ExtractionOperationSerializer(), min_length=1,
                                       max_length=limits.EXTRACTION_OPERATIONS_MAX)


class ExtractionOutSerializer(serializers.Serializer):
    applied = serializers.BooleanField(help_text="false: nothing was written (see the results)")
    results = ProposeOutSerializer(many=True)

