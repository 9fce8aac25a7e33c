"""When and how long to wait before trying a request again.

Retried: a transport failure (connection refused or reset, timeout), 429 (after the server's
Retry-After when it sends one), 502, 503, 504, and 409 `idempotency_in_progress` (another
request with the same key is still running). Never any other 4xx: the answer would be the same.
Writes are safe to retry because each logical write carries one Idempotency-Key for all its
attempts (the server replays the first stored answer instead of writing twice).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import httpx

from memory_client.errors import MemoryAPIError

RETRY_STATUSES = frozenset({429, 502, 503, 504})
RETRY_CODES = frozenset({"idempotency_in_progress"})


@dataclass(frozen=True)
class RetryPolicy:
    """`max_attempts` counts the first try (1 = never retry). Delays in seconds: the n-th retry
    waits backoff × 2^(n-1), at most `max_backoff`, plus up to `jitter` of it at random; a
    Retry-After from the server replaces that delay, capped at `max_retry_after`."""

    max_attempts: int = 4
    backoff: float = 0.5
    max_backoff: float = 8.0
    jitter: float = 0.25
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if min(self.backoff, self.max_backoff, self.jitter, self.max_retry_after) < 0:
            raise ValueError("delays must not be negative")

    def retries_error(self, error: BaseException) -> bool:
        """Whether this failure of one attempt may be tried again (attempts aside)."""
        if isinstance(error, MemoryAPIError):
            return error.status in RETRY_STATUSES or (error.status == 409 and error.code in RETRY_CODES)
        # UnsupportedProtocol (a URL without http://) fails the same way every time.
        return isinstance(error, httpx.TransportError) and not isinstance(error, httpx.UnsupportedProtocol)

    def delay(self, retry: int, error: BaseException, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number `retry` (1-based) after `error`."""
        retry_after = error.retry_after if isinstance(error, MemoryAPIError) else None
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        base = min(self.backoff * 2.0 ** (retry - 1), self.max_backoff)
        fraction = rng.random() if rng is not None else random.random()
        return base + base * self.jitter * fraction
