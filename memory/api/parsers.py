"""JSON parsing that refuses what the database cannot store (S18) and what could exhaust the
server: NUL and lone surrogates, non-finite numbers, nesting deeper than JSON_DEPTH_MAX."""

import json

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, JSONParser

from memory.validation import first_json_problem


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


class StrictJSONParser(JSONParser):
    """Parse JSON, then apply memory.validation.first_json_problem to the whole body.

    One rule for every endpoint: a body that breaks it is refused with 400 naming the field,
    and nothing is stored.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = stream.read().decode(encoding) if stream is not None else ""
            data = json.loads(text, parse_constant=_refuse_constant)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
        except ValueError as error:  # also UnicodeDecodeError
            raise ParseError(f"JSON parse error - {error}") from None
        problem = first_json_problem(data)
        if problem:
            raise ParseError(f"{problem[0]}: {problem[1]}")
        return data


class UnreadBodyParser(BaseParser):
    """Accept any content type and leave the body unread, for views that stream the raw body
    themselves (POST /api/v1/import reads it line by line). Without it, a login's CSRF check
    (which looks for a form token in the body) would refuse every type but JSON with 415, and
    JSON would be read whole before the view sees it."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return {}
