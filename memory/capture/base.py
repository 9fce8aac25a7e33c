"""What extractors and summarizers read and return (R-EXTRACT).

An extractor turns a window of new messages (plus the memories already active for that
user, workspace and session) into an Extraction: proposals in exactly the shape of
`POST /api/v1/memory/propose` bodies (operation, node, explicit_user_intent, target_id,
reason, …; no owner fields — the job adds the session's). Every proposal then goes through
memory.services.proposals like an agent's, so nothing an extractor says is trusted as is.

A summarizer turns the previous summary and the new messages only (never the whole history)
into the next SummaryDraft of the chain.
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol


@dataclass(frozen=True)
class MessageView:
    """One message of the window, in server order (ids ascending)."""

    id: int
    role: str  # user | assistant | system | tool
    content: str
    created_at: datetime
    speaker: str = ""  # metadata speaker name when the conversation has one


@dataclass(frozen=True)
class NodeView:
    """An active memory the extractor may supersede or leave alone."""

    id: int
    scope: str
    type: str
    domain: str
    key: str
    value_json: Any
    title: str
    content: str
    category_path: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExtractionContext:
    messages: tuple[MessageView, ...]
    existing: tuple[NodeView, ...]
    workspace_id: str
    user_id: str
    session_id: str
    now: datetime


@dataclass
class Extraction:
    """The seed's MemoryExtraction: proposals (propose-endpoint bodies without owner fields),
    and `repeats`: (id of an active memory of the context, ids of the window's messages that
    say it again), which the job links to it as sources (memory.services.upsert.node_cite)."""

    operations: list[dict[str, Any]] = field(default_factory=list)
    extractor: str = ""
    notes: list[str] = field(default_factory=list)
    repeats: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)


class ExtractorError(Exception):
    """The extractor could not answer (endpoint down, bad JSON): the job retries later."""


class Extractor(Protocol):
    name: str

    def extract(self, context: ExtractionContext) -> Extraction: ...


@dataclass
class SummaryDraft:
    """The fields of memory.models.Summary a summarizer fills (lists hold short strings)."""

    summary: str
    current_goal: str = ""
    constraints: list[str] = field(default_factory=list)
    preferences: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    completed_work: list[str] = field(default_factory=list)
    pending_work: list[str] = field(default_factory=list)
    known_issues: list[str] = field(default_factory=list)


class Summarizer(Protocol):
    name: str

    def summarize(self, previous: SummaryDraft | None, messages: tuple[MessageView, ...], *,
                  max_chars: int) -> SummaryDraft: ...
