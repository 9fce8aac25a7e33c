"""One log line and one latency observation per request (R-OPS).

First in MIDDLEWARE, so the time covers every other middleware, including a 413 for an
oversized body. The request id is the caller's `X-Request-ID` when it is 1–64 characters of
letters, digits and `._:-`, else a new one; it is sent back in `X-Request-ID` and attached to
every log line written while the request is answered (memory.ops.logs.REQUEST_ID), up to
Django's own "Not Found"/"Bad Request" warning, written after the middleware returns: the id
is cleared when the response is closed (request_finished).
"""

import logging
import re
import time
import uuid

from django.core.signals import request_finished

from memory.ops.logs import REQUEST_ID
from memory.ops.metrics import UNMATCHED_ROUTE, request_observe

logger = logging.getLogger("memory.request")

REQUEST_ID_HEADER = "X-Request-ID"
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


def request_id_for(request) -> str:
    sent = request.headers.get(REQUEST_ID_HEADER, "")
    return sent if _REQUEST_ID.fullmatch(sent) else uuid.uuid4().hex


def _forget_request_id(**kwargs) -> None:
    REQUEST_ID.set("")


request_finished.connect(_forget_request_id, dispatch_uid="memory.ops.request_id")


class RequestLogMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = request_id_for(request)
        REQUEST_ID.set(request_id)
        started = time.perf_counter()
        response = self.get_response(request)
        seconds = time.perf_counter() - started
        match = getattr(request, "resolver_match", None)
        route = match.route if match is not None else UNMATCHED_ROUTE
        request_observe(route=route, method=request.method, status=response.status_code, seconds=seconds)
        # Set by the permission class (API) or the dashboard's team resolution.
        principal = getattr(request, "principal", None)
        fields = {
            "method": request.method,
            "path": request.path,
            "route": route,
            "status": response.status_code,
            "duration_ms": round(seconds * 1000, 3),
            "team": principal.team.slug if principal is not None else "",
            "principal": principal.kind if principal is not None else "anonymous",
        }
        logger.info("%s %s %s %.1fms team=%s principal=%s", request.method, request.path, response.status_code,
                    fields["duration_ms"], fields["team"] or "-", fields["principal"], extra=fields)
        response[REQUEST_ID_HEADER] = request_id
        return response
