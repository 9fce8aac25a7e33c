"""One error shape for the API: `{"error": {"code", "message", "fields"?}}` (R-API)."""

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response

from memory.errors import AccessDenied, MemoryError

_CODES = {
    status.HTTP_400_BAD_REQUEST: "invalid",
    status.HTTP_401_UNAUTHORIZED: "unauthenticated",
    status.HTTP_403_FORBIDDEN: "forbidden",
    status.HTTP_404_NOT_FOUND: "not_found",
    status.HTTP_405_METHOD_NOT_ALLOWED: "method_not_allowed",
    status.HTTP_406_NOT_ACCEPTABLE: "not_acceptable",
    status.HTTP_409_CONFLICT: "conflict",
    status.HTTP_413_REQUEST_ENTITY_TOO_LARGE: "payload_too_large",
    status.HTTP_415_UNSUPPORTED_MEDIA_TYPE: "unsupported_media_type",
    status.HTTP_429_TOO_MANY_REQUESTS: "throttled",
}


def error_body(code: str, message: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if fields:
        error["fields"] = fields
    return {"error": error}


def _flatten(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested validation detail as {"a.b[0].c": ["message", …]}."""
    if isinstance(detail, dict):
        out: dict[str, list[str]] = {}
        for key, value in detail.items():
            name = "body" if key == "non_field_errors" and not prefix else (f"{prefix}.{key}" if prefix else str(key))
            out.update(_flatten(value, name))
        return out
    if isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            return {prefix or "body": [str(item) for item in detail]}
        out = {}
        for index, value in enumerate(detail):
            if value:
                out.update(_flatten(value, f"{prefix}[{index}]"))
        return out
    return {prefix or "body": [str(detail)]}


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, AccessDenied):
        return Response(error_body("forbidden", str(exc)), status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, MemoryError):
        return Response(error_body(exc.code, exc.message, exc.fields), status=exc.status)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if not isinstance(exc, exceptions.APIException):
        return None
    code = _CODES.get(exc.status_code, "error")
    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        first_field, messages = next(iter(fields.items()))
        message = messages[0] if first_field == "body" else f"{first_field}: {messages[0]}"
        return Response(error_body(code, message, fields), status=exc.status_code, headers=headers)
    if isinstance(exc, exceptions.ParseError):
        code = "parse_error"
    message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    return Response(error_body(code, str(message)), status=exc.status_code, headers=headers)
