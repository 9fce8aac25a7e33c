"""Path converters shared by every URL configuration."""

from memory.limits import ID_MAX


class IdConverter:
    """A positive database id: 1–18 digits, so anything a 64-bit column cannot hold is simply
    not a match (404), never an overflow in the database."""

    regex = "[1-9][0-9]{0,17}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > ID_MAX:
            raise ValueError("out of range")
        return number

    def to_url(self, value: int) -> str:
        return str(value)
