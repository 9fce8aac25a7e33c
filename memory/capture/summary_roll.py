"""Rolling a session's summary chain one link forward (R-EXTRACT, R-STORE; seed 000 链式摘要).

What the capture job calls after a turn: read the latest summary and the messages after
it, let a summarizer write the next summary from those alone, and append it through
memory.services.summaries.summary_append, which links it to its parent, checks the range
(no gap, no overlap) and audits it.
"""

from accounts.principal import Principal
from memory.capture.base import MessageView, Summarizer, SummaryDraft
from memory.capture.summary_fit import LIST_FIELDS, draft_fit
from memory.errors import InvalidInput, NotFound
from memory.models import Message, MessageRole, Session, Summary
from memory.services.forgotten_turns import hidden_among, summary_says_nothing
from memory.services.sessions import SessionRef
from memory.services.summaries import SummaryInput, summary_append

ROLL_MESSAGES_MAX = 200  # messages one roll reads; the rest wait for the next roll


def summary_draft_of(summary: Summary) -> SummaryDraft:
    """A stored summary as the SummaryDraft a summarizer reads (a text a forget left with
    nothing, "[forgotten]", is read as no text: the next link does not carry the marker)."""
    return SummaryDraft(
        summary="" if summary_says_nothing(summary) else summary.summary,
        current_goal=summary.current_goal,
        **{name: list(getattr(summary, name) or []) for name in LIST_FIELDS},
    )


def message_view_of(message: Message) -> MessageView:
    """A stored message as a summarizer sees it; `speaker` comes from metadata["speaker"]."""
    speaker = (message.metadata or {}).get("speaker", "")
    return MessageView(
        id=message.pk,
        role=message.role,
        content=message.content,
        created_at=message.created_at,
        speaker=speaker if isinstance(speaker, str) else "",
    )


ROLL_ATTEMPTS = 3  # drafts one roll makes when forgets change what the summarizer read meanwhile


def _forgotten_meanwhile(team, window: list[Message], latest: Summary | None, previous: SummaryDraft | None) -> bool:
    """Whether a forget changed what the summarizer read while it ran: hid a turn of the window,
    or stripped the previous summary (which the draft would carry on)."""
    if hidden_among(team, [message.pk for message in window]):
        return True
    if latest is None:
        return False
    now = Summary.objects.filter(team=team, pk=latest.pk).first()
    return now is None or summary_draft_of(now) != previous


def summary_roll(*, principal: Principal, session: Session, summarizer: Summarizer, max_chars: int,
                 max_messages: int = ROLL_MESSAGES_MAX) -> Summary | None:
    """Append the session's next summary, covering the messages after the latest summary's
    `to_message` (ids ascending, at most `max_messages` that are not system messages; the
    rest are left for the next roll). System messages are covered by the range but never
    given to the summarizer, so none of their text enters a summary (R-CTX: the block never
    shows them); a window of system messages alone appends nothing. Turns a forgotten memory
    was taken from (Message.memory_forgotten_at) are left out the same way: the next summary
    does not bring back what a forget took out of the earlier ones.

    The summarizer gets the previous summary (None for the first link) and those messages
    only; its draft is fitted to the limits (text ≤ min(max_chars, SUMMARY_TEXT_MAX)
    characters) and appended with explicit from/to ids, so the chain stays linked and
    gap-free and the append is audited as `memory.summary.appended`.

    Returns the new Summary, or None when there is nothing new, the session was forgotten,
    or a concurrent roll appended first (what it left over waits for the next roll). When a
    forget hides a turn of the window or strips the previous summary while the summarizer reads
    them (the draft would say what was forgotten), the roll reads them again and drafts anew, up
    to ROLL_ATTEMPTS times (then None: the next roll tries again). Raises
    what the summarizer raises (ExtractorError: retry later), ValueError for max_chars < 1
    or max_messages < 1, NotFound for another team's session, and AccessDenied (a key
    limited to other workspaces) from summary_append.
    """
    if max_messages < 1:
        raise ValueError(f"max_messages must be at least 1 (got {max_messages})")
    if session.team_id != principal.team.pk:
        raise NotFound("no such session in this team")
    if session.deleted_at is not None:
        return None
    for _ in range(ROLL_ATTEMPTS):
        latest = Summary.objects.filter(team=principal.team, session=session).order_by("-pk").first()
        messages = Message.objects.filter(team=principal.team, session=session)
        if latest is not None:
            messages = messages.filter(pk__gt=latest.to_message_id)
        # The agent's own instructions stay out of the text (they may hold what must never reach
        # a prompt again, and the block never shows them), and so do turns a forgotten memory was
        # taken from (memory.services.forgotten_turns); the range still covers them.
        window = list(messages.exclude(role=MessageRole.SYSTEM).filter(memory_forgotten_at__isnull=True)
                      .order_by("pk")[:max_messages])
        if not window:
            return None
        first = messages.order_by("pk").values_list("pk", flat=True).first()
        previous = summary_draft_of(latest) if latest is not None else None
        draft = summarizer.summarize(previous, tuple(message_view_of(message) for message in window),
                                     max_chars=max_chars)
        draft = draft_fit(draft, max_chars=max_chars)
        if not _forgotten_meanwhile(principal.team, window, latest, previous):
            break
    else:
        return None  # forgets kept changing what it read; the next roll reads it again
    data = SummaryInput(
        session=SessionRef(session_id=session.external_id, workspace_id=session.workspace_id,
                           user_id=session.user_id),
        summary=draft.summary,
        from_message_id=first,
        to_message_id=window[-1].pk,
        current_goal=draft.current_goal,
        lists={name: getattr(draft, name) for name in LIST_FIELDS},
    )
    try:
        return summary_append(principal=principal, data=data)
    except InvalidInput:
        newest = Summary.objects.filter(team=principal.team, session=session).order_by("-pk").first()
        if newest is not None and newest.pk != (latest.pk if latest is not None else None):
            return None  # another roll extended the chain first; ours would overlap it
        raise
