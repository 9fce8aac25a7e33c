"""Fitting summary text and lists into their limits (R-EXTRACT; memory.limits).

Shared by every summarizer, so a rule-based draft and a model's answer are clipped alike
before memory.services.summaries.summary_append validates them. Lengths are characters
(Unicode code points), Chinese and English alike.
"""

import re
from dataclasses import replace

from memory.capture.base import SummaryDraft
from memory.limits import SUMMARY_LIST_ITEM_MAX, SUMMARY_LIST_ITEMS_MAX, SUMMARY_TEXT_MAX

ELLIPSIS = "…"
LIST_FIELDS = ("constraints", "preferences", "decisions", "completed_work", "pending_work", "known_issues")

_SENTENCE_BREAK = re.compile(r"[。！？；!?;]|\.(?=\s)")
# A break after Chinese or closing punctuation anywhere, after an English full stop only
# before white space (so "3.5" and "e.g.x" stay whole), and at every line break.
_SENTENCE_SPLIT = re.compile(r"(?<=[。！？；!?;])\s*|(?<=\.)\s+|\s*\n+\s*")
_NOT_WORD = re.compile(r"[\W_]+")


def storable(text: str) -> str:
    """`text` without NUL and lone surrogates (which a model's JSON may carry), spaces collapsed."""
    text = "".join(ch for ch in text if ch != "\x00" and not "\ud800" <= ch <= "\udfff")
    return " ".join(text.split())


def sentences(text: str) -> list[str]:
    """The non-empty sentences of `text`, in order (Chinese and English punctuation)."""
    return [part.strip() for part in _SENTENCE_SPLIT.split(text) if part and part.strip()]


def clip(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: whole when it fits, else its whole sentences when
    they fill at least half the limit, else cut at a word break in its second half (or
    anywhere) and marked with "…"."""
    text = text.strip()
    if len(text) <= limit:
        return text
    if limit <= 1:
        return text[:max(limit, 0)]
    sentence_end = max((m.end() for m in _SENTENCE_BREAK.finditer(text, 0, limit + 1) if m.end() <= limit), default=0)
    if sentence_end >= limit // 2:
        return text[:sentence_end]
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        return cut[:space].rstrip() + ELLIPSIS
    return cut.rstrip() + ELLIPSIS


def item_key(item: str) -> str:
    """What makes two list items the same: letters and digits, case-folded."""
    return _NOT_WORD.sub("", item.casefold())


def merge_items(*groups: list[str], max_items: int = SUMMARY_LIST_ITEMS_MAX,
                max_chars: int = SUMMARY_LIST_ITEM_MAX) -> list[str]:
    """The items of `groups`, oldest first, each clipped to `max_chars`, deduplicated (a repeat
    moves to its newest position) and cut to the newest `max_items`."""
    merged: dict[str, str] = {}
    for group in groups:
        for raw in group:
            item = clip(storable(raw), max_chars)
            key = item_key(item)
            if not key:
                continue
            merged.pop(key, None)
            merged[key] = item
    items = list(merged.values())
    return items[-max_items:] if max_items > 0 else []


def text_budget(max_chars: int) -> int:
    """The characters a summary's text may use: `max_chars`, never past SUMMARY_TEXT_MAX.
    Raises ValueError for a budget below one character (a summary is never empty)."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1 (got {max_chars})")
    return min(max_chars, SUMMARY_TEXT_MAX)


def draft_fit(draft: SummaryDraft, *, max_chars: int) -> SummaryDraft:
    """`draft` within every limit summary_append checks: text ≤ min(max_chars,
    SUMMARY_TEXT_MAX), current goal ≤ SUMMARY_LIST_ITEM_MAX, each list ≤
    SUMMARY_LIST_ITEMS_MAX items of ≤ SUMMARY_LIST_ITEM_MAX characters, no NUL or lone
    surrogate. A draft already within them comes back unchanged but for white space."""
    budget = text_budget(max_chars)
    summary = "\n".join(storable_lines(draft.summary))
    return replace(
        draft,
        summary=clip(summary, budget),
        current_goal=clip(storable(draft.current_goal), SUMMARY_LIST_ITEM_MAX),
        **{name: merge_items(getattr(draft, name)) for name in LIST_FIELDS},
    )


def storable_lines(text: str) -> list[str]:
    """The non-empty lines of `text`, each made storable."""
    return [line for line in (storable(part) for part in text.splitlines()) if line]
