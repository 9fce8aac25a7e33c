"""The summary chain through an OpenAI-compatible chat endpoint (R-EXTRACT; seed 000 链式摘要).

The model sees the previous summary and the new messages only, and answers with the seed's
MemorySummary fields as one JSON object (summary, currentGoal, constraints, preferences,
decisions, completedWork, pendingWork, knownIssues). Its answer is checked and clipped to
the limits like any other draft; anything unusable raises ExtractorError, so the job
retries later.
"""

import json
from dataclasses import dataclass
from typing import Any

from memory.capture.base import ExtractorError, MessageView, SummaryDraft
from memory.capture.llm_client import TIMEOUT_SECONDS, LLMConfig, chat_json
from memory.capture.summary_fit import LIST_FIELDS, draft_fit, storable, text_budget
from memory.limits import SUMMARY_LIST_ITEMS_MAX

PROMPT_MESSAGE_CHARS = 4_000  # one message as the model sees it; longer ones are cut
ANSWER_KEYS = {
    "constraints": "constraints",
    "preferences": "preferences",
    "decisions": "decisions",
    "completed_work": "completedWork",
    "pending_work": "pendingWork",
    "known_issues": "knownIssues",
}

SYSTEM_PROMPT = """You keep the running summary of one conversation (a user and an AI agent, or named \
speakers). You get the previous summary (null for the first) and ONLY the messages that came after it, \
in the order they were said. Write the next summary: it covers what the previous summary held plus the \
new messages, reads forward (earlier things first), stays in the language of the conversation and is at \
most {max_chars} characters; when short of room, compress older content rather than drop the newest.

Answer with one JSON object and nothing else:
{{"summary": "…", "currentGoal": "the user's latest request or question",
 "constraints": [], "preferences": [], "decisions": [], "completedWork": [], "pendingWork": [],
 "knownIssues": []}}
Each list holds short phrases (at most {items_max}); carry over the previous summary's items that \
still hold, drop those done, resolved or contradicted by the new messages, add new ones. Preferences \
and constraints are the user's own (or a named speaker's, prefixed with the name)."""


@dataclass(frozen=True)
class LLMSummarizer:
    """Summarizer backed by `chat_json` (MEMORY_LLM_BASE_URL, MEMORY_LLM_MODEL, MEMORY_LLM_API_KEY)."""

    config: LLMConfig
    name: str = "llm"
    timeout: float = TIMEOUT_SECONDS

    def summarize(self, previous: SummaryDraft | None, messages: tuple[MessageView, ...], *,
                  max_chars: int) -> SummaryDraft:
        """The next summary of the chain from `previous` and the new `messages` (server order).
        Text ≤ min(max_chars, SUMMARY_TEXT_MAX) characters, lists within the limits. Raises
        ExtractorError (endpoint down, no JSON, no summary text, a field of the wrong type)
        and ValueError for max_chars < 1."""
        budget = text_budget(max_chars)
        answer = chat_json(
            self.config,
            system=SYSTEM_PROMPT.format(max_chars=budget, items_max=SUMMARY_LIST_ITEMS_MAX),
            user=json.dumps(prompt_body(previous, messages), ensure_ascii=False),
            timeout=self.timeout,
        )
        return draft_fit(parse_answer(answer, previous), max_chars=budget)


def prompt_body(previous: SummaryDraft | None, messages: tuple[MessageView, ...]) -> dict[str, Any]:
    """What the model is given: the previous summary's fields and the new messages, nothing else."""
    return {
        "previousSummary": None if previous is None else {
            "summary": previous.summary,
            "currentGoal": previous.current_goal,
            **{key: list(getattr(previous, name)) for name, key in ANSWER_KEYS.items()},
        },
        "newMessages": [
            {"id": message.id, "role": message.role, **({"speaker": message.speaker} if message.speaker else {}),
             "content": message.content[:PROMPT_MESSAGE_CHARS]}
            for message in messages
        ],
    }


def parse_answer(answer: dict[str, Any], previous: SummaryDraft | None) -> SummaryDraft:
    """A SummaryDraft from the model's object (not yet clipped). A list the model left out
    carries the previous summary's over; null means empty; items that are not strings are
    dropped. Raises ExtractorError when the text is missing or empty or a field has the
    wrong type."""
    summary = answer.get("summary")
    if not isinstance(summary, str) or not storable(summary):
        raise ExtractorError("the model's summary has no text")
    goal = answer.get("currentGoal", answer.get("current_goal"))
    if goal is None:
        goal = previous.current_goal if previous else ""
    if not isinstance(goal, str):
        raise ExtractorError("the model's currentGoal is not a string")
    lists: dict[str, list[str]] = {}
    for name in LIST_FIELDS:
        key = ANSWER_KEYS[name]
        if key not in answer and name not in answer:
            lists[name] = list(getattr(previous, name)) if previous else []
            continue
        value = answer.get(key, answer.get(name))
        if value is None:
            value = []
        if not isinstance(value, list):
            raise ExtractorError(f"the model's {key} is not a list")
        lists[name] = [item for item in value if isinstance(item, str)]
    return SummaryDraft(summary=summary, current_goal=goal, **lists)
