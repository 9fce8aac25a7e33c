"""/healthz/full and /metrics (R-OPS). No session or agent key: monitoring systems call them.

/healthz/full: every component (memory.ops.health), 200 when all are ok, else 503.
/metrics: the Prometheus exposition (memory.ops.metrics), served to a loopback address with
no X-Forwarded-For (a scraper on the same machine), or with
`Authorization: Bearer <MEMORY_METRICS_TOKEN>`; anything else gets 403.
"""

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from prometheus_client import CONTENT_TYPE_LATEST

from memory.api.errors import error_body
from memory.ops.health import health_report
from memory.ops.metrics import exposition

LOOPBACK = {"127.0.0.1", "::1"}


def _method_not_allowed(request: HttpRequest) -> JsonResponse | None:
    if request.method in ("GET", "HEAD"):
        return None
    return JsonResponse(error_body("method_not_allowed", f"method {request.method} is not allowed"), status=405,
                        headers={"Allow": "GET, HEAD"})


def health_full_view(request: HttpRequest) -> JsonResponse:
    refused = _method_not_allowed(request)
    if refused is not None:
        return refused
    body, status = health_report()
    return JsonResponse(body, status=status, headers={"Cache-Control": "no-store"})


def metrics_allowed(request: HttpRequest) -> bool:
    token = settings.MEMORY_METRICS_TOKEN
    if token:
        sent = request.headers.get("Authorization", "")
        if hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
            return True
    # Behind a reverse proxy on the same machine every request comes from loopback; a proxy
    # that adds X-Forwarded-For (as it should) keeps outside scrapers out.
    return (settings.MEMORY_METRICS_LOOPBACK and request.META.get("REMOTE_ADDR") in LOOPBACK
            and "HTTP_X_FORWARDED_FOR" not in request.META)


def metrics_view(request: HttpRequest) -> HttpResponse:
    if not metrics_allowed(request):
        message = "metrics are served to loopback scrapers or with 'Authorization: Bearer <MEMORY_METRICS_TOKEN>'"
        return JsonResponse(error_body("permission_denied", message), status=403)
    refused = _method_not_allowed(request)
    if refused is not None:
        return refused
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
