"""Pages and answers are never kept by the browser or a proxy (R-UI; R-STORE provable forgetting).

A review's find: after forgetting #13 or correcting #147, the back button showed the page as it
was (the memory "active", a Correct form whose save then failed with a 409): the browser kept
the earlier page. Every response that did not set its own Cache-Control gets
`no-cache, no-store, must-revalidate, private` (django.utils.cache.add_never_cache_headers);
static files are served before this runs (WhiteNoise) and keep their long cache. htmx keeps no
history snapshots either (templates/base.html: historyCacheSize 0, refreshOnHistoryMiss).
"""

from django.utils.cache import add_never_cache_headers


class NeverCacheMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not response.has_header("Cache-Control"):
            add_never_cache_headers(response)
        return response
