"""Serializer fields that reject wrong JSON types instead of coercing them (R-API: wrong types → 400).

DRF's defaults accept "12" for an integer, 1 for a boolean and 12 for a string; an agent
sending those has a bug worth hearing about.
"""

from datetime import datetime

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from rest_framework import serializers


class StrictCharField(serializers.CharField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class AwareDateTimeField(serializers.DateTimeField):
    """ISO 8601 with a UTC offset (`2025-06-01T08:00:00+08:00`, `…Z`); naive times are rejected (S11)."""

    default_error_messages = {
        "invalid": "Must be an ISO 8601 date-time.",
        "naive": "Needs a UTC offset, e.g. 2025-06-01T08:00:00Z or 2025-06-01T08:00:00+08:00.",
    }

    def to_internal_value(self, value) -> datetime:
        if not isinstance(value, str):
            self.fail("invalid")
        try:
            parsed = parse_datetime(value.strip())
        except ValueError:
            parsed = None
        if parsed is None:
            self.fail("invalid")
        if timezone.is_naive(parsed):
            self.fail("naive")
        return parsed


def string_list(*, max_items: int, max_length: int, required: bool = False, **kwargs) -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=max_length, allow_blank=False, trim_whitespace=False),
        max_length=max_items,
        required=required,
        **kwargs,
    )
