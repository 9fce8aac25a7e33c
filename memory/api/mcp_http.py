"""The MCP server (memory.api.mcp_server) over streamable HTTP, with an agent key per request.

Every HTTP request to the endpoint must carry `Authorization: Bearer <agent key>`; the key is
checked before the SDK sees the request (a missing, malformed, unknown or revoked key: 401 with
the API's error body and `WWW-Authenticate: Bearer`), and its principal travels in the ASGI
scope to the tool handlers. Each request spends one of the key's rate budget, each refusal one
of the client address's, as in the API: past them, 429 with Retry-After (memory.api.mcp_limits).
Bound to loopback unless the operator says otherwise (R-OPS).
"""

import ipaddress
import json
from typing import Any

import uvicorn
from asgiref.sync import sync_to_async
from django.db import close_old_connections, connection
from rest_framework.exceptions import AuthenticationFailed

from memory.api.errors import error_body
from memory.api.mcp_limits import jsonrpc_throttled, key_spend, refusal_spend
from memory.api.mcp_server import PRINCIPAL_SCOPE_KEY, build_server, principal_for_raw_key

MCP_PATH = "/mcp"


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _close_stale() -> None:
    if not connection.in_atomic_block:
        close_old_connections()


def _answer(status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    return status, body, [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]


def _admit(authorization: str, *, remote_addr: str, forwarded_for: str | None) -> Any:
    """The principal for an Authorization header value, having spent one of its key's budget; or
    the (status, body, headers) to answer instead: 401 for a missing, malformed, unknown or
    revoked key, 429 once the key's budget or the address's budget of refusals is spent
    (memory.api.mcp_limits). Stale connections are closed around it as a request would; a
    caller's open transaction (tests) is left alone."""
    _close_stale()
    try:
        try:
            parts = authorization.split()
            if len(parts) != 2 or parts[0].lower() != "bearer":
                raise AuthenticationFailed("send 'Authorization: Bearer <key>'")
            principal = principal_for_raw_key(parts[1])
        except AuthenticationFailed as error:
            wait = refusal_spend(remote_addr=remote_addr, forwarded_for=forwarded_for)
            if wait is not None:
                return _answer(429, jsonrpc_throttled(wait), [(b"retry-after", str(wait).encode())])
            body = json.dumps(error_body("unauthenticated", str(error.detail))).encode()
            return _answer(401, body, [(b"www-authenticate", b"Bearer")])
        wait = key_spend(principal.agent_key)
        if wait is not None:
            return _answer(429, jsonrpc_throttled(wait), [(b"retry-after", str(wait).encode())])
        return principal
    finally:
        _close_stale()


class AgentKeyMiddleware:
    """ASGI middleware: 401 unless the request's bearer agent key is valid, 429 past the key's
    rate or the address's refusals (memory.api.mcp_limits); else the principal goes into
    scope[PRINCIPAL_SCOPE_KEY]. Lifespan events pass through."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        forwarded = headers.get(b"x-forwarded-for")
        client = scope.get("client") or ("", 0)
        admitted = await sync_to_async(_admit, thread_sensitive=True)(
            authorization, remote_addr=client[0], forwarded_for=forwarded.decode("latin-1") if forwarded else None)
        if isinstance(admitted, tuple):
            status, body, response_headers = admitted
            await send({"type": "http.response.start", "status": status, "headers": response_headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app({**scope, PRINCIPAL_SCOPE_KEY: admitted}, receive, send)


def http_app(*, host: str = "127.0.0.1") -> Any:
    """The ASGI app: the SDK's streamable HTTP app at /mcp (DNS-rebinding protection on for
    loopback hosts) behind AgentKeyMiddleware."""
    return AgentKeyMiddleware(build_server().streamable_http_app(streamable_http_path=MCP_PATH, host=host))


def serve_http(*, host: str, port: int) -> None:
    """Serve until interrupted (uvicorn, one process)."""
    uvicorn.Server(uvicorn.Config(http_app(host=host), host=host, port=port, log_level="warning",
                                  lifespan="on")).run()
