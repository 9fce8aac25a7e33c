"""Template filters of the administration pages. They return plain strings, so the output stays escaped."""

import json
from typing import Any

from django import template

register = template.Library()

SUMMARY_KEYS = 6


@register.filter
def payload_summary(value: Any) -> str:
    """An audit payload's top-level keys, sorted like the JSON below them (PostgreSQL's jsonb
    keeps no key order), as the line to click to see it: "created_user, previous_role, role,
    username"; "payload" for anything but an object."""
    if isinstance(value, dict) and value:
        keys = sorted(str(key) for key in value)
        more = f" +{len(keys) - SUMMARY_KEYS}" if len(keys) > SUMMARY_KEYS else ""
        return ", ".join(keys[:SUMMARY_KEYS]) + more
    return "payload"


@register.filter
def compact_json(value: Any) -> str:
    """JSON on one line, Chinese kept as is ({"spicy": "low"}); escaped by the template."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
