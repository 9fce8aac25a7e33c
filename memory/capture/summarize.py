"""Summarizers of the per-session summary chain (R-EXTRACT; seed 000 链式摘要, 抽取流程).

Each summary is built from the previous summary plus the new messages only, in server
order, never from the whole history. `RuleSummarizer` is deterministic and offline;
`memory.capture.llm_summarizer.LLMSummarizer` asks an OpenAI-compatible endpoint;
`summarizer_for_settings()` picks one. `memory.capture.summary_roll.summary_roll` stores
the result as the next link of the chain.
"""

import re
from dataclasses import dataclass

from memory.capture.base import MessageView, Summarizer, SummaryDraft
from memory.capture.llm_client import LLMConfig
from memory.capture.llm_summarizer import LLMSummarizer
from memory.capture.summary_fit import (
    ELLIPSIS,
    LIST_FIELDS,
    clip,
    merge_items,
    sentences,
    storable,
    storable_lines,
    text_budget,
)
from memory.limits import SUMMARY_LIST_ITEMS_MAX

LINE_CHARS = 120  # one message's line in the summary text
ASSISTANT_LINE_CHARS = 80  # an unnamed assistant's reply is cut to its first sentences
ITEM_CHARS = 160  # one list item the rules extract
GOAL_CHARS = 300
GIST_CHARS = 60  # an older line once the text is over budget
MIN_HEAD_BUDGET = 40  # below this budget the text keeps only the newest line

_LABELLED = re.compile(r"^([^:：\n]{1,40}(?:: |：)|)(.*)$", re.DOTALL)
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LABELS_ZH = {"user": "用户", "assistant": "助手", "system": "系统", "tool": "工具"}
_LABELS_EN = {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}


def _cues(chinese: str, english: str) -> re.Pattern[str]:
    return re.compile(rf"(?:{chinese})|(?:{english})", re.IGNORECASE)


# Checked in this order; a sentence goes into the first list whose cue it carries.
CUES: dict[str, re.Pattern[str]] = {
    "preferences": _cues(
        r"喜欢|爱吃|爱喝|不吃|不喝|别给我|偏好|口味|讨厌|不爱|受不了|可以接受|最爱|更想要",
        r"\b(?:i|we)\b[^.!?]{0,24}?(?<!would\s)(?<!'d\s)\b(?:like|love|enjoy|hate|prefer|dislike|adore)\b"
        r"|\bprefer(?:s|red)?\b|\bfavou?rite\b|\bnot a fan of\b|\bcan(?:'|’)t stand\b",
    ),
    "constraints": _cues(
        r"不要|必须|只能|不能|不可以|过敏|禁止|务必|不许|别再|一定要|预算|最多|至少",
        # "must have been" guesses, "can't wait" cheers: neither binds anyone
        r"\bmust\b(?!\s+(?:have|be)\b|(?:'|’)ve)"
        r"|\bcan(?:'|’)?t\b(?!\s+(?:wait|believe|imagine|help|stop|remember|beat|agree|thank|get enough))"
        r"|\bcannot\b|\ballergic\b"
        r"|\b(?:have|has) to\b|\bnot allowed\b|\bno more than\b|\bat most\b"
        r"|\b(?:don(?:'|’)t|do not|never)\s+(?:use|add|give|put|include|recommend|suggest)\b",
    ),
    "decisions": _cues(
        r"决定|定了|就这么|选定|就用|改用|采用|敲定",
        r"\bdecided\b|\bdecision\b|\blet(?:'|’)s go with\b|\bgoing with\b|\bwe(?:'|’)ll go with\b|\bsettled on\b"
        r"|\bchose to\b|\bopted\b",
    ),
    "completed_work": _cues(
        r"完成了|做好了|搞定|已完成|已经完成|修好了|写好了|弄好了|办好了",
        r"\bdone\b|\bfinished\b|\bcompleted\b|\bfixed\b|\bshipped\b|\bmerged\b|\bimplemented\b",
    ),
    "pending_work": _cues(
        r"待办|还要|还需要|下一步|接下来|记得|别忘了|回头",
        r"\bneeds? to\b|\btodo\b|\bto-do\b|\bstill (?:need|have) to\b|\bnext step\b|\bremind me\b(?!\s+of)"
        r"|\bplan(?:ning)? to\b|\bpending\b",
    ),
    "known_issues": _cues(
        r"问题|报错|出错|错误|故障|失败|不工作|不起作用|崩溃|异常|(?<![a-z])bugs?(?![a-z])",
        r"\bproblems?\b|\bissues?\b|\bbugs?\b|\berrors?\b|\bdoes(?:n't|n’t| not) work\b|\bbroken\b"
        r"|\bfail(?:s|ed)?\b|\bcrash(?:es|ed)?\b|\bisn(?:'|’)t working\b|\bnot working\b",
    ),
}
# Only what the end user (or a named participant) says is their preference or constraint.
_USER_ONLY = {"preferences", "constraints"}
# A sentence that asks for something: a question, or a request cue.
_REQUEST = re.compile(
    r"[?？]\s*$|帮我|请问|请你|请帮|请给|能不能|能否|可不可以|麻烦你|推荐一下|给我推荐(?<!别给我推荐)"
    r"|\b(?:can you|could you|would you|please|help me|i want you to|tell me)\b",
    re.IGNORECASE,
)


def _gist(line: str) -> str:
    """An older line cut to its longest sentence (greetings and thanks go first), with its label."""
    if line == ELLIPSIS:
        return line
    match = _LABELLED.match(line)
    label, body = match.groups() if match else ("", line)
    parts = sentences(body) or [body]
    return label + clip(max(parts, key=len), GIST_CHARS)


def _joined(lines: list[str]) -> str:
    """Lines joined, with runs of "…" marks made one."""
    kept = [line for index, line in enumerate(lines) if not (line == ELLIPSIS and index and lines[index - 1] == ELLIPSIS)]
    return "\n".join(kept)


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith(("?", "？"))


def _label(message: MessageView) -> str:
    if message.speaker:
        return f"{message.speaker}: "
    if _CJK.search(message.content):
        return f"{_LABELS_ZH.get(message.role, message.role)}："
    return f"{_LABELS_EN.get(message.role, message.role)}: "


@dataclass(frozen=True)
class RuleSummarizer:
    """A deterministic, offline summarizer for Chinese and English (R-EXTRACT).

    The text is the previous summary's lines followed by one line per new message
    ("speaker: what they said", the speaker's name when the conversation has one, else the
    role), first things first. Over the budget it keeps the first line of the chain (the
    gist of where it began), "…", and as many of the newest lines as fit. The lists carry
    the previous summary's items over and add the sentences carrying a cue (喜欢/不吃/like/
    prefer…, 必须/不要/must/allergic…, 决定/decided…, 完成了/done…, 还要/need to…,
    报错/bug/error…); questions are not statements and give no items.
    """

    name: str = "rules"
    list_items_max: int = SUMMARY_LIST_ITEMS_MAX

    def summarize(self, previous: SummaryDraft | None, messages: tuple[MessageView, ...], *,
                  max_chars: int) -> SummaryDraft:
        """The next summary of the chain. `messages` are the new ones only, in server order;
        the text is at most min(max_chars, SUMMARY_TEXT_MAX) characters and never empty when
        there is a message or a previous summary. Raises ValueError for max_chars < 1."""
        budget = text_budget(max_chars)
        old_lines = storable_lines(previous.summary) if previous else []
        new_lines = [line for line in (self._line(message) for message in messages) if line]
        found = self._items(messages)
        return SummaryDraft(
            summary=self._compose(old_lines, new_lines, budget),
            current_goal=self._goal(previous, messages),
            **{
                name: merge_items(getattr(previous, name) if previous else [], found[name],
                                  max_items=self.list_items_max)
                for name in LIST_FIELDS
            },
        )

    def _line(self, message: MessageView) -> str:
        text = storable(message.content)
        if not text:
            return ""
        if message.role == "assistant" and not message.speaker:
            return _label(message) + clip(text, ASSISTANT_LINE_CHARS)
        return _label(message) + clip(text, LINE_CHARS)

    def _compose(self, old_lines: list[str], new_lines: list[str], budget: int) -> str:
        lines = old_lines + new_lines
        text = "\n".join(lines)
        said = [line for line in lines if line != ELLIPSIS]
        if len(text) <= budget or not said:
            return text
        if budget < MIN_HEAD_BUDGET or len(said) == 1:
            return clip(said[-1], budget)
        # The chain's first line stays (where the conversation began). Older lines shrink to
        # their gist before any gives way; then the middle goes, marked by a line "…", and
        # the newest lines stay whole. Earlier marks stay where earlier rolls cut.
        first = lines.index(said[0])
        head = clip(said[0], budget // 4)
        rest = [_gist(line) if index < len(old_lines) else line
                for index, line in enumerate(lines) if index > first]
        if len(head) + 1 + len("\n".join(rest)) <= budget:
            return _joined([head, *rest])
        room = budget - len(head) - 1 - (len(ELLIPSIS) + 1)
        tail: list[str] = []
        for line in reversed(rest):
            if len(line) + 1 > room:
                break
            tail.append(line)
            room -= len(line) + 1
        tail.reverse()
        if not [line for line in tail if line != ELLIPSIS]:
            tail = [clip(rest[-1], room - 1)]
        return _joined([head, ELLIPSIS, *tail])

    def _items(self, messages: tuple[MessageView, ...]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {name: [] for name in LIST_FIELDS}
        for message in messages:
            if message.role == "system":
                continue
            speaks_for_user = message.role == "user" or bool(message.speaker)
            prefix = f"{message.speaker}: " if message.speaker else ""
            for sentence in sentences(message.content):
                if _is_question(sentence):
                    continue
                for name, cue in CUES.items():
                    if name in _USER_ONLY and not speaks_for_user:
                        continue
                    if message.role == "tool" and name != "known_issues":
                        continue
                    if cue.search(sentence):
                        found[name].append(clip(prefix + sentence.rstrip("。.！!；;，, "), ITEM_CHARS))
                        break
        return found

    def _goal(self, previous: SummaryDraft | None, messages: tuple[MessageView, ...]) -> str:
        """The latest user question or request of the window (that sentence); else the previous
        goal if it was a question or request; else the latest user message of the window."""
        for message in reversed(messages):
            if message.role != "user":
                continue
            asked = [sentence for sentence in sentences(storable(message.content)) if _REQUEST.search(sentence)]
            if asked:
                return clip(asked[-1], GOAL_CHARS)
        if previous and previous.current_goal and _REQUEST.search(previous.current_goal):
            return previous.current_goal  # an open question or request stays the goal
        said = [m for m in messages if m.role == "user" and storable(m.content)]
        if said:  # else what the user talks about now, not a statement from long ago
            return clip(storable(said[-1].content), GOAL_CHARS)
        return previous.current_goal if previous else ""


def summarizer_for_settings() -> Summarizer:
    """LLMSummarizer when settings.MEMORY_LLM_BASE_URL is set, else RuleSummarizer."""
    config = LLMConfig.from_settings()
    if config is None:
        return RuleSummarizer()
    return LLMSummarizer(config)
