"""Turns that say what was forgotten (R-STORE provable forgetting, R-CTX): when a memory is
forgotten, the messages it was taken from and the assistant's answer right after each are no
longer recalled as earlier messages nor read again by capture and the summary roll
(Message.memory_forgotten_at; memory.selectors.messages, memory.capture). A soft forget marks
them with its time, and a restore recalls them again, unless another forgotten memory hides
them too; a hard forget marks them for good (HIDDEN_FOR_GOOD, before any forget's
time, so no restore clears it). The summaries of those conversations lose the sentences and
list items that say it (_strip_summaries; a restore does not bring them back: a summary is a
digest, the next one is built from the turns). Turns that state it again are found by meaning
and hidden with them (memory.services.forgotten_repeats); a turn that merely holds one of its
words (上海, 小红) is not. Called inside the forget's or the restore's transaction (memory.services.nodes.node_delete,
memory.services.forgetting)."""

import re
from datetime import datetime

from django.db.models import OuterRef, Subquery

from accounts.principal import Principal
from memory.capture.summary_fit import LIST_FIELDS
from memory.models import HIDDEN_FOR_GOOD, Message, MessageRole, Node, NodeSource, NodeStatus, Summary
from memory.search.text import normalize
from memory.services.audit import FORGOTTEN, quotes, value_strings
from memory.services.forgotten_repeats import cite_repeats

# Where a summary line's sentences end: after Chinese or closing marks, after a full stop only
# before a space (3.5 stays whole), as memory.capture.summary_fit cuts them.
_SENTENCE_END = re.compile(r"[。！？；!?;]+|\.(?=\s)")
_LABEL = re.compile(r"^[^:：\n]{1,40}(?:: |：)")  # 用户: / Assistant: / Alice: (memory.capture.summarize)
_NOT_WORD = re.compile(r"[\W_]+")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# Letters and digits a sentence needs before it counts as quoted from a forgotten turn: four
# Chinese characters, or twelve others ("Sure thing." is in many turns and says nothing).
QUOTED_MIN_CJK, QUOTED_MIN = 4, 12


def _said_by(principal: Principal, node_ids: list[int]) -> list[int]:
    """The messages the nodes `node_ids` were taken from, and the assistant's answer right after
    each (an answer "好的，已经记下：你对花生过敏" says it again); two statements for all of them."""
    sources = list(NodeSource.objects.filter(node_id__in=node_ids).values_list("message_id", flat=True).distinct())
    following = Message.objects.filter(team=principal.team, session_id=OuterRef("session_id"),
                                       pk__gt=OuterRef("pk")).order_by("pk")
    replies = (Message.objects.filter(team=principal.team, pk__in=sources)
               .annotate(next_id=Subquery(following.values("pk")[:1]), next_role=Subquery(following.values("role")[:1]))
               .filter(next_role=MessageRole.ASSISTANT).values_list("next_id", flat=True))  # one statement
    return [*sources, *replies]


def forget_turns(*, principal: Principal, node: Node, now: datetime, words: list[str], hard: bool = False,
                 repeats: int | None = None) -> tuple[int, int, int, int]:
    """What a forget of `node` does to the conversations it was taken from: captures what else
    the turns it hides say and links the user's turns that say it again as its sources
    (memory.services.forgotten_repeats; `repeats` is how many the caller already linked, as
    memory_forget does for all its nodes at once, or None to do it here), hides its turns
    (_hide) and strips their summaries (_strip_summaries). Call before the node's source links
    are deleted; returns (turns marked, summaries changed, repeats linked, memories kept)."""
    kept = 0
    if repeats is None:
        cited = cite_repeats(principal, [node], hard=hard)
        repeats, kept = cited.turns.get(node.pk, 0), cited.kept
    said = _said_by(principal, [node.pk])
    return _hide(principal, said, now=now, hard=hard), _strip_summaries(principal, node, said, words), repeats, kept


def _hide(principal: Principal, said: list[int], *, now: datetime, hard: bool) -> int:
    """Mark the turns `said` as no longer recalled: at `now` (the soft forget's time;
    recall_turns undoes it), or, for a hard forget, HIDDEN_FOR_GOOD (also over an earlier soft
    forget's mark). Returns how many."""
    turns = Message.objects.filter(team=principal.team, pk__in=said)
    if hard:
        return turns.exclude(memory_forgotten_at=HIDDEN_FOR_GOOD).update(memory_forgotten_at=HIDDEN_FOR_GOOD)
    return turns.filter(memory_forgotten_at__isnull=True).update(memory_forgotten_at=now)


def hidden_among(team, message_ids: list[int]) -> set[int]:
    """Which of `message_ids` a forget hides now (memory_forgotten_at set); one statement. Capture
    jobs and summary rolls ask it after their slow read, as a forget may have hidden turns meanwhile."""
    return set(Message.objects.filter(team=team, pk__in=message_ids).exclude(memory_forgotten_at=None)
               .values_list("pk", flat=True))


def recall_turns(*, principal: Principal, node: Node) -> int:
    """After `node`, soft-forgotten, is restored: the turns its forget hid are recalled again, but
    not those another still-forgotten node hides too (its own turns and the answers to them), nor
    any a hard forget hid (HIDDEN_FOR_GOOD). Returns how many."""
    turns = _said_by(principal, [node.pk])
    others = list(Node.objects.filter(team=principal.team, status=NodeStatus.DELETED, pk__in=NodeSource.objects.filter(
        message_id__in=turns).values("node_id")).exclude(pk=node.pk).values_list("pk", flat=True))
    kept = set(_said_by(principal, others)) if others else set()
    return (Message.objects.filter(team=principal.team, pk__in=[pk for pk in turns if pk not in kept],
                                   memory_forgotten_at__isnull=False)
            .exclude(memory_forgotten_at=HIDDEN_FOR_GOOD).update(memory_forgotten_at=None))


def _letters(text: str) -> str:
    """`text` normalised (memory.search.text.normalize), its letters and digits only."""
    return _NOT_WORD.sub("", normalize(text))


def _keeps(sentence: str, words: list[str], turns: list[str], chars: re.Pattern[str] | None = None) -> bool:
    """Whether a summary's `sentence` (or list item) says none of `words` nor `chars` (a memory's
    one-character foods, as a word of their own) and is no quote of one of `turns` (the
    forgotten turns, as _letters reads them), with or without a speaker's label before it
    ("Alice: I am allergic to peanuts")."""
    if quotes(sentence, words) or (chars is not None and chars.search(normalize(sentence))):
        return False
    said = _letters(_LABEL.sub("", sentence.strip()))
    if len(said) >= (QUOTED_MIN_CJK if _CJK.search(said) else QUOTED_MIN):
        return not any(said in turn for turn in turns)
    return True


def _sentences(line: str) -> list[str]:
    """The sentences of `line`, each with its end mark and the spaces before it: joined, they
    are `line` again."""
    cuts = [0, *(match.end() for match in _SENTENCE_END.finditer(line)), len(line)]
    return [line[start:end] for start, end in zip(cuts, cuts[1:], strict=False) if end > start]


def _stripped_text(text: str, words: list[str], turns: list[str], chars: re.Pattern[str] | None = None) -> str:
    """A summary's `text` without the sentences (and the labelled lines whose label) _keeps does
    not keep; "[forgotten]" when nothing is left."""
    lines = []
    for line in text.split("\n"):
        label = _LABEL.match(line)
        head, body = (line[: label.end()], line[label.end():]) if label else ("", line)
        if head and not _keeps(head, words, [], chars):
            continue  # a heading that says it (花生过敏：吃了会休克。) goes with its line
        kept = "".join(part for part in _sentences(body) if part.strip() and _keeps(part, words, turns, chars))
        if kept.strip():
            lines.append(head + (kept.lstrip() if head else kept))
        elif not body.strip():
            lines.append(line)
    return "\n".join(lines).strip() or FORGOTTEN


def _one_character_words(node: Node) -> re.Pattern[str] | None:
    """A memory's one-character Chinese values and entities (葱, 蒜, 虾), which audit.node_words
    leaves out (a reason saying 虾 rarely quotes the memory; a summary's 忌口：葱 does), as a
    pattern that finds them as words of their own: alone or after a verb of cooking or eating
    (不吃葱, 不放葱, 忌口：葱, 葱和蒜), never inside another word (洋葱圈, 葱油饼)."""
    found = sorted({normalize(text).strip() for text in [*value_strings(node), *node.entities] if len(text.strip()) == 1
                    and _CJK.match(text.strip())})
    if not found:
        return None
    return re.compile(rf"(?:(?<![\u3400-\u9fff])|(?<=[吃放加要忌含喝]))(?:{'|'.join(map(re.escape, found))})"
                      r"(?:(?![\u3400-\u9fff])|(?=[和、及与了的]))")


def summary_says_nothing(summary: Summary) -> bool:
    """Whether a forget left `summary`'s text with nothing to say (only "[forgotten]"):
    the block shows no such summary, and the next roll starts from its lists alone."""
    return summary.summary.strip() == FORGOTTEN


def _strip_summaries(principal: Principal, node: Node, said_ids: list[int], words: list[str]) -> int:
    """Take what `node` said out of the summaries of the conversations it was taken from (the
    sessions of its turns `said_ids`, and its own): every sentence of the text and every list
    item that says one of `words` (memory.services.audit.node_words) or quotes one of those
    turns. A text left with nothing becomes "[forgotten]" (a summary is never empty). Returns
    how many summaries changed."""
    said = Message.objects.filter(team=principal.team, pk__in=said_ids).values_list("session_id", "content")
    chars = _one_character_words(node)
    sessions = {session_id for session_id, _ in said} | ({node.session_id} if node.session_id else set())
    turns = [_letters(content) for _, content in said]
    if not sessions or not (words or turns or chars):
        return 0
    changed = 0
    for summary in Summary.objects.filter(team=principal.team, session_id__in=sessions).select_for_update():
        fields = []
        text = _stripped_text(summary.summary, words, turns, chars)
        if text != summary.summary:
            summary.summary = text
            fields.append("summary")
        if summary.current_goal and not _keeps(summary.current_goal, words, turns, chars):
            summary.current_goal = ""
            fields.append("current_goal")
        for name in LIST_FIELDS:
            items = getattr(summary, name) or []
            kept = [item for item in items if not isinstance(item, str) or _keeps(item, words, turns, chars)]
            if kept != items:
                setattr(summary, name, kept)
                fields.append(name)
        if fields:
            summary.save(update_fields=fields)
            changed += 1
    return changed
