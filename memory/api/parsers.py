"""JSON parsing that refuses text the database cannot store (S18: NUL; lone surrogates)."""

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from memory.validation import first_json_problem


class StrictJSONParser(JSONParser):
    """Parse JSON, then reject any string or key containing U+0000 or a lone surrogate.

    One rule for every endpoint: such a request is refused with 400 naming the field, and
    nothing is stored.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        problem = first_json_problem(data)
        if problem:
            raise ParseError(f"{problem[0]}: {problem[1]}")
        return data
