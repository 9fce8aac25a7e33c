"""Configuration both clients share: where the API is, the key, timeouts and the retry policy."""

from __future__ import annotations

import os
import random
from typing import Any

from memory_client._calls import VERSION, Call
from memory_client._retry import RetryPolicy

DEFAULT_URL = "http://127.0.0.1:8000"
API_PREFIX = "/api/v1"


def api_root(base_url: str) -> str:
    """`http://host:8000`, `http://host:8000/` or `http://host:8000/api/v1` → `http://host:8000/api/v1/`."""
    root = base_url.rstrip("/")
    if not root.endswith(API_PREFIX):
        root += API_PREFIX
    return root + "/"


class ClientConfig:
    """`base_url` defaults to $MEMORY_URL (else http://127.0.0.1:8000), `api_key` to
    $MEMORY_API_KEY. `timeout` is seconds per attempt; `retry` bounds the attempts and their
    backoff (RetryPolicy(max_attempts=1) never retries)."""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, *, timeout: float = 30.0,
                 retry: RetryPolicy | None = None, seed: int | None = None):
        self.base_url = api_root(base_url or os.environ.get("MEMORY_URL") or DEFAULT_URL)
        key = api_key if api_key is not None else os.environ.get("MEMORY_API_KEY", "")
        self.headers = {"Accept": "application/json", "User-Agent": f"memory-client/{VERSION}"}
        if key:
            self.headers["Authorization"] = f"Bearer {key}"
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.rng = random.Random(seed)

    def http_options(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "headers": self.headers, "timeout": self.timeout}

    def health_url(self) -> str:
        return self.base_url[: -len(API_PREFIX) - 1] + "/healthz"


def request_options(call: Call[Any]) -> dict[str, Any]:
    """The keyword arguments of httpx's `request()` for one attempt of `call`."""
    return {"method": call.method, "url": call.path, "params": call.params or None, "content": call.content,
            "headers": call.headers}
