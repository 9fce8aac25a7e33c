"""Turns that say what was forgotten (R-STORE provable forgetting, R-CTX): when a memory is
forgotten, the messages it was taken from — and the assistant's answer right after each — are
no longer recalled as earlier messages (Message.memory_forgotten_at; memory.selectors.messages
skips them); a restore recalls again what its own forget hid. The summaries of those
conversations lose the sentences and list items that say it (strip_summaries; a restore does
not bring them back: a summary is a digest, the next one is built from the turns). Called
inside the forget's or the restore's transaction (memory.services.nodes.node_delete,
memory.services.forgetting)."""

import re
from datetime import datetime

from django.db.models import OuterRef, Subquery

from accounts.principal import Principal
from memory.capture.summary_fit import LIST_FIELDS
from memory.models import Message, MessageRole, Node, NodeSource, NodeStatus, Summary
from memory.search.text import normalize
from memory.services.audit import FORGOTTEN, quotes

# Where a summary line's sentences end: after Chinese or closing marks, after a full stop only
# before a space (3.5 stays whole), as memory.capture.summary_fit cuts them.
_SENTENCE_END = re.compile(r"[。！？；!?;]+|\.(?=\s)")
_LABEL = re.compile(r"^[^:：\n]{1,40}(?:: |：)")  # 用户: / Assistant: (memory.capture.summarize)
_NOT_WORD = re.compile(r"[\W_]+")
QUOTED_MIN = 4  # letters and digits a sentence needs before it counts as quoted from a turn


def _said_by(principal: Principal, node: Node) -> list[int]:
    """The messages `node` was taken from, and the assistant's answer right after each (an answer
    "好的，已经记下：你对花生过敏" says it again)."""
    sources = list(NodeSource.objects.filter(node=node).values_list("message_id", flat=True))
    following = Message.objects.filter(team=principal.team, session_id=OuterRef("session_id"),
                                       pk__gt=OuterRef("pk")).order_by("pk")
    replies = (Message.objects.filter(team=principal.team, pk__in=sources)
               .annotate(next_id=Subquery(following.values("pk")[:1]), next_role=Subquery(following.values("role")[:1]))
               .filter(next_role=MessageRole.ASSISTANT).values_list("next_id", flat=True))  # one statement
    return [*sources, *replies]


def hide_turns(*, principal: Principal, node: Node, now: datetime) -> int:
    """Mark the messages `node` was taken from, and the answers to them (_said_by), as no longer
    recalled, at `now` (the forget's time: a restore unmarks only what this forget marked);
    returns how many."""
    return Message.objects.filter(team=principal.team, pk__in=_said_by(principal, node),
                                  memory_forgotten_at__isnull=True).update(memory_forgotten_at=now)


def recall_turns(*, principal: Principal, node: Node, forgotten_at: datetime) -> int:
    """After `node`, soft-forgotten at `forgotten_at`, is restored: the messages that forget
    marked are recalled again, but not those another forgotten node was also taken from, nor
    those an earlier forget marked (a hard forget leaves no link to tell). Returns how many."""
    said = _said_by(principal, node)
    others = NodeSource.objects.filter(message_id__in=said, node__status=NodeStatus.DELETED).exclude(node=node)
    return Message.objects.filter(team=principal.team, pk__in=said, memory_forgotten_at__gte=forgotten_at).exclude(
        pk__in=others.values("message_id")).update(memory_forgotten_at=None)


def _said(text: str) -> str:
    return _NOT_WORD.sub("", normalize(text))


def _keeps(sentence: str, words: list[str], turns: list[str]) -> bool:
    """Whether a summary's `sentence` says none of `words` (audit.node_words) and is no quote of
    one of `turns` (the forgotten turns, as _said reads them)."""
    said = _said(sentence)
    if len(said) >= QUOTED_MIN and any(said in turn for turn in turns):
        return False
    return not quotes(sentence, words)


def _sentences(line: str) -> list[str]:
    """The sentences of `line`, each with its end mark and the spaces before it: joined, they
    are `line` again."""
    cuts = [0, *(match.end() for match in _SENTENCE_END.finditer(line)), len(line)]
    return [line[start:end] for start, end in zip(cuts, cuts[1:], strict=False) if end > start]


def _stripped_text(text: str, words: list[str], turns: list[str]) -> str:
    lines = []
    for line in text.split("\n"):
        label = _LABEL.match(line)
        head, body = (line[: label.end()], line[label.end():]) if label else ("", line)
        kept = "".join(part for part in _sentences(body) if part.strip() and _keeps(part, words, turns))
        if kept.strip():
            lines.append(head + (kept.lstrip() if head else kept))
        elif not body.strip():
            lines.append(line)
    return "\n".join(lines).strip() or FORGOTTEN


def strip_summaries(*, principal: Principal, node: Node, words: list[str]) -> int:
    """Take what `node` said out of the summaries of the conversations it was taken from (the
    sessions of its source messages, and its own): every sentence of the text and every list
    item that says one of `words` (memory.services.audit.node_words) or quotes a turn it was
    taken from (or the answer to one). A text left with nothing becomes "[forgotten]" (a summary
    is never empty). Call before the node's source links are deleted; returns how many
    summaries changed."""
    said = Message.objects.filter(team=principal.team, pk__in=_said_by(principal, node)).values_list(
        "session_id", "content")
    sessions = {session_id for session_id, _ in said} | ({node.session_id} if node.session_id else set())
    turns = [_said(content) for _, content in said]
    if not sessions or not (words or turns):
        return 0
    changed = 0
    for summary in Summary.objects.filter(team=principal.team, session_id__in=sessions).select_for_update():
        fields = []
        text = _stripped_text(summary.summary, words, turns)
        if text != summary.summary:
            summary.summary = text
            fields.append("summary")
        if summary.current_goal and not _keeps(summary.current_goal, words, turns):
            summary.current_goal = ""
            fields.append("current_goal")
        for name in LIST_FIELDS:
            items = getattr(summary, name) or []
            kept = [item for item in items if not isinstance(item, str) or _keeps(item, words, turns)]
            if kept != items:
                setattr(summary, name, kept)
                fields.append(name)
        if fields:
            summary.save(update_fields=fields)
            changed += 1
    return changed
