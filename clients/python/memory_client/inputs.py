"""Shapes of the nested request fields (TypedDicts: plain dicts, checked by a type checker only)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypedDict

Scope = Literal["session", "workspace", "user", "global"]
NodeType = Literal["preference", "fact", "decision", "task", "recipe", "skill", "constraint", "correction"]
Operation = Literal["create", "update", "supersede", "expire", "delete"]
ForgetMode = Literal["soft", "hard"]
Role = Literal["user", "assistant", "system", "tool"]


class _MessageRequired(TypedDict):
    session_id: str
    role: str
    content: str


class MessageIn(_MessageRequired, total=False):
    """One message of a batch (POST /messages `{messages: [...]}`)."""

    workspace_id: str
    user_id: str
    parent_id: int
    metadata: dict[str, Any]
    occurred_at: datetime | str


class NodeIn(TypedDict, total=False):
    """A memory as proposed (create), or the fields to change (update, supersede)."""

    scope: Scope
    type: NodeType
    domain: str
    category_path: list[str]
    key: str
    value_json: Any
    title: str
    content: str
    confidence: float
    importance: float
    tags: list[str]
    entities: list[str]
    expires_at: datetime | str | None
    source_message_ids: list[int]
    parent_id: int | None


class ExtractionOperation(TypedDict, total=False):
    """One proposal of an extraction batch; owner fields default to the batch's."""

    operation: Operation
    node: NodeIn
    target_id: int
    reason: str
    workspace_id: str
    user_id: str
    session_id: str
    explicit_user_intent: bool
    expected_version: int
    confirm: bool
    on_nonconforming: Literal["reject", "demote"]


class ValueFilter(TypedDict, total=False):
    """A filter on value_json: `path` a key, "a.b" or ["a", "b"]; `op` one of the server's operators."""

    path: str | list[str]
    op: str
    value: Any


class Budget(TypedDict, total=False):
    """What a context call asks for (it may ask for less than the policy allows, never more)."""

    enabled: bool
    top_n: int
    max_chars: int
    recent_messages: int
    min_confidence: float
    summary_enabled: bool
    l0_enabled: bool
    l1_enabled: bool
    l2_enabled: bool
    l3_enabled: bool
    l4_enabled: bool
    l5_enabled: bool
    l0_chars: int
    l1_chars: int
    l2_chars: int
    l3_chars: int
    l4_chars: int
    l5_chars: int
