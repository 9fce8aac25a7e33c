"""Rate limits of the MCP server: the agent API's budgets (accounts.throttling; docs/limits.md).

The same counters as the API, in Django's cache, so a key's MCP and API requests share one
budget (settings.MEMORY_RATE_LIMITS["key"]) and a client address's refused authentications
share the "anon" budget with its refused API requests:

- over HTTP (memory.api.mcp_http), every request with a valid key spends one of the key's
  budget; past it, 429 with Retry-After. A request refused for its key spends one of the
  address's "anon" budget; past it, 429 instead of 401;
- on stdio (and in-process), each tool call and resource read spends one of the key's budget;
  past it, the call's answer is the API's 429 error body (a tool result with isError, or an
  MCPError for a resource), since stdio has no status line.

The 429 body over HTTP is a JSON-RPC error, so the SDK's client raises it as an MCPError with
the message, rather than a bare "Server returned an error response": code THROTTLED,
message the API's, data the API's error body `{"error": {"code": "throttled", "message"}}`.
"""

import json
from types import SimpleNamespace
from typing import Any

from rest_framework.exceptions import Throttled

from accounts.models import AgentKey
from accounts.throttling import AnonRateThrottle, KeyRateThrottle
from memory.api.errors import exception_handler

THROTTLED = -32000  # JSON-RPC's implementation-defined server error range (-32000 to -32099)


def _request_like(*, remote_addr: str, forwarded_for: str | None, agent_key: AgentKey | None = None) -> Any:
    """What the DRF throttles read of a request: META, headers and auth."""
    headers = {"x-forwarded-for": forwarded_for} if forwarded_for is not None else {}
    return SimpleNamespace(META={"REMOTE_ADDR": remote_addr}, headers=headers, auth=agent_key)


def key_spend(agent_key: AgentKey) -> int | None:
    """Spend one request of the key's budget: None when allowed, else whole seconds (>= 1) to
    wait. Uses the cache; call it from a thread that may block."""
    throttle = KeyRateThrottle()
    if throttle.allow_request(_request_like(remote_addr="", forwarded_for=None, agent_key=agent_key), None):
        return None
    return throttle.retry_after()


def refusal_spend(*, remote_addr: str, forwarded_for: str | None) -> int | None:
    """Spend one of the client address's "anon" budget for a refused authentication: None while
    it lasts, else whole seconds (>= 1) to wait. The address is chosen as the API chooses it
    (REMOTE_ADDR, or with NUM_PROXIES the n-th from the right of X-Forwarded-For)."""
    throttle = AnonRateThrottle()
    if throttle.allow_request(_request_like(remote_addr=remote_addr, forwarded_for=forwarded_for), None):
        return None
    return throttle.retry_after()


def throttled_body(seconds: int) -> dict[str, Any]:
    """The API's 429 error body for a wait of `seconds`."""
    response = exception_handler(Throttled(wait=seconds), {})
    assert response is not None
    return json.loads(json.dumps(response.data))


def jsonrpc_throttled(seconds: int) -> bytes:
    """The HTTP 429 body: a JSON-RPC error (id null: the request was refused before it was read)."""
    body = throttled_body(seconds)
    return json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": THROTTLED, "message": body["error"]["message"], "data": body}}).encode()
