"""Typed answers of the operations of the agent API v1 (R-API): feedback and the hit ledger,
proposals, extractions, forgetting, node pages and history, working memory and the tools.
Frozen dataclasses like memory_client.models, each with the decoded answer in `raw`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory_client.models import Node, Raw, _dt, _ints, _nodes, _strs, next_param


@dataclass(frozen=True)
class Feedback:
    """POST /retrievals/{id}/feedback: what the answer used of what was injected."""

    retrieval_id: int
    used_node_ids: tuple[int, ...]
    injected_node_ids: tuple[int, ...]
    helpful: bool | None
    note: str
    actor: str
    created_at: datetime | None
    updated_at: datetime | None
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> Feedback:
        return cls(retrieval_id=data["retrieval_id"], used_node_ids=_ints(data["used_node_ids"]),
                   injected_node_ids=_ints(data.get("injected_node_ids")), helpful=data.get("helpful"),
                   note=data.get("note", ""), actor=data.get("actor", ""), created_at=_dt(data.get("created_at")),
                   updated_at=_dt(data.get("updated_at")), raw=data)


@dataclass(frozen=True)
class Retrieval:
    """GET /retrievals/{id}: what a context call injected (`used`) and left out (`omitted`), and why."""

    id: int
    query: str
    session_id: str
    workspace_id: str
    user_id: str
    used: list[Any]
    omitted: list[Any]
    total_chars: int
    total_tokens: int
    latency_ms: float
    feedback: Feedback | None
    created_at: datetime | None
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> Retrieval:
        feedback = data.get("feedback")
        return cls(id=data["id"], query=data.get("query", ""), session_id=data.get("session_id", ""),
                   workspace_id=data.get("workspace_id", ""), user_id=data.get("user_id", ""),
                   used=list(data.get("used") or []), omitted=list(data.get("omitted") or []),
                   total_chars=int(data.get("total_chars", 0)), total_tokens=int(data.get("total_tokens", 0)),
                   latency_ms=float(data.get("latency_ms", 0.0)),
                   feedback=Feedback.from_dict(feedback) if feedback else None,
                   created_at=_dt(data.get("created_at")), raw=data)


@dataclass(frozen=True)
class ProposeResult:
    """POST /memory/propose: `accepted` false with a `reason` code is a refusal, not an error
    (scope_not_allowed, explicit_intent_required, conflict with `requires_confirmation` …)."""

    accepted: bool
    operation: str
    node_id: int | None
    created: bool
    reason: str | None
    message: str
    requires_confirmation: bool
    conflict_node_id: int | None
    superseded_id: int | None
    notes: tuple[str, ...]
    node: Node | None
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> ProposeResult:
        node = data.get("node")
        return cls(accepted=bool(data["accepted"]), operation=data.get("operation", ""), node_id=data.get("node_id"),
                   created=bool(data.get("created")), reason=data.get("reason"), message=data.get("message", ""),
                   requires_confirmation=bool(data.get("requires_confirmation")),
                   conflict_node_id=data.get("conflict_node_id"), superseded_id=data.get("superseded_id"),
                   notes=_strs(data.get("notes")), node=Node.from_dict(node) if node else None, raw=data)


@dataclass(frozen=True)
class ExtractionResult:
    """POST /memory/extractions: `applied` false means nothing was written; one result per operation."""

    applied: bool
    results: tuple[ProposeResult, ...]
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> ExtractionResult:
        return cls(applied=bool(data["applied"]), results=tuple(ProposeResult.from_dict(r) for r in data["results"]),
                   raw=data)


@dataclass(frozen=True)
class ForgetResult:
    """POST /memory/forget and DELETE /nodes/{id}: what was forgotten, or the candidates to confirm."""

    mode: str
    deleted_ids: tuple[int, ...]
    requires_confirmation: bool
    candidate_count: int
    candidates: tuple[dict[str, Any], ...]
    message: str
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> ForgetResult:
        return cls(mode=data["mode"], deleted_ids=_ints(data["deleted_ids"]),
                   requires_confirmation=bool(data.get("requires_confirmation")),
                   candidate_count=int(data.get("candidate_count", 0)),
                   candidates=tuple(dict(c) for c in data.get("candidates") or ()), message=data.get("message", ""),
                   raw=data)


@dataclass(frozen=True)
class NodePage:
    """GET /nodes: newest first; pass `next_cursor` back as `cursor` (None: no more)."""

    nodes: tuple[Node, ...]
    next_cursor: str | None
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> NodePage:
        return cls(nodes=_nodes(data["results"]), next_cursor=next_param(data.get("next"), "cursor"), raw=data)


@dataclass(frozen=True)
class NodeHistory:
    """GET /nodes/{id}/history: the supersede chain (oldest first) and its audit events (as dicts)."""

    node_id: int
    chain: tuple[Node, ...]
    audit: tuple[dict[str, Any], ...]
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> NodeHistory:
        return cls(node_id=data["node_id"], chain=_nodes(data["chain"]), audit=tuple(dict(a) for a in data["audit"]),
                   raw=data)


@dataclass(frozen=True)
class SessionForgetResult:
    """DELETE /sessions/{id}: counts per kind (messages, summaries, working_memory, nodes …)."""

    session_id: str
    workspace_id: str
    user_id: str
    mode: str
    counts: dict[str, int]
    node_ids: tuple[int, ...]
    kept_node_ids: tuple[int, ...]
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> SessionForgetResult:
        return cls(session_id=data["session_id"], workspace_id=data["workspace_id"], user_id=data["user_id"],
                   mode=data["mode"], counts=dict(data["counts"]), node_ids=_ints(data["node_ids"]),
                   kept_node_ids=_ints(data["kept_node_ids"]), raw=data)


@dataclass(frozen=True)
class WorkingMemory:
    """A session's working memory (seed 004 L4); `version` 0 until the first write."""

    session_id: str
    workspace_id: str
    user_id: str
    current_goal: str
    references: dict[str, Any]
    slots: dict[str, Any]
    scratchpad: str
    version: int
    updated_at: datetime | None
    updated_by: str
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> WorkingMemory:
        return cls(session_id=data["session_id"], workspace_id=data["workspace_id"], user_id=data["user_id"],
                   current_goal=data.get("current_goal", ""), references=dict(data.get("references") or {}),
                   slots=dict(data.get("slots") or {}), scratchpad=data.get("scratchpad", ""),
                   version=int(data["version"]), updated_at=_dt(data.get("updated_at")),
                   updated_by=data.get("updated_by", ""), raw=data)


@dataclass(frozen=True)
class Tools:
    """GET /tools: function definitions to hand to an LLM, and tool name → the request to make."""

    tools: tuple[dict[str, Any], ...]
    endpoints: dict[str, str]
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> Tools:
        return cls(tools=tuple(dict(t) for t in data["tools"]), endpoints=dict(data["endpoints"]), raw=data)
