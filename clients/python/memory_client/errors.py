"""Typed exceptions for the API's one error shape, `{"error": {"code", "message", "fields"?}}` (R-API).

Every answer other than 2xx raises a `MemoryAPIError` subclass chosen by HTTP status, carrying
the API's `code` (e.g. "invalid", "not_found", "idempotency_key_reused"), its `message`, the
`status` and `details` (the per-field messages, `{"node.type": ["required for create"]}`).
A request that never got an answer after every retry raises `MemoryConnectionError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class MemoryClientError(Exception):
    """Base of everything this client raises."""


class MemoryConnectionError(MemoryClientError):
    """The server could not be reached, or did not answer, after every attempt."""


class InvalidRequest(MemoryClientError, ValueError):
    """The arguments cannot be sent at all, so nothing was sent: text with a lone surrogate, an
    Idempotency-Key that is not printable ASCII, a body value JSON cannot hold (an object, NaN),
    a path that would leave /api/v1/. Rules the server checks are left to the server (400)."""


class UnexpectedResponse(MemoryClientError):
    """A 2xx answer that is not what the endpoint promises (a field missing or of the wrong type,
    e.g. from a proxy or a server of another version); `body` is the decoded answer."""

    def __init__(self, message: str, *, status: int, body: Any = None):
        super().__init__(message)
        self.status = status
        self.body = body


class MemoryAPIError(MemoryClientError):
    """The API answered with an error. `code` is the API's machine-readable code; `details` maps
    field paths to messages (empty when the error is not about fields)."""

    def __init__(self, *, status: int, code: str, message: str, details: Mapping[str, list[str]] | None = None,
                 body: Any = None, retry_after: float | None = None):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details: dict[str, list[str]] = dict(details or {})
        self.body = body
        self.retry_after = retry_after


class ValidationError(MemoryAPIError):
    """400: the request was malformed or a value out of range; see `details`."""


class AuthenticationError(MemoryAPIError):
    """401: no key, an unknown key or a revoked key."""


class PermissionDenied(MemoryAPIError):
    """403: the key may not do this (read-only key, a workspace it is not limited to, an admin action)."""


class NotFound(MemoryAPIError):
    """404: no such endpoint or object in the key's team (another team's id is a 404 too)."""


class Conflict(MemoryAPIError):
    """409: a version conflict, an already-forgotten session, an idempotency key still in progress …"""


class PayloadTooLarge(MemoryAPIError):
    """413: the request body is over the server's limit."""


class UnprocessableEntity(MemoryAPIError):
    """422: e.g. `idempotency_key_reused`, the same Idempotency-Key sent with a different request."""


class RateLimited(MemoryAPIError):
    """429: throttled; `retry_after` is the server's Retry-After in seconds, if it sent one."""


class ServerError(MemoryAPIError):
    """5xx: the server failed; the request may be retried."""


_BY_STATUS: dict[int, type[MemoryAPIError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: UnprocessableEntity,
    429: RateLimited,
}


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (the delta-seconds form; an HTTP date is ignored), or None."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return max(seconds, 0.0)


def error_from_response(status: int, body: Any, retry_after: str | None = None) -> MemoryAPIError:
    """The exception for an error answer: the class by status, the fields from the error shape.
    A body that is not the error shape (a proxy's HTML page) still gives a useful message."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code = str(error.get("code") or "error")
        message = str(error.get("message") or "")
        fields = error.get("fields") if isinstance(error.get("fields"), dict) else None
    else:
        code = "server_error" if status >= 500 else "error"
        message = (body if isinstance(body, str) else str(body or ""))[:200] or f"HTTP {status}"
        fields = None
    cls = ServerError if status >= 500 else _BY_STATUS.get(status, MemoryAPIError)
    return cls(status=status, code=code, message=message, details=fields, body=body,
               retry_after=parse_retry_after(retry_after))
