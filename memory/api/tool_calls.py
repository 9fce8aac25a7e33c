"""The memory tools as one in-process call (R-TOOLS, R-API): the API's views and the MCP server
(memory.mcp) both answer through `tool_call`, so a tool takes the same arguments, validated by
the same serializers, calls the same services and selectors, audits alike (the principal is the
actor) and gives the same answer or raises the same error.

Errors are raised, never returned: DRF's ValidationError / ParseError / PermissionDenied and the
domain errors of memory.errors (NotFound, InvalidInput, Conflict, AccessDenied). The API's
exception handler (memory.api.errors.exception_handler) turns any of them into the one error
shape `{"error": {"code", "message", "fields"?}}` with its HTTP status.
"""

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from rest_framework import exceptions, serializers

from accounts.principal import Principal
from memory.api import context_serializers as cs
from memory.api import governance_serializers as g
from memory.api import serializers as s
from memory.api.base import owner_of, session_ref
from memory.selectors.context import ContextRequest, context_build
from memory.selectors.nodes import node_get, node_of_owner
from memory.selectors.query import MemoryQuery, ValueFilter, memory_get_by_key, memory_query
from memory.services.forgetting import ForgetSelector, memory_forget
from memory.services.proposals import Proposal, proposal_apply


@dataclass(frozen=True)
class ToolAnswer:
    """A tool's answer: `body` is the JSON the API sends with HTTP `status` (200, or 201 when a
    proposal created a node)."""

    body: dict[str, Any]
    status: int = 200


@cache
def _shared(serializer_class: type[serializers.Serializer]) -> serializers.Serializer:
    return serializer_class()


_WITH_CONTEXT = threading.local()  # per thread: serializer class → an instance whose context is set per use


def represent(serializer_class: type[serializers.Serializer], objects, **context) -> list[dict]:
    """`serializer_class(objects, many=True, context=context).data`, without building the
    serializer's fields anew for each call: DRF deep-copies every declared field per serializer
    instance, about 200 fields (2–3 ms of CPU) for the context call's eight lists. Without a
    context one instance per class is kept and shared; its to_representation only reads. With
    one, each thread keeps an instance per class and gives it `context` (its root context,
    which every field reads) for this use only."""
    if not context:
        serializer = _shared(serializer_class)
        return [serializer.to_representation(item) for item in objects]
    kept = _WITH_CONTEXT.__dict__.setdefault("serializers", {})
    serializer = kept.get(serializer_class) or kept.setdefault(serializer_class, serializer_class())
    serializer._context = context
    try:
        return [serializer.to_representation(item) for item in objects]
    finally:
        serializer._context = {}


def memory_query_from(data) -> MemoryQuery:
    return MemoryQuery(
        owner=owner_of(data),
        scopes=tuple(data.get("scopes", ())),
        domain=data.get("domain", ""),
        category_path_prefix=tuple(data.get("category_path_prefix", ())),
        types=tuple(data.get("types", ())),
        key=data.get("key", ""),
        has_value="value_json" in data,
        value_json=data.get("value_json"),
        value_filters=tuple(
            ValueFilter(path=item["path"], op=item["op"], value=item.get("value")) for item in data.get("value_filters", ())
        ),
        tags=tuple(data.get("tags", ())),
        entities=tuple(data.get("entities", ())),
        query_text=data.get("query_text", ""),
        include_expired=data.get("include_expired", False),
        min_confidence=data.get("min_confidence", 0.0),
        limit=data.get("limit", 10),
    )


def proposal_from(data) -> Proposal:
    return Proposal(
        operation=data["operation"],
        node=dict(data.get("node") or {}),
        reason=data.get("reason", ""),
        target_id=data.get("target_id"),
        workspace_id=data.get("workspace_id", ""),
        user_id=data.get("user_id", ""),
        session_id=data.get("session_id", ""),
        explicit_user_intent=data.get("explicit_user_intent", False),
        expected_version=data.get("expected_version"),
        confirm=data.get("confirm", False),
        on_nonconforming=data.get("on_nonconforming", "reject"),
    )


def proposal_output(principal, result) -> dict:
    node = node_get(principal=principal, node_id=result.node.pk) if result.node is not None else None
    return {
        "accepted": result.accepted,
        "operation": result.operation,
        "node_id": result.node_id,
        "created": result.created,
        "reason": result.reason,
        "message": result.message,
        "requires_confirmation": result.requires_confirmation,
        "conflict_node_id": result.conflict_node_id,
        "superseded_id": result.superseded_id,
        "notes": result.notes,
        "node": s.NodeOutSerializer(node).data if node is not None else None,
    }


def forget_output(result) -> dict:
    return {
        "mode": result.mode,
        "deleted_ids": result.deleted_ids,
        "count": len(result.deleted_ids),
        "requires_confirmation": result.requires_confirmation,
        "candidate_count": result.candidate_count,
        "candidates": g.ForgetCandidateSerializer(
            [{"id": node.pk, "scope": node.scope, "type": node.type, "key": node.key, "title": node.title,
              "status": node.status} for node in result.candidates], many=True).data,
        "message": result.message,
    }


def _search(principal: Principal, data) -> ToolAnswer:
    result = memory_query(principal=principal, query=memory_query_from(data))
    return ToolAnswer({
        "exact": represent(s.NodeOutSerializer, result.exact),
        "relevant": represent(s.RelevantNodeOutSerializer, result.relevant, matched=result.matched),
        "omitted": [{"node_id": item.node_id, "reason": item.reason} for item in result.omitted],
    })


def _get(principal: Principal, data) -> ToolAnswer:
    if data.get("id"):
        node = node_of_owner(principal=principal, node_id=data["id"], owner=owner_of(data))
    else:
        query = memory_query_from({**data, "scopes": [data["scope"]] if data.get("scope") else [],
                                   "types": [data["type"]] if data.get("type") else []})
        node = memory_get_by_key(principal=principal, query=query)
    return ToolAnswer(s.NodeOutSerializer(node).data)


def _propose(principal: Principal, data) -> ToolAnswer:
    result = proposal_apply(principal=principal, proposal=proposal_from(data))
    return ToolAnswer(proposal_output(principal, result), status=201 if result.created else 200)


def _forget(principal: Principal, data) -> ToolAnswer:
    selector = ForgetSelector(
        owner=owner_of(data),
        node_id=data.get("id"),
        scope=data.get("scope", ""),
        domain=data.get("domain", ""),
        category_path_prefix=tuple(data.get("category_path_prefix", ())),
        type=data.get("type", ""),
        key=data.get("key", ""),
        has_value="value_json" in data,
        value_json=data.get("value_json"),
        source_message_ids=tuple(data.get("source_message_ids", ())),
    )
    result = memory_forget(principal=principal, selector=selector, mode=data["mode"], reason=data["reason"],
                           confirm=data["confirm"])
    return ToolAnswer(forget_output(result))


def _context(principal: Principal, data) -> ToolAnswer:
    session_ref(data)  # validates the ids
    context = context_build(
        principal=principal,
        request=ContextRequest(
            owner=owner_of(data),
            query=data.get("query", ""),
            domain=data.get("domain", ""),
            category_path_prefix=data.get("category_path_prefix", ()),
            budget=data.get("budget"),
            timezone=data.get("timezone", ""),
        ),
    )
    summaries = context.section("summary")
    relevant = context.section("relevant")
    matched = {item.obj.pk: item.matched for item in context.items if item.section == "relevant"}
    return ToolAnswer({
        "retrieval_id": context.retrieval_id,
        "block": context.block,
        "latest_summary": represent(s.SummaryOutSerializer, summaries[:1])[0] if summaries else None,
        "recent_messages": represent(s.MessageOutSerializer,
                                     sorted(context.section("recent_messages"), key=lambda m: m.pk)),
        "session_memory": represent(s.NodeOutSerializer, context.section("session")),
        "workspace_memory": represent(s.NodeOutSerializer, context.section("workspace")),
        "preferences": represent(s.NodeOutSerializer, context.section("user_preferences")),
        "profile": next(({"version": version.version, "summary": version.summary}
                         for version in context.section("profile")), None),
        "corrections": represent(s.NodeOutSerializer, context.section("corrections")),
        "working_memory": [item.text for item in context.items if item.section == "working"],
        "relevant_nodes": represent(s.RelevantNodeOutSerializer, relevant, matched=matched),
        "relevant_messages": represent(s.MessageOutSerializer, context.section("earlier_messages")),
        "used_memory_ids": context.used_memory_ids,
        "omitted": [{"node_id": item.node_id, "reason": item.reason} for item in context.omitted],
        "items": [{**item.ref, "text": item.text} for item in context.items],
        "budget": context.budget.as_dict(),
        "diagnostics": {
            "enabled": context.budget.enabled,
            "store_status": context.store_status,
            "warnings": context.warnings,
            "truncated": context.truncated,
            "total_chars": len(context.block),
            "chars_by_layer": context.chars_by_layer,
            "tokens_by_layer": context.tokens_by_layer,
            "counts": context.counts,
            # every item the budget left out, with the limit that did it (nodes also in omitted as over_limit)
            "dropped": [{**left.item.ref, "limit": left.limit} for left in context.dropped],
            "latency_ms": context.latency_ms,
        },
    })


@dataclass(frozen=True)
class ToolCall:
    """A memory tool: its endpoint's input serializer, the function that answers it, the right it needs."""

    serializer: type[serializers.Serializer]
    answer: Callable[[Principal, Any], ToolAnswer]
    right: str  # "read" | "write", as the endpoint's required_right


TOOL_CALLS: dict[str, ToolCall] = {
    "memory_search": ToolCall(s.MemoryQueryInSerializer, _search, "read"),
    "memory_get": ToolCall(s.MemoryGetInSerializer, _get, "read"),
    "memory_propose_update": ToolCall(s.ProposeInSerializer, _propose, "write"),
    "memory_forget": ToolCall(g.ForgetInSerializer, _forget, "write"),
    "memory_context": ToolCall(cs.ContextInSerializer, _context, "read"),
}


def tool_call(principal: Principal, name: str, arguments: Any) -> ToolAnswer:
    """Run memory tool `name` (a key of TOOL_CALLS) for `principal` with `arguments` (the
    endpoint's JSON body, already parsed).

    Runs inside the caller's team scope (the view's, or the MCP server's). Raises
    exceptions.PermissionDenied("this principal is read-only") for a write tool and a read-only
    key, exactly as the endpoint's permission does; ValidationError when the arguments break
    the endpoint's serializer; and whatever domain error the service raises.
    """
    call = TOOL_CALLS[name]
    if call.right == "write" and not principal.can_write:
        raise exceptions.PermissionDenied("this principal is read-only")
    serializer = call.serializer(data=arguments)
    serializer.is_valid(raise_exception=True)
    return call.answer(principal, serializer.validated_data)
