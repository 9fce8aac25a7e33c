"""What every dashboard request and answer goes through (R-UI).

NeverCacheMiddleware: pages and answers are never kept by the browser or a proxy (R-STORE
provable forgetting).

A review's find: after forgetting #13 or correcting #147, the back button showed the page as it
was (the memory "active", a Correct form whose save then failed with a 409): the browser kept
the earlier page. Every response that did not set its own Cache-Control gets
`no-cache, no-store, must-revalidate, private` (django.utils.cache.add_never_cache_headers);
static files are served before this runs (WhiteNoise) and keep their long cache. htmx keeps no
history snapshots either (templates/base.html: historyCacheSize 0, refreshOnHistoryMiss).
"""

from urllib.parse import unquote_to_bytes

from django.http import HttpResponseBadRequest
from django.utils.cache import add_never_cache_headers

FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"


class NeverCacheMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not response.has_header("Cache-Control"):
            add_never_cache_headers(response)
        return response


class FormEncodingMiddleware:
    """A form post whose values are not UTF-8 is a 400, not stored with U+FFFD in their place.

    Django decodes form bodies with errors="replace": a review posted correct-title=%ED%A0%80abc
    (a lone surrogate, as bytes) and the title was stored as "\ufffd\ufffd\ufffdabc", then
    injected under [Recent corrections]; the API refuses the same text. Browsers always send
    UTF-8; only a hand-made request gets here. A multipart body is checked whole (the dashboard
    has no file upload); a body declaring another charset is left to Django (which refuses a
    form body that is not UTF-8 with a 400); the API parses JSON itself (memory.validation)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method == "POST" and not request.path.startswith("/api/"):
            kind, _, parameters = request.META.get("CONTENT_TYPE", "").partition(";")
            kind = kind.strip().lower()  # as Django reads it
            charset = next((value.strip().strip('"').lower() for name, _, value
                            in (part.partition("=") for part in parameters.split(";"))
                            if name.strip().lower() == "charset"), "utf-8")
            if kind in (FORM, MULTIPART) and charset in ("utf-8", "utf8") and not _utf8(kind, request.body):
                return HttpResponseBadRequest("The form holds text that is not valid UTF-8; nothing was saved.",
                                              content_type="text/plain; charset=utf-8")
        return self.get_response(request)


def _utf8(kind: str, body: bytes) -> bool:
    """Whether a form body's values are UTF-8: each value percent-decoded, or, multipart, the
    whole body (the dashboard takes no file)."""
    try:
        if kind == FORM:
            for pair in body.split(b"&"):
                unquote_to_bytes(pair.replace(b"+", b" ")).decode("utf-8")
        else:
            body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
