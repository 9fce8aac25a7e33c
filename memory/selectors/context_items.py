"""The items of a memory context and how they render (R-CTX): sections in display order with
the layer each belongs to, one line per item, Chinese and English counted alike by characters."""

import json
import re
from dataclasses import dataclass
from datetime import UTC, tzinfo
from typing import Any

from memory.models import Message, Node, speaker_name
from memory.search.text import index_tokens, normalize
from memory.search.when import local_date

MESSAGE_EXCERPT_CHARS = 160
FOLLOWUP_EXCERPT_CHARS = 100  # the turn after an earlier message that matched, shown beneath it

SECTIONS = {  # display order
    "instructions": ("L0", "[Instructions]"),
    "workspace": ("L1", "[Workspace and team memory]"),
    "user_preferences": ("L2", "[User preferences]"),
    "profile": ("L2", "[User profile]"),
    "corrections": ("L2", "[Recent corrections]"),
    "summary": ("L3", "[Conversation summary]"),
    "recent_messages": ("L3", "[Recent messages]"),
    "session": ("L4", "[This session]"),
    "working": ("L4", "[Working memory]"),
    "relevant": ("L5", "[Relevant memories]"),
    "earlier_messages": ("L5", "[Earlier messages]"),
}
LAYERS = ("L0", "L1", "L2", "L3", "L4", "L5")
# Share of max_chars each section may fill before every section has had its turn (see _fit).
SECTION_SHARES = {
    "instructions": 0.25,
    "session": 0.25,
    "working": 0.2,
    "workspace": 0.2,
    "user_preferences": 0.2,
    "profile": 0.15,
    "corrections": 0.1,
    "L5": 0.35,  # relevant memories and earlier messages together
    "summary": 0.3,
    "recent_messages": 0.15,
}


@dataclass
class Item:
    section: str
    kind: str  # node | message | summary
    obj: Any
    text: str
    why: str
    matched: tuple[str, ...] = ()
    after: int | None = None  # a follow-up: the id of the message it follows (shown only beneath it)

    @property
    def layer(self) -> str:
        return SECTIONS[self.section][0]

    @property
    def ref(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "layer": self.layer,
            "kind": self.kind,
            "id": self.obj.pk,
            "why": self.why,
            "matched": list(self.matched),
            "chars": len(self.text),
        }


def one_line(text: str) -> str:
    return " ".join(text.split())


def excerpt(text: str, limit: int = MESSAGE_EXCERPT_CHARS) -> str:
    line = one_line(text)
    return line if len(line) <= limit else line[: limit - 1] + "…"


_SENTENCE_END = re.compile(r"(?<=[.!?;。！？；…])\s*")


def sentences(line: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences of a one-line text, each with its closing
    punctuation and without the space after it."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(line):
        if match.start() > start:
            spans.append((start, match.start()))
        start = match.end()
    if start < len(line):
        spans.append((start, len(line)))
    return spans


def focused_excerpt(text: str, matched: tuple[str, ...], limit: int = MESSAGE_EXCERPT_CHARS) -> str:
    """At most `limit` characters of `text` on one line, chosen around what the query matched:
    the sentence holding the most of the `matched` tokens (the earliest on a tie), then the
    sentences after it and before it while they fit; a sentence too long to fit (or text
    without sentence marks) is cut around the first match in it. "…" marks text left out
    at either end. With nothing matched, or a text that fits, the same as `excerpt`."""
    line = one_line(text)
    if len(line) <= limit or not matched:
        return excerpt(line, limit)
    wanted = set(matched)
    folded = line.casefold()
    spans = sentences(line)
    # Only a sentence that holds a matched token as a substring can hold it as a token: the
    # cheap test spares tokenising every sentence of a long text.
    hits = [len(wanted.intersection(index_tokens(line[start:end])))
            if any(token in folded[start:end] for token in wanted) else 0 for start, end in spans]
    best = max(range(len(spans)), key=lambda index: (hits[index], -index))
    if hits[best] == 0:
        return excerpt(line, limit)
    room = limit - 2  # the two ellipses
    start, end = spans[best]
    if end - start > room:
        first = min((folded.find(token, start, end) for token in wanted if folded.find(token, start, end) >= 0),
                    default=start)
        start = max(start, min(first - room // 3, end - room))
        if start == 0:
            return excerpt(line, limit)
        body = line[start : start + room]
        return ("…" if start else "") + body + ("…" if start + room < len(line) else "")
    if best == 0:
        return excerpt(line, limit)
    first = last = best
    while last + 1 < len(spans) and spans[last + 1][1] - spans[first][0] <= room:
        last += 1
    while first > 0 and spans[last][1] - spans[first - 1][0] <= room:
        first -= 1
    start, end = spans[first][0], spans[last][1]
    return ("…" if start else "") + line[start:end] + ("…" if end < len(line) else "")


def node_line(node: Node) -> str:
    """`- title: content`, or just the one that says it all (the content when it already
    contains the title, the title when there is no content)."""
    title, content = one_line(node.title), one_line(node.content)
    if not content or content == title:
        return f"- {title}"
    if normalize(title) in normalize(content):
        return f"- {content}"
    return f"- {title}: {content}"


def node_item(section: str, node: Node, why: str, matched: tuple[str, ...] = ()) -> Item:
    return Item(section, "node", node, node_line(node), why, matched)


def speaker(message: Message) -> str:
    """`role`, or `role (name)` when the agent gave the speaker's name in metadata (speaker or name)."""
    name = speaker_name(message.metadata)
    return f"{message.role} ({one_line(name)})" if name else message.role


def message_item(section: str, message: Message, why: str, matched: tuple[str, ...] = (), zone: tzinfo = UTC) -> Item:
    """A message as a line of `section`; an earlier message is dated, by its date in `zone`."""
    text = f"{speaker(message)}: {focused_excerpt(message.content, matched)}"
    if section == "earlier_messages":
        when = local_date(message.occurred_at or message.created_at, zone).isoformat()
        text = f"- [{when}] {text}"
    return Item(section, "message", message, text, why, matched)


def followup_item(message: Message, hit_id: int) -> Item:
    """The turn after an earlier message that matched, indented beneath it: `  ↳ role: text`."""
    text = f"  ↳ {speaker(message)}: {excerpt(message.content, FOLLOWUP_EXCERPT_CHARS)}"
    return Item("earlier_messages", "message", message, text, "followup", after=hit_id)


def render(items: list[Item]) -> str:
    """The text block for `items`: sections in display order, recent messages oldest first,
    a follow-up right beneath the message it follows."""
    blocks = []
    for section, (_, header) in SECTIONS.items():
        lines = [item for item in items if item.section == section and item.after is None]
        if not lines:
            continue
        if section == "recent_messages":
            lines.sort(key=lambda item: item.obj.pk)
        followups = {item.after: item for item in items if item.section == section and item.after is not None}
        lines = [line for item in lines for line in (item, followups.get(item.obj.pk)) if line is not None]
        blocks.append(header + "\n" + "\n".join(item.text for item in lines))
    return "\n\n".join(blocks)


class RenderedSize:
    """The length of render(items) as items are added and removed, without rendering: a
    section with n lines of t characters in all renders as its header, a line break and
    t + n - 1 characters; sections are joined by blank lines (two characters). Every item
    counts as one line — a follow-up is only ever added beneath its message."""

    def __init__(self) -> None:
        self._lines: dict[str, int] = {}
        self._chars: dict[str, int] = {}

    def add(self, item: Item, sign: int = 1) -> None:
        self._lines[item.section] = self._lines.get(item.section, 0) + sign
        self._chars[item.section] = self._chars.get(item.section, 0) + sign * len(item.text)

    def remove(self, item: Item) -> None:
        self.add(item, -1)

    @property
    def chars(self) -> int:
        shown = [section for section, lines in self._lines.items() if lines > 0]
        return (sum(len(SECTIONS[section][1]) + self._chars[section] + self._lines[section] for section in shown)
                + 2 * max(0, len(shown) - 1))


def correction_item(node: Node) -> Item:
    """A recent correction as a hint (seed 004 procedural memory): what holds now, marked as
    having replaced an earlier memory. The replaced value itself is never shown (S03: the
    block never carries both values)."""
    return Item("corrections", "node", node, f"- {one_line(node.title)} (replaces an earlier memory)",
                "recent_correction")


def profile_item(version: Any) -> Item:
    """The user's profile document, by its summary (seed 004 L2 长期用户记忆)."""
    return Item("profile", "profile", version, one_line(version.summary), "user_profile")


@dataclass(frozen=True)
class WorkingMemoryRef:
    """What a working-memory line points at: the session (its working memory is one per session)."""

    pk: int


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def working_items(session_pk: int, memory: dict[str, Any]) -> list[Item]:
    """The session's working memory (seed 004 L4: goal, resolved references, clarification
    slots, scratchpad), one line per part so the budget can keep the goal and drop the
    scratchpad. An open slot (null) reads as still to ask."""
    ref = WorkingMemoryRef(session_pk)
    lines = []
    if memory.get("current_goal"):
        lines.append(f"- goal: {one_line(memory['current_goal'])}")
    if memory.get("references"):
        pairs = "; ".join(f"{key} = {_json_text(value)}" for key, value in memory["references"].items())
        lines.append(f"- references: {one_line(pairs)}")
    slots = memory.get("slots") or {}
    filled = "; ".join(f"{key} = {_json_text(value)}" for key, value in slots.items() if value is not None)
    open_slots = ", ".join(key for key, value in slots.items() if value is None)
    if filled:
        lines.append(f"- known: {one_line(filled)}")
    if open_slots:
        lines.append(f"- still to ask: {one_line(open_slots)}")
    if memory.get("scratchpad"):
        lines.append(f"- notes: {one_line(memory['scratchpad'])}")
    return [Item("working", "working", ref, line, "working_memory") for line in lines]


def instructions_items(rows: list[Any]) -> list[Item]:
    """L0: the team's pinned instructions, then the workspace's (seed 004 L0 基础层)."""
    return [Item("instructions", "instructions", row, one_line(row.text), "pinned_instructions") for row in rows]
