"""Refuse oversized API bodies with 413 before anything reads them (R-OPS, S19)."""

import json

from django.conf import settings
from django.http import HttpResponse

from memory.api.errors import error_body

IMPORT_PATH = "/api/v1/import"  # streams its body (memory.api.portability_views); its own limit


class ApiBodyLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            if request.path == IMPORT_PATH:
                limit = settings.MEMORY_IMPORT_MAX_BYTES
            if length > limit:
                body = error_body("payload_too_large", f"request body is {length} bytes; the maximum is {limit} bytes")
                return HttpResponse(json.dumps(body), status=413, content_type="application/json")
        return self.get_response(request)
