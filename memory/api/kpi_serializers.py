"""Request and response shapes of feedback on a context call and of the KPIs (R-CTX, R-UI)."""

from rest_framework import serializers

from memory import limits
from memory.api.fields import StrictBooleanField, StrictCharField, StrictIntegerField
from memory.api.serializers import StrictSerializer, identity
from memory.limits import DATETIME_YEARS


class FeedbackInSerializer(StrictSerializer):
    used_node_ids = serializers.ListField(
        child=StrictIntegerField(min_value=1), max_length=limits.FEEDBACK_NODE_IDS_MAX,
        help_text="the injected memories (node ids) the answer used; [] for none",
    )
    helpful = StrictBooleanField(required=False, allow_null=True, default=None,
                                 help_text="whether the injected memory helped the answer")
    note = StrictCharField(required=False, allow_blank=True, default="", trim_whitespace=False,
                           max_length=limits.FEEDBACK_NOTE_MAX)


class FeedbackOutSerializer(serializers.Serializer):
    retrieval_id = serializers.IntegerField()
    used_node_ids = serializers.ListField(child=serializers.IntegerField())
    injected_node_ids = serializers.ListField(child=serializers.IntegerField())
    helpful = serializers.BooleanField(allow_null=True)
    note = serializers.CharField()
    actor = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


def feedback_output(feedback) -> dict:
    return FeedbackOutSerializer({
        "retrieval_id": feedback.retrieval_id,
        "used_node_ids": feedback.used_node_ids,
        "injected_node_ids": feedback.retrieval.used_node_ids,
        "helpful": feedback.helpful,
        "note": feedback.note,
        "actor": feedback.actor,
        "created_at": feedback.created_at,
        "updated_at": feedback.updated_at,
    }).data


class KpiQuerySerializer(StrictSerializer):
    since = serializers.DateField(required=False, input_formats=["%Y-%m-%d"], help_text="first day (UTC), YYYY-MM-DD")
    until = serializers.DateField(required=False, input_formats=["%Y-%m-%d"],
                                  help_text="last day (UTC), YYYY-MM-DD; default today")
    workspace_id = identity()

    def validate(self, attrs):
        for name in ("since", "until"):
            day = attrs.get(name)
            if day is not None and not DATETIME_YEARS[0] <= day.year <= DATETIME_YEARS[1] - 1:
                raise serializers.ValidationError({name: [f"a year from {DATETIME_YEARS[0]} to {DATETIME_YEARS[1] - 1}"]})
        return attrs


class KpiOutSerializer(serializers.Serializer):
    """Documentation of the answer; figures as in memory.selectors.kpis."""

    team = serializers.CharField()
    workspace_id = serializers.CharField()
    since = serializers.DateField()
    until = serializers.DateField()
    days_basis = serializers.CharField()
    latency_rows_per_day = serializers.IntegerField()
    totals = serializers.DictField(help_text="the figures for the whole range")
    days = serializers.ListField(child=serializers.DictField(), help_text="{date, …the same figures} per day")
    nodes = serializers.DictField(help_text="the store now: total, by_type, by_scope, by_status")
