"""Request and response shapes of the agent API (R-API). Adapters only: no domain rules here
beyond types and ranges; services check the rest."""

from difflib import get_close_matches

from django.core.exceptions import ObjectDoesNotExist
from rest_framework import serializers

from memory import limits
from memory.api.fields import (
    AwareDateTimeField,
    CategoryPrefixField,
    IdentityField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    string_list,
)
from memory.models import MessageRole, NodeType, Scope
from memory.selectors.query import VALUE_FILTER_OPS
from memory.services.proposals import OPERATIONS


class StrictSerializer(serializers.Serializer):
    """Rejects fields it does not know, so a typo is a 400, not a silently ignored value; the
    message names the nearest known field ("unknown field; did you mean query_text?")."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                known = [name for name, field in self.fields.items() if not field.read_only]
                raise serializers.ValidationError({name: [_unknown(name, known)] for name in unknown})
        return super().to_internal_value(data)


def _unknown(name: str, known: list[str]) -> str:
    near = get_close_matches(name.lower(), known, n=1, cutoff=0.6) if len(name) <= 64 else []
    return f"unknown field; did you mean {near[0]}?" if near else "unknown field"


def identity(*, required: bool = False) -> IdentityField:
    return IdentityField(required=required)


class OwnerFields(StrictSerializer):
    workspace_id = identity()
    user_id = identity()


class SessionFields(OwnerFields):
    session_id = identity(required=True)


# ---- messages -----------------------------------------------------------------------------


class MessageInSerializer(SessionFields):
    role = serializers.ChoiceField(choices=MessageRole.choices)
    content = StrictCharField(trim_whitespace=False)
    parent_id = StrictIntegerField(required=False, allow_null=True, min_value=1)
    metadata = serializers.DictField(required=False)
    occurred_at = AwareDateTimeField(required=False, allow_null=True)


class MessageBatchInSerializer(StrictSerializer):
    messages = serializers.ListField(
        child=MessageInSerializer(), min_length=1, max_length=limits.MESSAGE_BATCH_MAX
    )


class MessageOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    session_id = serializers.CharField(source="session.external_id")
    workspace_id = serializers.CharField(source="session.workspace_id")
    user_id = serializers.CharField(source="session.user_id")
    role = serializers.CharField()
    content = serializers.CharField()
    parent_id = serializers.IntegerField(allow_null=True)
    metadata = serializers.JSONField()
    created_at = serializers.DateTimeField()
    occurred_at = serializers.DateTimeField(allow_null=True)


class MessageAppendOutSerializer(serializers.Serializer):
    ids = serializers.ListField(child=serializers.IntegerField())
    messages = MessageOutSerializer(many=True)


class MessageListQuerySerializer(SessionFields):
    limit = serializers.IntegerField(required=False, min_value=1, max_value=limits.RECENT_MESSAGES_MAX, default=20)
    before = serializers.IntegerField(required=False, min_value=1, max_value=limits.ID_MAX)


class MessageListOutSerializer(serializers.Serializer):
    results = MessageOutSerializer(many=True)
    next = serializers.CharField(allow_null=True)


# ---- summaries ----------------------------------------------------------------------------


def _summary_list() -> serializers.ListField:
    return string_list(max_items=limits.SUMMARY_LIST_ITEMS_MAX, max_length=limits.SUMMARY_LIST_ITEM_MAX)


class SummaryInSerializer(SessionFields):
    summary = StrictCharField(trim_whitespace=False)
    from_message_id = StrictIntegerField(required=False, min_value=1)
    to_message_id = StrictIntegerField(required=False, min_value=1)
    current_goal = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)
    constraints = _summary_list()
    preferences = _summary_list()
    decisions = _summary_list()
    completed_work = _summary_list()
    pending_work = _summary_list()
    known_issues = _summary_list()


class SummaryOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    session_id = serializers.CharField(source="session.external_id")
    parent_summary_id = serializers.IntegerField(source="parent_id", allow_null=True)
    from_message_id = serializers.IntegerField()
    to_message_id = serializers.IntegerField()
    summary = serializers.CharField()
    current_goal = serializers.CharField()
    constraints = serializers.ListField(child=serializers.CharField())
    preferences = serializers.ListField(child=serializers.CharField())
    decisions = serializers.ListField(child=serializers.CharField())
    completed_work = serializers.ListField(child=serializers.CharField())
    pending_work = serializers.ListField(child=serializers.CharField())
    known_issues = serializers.ListField(child=serializers.CharField())
    created_at = serializers.DateTimeField()


class SessionQuerySerializer(SessionFields):
    pass


class SummaryListQuerySerializer(SessionFields):
    cursor = serializers.CharField(required=False, max_length=512)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=limits.PAGE_SIZE_MAX)


class SummaryPageSerializer(serializers.Serializer):
    next = serializers.CharField(allow_null=True)
    previous = serializers.CharField(allow_null=True)
    results = SummaryOutSerializer(many=True)


# ---- nodes ----------------------------------------------------------------------------------


class NodeOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    parent_id = serializers.IntegerField(allow_null=True)
    supersedes_id = serializers.IntegerField(allow_null=True)
    superseded_by_id = serializers.SerializerMethodField()
    session_id = serializers.SerializerMethodField()
    workspace_id = serializers.CharField()
    user_id = serializers.CharField()
    scope = serializers.CharField()
    domain = serializers.CharField()
    category_path = serializers.ListField(child=serializers.CharField())
    category_path_text = serializers.CharField()
    type = serializers.CharField()
    key = serializers.CharField()
    value_json = serializers.JSONField(allow_null=True)
    title = serializers.CharField()
    content = serializers.CharField()
    status = serializers.CharField(source="current_status", help_text="as of now: active past expires_at reads expired")
    confidence = serializers.FloatField()
    importance = serializers.FloatField()
    tags = serializers.ListField(child=serializers.CharField())
    entities = serializers.ListField(child=serializers.CharField())
    explicit = serializers.BooleanField()
    version = serializers.IntegerField()
    source_message_ids = serializers.ListField(child=serializers.IntegerField())
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)

    def get_superseded_by_id(self, node) -> int | None:
        # Selectors fetch `superseded_by` with the node (select_related or a cached None).
        try:
            return node.superseded_by.pk
        except ObjectDoesNotExist:
            return None

    def get_session_id(self, node) -> str:
        return node.session.external_id if node.session_id else ""


class RelevantNodeOutSerializer(NodeOutSerializer):
    matched = serializers.SerializerMethodField()

    def get_matched(self, node) -> list[str]:
        return list(self.context.get("matched", {}).get(node.pk, ()))


class NodeInSerializer(StrictSerializer):
    """A node as an agent proposes it; on update and supersede, omitted fields keep their value."""

    scope = serializers.ChoiceField(choices=Scope.choices, required=False)
    type = serializers.ChoiceField(choices=NodeType.choices, required=False)
    domain = StrictCharField(max_length=limits.NODE_DOMAIN_MAX, required=False)
    category_path = string_list(max_items=limits.NODE_LIST_ITEMS_MAX, max_length=limits.NODE_LIST_ITEM_MAX)
    key = StrictCharField(max_length=limits.NODE_KEY_MAX, required=False, allow_blank=True, trim_whitespace=False)
    value_json = serializers.JSONField(required=False, allow_null=True)
    title = StrictCharField(max_length=limits.NODE_TITLE_MAX, required=False, allow_blank=True)
    content = StrictCharField(max_length=limits.NODE_CONTENT_MAX, required=False, allow_blank=True)
    confidence = StrictFloatField(required=False, min_value=0, max_value=1)
    importance = StrictFloatField(required=False, min_value=0, max_value=1)
    tags = string_list(max_items=limits.NODE_LIST_ITEMS_MAX, max_length=limits.NODE_LIST_ITEM_MAX)
    entities = string_list(max_items=limits.NODE_LIST_ITEMS_MAX, max_length=limits.NODE_LIST_ITEM_MAX)
    expires_at = AwareDateTimeField(required=False, allow_null=True)
    source_message_ids = serializers.ListField(
        child=StrictIntegerField(min_value=1), required=False, max_length=limits.NODE_SOURCES_MAX
    )
    parent_id = StrictIntegerField(required=False, allow_null=True, min_value=1)


class ProposeInSerializer(OwnerFields):
    """memory_propose_update: ask the service to remember, correct or forget one memory."""

    operation = serializers.ChoiceField(
        choices=list(OPERATIONS),
        help_text="create a memory; update its descriptive fields; supersede it with a corrected value; "
                  "expire it; delete it (soft)",
    )
    target_id = StrictIntegerField(required=False, min_value=1, help_text="the node to update, supersede, expire or delete")
    node = NodeInSerializer(required=False, help_text="the memory (create) or the fields to change (update, supersede)")
    reason = StrictCharField(max_length=limits.REASON_MAX, required=False, allow_blank=True, default="",
                             help_text="why, in a few words; kept in the audit trail")
    session_id = identity()
    explicit_user_intent = StrictBooleanField(
        required=False, default=False,
        help_text="true only when the end user explicitly asked to remember this (记住, from now on, always)",
    )
    expected_version = StrictIntegerField(required=False, min_value=1,
                                          help_text="update only if the node is still at this version")
    confirm = StrictBooleanField(required=False, default=False,
                                 help_text="replace a conflicting active value that would otherwise need confirmation")
    on_nonconforming = serializers.ChoiceField(
        choices=["reject", "demote"], required=False, default="reject",
        help_text="what to do with a node outside the controlled schema: refuse it, or keep it as session memory",
    )

    def validate(self, attrs):
        operation = attrs["operation"]
        attrs.setdefault("node", {})
        if operation != "create" and not attrs.get("target_id"):
            raise serializers.ValidationError({"target_id": [f"required for {operation}"]})
        if operation == "create" and "type" not in attrs["node"]:
            raise serializers.ValidationError({"node.type": ["required for create"]})
        if operation in ("expire", "delete") and attrs["node"]:
            raise serializers.ValidationError({"node": [f"not used by {operation}"]})
        return attrs


class ProposeOutSerializer(serializers.Serializer):
    accepted = serializers.BooleanField()
    operation = serializers.CharField()
    node_id = serializers.IntegerField(allow_null=True)
    created = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True, help_text="a refusal or note code; see the memory_propose_update tool")
    message = serializers.CharField(allow_blank=True)
    requires_confirmation = serializers.BooleanField()
    conflict_node_id = serializers.IntegerField(allow_null=True)
    superseded_id = serializers.IntegerField(allow_null=True)
    notes = serializers.ListField(child=serializers.CharField(), help_text="normalisations applied (synonym keys, values, scope)")
    node = NodeOutSerializer(allow_null=True)


class ValueFilterSerializer(StrictSerializer):
    path = serializers.JSONField(help_text='a key ("level"), a dotted path ("a.b") or a list of keys')
    op = serializers.ChoiceField(choices=VALUE_FILTER_OPS)
    value = serializers.JSONField(required=False, allow_null=True)

    def validate_path(self, value):
        if isinstance(value, str):
            parts = value.split(".")
        elif isinstance(value, list) and all(isinstance(part, str) for part in value):
            parts = value
        else:
            raise serializers.ValidationError("a string or a list of strings")
        return tuple(parts)


class MemoryQueryInSerializer(OwnerFields):
    session_id = identity()
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=Scope.choices), required=False, max_length=4)
    domain = StrictCharField(max_length=limits.NODE_DOMAIN_MAX, required=False, allow_blank=True)
    category_path_prefix = CategoryPrefixField(required=False, help_text='"a/b" or ["a", "b"]')
    types = serializers.ListField(
        child=serializers.ChoiceField(choices=NodeType.choices), required=False, max_length=len(NodeType.choices)
    )
    key = StrictCharField(max_length=limits.NODE_KEY_MAX, required=False, allow_blank=True, trim_whitespace=False)
    value_json = serializers.JSONField(required=False, allow_null=True)
    value_filters = serializers.ListField(child=ValueFilterSerializer(), required=False, max_length=8)
    tags = string_list(max_items=limits.NODE_LIST_ITEMS_MAX, max_length=limits.NODE_LIST_ITEM_MAX)
    entities = string_list(max_items=limits.NODE_LIST_ITEMS_MAX, max_length=limits.NODE_LIST_ITEM_MAX)
    query_text = StrictCharField(max_length=limits.QUERY_TEXT_MAX, required=False, allow_blank=True, trim_whitespace=False)
    include_expired = StrictBooleanField(required=False, default=False)
    min_confidence = StrictFloatField(required=False, min_value=0, max_value=1, default=0.0)
    limit = StrictIntegerField(required=False, min_value=1, max_value=limits.QUERY_LIMIT_MAX, default=limits.QUERY_LIMIT_DEFAULT)



class OmissionSerializer(serializers.Serializer):
    node_id = serializers.IntegerField()
    reason = serializers.CharField()


class MemoryQueryOutSerializer(serializers.Serializer):
    exact = NodeOutSerializer(many=True)
    relevant = RelevantNodeOutSerializer(many=True)
    omitted = OmissionSerializer(many=True)


class MemoryGetInSerializer(OwnerFields):
    id = StrictIntegerField(required=False, min_value=1)
    session_id = identity()
    type = serializers.ChoiceField(choices=NodeType.choices, required=False)
    key = StrictCharField(max_length=limits.NODE_KEY_MAX, required=False)
    value_json = serializers.JSONField(required=False, allow_null=True)
    scope = serializers.ChoiceField(choices=Scope.choices, required=False)
    domain = StrictCharField(max_length=limits.NODE_DOMAIN_MAX, required=False)

    def validate(self, attrs):
        if not attrs.get("id") and not attrs.get("key"):
            raise serializers.ValidationError({"id": ["give id, or key (with type, value_json, scope, domain)"]})
        return attrs


class NodeListQuerySerializer(StrictSerializer):
    scope = serializers.ChoiceField(choices=Scope.choices, required=False)
    workspace_id = IdentityField(required=False, help_text=(
        "a key limited to workspaces must name one of them; it then lists that workspace's and its sessions' "
        "memory, global memory and the user memory of user_id, instead of filtering on this column"))
    user_id = IdentityField(required=False, help_text="for a key limited to workspaces: the end user whose user "
                                                      "memory is listed besides the workspace's")
    session_id = identity()
    domain = StrictCharField(max_length=limits.NODE_DOMAIN_MAX, required=False)
    category_path_prefix = StrictCharField(max_length=limits.CATEGORY_PREFIX_MAX, required=False)
    type = serializers.ChoiceField(choices=NodeType.choices, required=False)
    status = serializers.ChoiceField(choices=["active", "superseded", "expired", "deleted"], required=False)
    key = StrictCharField(max_length=limits.NODE_KEY_MAX, required=False)
    q = StrictCharField(max_length=limits.QUERY_TEXT_MAX, required=False, allow_blank=True)
    cursor = serializers.CharField(required=False, max_length=512)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=limits.PAGE_SIZE_MAX)


class NodeReadQuerySerializer(StrictSerializer):
    """GET /nodes/{id} and its history: whom a key limited to workspaces reads for."""

    workspace_id = IdentityField(required=False, help_text=(
        "required for a key limited to workspaces (one of them); it then reads only that workspace's and its "
        "sessions' memory, global memory and the user memory of user_id (404 otherwise)"))
    user_id = IdentityField(required=False, help_text="for a key limited to workspaces: the end user whose user "
                                                      "memory it may read")


class NodePageSerializer(serializers.Serializer):
    next = serializers.CharField(allow_null=True)
    previous = serializers.CharField(allow_null=True)
    results = NodeOutSerializer(many=True)


class AuditEventOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    event_type = serializers.CharField()
    node_id = serializers.IntegerField(allow_null=True)
    session_id = serializers.CharField()
    workspace_id = serializers.CharField()
    user_id = serializers.CharField()
    actor = serializers.CharField()
    reason = serializers.CharField()
    payload = serializers.JSONField(allow_null=True)
    created_at = serializers.DateTimeField()


class NodeHistoryOutSerializer(serializers.Serializer):
    node_id = serializers.IntegerField()
    chain = NodeOutSerializer(many=True)
    audit = AuditEventOutSerializer(many=True)
