"""The four memory tools as JSON-Schema function definitions (seed 000 按需 Memory Tool; R-TOOLS).

Generated from the OpenAPI schema drf-spectacular builds from the very serializers that
validate the endpoints, so a tool's parameters cannot drift from what the API accepts. Each
definition names the endpoint to call with the arguments as its JSON body.
"""

import re
from functools import cache
from typing import Any

from drf_spectacular.generators import SchemaGenerator

from memory.services.proposals import REFUSALS

TOOLS = (
    ("memory_search", "memory_search", "/api/v1/memory/search",
     "Search long-term memory: exact lookups by key and value, and keyword search (English or Chinese) over "
     "what was remembered. Returns exact matches, relevant matches, and what was left out and why."),
    ("memory_get", "memory_get", "/api/v1/memory/get",
     "Read one memory by id, or the current memory for an exact key (optionally type, value, scope, domain). "
     "A key holding several values (one allergy per food) answers 409 several_values listing them: read those "
     "with memory_search and the key."),
    ("memory_propose_update", "memory_propose", "/api/v1/memory/propose",
     "Ask the memory service to remember, update, supersede (correct), expire or delete one memory. The service "
     "normalises it to the controlled schema and checks scope, source and conflicts; it answers accepted=false "
     "with a reason code instead of writing something it should not. Use explicit_user_intent only when the user "
     "asked to remember. If requires_confirmation, ask the user, then repeat with confirm=true. Refusal reasons: "
     + ", ".join(REFUSALS) + "."),
    ("memory_forget", "memory_forget", "/api/v1/memory/forget",
     "Forget memories by id or by selector (scope, domain, category, type, key, value, source messages). "
     "If several match, or mode is hard, the answer is requires_confirmation with the candidates: ask the user, "
     "then repeat with confirm=true. Soft keeps the memory for audit and restore; hard erases it and the versions "
     "it replaced."),
)
_SCHEMA_NOISE = ("readOnly", "writeOnly", "format")
_CHOICE_LIST = re.compile(r"\n*(\* `[^`]*` - [^\n]*\n?)+$")


def _resolve(node: Any, components: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """Inline every $ref (tools must be self-contained) and drop OpenAPI-only keywords."""
    if isinstance(node, list):
        return [_resolve(item, components, seen) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            return {"type": "object"}
        return _resolve(components[name], components, (*seen, name))
    resolved = {key: _resolve(value, components, seen) for key, value in node.items() if key not in _SCHEMA_NOISE}
    if isinstance(resolved.get("description"), str):
        resolved["description"] = _CHOICE_LIST.sub("", resolved["description"]).strip()  # the enum says it already
        if not resolved["description"]:
            del resolved["description"]
    if resolved.get("type") == "object" and "properties" in resolved:
        resolved["additionalProperties"] = False  # the API refuses unknown fields at every level
    if resolved.pop("nullable", False) and "type" in resolved:
        resolved["type"] = [resolved["type"], "null"]
    if "allOf" in resolved and len(resolved["allOf"]) == 1:
        inner = resolved.pop("allOf")[0]
        resolved = {**inner, **resolved}
    return resolved


@cache
def _request_bodies() -> dict[str, dict[str, Any]]:
    """{operation id: its JSON request body's schema, self-contained}."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema.get("components", {}).get("schemas", {})
    bodies: dict[str, dict[str, Any]] = {}
    for path_item in schema["paths"].values():
        for operation in path_item.values():
            if not isinstance(operation, dict) or "operationId" not in operation:
                continue
            content = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if content:
                bodies[operation["operationId"]] = _resolve(content["schema"], components)
    return bodies


@cache
def _generated() -> dict[str, dict[str, Any]]:
    bodies = _request_bodies()
    return {
        name: {"name": name, "description": description, "endpoint": f"POST {path}",
               "parameters": {**bodies[operation_id], "additionalProperties": False}}
        for name, operation_id, path, description in TOOLS
    }


def tool_endpoints() -> dict[str, str]:
    """{tool name: the request to make with its arguments as JSON body}."""
    return {tool["name"]: tool["endpoint"] for tool in _generated().values()}


def tool_definitions(flavour: str = "openai", *, schema_summary: str = "") -> list[dict[str, Any]]:
    """The tools in an LLM's function-calling format: "openai" → {type: function, function:
    {name, description, parameters}}; "anthropic" → {name, description, input_schema}.
    `schema_summary` (the team's controlled keys) is added to memory_propose_update's description."""
    tools = []
    for tool in _generated().values():
        description = tool["description"]
        if schema_summary and tool["name"] in ("memory_propose_update", "memory_forget"):
            description = f"{description} {schema_summary}"
        if flavour == "anthropic":
            tools.append({"name": tool["name"], "description": description, "input_schema": tool["parameters"]})
        else:
            tools.append({"type": "function", "function": {"name": tool["name"], "description": description,
                                                             "parameters": tool["parameters"]}})
    return tools


CONTEXT_TOOL = ("memory_context", "context", "/api/v1/context",
                "The memory context to put before the next model call: the rendered block (summary, preferences, "
                "relevant memories and messages under the team's budget) with what was used and left out, and why. "
                "Call it once per user turn with the user's message as query; the call is recorded as a retrieval.")


def context_tool_definition() -> dict[str, Any]:
    """memory_context in the "anthropic" shape {name, description, input_schema}: POST /api/v1/context
    as a tool, for MCP clients (memory.mcp) that only call tools. Not one of the four of R-TOOLS."""
    name, operation_id, _, description = CONTEXT_TOOL
    return {"name": name, "description": description,
            "input_schema": {**_request_bodies()[operation_id], "additionalProperties": False}}
