"""Rate limits of the agent API and the login page (R-API 429; docs/limits.md).

Four budgets, each a sliding window of requests kept in Django's "default" cache, which all
processes share when CACHE_URL points at Redis (per process otherwise):

- "key": every request made with one agent key;
- "user": every API request of one dashboard user calling with their session;
- "anon": per client address, requests refused for missing or bad credentials (a flood of
  guessed keys is answered 429 once the address has spent its budget; valid keys from the same
  address are not affected);
- "login": per client address, login form submissions (django-axes still locks a username
  out after AXES_FAILURE_LIMIT failures from one address).

Rates come from settings.MEMORY_RATE_LIMITS ("<n>/<s|min|hour|day>", None: that budget off),
read on every request; settings.MEMORY_THROTTLE false switches them all off. The client
address is REMOTE_ADDR, or with NUM_PROXIES = n trusted proxies the n-th address from the
right of X-Forwarded-For.
"""

import math

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

from accounts.models import AgentKey


class _SettingsRateThrottle(SimpleRateThrottle):
    """SimpleRateThrottle with its rate read from settings at each request (not at import)."""

    def get_rate(self) -> str | None:
        if not settings.MEMORY_THROTTLE:
            return None
        return settings.MEMORY_RATE_LIMITS.get(self.scope)

    def retry_after(self) -> int:
        """Whole seconds until the next request is allowed (at least 1)."""
        return max(1, math.ceil(self.wait() or 0))


class KeyRateThrottle(_SettingsRateThrottle):
    scope = "key"

    def get_cache_key(self, request, view) -> str | None:
        if not isinstance(request.auth, AgentKey):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}


class UserRateThrottle(_SettingsRateThrottle):
    scope = "user"

    def get_cache_key(self, request, view) -> str | None:
        if isinstance(request.auth, AgentKey) or request.user is None or not request.user.is_authenticated:
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}


class AnonRateThrottle(_SettingsRateThrottle):
    """Counted by memory.api.base.TeamAPIView for each request refused with 401."""

    scope = "anon"

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class LoginRateThrottle(AnonRateThrottle):
    """Counted by accounts.views.LoginView for each POST of the login form."""

    scope = "login"
