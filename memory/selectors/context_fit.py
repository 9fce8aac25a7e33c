"""Fitting the context block within its budget (R-CTX): which candidate items go in, in what
order, and which limit left each of the others out (memory.selectors.context renders and records
what this chooses; see its module doc for the layout).
"""

from dataclasses import dataclass, replace

from memory import limits
from memory.models import NodeType
from memory.search.text import normalize
from memory.selectors.budget import Budget
from memory.selectors.context_items import LAYERS, SECTION_SHARES, Item, RenderedSize, excerpt, one_line

__all__ = ["LIMITS", "SAME_TEXT", "Dropped", "fit_with_summary", "limit_value"]


@dataclass(frozen=True)
class Dropped:
    """An item the budget left out and the limit that left it out: "max_chars", or a layer's
    cap "l0_chars" … "l5_chars". Older recent messages go with the newer one that did not fit
    (the window stays contiguous), a follow-up with its message."""

    item: Item
    limit: str  # or SAME_TEXT: a memory whose line a placed memory's line already says


SAME_TEXT = "same_text"
SUMMARY_EXCERPT_MIN = 80  # characters of a summary cut to the room left; less is left out
# The newest turns of the conversation that the second pass places before what the shares held
# back of the query's hits (SPEC R-CTX: recent messages 3–8): a review's "thanks, talk soon"
# filled L5 with five earlier turns matching "thank" and "talk" and kept one recent turn of six.
RECENT_FIRST = 3

LIMITS = ("max_chars", *(f"{layer.lower()}_chars" for layer in LAYERS))  # the order of their warnings


def limit_value(budget: Budget, limit: str) -> int | None:
    """The value in `budget` of a Dropped.limit ("max_chars", "l0_chars" … "l5_chars")."""
    return budget.max_chars if limit == "max_chars" else budget.layer_chars(limit[:2].upper())


def _critical(item: Item) -> bool:
    """A constraint the user must not be without (an allergy; importance ≥
    limits.CRITICAL_IMPORTANCE)."""
    return (item.kind == "node" and item.obj.type == NodeType.CONSTRAINT
            and item.obj.importance >= limits.CRITICAL_IMPORTANCE)


def _first(item: Item) -> bool:
    """What goes in before the shares: critical constraints, then the pinned instructions (L0)."""
    return _critical(item) or item.section == "instructions"


def _share(item: Item) -> str:
    return "L5" if item.layer == "L5" else item.section


def _fit(candidates: list[Item], max_chars: int, layer_caps: dict[str, int] | None = None) -> tuple[list[Item], list[Dropped]]:
    """Fill the block in two passes over the candidates (in fill priority order), after the
    critical constraints and then the pinned instructions (_first), which go in first.

    First pass: each section may take at most its SECTION_SHARES of max_chars (item text plus
    its line break), so that no layer crowds out the others — in particular the query's
    relevant memories are not pushed out by many standing ones. Second pass: what the shares
    held back goes in, in the same order but for the RECENT_FIRST newest turns, which go
    before the L5 hits, while the whole rendered block still fits. An item
    goes in whole or not at all. Recent messages stay a contiguous window: once one does not
    fit, no older one is placed. A follow-up goes in only beneath its message (held back with
    it). `layer_caps` (the policy's l0_chars … l5_chars) bound the characters of a layer's
    items in both passes. A memory whose line says what a placed memory's line says (the same
    up to case, width and script: memory.search.text.normalize) is not placed: dropped with
    SAME_TEXT. The copy placed is the first that fits, in the order above, so a critical
    constraint is kept over its low-importance twin (two keys holding 喜欢清淡 put the line twice;
    deciding before the fit lost an allergy whose twin's layer was then switched off). Returns
    (chosen, dropped), each dropped item with the limit that left it out (Dropped).
    """
    layer_caps = layer_caps or {}
    layer_used: dict[str, int] = {}
    chosen: list[Item] = []
    size = RenderedSize()  # len(render(chosen)), kept as items come and go
    held_back: list[Item] = []
    dropped: list[Dropped] = []
    used: dict[str, int] = {}
    message_limits: dict[int, str] = {}  # a dropped message's limit, which its follow-up shares
    said: set[str] = set()  # the placed memories' lines, normalised

    def try_add(item: Item) -> str | None:
        """None when `item` went in, else the limit that kept it out (or SAME_TEXT)."""
        if item.after is not None and not any(hit.kind == "message" and hit.obj.pk == item.after for hit in chosen):
            return message_limits.get(item.after, "max_chars")  # a follow-up is shown only beneath its message
        line = normalize(item.text) if item.kind == "node" else ""
        if line in said:
            return SAME_TEXT
        cap = layer_caps.get(item.layer)
        if cap is not None and layer_used.get(item.layer, 0) + len(item.text) > cap:
            return f"{item.layer.lower()}_chars"
        chosen.append(item)
        size.add(item)
        if size.chars <= max_chars:
            layer_used[item.layer] = layer_used.get(item.layer, 0) + len(item.text)
            if line:
                said.add(line)
            return None
        chosen.pop()
        size.remove(item)
        return "max_chars"

    def drop(item: Item, limit: str) -> None:
        dropped.append(Dropped(item, limit))
        if item.kind == "message":
            message_limits[item.obj.pk] = limit

    window_limit: str | None = None  # the limit that closed the recent window
    # A constraint the user must not be without, then the pinned instructions, go in first,
    # whatever their section's share: under a budget of 60 characters a newcomer's block held a
    # session note and left the anaphylaxis out; under 300 a review's left a 75-character
    # instruction out (its share was 75) while other layers filled 297. The constraint comes
    # before the instructions: a long instruction must not take its room. The shares divide what
    # the instructions leave.
    for item in [item for item in candidates if _critical(item)] + [
            item for item in candidates if not _critical(item) and _first(item)]:
        if (limit := try_add(item)) is not None:
            drop(item, limit)
        elif _critical(item):
            used[_share(item)] = used.get(_share(item), 0) + len(item.text) + 1
    room = max_chars - sum(len(item.text) + 1 for item in chosen if not _critical(item))
    for item in candidates:
        if _first(item):
            continue
        share = _share(item)
        cost = len(item.text) + 1
        if item.section == "recent_messages" and (window_limit or held_back and held_back[-1].section == share):
            held_back.append(item)
        elif used.get(share, 0) + cost > SECTION_SHARES[share] * room or (
                item.after is not None and any(held.kind == "message" and held.obj.pk == item.after for held in held_back)):
            held_back.append(item)
        elif (limit := try_add(item)) is None:
            used[share] = used.get(share, 0) + cost
        else:
            if item.section == "recent_messages":
                window_limit = limit
            drop(item, limit)

    def summary_excerpt(item: Item) -> Item | None:
        """The summary cut to the room left, if that is at least SUMMARY_EXCERPT_MIN characters."""
        probe = replace(item, text="")
        size.add(probe)
        room = max_chars - size.chars
        size.remove(probe)
        cap = layer_caps.get(item.layer)
        if cap is not None:
            room = min(room, cap - layer_used.get(item.layer, 0))
        return replace(item, text=excerpt(item.text, room)) if room >= SUMMARY_EXCERPT_MIN else None

    # A summary held back by its share goes in after the other items held back, whole or cut to
    # what they left: a rule summary of a long talk (1,499 characters) never fitted a block of
    # 1,200 and was left out every call, and put in at its rank it pushed out recent messages.
    summary = next((item for item in held_back if item.section == "summary"), None)
    window = [item for item in candidates if item.section == "recent_messages"]  # newest first
    newest = {id(item) for item in window[:RECENT_FIRST]}
    turns = [item for item in held_back if id(item) in newest]
    rest = [item for item in held_back if item is not summary and id(item) not in newest]
    hits = next((index for index, item in enumerate(rest) if item.layer == "L5"), len(rest))
    for item in rest[:hits] + turns + rest[hits:] + ([summary] if summary else []):
        if item.section == "recent_messages" and window_limit:
            drop(item, window_limit)
        elif (limit := try_add(item)) is not None:
            if item is summary and (cut := summary_excerpt(item)) is not None and try_add(cut) is None:
                continue
            drop(item, limit)
            if item.section == "recent_messages":
                window_limit = limit
    return chosen, dropped


def fit_with_summary(candidates: list[Item], max_chars: int, layer_caps: dict[str, int],
                      covers: int) -> tuple[list[Item], list[Dropped], bool]:
    """_fit, leaving out the conversation summary when the block shows without it, whole and
    word for word (no excerpt), every message the summary covers (`covers` of them: all of its
    session's messages up to its last one but the system messages, which no block shows). A
    short conversation's summary otherwise repeats the recent window and the earlier messages
    beside it and takes their room. Returns
    (chosen, dropped, whether the summary was left out for that)."""
    summary = next((item for item in candidates if item.section == "summary"), None)
    if summary is not None and covers > 0:
        chosen, dropped = _fit([item for item in candidates if item is not summary], max_chars, layer_caps)
        last, session_id = summary.obj.to_message_id, summary.obj.session_id
        shown = {item.obj.pk for item in chosen  # whole: not an excerpt cut with "…"
                 if item.kind == "message" and item.obj.session_id == session_id and item.obj.pk <= last
                 and item.text.endswith(one_line(item.obj.content))}
        if len(shown) == covers:
            return chosen, dropped, True
    chosen, dropped = _fit(candidates, max_chars, layer_caps)
    return chosen, dropped, False
