"""The LLM extractor (R-EXTRACT; seed 000 抽取流程 MemoryExtraction): any OpenAI-compatible chat
endpoint (MEMORY_LLM_BASE_URL, MEMORY_LLM_MODEL, MEMORY_LLM_API_KEY) asked for the seed's
MemoryExtraction as one JSON object.

The model's answer is not trusted: items that are not objects or name no known operation are
dropped, fields outside the propose body are dropped (owner ids, confirm: the job supplies the
owner, and only the user confirms), source_message_ids keep only ids of the window, target_id
must name an active memory the model was shown. What is left goes through
memory.services.proposals like an agent's proposal. Transport, status and parse failures raise
ExtractorError, so the capture job retries later.
"""

import json
from typing import Any

from memory import schema_defaults
from memory.capture.base import Extraction, ExtractionContext, ExtractorError
from memory.capture.llm_client import TIMEOUT_SECONDS, LLMConfig, chat_json

OPERATIONS = ("create", "update", "supersede", "expire", "delete")
NODE_FIELDS = ("scope", "type", "domain", "category_path", "key", "value_json", "title", "content", "confidence",
               "importance", "tags", "entities", "expires_at", "source_message_ids", "parent_id")
# The seed writes camelCase (MemoryNode); the propose endpoint takes snake_case.
CAMEL = {"targetId": "target_id", "explicitUserIntent": "explicit_user_intent", "categoryPath": "category_path",
         "valueJson": "value_json", "expiresAt": "expires_at", "sourceMessageIds": "source_message_ids",
         "parentId": "parent_id"}
MESSAGE_CHARS_MAX = 2000  # characters of one message shown to the model


def _controlled_keys() -> str:
    lines = []
    for domain, prefix, node_type, key, shape, cardinality, scope, explicit, temporary, description \
            in schema_defaults.SCHEMA_RULES:
        notes = [shape, f"default scope {scope}"] + (["many values"] if cardinality == "many" else []) \
            + (["needs explicit intent outside the session"] if explicit else []) + (["temporary"] if temporary else [])
        lines.append(f"- {domain} {'/'.join(prefix)} {node_type} {key}: {description} ({', '.join(notes)})")
    values = ", ".join(f"{pattern} → {json.dumps(value, ensure_ascii=False)}"
                       for _, _, pattern, value in schema_defaults.VALUE_RULES)
    return "\n".join(lines) + f"\nValue words: {values}."


SYSTEM_PROMPT = """You are the memory extractor of a memory service for AI agents. You read the new messages of
a conversation (Chinese, English or mixed) and the memories already active for this user, and you
answer with ONE JSON object, the MemoryExtraction:

{"operations": [<operation>, ...]}

An empty list is the right answer for chit-chat and for anything not worth remembering.
Each operation is a memory_propose_update body:
{"operation": "create" | "supersede" | "update" | "expire" | "delete",
 "target_id": <id of an existing memory; required for every operation except create>,
 "explicit_user_intent": <true only when the user explicitly asked to remember or set a lasting rule:
                          记住, 以后都, 以后, 别再, 帮我记一下, remember, from now on, always, don't ever>,
 "reason": "<why, in a few words>",
 "node": {"scope": "session" | "workspace" | "user",
          "type": "preference" | "fact" | "decision" | "task" | "recipe" | "skill" | "constraint" | "correction",
          "domain": "<e.g. 生活技能, or general>", "category_path": ["生活技能", "做饭", "饮食偏好"],
          "key": "<a controlled key below, or a short snake_case key>", "value_json": <JSON value>,
          "title": "<one line>", "content": "<one or two sentences>",
          "confidence": <0..1>, "importance": <0..1>, "tags": ["..."], "entities": ["..."],
          "source_message_ids": [<ids of the user messages it comes from>],
          "expires_at": "<ISO 8601 with offset, for passing states>"}}

Rules:
1. Only what the user said is a source of the user's memories. Every node names its
   source_message_ids, taken from the ids of the messages you are given. Never invent.
2. Scope user only for lasting preferences and facts the user stated explicitly
   (explicit_user_intent true). Anything inferred or not asked to be remembered: scope session.
3. A passing state (今天有点胃不舒服, tonight, this week) is a session constraint with expires_at
   (24 hours after "now" unless the message says otherwise), never user memory.
4. Decisions and tasks belong to the workspace when a workspace is given, else to the session.
   A task is {"task": "...", "status": "open" | "done"}.
5. When a message changes an existing memory (香菜现在可以接受一点 after 不吃香菜; a correction
   不是X是Y / actually / I meant; a task now done), use "supersede" with that memory's target_id
   and only the fields that change (key, value_json, title, content, source_message_ids).
6. Controlled keys (use exactly these in their domain; synonyms are not allowed):
{keys}
7. Titles and content in the language of the user's message.

Example. Message 41 (user): 以后做饭别给我推荐香菜，我喜欢少油少辣。
{"operations": [
 {"operation": "create", "explicit_user_intent": true, "reason": "用户明确要求记录长期饮食偏好",
  "node": {"scope": "user", "domain": "生活技能", "category_path": ["生活技能", "做饭", "饮食偏好"],
           "type": "preference", "key": "avoid_ingredient", "value_json": "香菜", "title": "用户不吃香菜",
           "content": "推荐菜谱时避免香菜。", "confidence": 0.98, "importance": 0.9,
           "tags": ["忌口", "菜谱推荐"], "entities": ["香菜"], "source_message_ids": [41]}},
 {"operation": "create", "explicit_user_intent": true, "reason": "用户明确表达口味偏好",
  "node": {"scope": "user", "domain": "生活技能", "category_path": ["生活技能", "做饭", "饮食偏好"],
           "type": "preference", "key": "flavor_profile", "value_json": {"oil": "low", "spicy": "low"},
           "title": "用户偏好少油少辣", "content": "推荐菜谱时优先少油少辣。", "confidence": 0.95,
           "importance": 0.85, "tags": ["口味", "菜谱推荐"], "entities": ["少油", "少辣"],
           "source_message_ids": [41]}}]}
Later, with that avoid_ingredient memory active as id 7, message 45 (user): 香菜现在可以接受一点，但不要太多。
{"operations": [{"operation": "supersede", "target_id": 7, "explicit_user_intent": true,
  "reason": "用户更新了对香菜的偏好", "node": {"key": "limit_ingredient",
  "value_json": {"ingredient": "香菜", "amount": "少量"}, "title": "用户可接受少量香菜",
  "content": "香菜可以放一点，但不要太多。", "source_message_ids": [45]}}]}
""".replace("{keys}", _controlled_keys())


def _window(context: ExtractionContext) -> str:
    """The user prompt: now, whether there is a workspace, the messages and the active memories."""
    return json.dumps({
        "now": context.now.isoformat(),
        "has_workspace": bool(context.workspace_id),
        "messages": [{"id": message.id, "role": message.role, **({"speaker": message.speaker} if message.speaker else {}),
                      "content": message.content[:MESSAGE_CHARS_MAX]} for message in context.messages],
        "active_memories": [{"id": node.id, "scope": node.scope, "type": node.type, "domain": node.domain,
                             "key": node.key, "value_json": node.value_json, "title": node.title}
                            for node in context.existing],
    }, ensure_ascii=False, default=str)


def _as_id(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _snake(item: dict[str, Any]) -> dict[str, Any]:
    return {CAMEL.get(name, name): value for name, value in item.items()}


def clean_operations(items: Any, context: ExtractionContext) -> tuple[list[dict[str, Any]], list[str]]:
    """Loosely validated propose bodies from a model's `operations` (see module doc), and a
    note for everything dropped. Field types are left to the proposal validator."""
    if not isinstance(items, list):
        raise ExtractorError("the answer has no list of operations")
    window = {message.id for message in context.messages}
    active = {node.id for node in context.existing}
    operations, notes = [], []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            notes.append(f"operations[{index}] dropped: not an object")
            continue
        item = _snake(item)
        operation = item.get("operation")
        if operation not in OPERATIONS:
            notes.append(f"operations[{index}] dropped: operation {operation!r}")
            continue
        body: dict[str, Any] = {"operation": operation,
                                "explicit_user_intent": item.get("explicit_user_intent") is True,
                                "reason": f"llm: {item.get('reason') if isinstance(item.get('reason'), str) else ''}"[:1000]}
        if operation != "create":
            target = _as_id(item.get("target_id"))
            if target not in active:
                notes.append(f"operations[{index}] dropped: target_id {item.get('target_id')!r} is no active memory shown")
                continue
            body["target_id"] = target
        node = _snake(item["node"]) if isinstance(item.get("node"), dict) else {}
        node = {name: value for name, value in node.items() if name in NODE_FIELDS}
        if "source_message_ids" in node:
            given = node["source_message_ids"] if isinstance(node["source_message_ids"], list) else []
            kept = [ident for ident in (_as_id(value) for value in given) if ident in window]
            if len(kept) < len(given):
                notes.append(f"operations[{index}]: source ids outside the window dropped")
            node["source_message_ids"] = list(dict.fromkeys(kept))
        if operation == "create" and not isinstance(node.get("type"), str):
            notes.append(f"operations[{index}] dropped: create without a node type")
            continue
        if operation in ("create", "update", "supersede"):
            body["node"] = node
        operations.append(body)
    return operations, notes


class LLMExtractor:
    """Extraction by a chat model (see module doc). `timeout` in seconds per request."""

    name = "llm"

    def __init__(self, config: LLMConfig, *, timeout: float = TIMEOUT_SECONDS):
        self.config = config
        self.timeout = timeout

    def extract(self, context: ExtractionContext) -> Extraction:
        """Raises ExtractorError when the endpoint fails or answers without an operations list."""
        if not context.messages:
            return Extraction(extractor=self.name)
        answer = chat_json(self.config, system=SYSTEM_PROMPT, user=_window(context), timeout=self.timeout)
        items = answer.get("operations", answer.get("nodes"))  # the seed's MemoryExtraction says "nodes"
        operations, notes = clean_operations(items, context)
        return Extraction(operations=operations, extractor=self.name, notes=notes)
