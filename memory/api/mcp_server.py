"""The memory tools over the Model Context Protocol (R-TOOLS, R-API), on the official `mcp` SDK's
low-level Server: `python manage.py mcp` serves it on stdio or streamable HTTP.

Tools: memory_search, memory_get, memory_propose_update and memory_forget with the input schemas
of GET /api/v1/tools (the team's controlled keys in the descriptions), plus memory_context
(POST /api/v1/context as a tool). A call runs memory.api.tool_calls.tool_call, the code the
endpoints run: same validation, services, audit (actor `key:<prefix>`) and answers. A tool's
answer is the endpoint's JSON body, as text and as structured content; an error is a tool
result with isError and the API's error body `{"error": {"code", "message", "fields"?}}`.

Resources: `memory://context/{session_id}{?user_id,workspace_id,query,domain,timezone}` reads the
context of a session (recorded as a retrieval, like POST /api/v1/context): the rendered block
(text/plain) and the whole answer (application/json); a parameter given twice or a value whose
percent-encoding is not UTF-8 is refused. resources/list names the 20 most recent conversations
within the key's reach (its team's, in the workspaces it may read), whoever wrote them.

Authentication: an agent key. On stdio the key given at start is checked again on each call
(a revoked key stops working at once); over HTTP each request carries `Authorization: Bearer
<key>` and memory.api.mcp_http refuses it with 401 before the SDK sees it. Rate limits are the
API's, per key (memory.api.mcp_limits): over HTTP each request spends the budget, on stdio each
tool call and resource read; past it a tool call answers the API's 429 body with isError. Every database access
runs in a worker thread (asgiref, thread-sensitive) inside the key's team scope.
"""

import json
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

import mcp_types as types
from asgiref.sync import sync_to_async
from django.db import close_old_connections, connection
from django_scopes import scope
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from rest_framework.exceptions import AuthenticationFailed, ParseError, Throttled
from rest_framework.utils.encoders import JSONEncoder

from accounts.authentication import AgentKeyAuthentication
from accounts.principal import Principal, principal_for_key
from memory.api.errors import error_body, exception_handler
from memory.api.mcp_limits import THROTTLED, key_spend
from memory.api.tool_calls import TOOL_CALLS, tool_call
from memory.api.tools import context_tool_definition, tool_definitions
from memory.selectors.dashboard import session_browse
from memory.services.schema import schema_summary
from memory.validation import first_json_problem

logger = logging.getLogger(__name__)

PRINCIPAL_SCOPE_KEY = "memory.principal"  # where the HTTP middleware leaves the request's principal
CONTEXT_URI_TEMPLATE = "memory://context/{session_id}{?user_id,workspace_id,query,domain,timezone}"
LISTED_SESSIONS = 20
INSTRUCTIONS = (
    "Long-term memory for this agent. Before answering a user's turn, call memory_context with the session, "
    "user and the user's message as query, and use its block. Look things up with memory_search or memory_get. "
    "When the user states a lasting preference or fact, or asks you to remember or forget something, call "
    "memory_propose_update or memory_forget; if the answer says requires_confirmation, ask the user, then repeat "
    "the call with confirm=true."
)


def principal_for_raw_key(raw_key: str) -> Principal:
    """The principal of an agent key `mk_<prefix>_<secret>`, checked as the API checks a bearer key
    (and its last use recorded). Raises AuthenticationFailed("malformed API key" | "invalid API key" |
    "this API key was revoked"). Needs a thread that may use the database."""
    _, key = AgentKeyAuthentication().authenticate_key(raw_key)
    return principal_for_key(key)


def _in_django[**P, T](function: Callable[P, T]) -> Callable[P, Any]:
    """`function` as a coroutine run in asgiref's thread-sensitive worker thread (Django's
    connections are per thread), with stale connections closed around it as a request would;
    a caller's open transaction (tests) is left alone."""

    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        if not connection.in_atomic_block:
            close_old_connections()
        try:
            return function(*args, **kwargs)
        finally:
            if not connection.in_atomic_block:
                close_old_connections()

    return sync_to_async(run, thread_sensitive=True)


def _json(body: Any) -> Any:
    """`body` as the API renders it (DRF's encoder: datetimes, decimals) and reads back."""
    return json.loads(json.dumps(body, cls=JSONEncoder, allow_nan=False))


def _error(exc: Exception) -> dict[str, Any]:
    """The API's error body for an exception a call raised; an unexpected one is logged and is
    a server_error, never a traceback on the wire."""
    response = exception_handler(exc, {})
    if response is None:
        logger.exception("MCP tool call failed", exc_info=exc)
        return error_body("server_error", "the server failed; the request may be retried")
    return _json(response.data)


def _run_tool(principal: Principal | Exception, name: str, arguments: dict[str, Any], *,
              spend: bool = False) -> tuple[bool, dict[str, Any]]:
    """(is_error, body) of tool `name`: the endpoint's answer, or its error body. `spend`: the call
    spends one of the key's rate budget first (stdio; over HTTP the request already did), and
    past it the body is the API's 429 error (code "throttled")."""
    try:
        if isinstance(principal, Exception):
            raise principal
        if spend and principal.agent_key is not None:
            wait = key_spend(principal.agent_key)
            if wait is not None:
                raise Throttled(wait=wait)
        problem = first_json_problem(arguments)
        if problem:  # what memory.api.parsers.StrictJSONParser refuses in a request body
            raise ParseError(f"{problem[0]}: {problem[1]}")
        with scope(team=principal.team):
            return False, _json(tool_call(principal, name, arguments).body)
    except Exception as exc:  # noqa: BLE001 - every failure becomes the API's error body
        return True, _error(exc)


def _tool_list(principal: Principal) -> list[types.Tool]:
    with scope(team=principal.team):
        summary = schema_summary(team=principal.team)
    definitions = [*tool_definitions("anthropic", schema_summary=summary), context_tool_definition()]
    return [types.Tool(name=item["name"], description=item["description"], input_schema=item["input_schema"])
            for item in definitions]


def context_uri(session_id: str, **parameters: str) -> str:
    """memory://context/<session_id>?user_id=…&workspace_id=…&query=…&domain=…&timezone=… (empty ones left out)."""
    query = "&".join(f"{name}={quote(value, safe='')}" for name, value in parameters.items() if value)
    return f"memory://context/{quote(session_id, safe='')}" + (f"?{query}" if query else "")


def context_arguments(uri: str) -> dict[str, str]:
    """The memory_context arguments a context URI names (inverse of context_uri). Raises MCPError
    (invalid params) for another URI, a parameter given twice (session_id included) or a value
    that is not UTF-8 once decoded; unknown query parameters are passed on, so the serializer
    names them."""
    parts = urlsplit(uri)
    if parts.scheme != "memory" or parts.netloc != "context" or len(parts.path) < 2 or parts.fragment:
        raise MCPError(types.INVALID_PARAMS, f"unknown resource {uri!r}; expected {CONTEXT_URI_TEMPLATE}")
    try:
        # strict: a percent-encoding that is not UTF-8 would otherwise become U+FFFD and be stored
        pairs = parse_qsl(parts.query, keep_blank_values=True, errors="strict")
        arguments = {"session_id": unquote(parts.path[1:], errors="strict")}
    except UnicodeDecodeError:
        raise MCPError(types.INVALID_PARAMS, f"resource {uri!r}: a percent-encoded value is not UTF-8") from None
    for name, value in pairs:
        if name in arguments:
            where = "is the path of the URI" if name == "session_id" else "is given twice"
            raise MCPError(types.INVALID_PARAMS, f"resource {uri!r}: {name} {where}")
        arguments[name] = value
    return arguments


def _recent_sessions(principal: Principal) -> list[types.Resource]:
    with scope(team=principal.team):
        sessions = list(session_browse(principal=principal, filters={})[:LISTED_SESSIONS])
    return [
        types.Resource(
            uri=context_uri(item.external_id, user_id=item.user_id, workspace_id=item.workspace_id),
            name=f"context: {item.external_id}",
            description=f"memory context of session {item.external_id!r}"
            + (f" (user {item.user_id!r})" if item.user_id else "")
            + (f" in workspace {item.workspace_id!r}" if item.workspace_id else ""),
            mime_type="text/plain",
        )
        for item in sessions
    ]


def build_server(*, raw_key: str | None = None) -> Server:
    """The MCP server. Each request's principal: over HTTP, the one memory.api.mcp_http resolved from
    the request's bearer key; otherwise (stdio, in-process) `raw_key`, resolved on each call."""

    def over_http(ctx: ServerRequestContext) -> bool:
        """True when memory.api.mcp_http admitted the request (and spent its rate budget)."""
        return ctx.request is not None and PRINCIPAL_SCOPE_KEY in getattr(ctx.request, "scope", {})

    def resolve(ctx: ServerRequestContext) -> Principal | Exception:
        if over_http(ctx):
            return ctx.request.scope[PRINCIPAL_SCOPE_KEY]
        if raw_key is None:
            return AuthenticationFailed("send 'Authorization: Bearer <key>'")
        try:
            return principal_for_raw_key(raw_key)
        except AuthenticationFailed as error:
            return error

    async def principal_of(ctx: ServerRequestContext) -> Principal:
        principal = await _in_django(resolve)(ctx)
        if isinstance(principal, Exception):
            raise MCPError(types.INVALID_REQUEST, str(principal), data=error_body("unauthenticated", str(principal)))
        return principal

    async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await _in_django(_tool_list)(await principal_of(ctx)))

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in TOOL_CALLS:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}; tools: {', '.join(TOOL_CALLS)}")
        principal = await _in_django(resolve)(ctx)
        is_error, body = await _in_django(_run_tool)(principal, params.name, params.arguments or {},
                                                     spend=not over_http(ctx))
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(body, ensure_ascii=False))],
                                    structured_content=body, is_error=is_error)

    async def list_resources(ctx: ServerRequestContext,
                             params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=await _in_django(_recent_sessions)(await principal_of(ctx)))

    async def list_resource_templates(ctx: ServerRequestContext,
                                      params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            name="context", uri_template=CONTEXT_URI_TEMPLATE,
            description="The memory context of a session for the optional query: the rendered block (text/plain), "
                        "then the whole answer of POST /api/v1/context (application/json). Recorded as a retrieval.")
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(ctx: ServerRequestContext, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        arguments = context_arguments(uri)
        principal = await principal_of(ctx)
        is_error, body = await _in_django(_run_tool)(principal, "memory_context", arguments, spend=not over_http(ctx))
        if is_error:
            code = THROTTLED if body["error"]["code"] == "throttled" else types.INVALID_PARAMS
            raise MCPError(code, f"{body['error']['code']}: {body['error']['message']}", data=body)
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=uri, mime_type="text/plain", text=body["block"]),
            types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(body, ensure_ascii=False)),
        ])

    return Server(
        "memory-service",
        version="1.0.0",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
    )
