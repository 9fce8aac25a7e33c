"""Template filters of the dashboard. They return plain strings, so the output stays escaped."""

import json
from typing import Any

from django import template

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    """JSON indented by two spaces, Chinese kept as is (not \\u escapes); escaped by the template."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
