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
_LABEL = re.compile(r"^[^:：\n]{1,40}(?:: |：)")  # 用户: / Assistant: / Alice: (memory.capture.summarize)
_NOT_WORD = re.compile(r"[\W_]+")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# Letters and digits a sentence needs before it counts as quoted from a forgotten turn: four
# Chinese characters, or twelve others ("Sure thing." is in many turns and says nothing).
QUOTED_MIN_CJK, QUOTED_MIN = 4, 12


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
    """Whether a summary's `sentence` (or list item) says none of `words` and is no quote of one
    of `turns` (the forgotten turns, as _said reads them), with or without a speaker's label
    before it ("Alice: I am allergic to peanuts")."""
    if quotes(sentence, words):
        return False
    said = _said(_LABEL.sub("", sentence.strip()))
    if len(said) >= (QUOTED_MIN_CJK if _CJK.search(said) else QUOTED_MIN):
        return not any(said in turn for turn in turns)
    return True


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
        if head and quotes(head, words):
            continue  # a heading that says it (花生过敏：吃了会休克。) goes with its line
        kept = "".join(part for part in _sentences(body) if part.strip() and _keeps(part, words, turns))
        if kept.strip():
            lines.append(head + (kept.lstrip() if head else kept))
        elif not body.strip():
            lines.append(line)
    return "\n".join(lines).strip() or FORGOTTEN


def _one_character_words(node: Node) -> list[str]:
    """A memory's one-character Chinese values and entities (葱, 蒜, 虾), which audit.node_words
    leaves out (a reason saying 虾 rarely quotes the memory; a summary's 忌口：葱 does)."""
    value = node.value_json
    values = [value] if isinstance(value, str) else [item for item in value if isinstance(item, str)] if isinstance(
        value, list) else []
    return sorted({text.strip() for text in [*values, *node.entities] if len(text.strip()) == 1
                   and _CJK.match(text.strip())})


def summary_says_nothing(summary: Summary) -> bool:
    """Whether strip_summaries left `summary` with nothing to say (its text only "[forgotten]",
    no goal, no list item): the block shows no such summary."""
    return (summary.summary == FORGOTTEN and not summary.current_goal
            and not any(getattr(summary, name) for name in LIST_FIELDS))


def strip_summaries(*, principal: Principal, node: Node, words: list[str]) -> int:
    """Take what `node` said out of the summaries of the conversations it was taken from (the
    sessions of its source messages, and its own): every sentence of the text and every list
    item that says one of `words` (memory.services.audit.node_words) or quotes a turn it was
    taken from (or the answer to one). A text left with nothing becomes "[forgotten]" (a summary
    is never empty). Call before the node's source links are deleted; returns how many
    summaries changed."""
    said = Message.objects.filter(team=principal.team, pk__in=_said_by(principal, node)).values_list(
        "session_id", "content")
    words = [*words, *_one_character_words(node)]
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
