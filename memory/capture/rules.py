"""The rule-based extractor (R-EXTRACT; seed 000 抽取流程, 写入示例, 更新示例, 权限和确认策略):
deterministic, offline, Chinese and English.

RuleExtractor reads the user's messages of the window (only what the user said is a source of
the user's memories), finds statements with the language tables (memory.capture.rules_zh,
rules_en; see rules_common for their shape; read by memory.capture.reading), then decides for
every statement, the same way in both languages:

- explicit intent: the message has a lasting-intent word (记住, 以后, 别再, 帮我记一下,
  remember, from now on, don't ever recommend …) → explicit_user_intent true;
- scope: a decision or a task → the workspace (the session when there is none), but a task
  of the user's own (remind me to, 我需要) is the user's like any statement; a passing
  state (今天, today, a health condition) → the session with expires_at; anything else about
  the user → the user when explicit, else the session (inferred, never user memory);
- supersede: a statement that replaces an active memory (可以接受一点香菜 after 不吃香菜, a
  correction 不是X，是Y, a task now done, a new home after 我住在杭州) → operation supersede of
  that node, which keeps its scope; a statement replacing an earlier one of the same window replaces that proposal.
  A passing state never supersedes a lasting memory outside the session;
- nothing is proposed that is already active as is.

Operations are POST /api/v1/memory/propose bodies without owner fields (memory.capture.base);
memory.services.proposals validates each one like an agent's proposal.
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from memory import limits
from memory.capture import rules_en, rules_zh
from memory.capture.base import Extraction, ExtractionContext, MessageView, NodeView
from memory.capture.facts import profile_replaces
from memory.capture.reading import explicit_marker, findings_with_me_too, prepare, sentences, taken_back_before
from memory.capture.rules_common import (
    COOKING,
    PROFILE_FIELDS,
    REPLACES,
    Finding,
    canonical,
    flavor_value,
    replace_in,
    same_text,
    value_strings,
)

TABLES = {"zh": rules_zh, "en": rules_en}
_TEMPORARY_PREFIX = {"zh": "（暂时）", "en": "(for now) "}
SESSION, WORKSPACE, USER = "session", "workspace", "user"


@dataclass
class _Proposal:
    """One operation being planned; `body()` gives its propose-endpoint shape."""

    finding: Finding
    scope: str
    type: str
    key: str
    value: Any
    title: str
    content: str
    tags: tuple[str, ...]
    entities: tuple[str, ...]
    sources: list[int]
    explicit: bool
    reason: str
    expires_at: datetime | None = None
    target: NodeView | None = None

    def view(self, index: int) -> NodeView:
        """This proposal as an active node, so later statements of the window can replace it."""
        domain = self.target.domain if self.target else self.finding.spec.domain
        return NodeView(id=-1 - index, scope=self.scope, type=self.type, domain=domain, key=self.key,
                        value_json=self.value, title=self.title, content=self.content)

    def signature(self) -> str:
        """Equal for two proposals that would write the same memory."""
        return canonical([self.target.id if self.target else None, self.scope, self.type, self.key, self.value, self.title])

    def body(self) -> dict[str, Any]:
        """The propose body: a create names the whole node; a supersede only what changes
        (scope stays the target's; type, domain and category too, but for a finding of another
        kind, an allergy replacing "no allergies")."""
        node: dict[str, Any] = {}
        spec = self.finding.spec
        if self.target is None:
            node.update(scope=self.scope, type=self.type, domain=spec.domain)
        elif self.type != self.target.type or spec.domain != self.target.domain or self.scope != self.target.scope:
            node.update(scope=self.scope, type=self.type, domain=spec.domain)  # an allergy after "no allergies"
        if spec.category_path and (self.target is None or "type" in node):
            node["category_path"] = list(spec.category_path)
        if (self.key and self.target is None) or (self.target is not None and self.key != self.target.key):
            node["key"] = self.key  # ("" for a keyless allergy replacing "no allergies")
        node.update(value_json=self.value, title=self.title[:200], content=self.content[:4000],
                    confidence=spec.confidence, importance=spec.importance, tags=list(self.tags),
                    entities=[entity[:64] for entity in self.entities][:32], source_message_ids=list(self.sources))
        if self.expires_at is not None:
            node["expires_at"] = self.expires_at.isoformat()
        body: dict[str, Any] = {"operation": "supersede" if self.target else "create"}
        if self.target is not None:
            body["target_id"] = self.target.id
        body.update(explicit_user_intent=self.explicit, reason=self.reason[:1000], node=node)
        return body


def _aware(moment: datetime) -> datetime:
    """expires_at needs an offset; a naive `now` is taken as UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _ingredient(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("ingredient", "")
    return value if isinstance(value, str) else ""


def _task_text(node: NodeView) -> str:
    value = node.value_json
    return value.get("task", "") if isinstance(value, dict) and isinstance(value.get("task"), str) else node.title


def _same_task(left: str, right: str) -> bool:
    left, right = (re.sub(r"\b(?:the|a|an|my|our)\b|[^\w]", "", text.casefold()) for text in (left, right))
    return len(min(left, right, key=len)) >= 2 and (left in right or right in left)


def _folded(value: Any) -> str:
    return canonical(value.casefold() if isinstance(value, str) else value)


def _replaces(finding: Finding, node: NodeView) -> bool:
    """Whether `finding` says that the active `node` no longer holds."""
    key = finding.spec.key
    if key in REPLACES:
        return node.domain == COOKING and node.key in REPLACES[key] and same_text(_ingredient(node.value_json), finding.item)
    if finding.kind in PROFILE_FIELDS:
        return profile_replaces(finding, node)
    if finding.key:  # my favorite color is green (was blue; "Blue" is blue)
        return node.key == finding.key and _folded(node.value_json) != _folded(finding.value)
    if finding.kind == "diet":  # vegetarian again after "no longer vegetarian"
        return node.key == "" and isinstance(node.value_json, dict) and same_text(
            str(node.value_json.get("no_longer", "")), str(finding.value))
    if finding.kind == "diet_ended":
        return node.key == "dietary_restriction" and same_text(_ingredient(node.value_json), finding.value["no_longer"])
    if finding.kind in ("allergy", "allergy_other"):
        return node.key == "no_allergies"  # "I'm not allergic to anything" said before, now an allergy
    if finding.kind == "correction":
        return node.type != "correction" and any(same_text(text, finding.old) for text in value_strings(node.value_json))
    if finding.kind == "task_done":
        value = node.value_json
        is_open = not (isinstance(value, dict) and value.get("status") == "done")
        return node.type == "task" and is_open and _same_task(_task_text(node), finding.item)
    return False


def _title_names(finding: Finding, node: NodeView) -> bool:
    """A correction whose old words are no value may still name a controlled memory by its
    title (不是少辣，是不辣 → 用户偏好少油少辣); free-text memories are never matched by title."""
    return (finding.kind == "correction" and len(finding.old) >= 2 and node.type != "correction"
            and node.domain == COOKING and bool(node.key) and finding.old.casefold() in node.title.casefold())


_WORDS = re.compile(r"\w")
# A finding with its message, the message's explicit marker and how long its state lasts.
_Said = tuple[MessageView, Finding, str, timedelta | None]


class _Plan:
    """The operations of one extraction, in the order of the statements."""

    def __init__(self, context: ExtractionContext):
        self.context = context
        self.proposals: list[_Proposal] = []
        self.notes: list[str] = []
        self.repeats: list[tuple[int, tuple[int, ...]]] = []

    def add(self, message: MessageView, finding: Finding, *, marker: str, duration: timedelta | None) -> None:
        spec = finding.spec
        duration = duration or spec.temporary
        proposal = self._new(message, finding, marker=marker, duration=duration)
        index, target = self._target(finding, temporary=duration is not None)
        if index is not None:
            self._replace_pending(index, proposal)
        elif target is not None:
            self._supersede(proposal, target, marker=marker)
            self.proposals.append(proposal)
        elif finding.needs_target:
            self.notes.append(f"{finding.rule}: {finding.title!r} names no active memory, not proposed")
        elif not self._merge_duplicate(proposal) and not self._already_active(proposal):
            self.proposals.append(proposal)

    def add_all(self, said: list["_Said"]) -> None:
        for message, finding, marker, duration in said:
            self.add(message, finding, marker=marker, duration=duration)

    def _new(self, message: MessageView, finding: Finding, *, marker: str, duration: timedelta | None) -> _Proposal:
        spec = finding.spec
        temporary = duration is not None
        if spec.project and finding.kind != "task_done":
            scope = WORKSPACE if self.context.workspace_id else SESSION
            where = f"a {spec.type} of the {scope}"
        elif temporary:
            scope, where = SESSION, "a passing state, kept in the session until it expires"
        elif marker:
            scope, where = USER, f"the user asked to keep it ({marker})"
        else:
            scope, where = SESSION, "stated without asking to remember it: kept in the session"
        title = finding.title
        if temporary and spec.temporary is None and spec.type != "task" and not spec.project:
            title = _TEMPORARY_PREFIX[finding.lang] + title
        return _Proposal(
            finding=finding, scope=scope, type=spec.temporary_type if temporary and spec.temporary_type else spec.type,
            key=finding.key or spec.key, value=finding.value, title=title, content=finding.content, tags=finding.tags,
            entities=finding.entities, sources=[message.id], explicit=bool(marker), reason=f"{finding.rule}: {where}",
            expires_at=_aware(self.context.now) + duration if duration is not None else None,
        )

    def _target(self, finding: Finding, *, temporary: bool) -> tuple[int | None, NodeView | None]:
        """(index of a proposal of this window, None) or (None, an active node) that `finding`
        replaces, or (None, None). Newest first: the window's own proposals, then the store."""
        pending = [(index, proposal.view(index)) for index, proposal in enumerate(self.proposals)]
        for index, view in reversed(pending):
            if not (temporary and view.scope != SESSION) and _replaces(finding, view):
                return index, None
        # Only the user's own memory (theirs, or this session's) is revised by what they say;
        # the workspace's is shared with others and changes by an explicit proposal.
        taken = {proposal.target.id for proposal in self.proposals if proposal.target is not None}
        existing = [node for node in self.context.existing
                    if (node.scope in (USER, SESSION) or (finding.kind == "task_done" and node.type == "task"))
                    and not (temporary and node.scope != SESSION)
                    and not (node.key == "no_allergies" and node.id in taken)]  # the first allergy replaced it
        for node in existing:
            if _replaces(finding, node):
                return None, node
        by_title = [node for node in existing if _title_names(finding, node)]
        if len(by_title) == 1:
            return None, by_title[0]
        if len(by_title) > 1:
            self.notes.append(f"correction of {finding.old!r}: {len(by_title)} memories match, none superseded")
        return None, None

    def _supersede(self, proposal: _Proposal, target: NodeView, *, marker: str) -> None:
        """Turn `proposal` into the successor of `target`: same scope; explicit when the user
        revises their own user memory in their own words (seed 更新示例)."""
        finding = proposal.finding
        proposal.target = target
        proposal.reason = f"{finding.rule}: replaces node {target.id} ({target.key or target.title[:60]})"
        if target.key == "no_allergies":
            return  # an allergy, in its own kind and scope, as if nothing were replaced
        proposal.scope = target.scope
        proposal.type = target.type
        # Revising their own user memory in their own words counts as the user's intent (seed
        # 更新示例: 香菜现在可以接受一点 replaces 不吃香菜) — for a free-text correction only when
        # it revises a key of the controlled schema.
        controlled = target.domain == COOKING and bool(target.key)
        proposal.explicit = bool(marker) or (target.scope == USER and (finding.kind != "correction" or controlled))
        proposal.expires_at = proposal.expires_at if target.scope == SESSION else None
        if finding.kind == "correction":
            self._correct(proposal, target)
        elif finding.kind == "task_done":
            self._close(proposal, target.value_json, _task_text(target))

    def _correct(self, proposal: _Proposal, target: NodeView) -> None:
        old, new = proposal.finding.old, proposal.finding.item
        value = replace_in(target.value_json, old, new)
        if target.key == "flavor_profile" and isinstance(value, dict):
            value = {**value, **_flavor(new)}
        elif value == target.value_json and isinstance(value, str | None):
            value = new
        proposal.key = target.key
        proposal.value = value
        proposal.title = replace_in(target.title, old, new) if old.casefold() in target.title.casefold() else proposal.title
        proposal.content = replace_in(target.content, old, new) if old.casefold() in target.content.casefold() \
            else proposal.content

    def _replace_pending(self, index: int, proposal: _Proposal) -> None:
        """A later statement of the window replaces an earlier proposal: it keeps the earlier
        one's scope, intent and target and is bound to both messages."""
        earlier = self.proposals[index]
        if proposal.finding.kind == "correction":
            view = earlier.view(index)
            earlier.sources = [*earlier.sources, *proposal.sources]
            self._correct(earlier, view)
            earlier.entities = proposal.entities
            earlier.reason += f"; corrected by message {proposal.sources[0]}"
            return
        proposal.scope, proposal.target = earlier.scope, earlier.target
        proposal.explicit = proposal.explicit or earlier.explicit
        proposal.sources = [*earlier.sources, *proposal.sources]
        if earlier.target is not None:
            proposal.type = earlier.type
        if proposal.finding.kind == "task_done":
            self._close(proposal, earlier.value, _task_text(earlier.view(index)))
        proposal.reason = f"{proposal.finding.rule}: replaces what message {earlier.sources[0]} said ({earlier.reason})"
        self.proposals[index] = proposal

    @staticmethod
    def _close(proposal: _Proposal, value: Any, task: str) -> None:
        """A task_done proposal names the task as the open task did."""
        done = TABLES[proposal.finding.lang].say("task_done", task, value={"task": task, "status": "done"})
        proposal.value = {**(value if isinstance(value, dict) else {}), "task": task, "status": "done"}
        proposal.title, proposal.content = done.title, done.content

    def _merge_duplicate(self, proposal: _Proposal) -> bool:
        for earlier in self.proposals:
            if earlier.signature() == proposal.signature():
                earlier.sources = list(dict.fromkeys([*earlier.sources, *proposal.sources]))
                earlier.explicit = earlier.explicit or proposal.explicit
                return True
        return False

    def _already_active(self, proposal: _Proposal) -> bool:
        for node in self.context.existing:
            # The user's own memory already saying it makes a session copy redundant too.
            scope_covers = node.scope == proposal.scope or (proposal.scope == SESSION and node.scope == USER)
            same = scope_covers and (node.type, node.domain, node.key) == (
                proposal.type, proposal.finding.spec.domain, proposal.key)
            if same and canonical(node.value_json) == canonical(proposal.value) and (node.key or node.title == proposal.title):
                self.notes.append(f"already remembered as node {node.id}: {proposal.title}")
                self.repeats.append((node.id, tuple(proposal.sources)))  # said again: evidence of it too
                return True
        return False


def _flavor(text: str) -> dict[str, str]:
    """The flavor_profile value of a correction's new words (不辣 → {"spicy": "none"})."""
    for table in (rules_zh.FLAVORS, rules_en.FLAVORS):
        value, _ = flavor_value(text, table)
        if value:
            return value
    return {}


# A job applies at most limits.CAPTURE_PROPOSALS_MAX proposals; planning many more only costs
# time (each new one is compared with every earlier one: a review's 10 messages of 4,000
# characters, each a list of 570 foods, took 175 s), so the rules stop reading a window's next
# message once the plan holds PLAN_MAX.
PLAN_MAX = 4 * limits.CAPTURE_PROPOSALS_MAX


class RuleExtractor:
    """Deterministic extraction from the user's own words (see module doc). Never raises for
    any text; returns an empty Extraction for chit-chat."""

    name = "rules"

    def extract(self, context: ExtractionContext) -> Extraction:
        plan = _Plan(context)
        # The last sentence's findings wait for the next sentence, which may take them back ("I hate
        # cilantro. Just kidding, I love it"; 我对花生过敏。骗你的！), also in the user's next message
        # when no one spoke between ("No, not really" after the assistant asked takes back nothing).
        held: list[_Said] = []
        for message in context.messages:
            if message.role != "user":
                plan.add_all(held)
                held = []
                continue
            text = prepare(message.content)
            marker = explicit_marker(text)
            before = ""
            for said in sentences(text):
                if len(plan.proposals) >= PLAN_MAX:
                    break
                if not _WORDS.search(said):
                    continue  # 我对花生过敏！！！开玩笑的: a mark alone is no sentence that keeps what is held
                if taken_back_before(said) != 0:
                    plan.add_all(held)
                held = [(message, finding, marker, duration) for finding, duration in findings_with_me_too(said, before, text)]
                before = said
            if len(plan.proposals) >= PLAN_MAX:
                plan.notes.append(f"over {PLAN_MAX} memories in this window: the rest of it was not read")
                break
        if len(plan.proposals) < PLAN_MAX:
            plan.add_all(held)
        repeats: dict[int, tuple[int, ...]] = {}
        for node_id, sources in plan.repeats:
            repeats[node_id] = tuple(dict.fromkeys([*repeats.get(node_id, ()), *sources]))
        return Extraction(operations=[proposal.body() for proposal in plan.proposals], extractor=self.name,
                          notes=plan.notes, repeats=list(repeats.items()))
