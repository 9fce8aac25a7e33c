"""Template filters of the dashboard. They return plain strings, so the output stays escaped."""

import json
from datetime import timedelta
from typing import Any

from django import template

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    """JSON indented by two spaces, Chinese kept as is (not \\u escapes); escaped by the template."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@register.filter
def minutes(value: timedelta | None) -> str:
    """A duration as whole minutes in words ("15 minutes", "1 minute"); "" for None."""
    if value is None:
        return ""
    count = max(1, round(value.total_seconds() / 60))
    return f"{count} minute{'' if count == 1 else 's'}"
