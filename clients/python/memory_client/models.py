"""Typed results of the agent API v1 (R-API): frozen dataclasses over the JSON answers.

Each keeps the answer it was read from in `raw` (excluded from equality and repr), so a field
the server adds later is never out of reach. Times are timezone-aware `datetime`s (the API
sends ISO 8601 in UTC); ids are ints; JSON values (`value_json`, `metadata`) stay as decoded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

Raw = Mapping[str, Any]


def _dt(value: Any) -> datetime | None:
    if not value:
        return None
    text = str(value)
    if text.endswith("Z"):  # Python 3.10's fromisoformat does not read "Z"
        text = text[:-1] + "+00:00"
    return datetime.fromisoformat(text)


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(int(value) for value in values or ())


def _strs(values: Any) -> tuple[str, ...]:
    return tuple(str(value) for value in values or ())


def next_param(url: str | None, name: str) -> str | None:
    """The `name` query parameter of a `next` link (a cursor, or `before` for messages)."""
    if not url:
        return None
    values = parse_qs(urlsplit(url).query).get(name)
    return values[0] if values else None


@dataclass(frozen=True)
class Message:
    id: int
    session_id: str
    workspace_id: str
    user_id: str
    role: str
    content: str
    parent_id: int | None
    metadata: dict[str, Any]
    created_at: datetime | None
    occurred_at: datetime | None
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> Message:
        return cls(id=data["id"], session_id=data["session_id"], workspace_id=data["workspace_id"],
                   user_id=data["user_id"], role=data["role"], content=data["content"], parent_id=data.get("parent_id"),
                   metadata=dict(data.get("metadata") or {}), created_at=_dt(data.get("created_at")),
                   occurred_at=_dt(data.get("occurred_at")), raw=data)


@dataclass(frozen=True)
class AppendResult:
    """POST /messages: the new ids in the order sent, and the stored messages."""

    ids: tuple[int, ...]
    messages: tuple[Message, ...]
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> AppendResult:
        return cls(ids=_ints(data["ids"]), messages=tuple(Message.from_dict(m) for m in data["messages"]), raw=data)


@dataclass(frozen=True)
class MessagePage:
    """GET /messages: oldest first; `next_before` pages to older messages (None: no more)."""

    messages: tuple[Message, ...]
    next_before: int | None
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> MessagePage:
        before = next_param(data.get("next"), "before")
        return cls(messages=tuple(Message.from_dict(m) for m in data["results"]),
                   next_before=int(before) if before else None, raw=data)


@dataclass(frozen=True)
class Summary:
    id: int
    session_id: str
    parent_summary_id: int | None
    from_message_id: int | None
    to_message_id: int | None
    summary: str
    current_goal: str
    constraints: tuple[str, ...]
    preferences: tuple[str, ...]
    decisions: tuple[str, ...]
    completed_work: tuple[str, ...]
    pending_work: tuple[str, ...]
    known_issues: tuple[str, ...]
    created_at: datetime | None
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> Summary:
        lists = {name: _strs(data.get(name)) for name in ("constraints", "preferences", "decisions",
                                                            "completed_work", "pending_work", "known_issues")}
        return cls(id=data["id"], session_id=data["session_id"], parent_summary_id=data.get("parent_summary_id"),
                   from_message_id=data.get("from_message_id"), to_message_id=data.get("to_message_id"),
                   summary=data["summary"], current_goal=data.get("current_goal", ""), **lists,
                   created_at=_dt(data.get("created_at")), raw=data)


@dataclass(frozen=True)
class SummaryPage:
    """GET /summaries: oldest first; pass `next_cursor` back as `cursor` (None: no more)."""

    summaries: tuple[Summary, ...]
    next_cursor: str | None
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> SummaryPage:
        return cls(summaries=tuple(Summary.from_dict(s) for s in data["results"]),
                   next_cursor=next_param(data.get("next"), "cursor"), raw=data)


@dataclass(frozen=True)
class Node:
    """A memory node. `matched` is filled for relevant (fuzzy) hits: the query terms it matched."""

    id: int
    scope: str
    type: str
    status: str
    domain: str
    key: str
    value_json: Any
    title: str
    content: str
    workspace_id: str
    user_id: str
    session_id: str
    category_path: tuple[str, ...]
    confidence: float
    importance: float
    tags: tuple[str, ...]
    entities: tuple[str, ...]
    explicit: bool
    version: int
    source_message_ids: tuple[int, ...]
    parent_id: int | None
    supersedes_id: int | None
    superseded_by_id: int | None
    created_at: datetime | None
    updated_at: datetime | None
    expires_at: datetime | None
    matched: tuple[str, ...] = ()
    raw: Raw = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> Node:
        return cls(
            id=data["id"], scope=data["scope"], type=data["type"], status=data["status"], domain=data.get("domain", ""),
            key=data.get("key", ""), value_json=data.get("value_json"), title=data.get("title", ""),
            content=data.get("content", ""), workspace_id=data.get("workspace_id", ""), user_id=data.get("user_id", ""),
            session_id=data.get("session_id", ""), category_path=_strs(data.get("category_path")),
            confidence=float(data.get("confidence", 0.0)), importance=float(data.get("importance", 0.0)),
            tags=_strs(data.get("tags")), entities=_strs(data.get("entities")), explicit=bool(data.get("explicit")),
            version=int(data.get("version", 1)), source_message_ids=_ints(data.get("source_message_ids")),
            parent_id=data.get("parent_id"), supersedes_id=data.get("supersedes_id"),
            superseded_by_id=data.get("superseded_by_id"), created_at=_dt(data.get("created_at")),
            updated_at=_dt(data.get("updated_at")), expires_at=_dt(data.get("expires_at")),
            matched=_strs(data.get("matched")), raw=data,
        )


def _nodes(values: Any) -> tuple[Node, ...]:
    return tuple(Node.from_dict(value) for value in values or ())


@dataclass(frozen=True)
class Omission:
    """A node left out of a result, and why (expired, superseded, low_confidence, conflict_lost, over_limit …)."""

    node_id: int
    reason: str


def _omitted(values: Any) -> tuple[Omission, ...]:
    return tuple(Omission(node_id=value["node_id"], reason=value["reason"]) for value in values or ())


@dataclass(frozen=True)
class SearchResult:
    """POST /memory/search (R-QUERY): exact key matches, relevant keyword matches, omissions."""

    exact: tuple[Node, ...]
    relevant: tuple[Node, ...]
    omitted: tuple[Omission, ...]
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> SearchResult:
        return cls(exact=_nodes(data["exact"]), relevant=_nodes(data["relevant"]), omitted=_omitted(data["omitted"]),
                   raw=data)


@dataclass(frozen=True)
class ContextItem:
    """One line of the rendered block: its section and layer (L0–L5), what it is (node, message,
    summary, profile), the id of that object, the text injected and why it was chosen."""

    section: str
    layer: str
    kind: str
    id: int
    text: str
    why: str


@dataclass(frozen=True)
class Context:
    """POST /context (R-CTX): `block` is the text to inject before the model call (at most the
    budget's max_chars characters); `retrieval_id` names the hit-ledger row for feedback."""

    retrieval_id: int | None
    block: str
    used_memory_ids: tuple[int, ...]
    items: tuple[ContextItem, ...]
    recent_messages: tuple[Message, ...]
    latest_summary: Summary | None
    session_memory: tuple[Node, ...]
    workspace_memory: tuple[Node, ...]
    preferences: tuple[Node, ...]
    corrections: tuple[Node, ...]
    relevant_nodes: tuple[Node, ...]
    relevant_messages: tuple[Message, ...]
    working_memory: tuple[str, ...]
    profile: dict[str, Any] | None
    omitted: tuple[Omission, ...]
    budget: dict[str, Any]
    diagnostics: dict[str, Any]
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Raw) -> Context:
        summary = data.get("latest_summary")
        return cls(
            retrieval_id=data.get("retrieval_id"), block=data.get("block", ""),
            used_memory_ids=_ints(data.get("used_memory_ids")),
            items=tuple(ContextItem(section=i["section"], layer=i["layer"], kind=i["kind"], id=i["id"], text=i["text"],
                                    why=i.get("why", "")) for i in data.get("items") or ()),
            recent_messages=tuple(Message.from_dict(m) for m in data.get("recent_messages") or ()),
            latest_summary=Summary.from_dict(summary) if summary else None,
            session_memory=_nodes(data.get("session_memory")), workspace_memory=_nodes(data.get("workspace_memory")),
            preferences=_nodes(data.get("preferences")), corrections=_nodes(data.get("corrections")),
            relevant_nodes=_nodes(data.get("relevant_nodes")),
            relevant_messages=tuple(Message.from_dict(m) for m in data.get("relevant_messages") or ()),
            working_memory=_strs(data.get("working_memory")), profile=data.get("profile"),
            omitted=_omitted(data.get("omitted")), budget=dict(data.get("budget") or {}),
            diagnostics=dict(data.get("diagnostics") or {}), raw=data,
        )
