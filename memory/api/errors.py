"""One error shape for the API: `{"error": {"code", "message", "fields"?}}` (R-API)."""

import math
import sys
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from django.views.defaults import page_not_found, server_error
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

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
            if key == "non_field_errors" and not prefix:
                name = "body"
            elif isinstance(key, int) or str(key).isdigit():  # a list's item, as DRF's ListField reports it
                name = f"{prefix}[{key}]"
            else:
                name = f"{prefix}.{key}" if prefix else str(key)
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


# The database unreachable or its connection dropped (a restart, a failover): the request may
# be retried as it is, so 503 with Retry-After rather than the 500 of a bug.
UNAVAILABLE = (OperationalError, InterfaceError)
UNAVAILABLE_MESSAGE = "the database is unavailable for a moment; retry the request"


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, UNAVAILABLE):
        set_rollback()
        return Response(error_body("unavailable", UNAVAILABLE_MESSAGE), status=status.HTTP_503_SERVICE_UNAVAILABLE,
                        headers={"Retry-After": "1"})
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
        headers["Retry-After"] = str(max(1, math.ceil(exc.wait)))  # whole seconds, never "0"
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        first_field, messages = next(iter(fields.items()))
        message = messages[0] if first_field == "body" else f"{first_field}: {messages[0]}"
        return Response(error_body(code, message, fields), status=exc.status_code, headers=headers)
    if isinstance(exc, exceptions.ParseError):
        code = "parse_error"
    message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    return Response(error_body(code, str(message)), status=exc.status_code, headers=headers)


def not_found_view(request, exception=None):
    """404 for the whole site: the error shape under /api (with or without the slash), Django's page elsewhere."""
    if request.path == "/api" or request.path.startswith("/api/"):
        return JsonResponse(error_body("not_found", f"no such endpoint or object: {request.path}"), status=404)
    return page_not_found(request, exception)


def server_error_view(request):
    """500 for the whole site (a bug, never an expected answer): the error shape under /api/."""
    if request.path == "/api" or request.path.startswith("/api/"):
        if isinstance(sys.exc_info()[1], UNAVAILABLE):  # raised outside a view (e.g. a middleware's query)
            response = JsonResponse(error_body("unavailable", UNAVAILABLE_MESSAGE), status=503)
            response["Retry-After"] = "1"
            return response
        return JsonResponse(error_body("server_error", "the server failed; the request may be retried"), status=500)
    return server_error(request)
