"""Serializer fields that reject wrong JSON types instead of coercing them (R-API: wrong types → 400).

DRF's defaults accept "12" for an integer, 1 for a boolean and 12 for a string; an agent
sending those has a bug worth hearing about.
"""

from datetime import datetime

from rest_framework import serializers

from memory.limits import CATEGORY_PREFIX_MAX, DATETIME_YEARS, ID_MAX, IDENTITY_MAX, NODE_LIST_ITEM_MAX, NODE_LIST_ITEMS_MAX
from memory.validation import identity_problem, parse_utc_datetime


class StrictCharField(serializers.CharField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    """An integer (not a string, float or boolean), at most ID_MAX unless told otherwise."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_value", ID_MAX)
        super().__init__(**kwargs)

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
        "range": f"Must fall between the years {DATETIME_YEARS[0]} and {DATETIME_YEARS[1]} (UTC).",
    }

    def to_internal_value(self, value) -> datetime:
        """The time in UTC (memory.validation.parse_utc_datetime)."""
        parsed, problem = parse_utc_datetime(value)
        if parsed is None:
            self.fail(problem)
        return parsed


class IdentityField(StrictCharField):
    """workspace_id, user_id or session_id: 1–128 printable characters, no surrounding spaces."""

    def __init__(self, *, required: bool = False, **kwargs):
        super().__init__(max_length=IDENTITY_MAX, required=required, allow_blank=not required,
                         trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value:
            problem = identity_problem(value)
            if problem:
                raise serializers.ValidationError(problem)
        return value


class CategoryPrefixField(serializers.JSONField):
    """A category path prefix: "a/b" or ["a", "b"] → ("a", "b"), bounded like a node's path."""

    def to_internal_value(self, data):
        data = super().to_internal_value(data)
        if isinstance(data, str):
            if len(data) > CATEGORY_PREFIX_MAX:
                raise serializers.ValidationError(f"at most {CATEGORY_PREFIX_MAX} characters")
            parts = [part for part in data.strip("/").split("/") if part]
        elif isinstance(data, list) and all(isinstance(part, str) and part for part in data):
            parts = data
        else:
            raise serializers.ValidationError('"a/b" or a list of non-empty strings')
        if len(parts) > NODE_LIST_ITEMS_MAX or any(len(part) > NODE_LIST_ITEM_MAX or "/" in part for part in parts):
            raise serializers.ValidationError(
                f"at most {NODE_LIST_ITEMS_MAX} levels of at most {NODE_LIST_ITEM_MAX} characters, without '/'"
            )
        return tuple(parts)


def string_list(*, max_items: int, max_length: int, required: bool = False, **kwargs) -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=max_length, allow_blank=False, trim_whitespace=False),
        max_length=max_items,
        required=required,
        **kwargs,
    )
