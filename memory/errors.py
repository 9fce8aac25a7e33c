"""Domain errors raised by services and selectors; the API's exception handler maps them
to the one error shape `{"error": {"code", "message", "fields"?}}` (R-API)."""

from accounts.principal import AccessDenied

__all__ = ["AccessDenied", "Conflict", "InvalidInput", "MemoryError", "NotFound"]


class MemoryError(Exception):  # noqa: A001 - the domain's base error
    status = 400
    code = "invalid"

    def __init__(self, message: str, *, fields: dict[str, list[str]] | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.fields = fields
        if code is not None:
            self.code = code


class InvalidInput(MemoryError):
    """400: the request is well-formed JSON but breaks a rule (limits, references, ranges)."""


class NotFound(MemoryError):
    """404: no such object in the caller's team (other teams' ids look exactly like this)."""

    status = 404
    code = "not_found"


class Conflict(MemoryError):
    """409: the object is not in a state that allows this change (e.g. superseding a superseded node)."""

    status = 409
    code = "conflict"
