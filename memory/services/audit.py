"""Audit events, written by services inside the transaction of the change they record (R-STORE)."""

import re
from typing import Any

from django.db import transaction

from accounts.principal import Principal
from memory.models import AuditEvent, Node, Session

# Fields of a node's own snapshot that carry what was remembered; hard delete redacts them.
CONTENT_FIELDS = ("title", "content", "key", "value_json", "tags", "entities", "category_path")


def node_snapshot(node: Node) -> dict[str, Any]:
    """The node's fields as JSON, for audit payloads."""
    return {
        "id": node.pk,
        "scope": node.scope,
        "domain": node.domain,
        "category_path": list(node.category_path),
        "type": node.type,
        "key": node.key,
        "value_json": node.value_json,
        "title": node.title,
        "content": node.content,
        "status": node.status,
        "confidence": node.confidence,
        "importance": node.importance,
        "tags": list(node.tags),
        "entities": list(node.entities),
        "explicit": node.explicit,
        "version": node.version,
        "supersedes_id": node.supersedes_id,
        "expires_at": node.expires_at.isoformat() if node.expires_at else None,
    }


def audit_record(
    *,
    principal: Principal,
    event_type: str,
    reason: str = "",
    node: Node | None = None,
    node_id: int | None = None,
    session: Session | None = None,
    workspace_id: str = "",
    user_id: str = "",
    payload: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one audit event named `event_type` (dotted, e.g. `memory.node.superseded`).

    Must run inside the transaction of the change (raises RuntimeError otherwise), so the
    event and the change commit or roll back together.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_record must run inside the transaction of the change it records")
    if node is not None:
        node_id = node.pk
        session = session or node.session
        workspace_id = workspace_id or node.workspace_id
        user_id = user_id or node.user_id
    if session is not None:
        workspace_id = workspace_id or session.workspace_id
        user_id = user_id or session.user_id
    return AuditEvent.objects.create(
        team=principal.team,
        event_type=event_type,
        node_id=node_id,
        session_id=session.external_id if session is not None else "",
        workspace_id=workspace_id,
        user_id=user_id,
        actor=principal.actor,
        actor_key=principal.agent_key,
        actor_user=principal.user,
        reason=reason,
        payload=payload,
    )


FORGOTTEN = "[forgotten]"


def value_strings(node: Node) -> list[str]:
    """A node's value when it is a string, or the strings of a list value; [] for anything else."""
    value = node.value_json
    if isinstance(value, str):
        return [value]
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def node_words(node: Node) -> list[str]:
    """What a node says, normalised (memory.search.text.normalize), for finding it quoted in a
    reason: its title, content, entities and a value that is a string or a list of strings —
    not tags nor an object's values ("low", "health", 过敏 name kinds of things, and a reason
    saying "low confidence" quotes nothing). Two Chinese characters or four others at least."""
    from memory.search.text import normalize

    texts = (normalize(text).strip() for text in [node.title, node.content, *node.entities, *value_strings(node)]
             if text)
    return sorted({text for text in texts if len(text) >= (2 if re.search(r"[^\x00-\u024f]", text) else 4)})


def quotes(reason: str, words: list[str]) -> bool:
    """Whether `reason` says any of `words` (node_words): a Chinese word anywhere in it, a Latin
    one as whole words ("ai" is not quoted by "said")."""
    from memory.search.text import normalize

    said = normalize(reason)
    if not said:
        return False
    for word in words:
        if re.search(r"[^\x00-\u024f]", word):
            if word in said:
                return True
        elif re.search(rf"(?<!\w){re.escape(word)}(?!\w)", said):
            return True
    return False


# Words of a reason that name the memory's owner or the act, not what it said ("the user asked
# to forget", 用户要求删除): left out when looking for what a reason shares with a memory.
_REASON_GENERIC = frozenset({"user", "用户", "ask", "forget", "eras", "delet", "remov", "request", "memori",
                             "remember", "忘记", "删除", "要求", "记住", "记忆", "请求"})


def reason_quotes(reason: str, words: list[str]) -> bool:
    """Whether an audit reason says something of a forgotten memory (`words`: node_words): one
    of them whole (quotes); a word sharing its first five letters with one of theirs ("pregnancy"
    in "erase: pregnancy" for "Caroline is pregnant"); the digits of a number of theirs, however
    written ("138-0000-1111" for 13800001111); or a Chinese character of theirs that is no
    function word (虾 in 删除虾的信息 for 用户对虾过敏). The owner and the act ("user", 用户,
    "forget", 删除…) do not count. Errs towards redacting: a hard forget keeps who and when, and
    why only when the why tells nothing of what was forgotten."""
    from memory.search.text import CJK_RANGES, CJK_STOP_CHARACTERS, normalize, query_tokens

    if quotes(reason, words):
        return True
    said = normalize(reason).replace("用户", " ")
    memory = normalize(" ".join(words)).replace("用户", " ")
    latin = {token for token in query_tokens(said, None) if token.isalpha() and token.isascii()} - _REASON_GENERIC
    theirs = {token for token in query_tokens(memory, None) if token.isalpha() and token.isascii()}
    if any(len(mine) >= 5 and len(other) >= 5 and mine[:5] == other[:5] or mine == other
           for mine in latin for other in theirs):
        return True
    digits = re.sub(r"\D", "", said)
    if digits and any(run in digits for run in re.findall(r"\d{4,}", re.sub(r"(?<=\d)[\s.\-/()]+(?=\d)", "", memory))):
        return True
    generic = set("".join(word for word in _REASON_GENERIC if not word.isascii()))
    characters = set(re.findall(f"[{CJK_RANGES}]", said)) - CJK_STOP_CHARACTERS - generic
    return not characters.isdisjoint(memory)


def audit_redact_node(*, principal: Principal, node_id: int, words: list[str] = ()) -> int:
    """Remove what a node remembered from its earlier audit payloads, and the reasons that quote
    it (`words`: node_words; an agent's "用户说对花生过敏" stayed after a hard forget); returns
    rows changed.

    The events stay (who, when, which status, and why unless the why says what was forgotten),
    the content goes (R-STORE hard delete).
    """
    changed = 0
    for event in AuditEvent.objects.filter(team=principal.team, node_id=node_id):
        payload = dict(event.payload or {})
        redacted = False
        for section in ("node", "before", "after", "changes"):
            part = payload.get(section)
            if isinstance(part, dict):
                for field in CONTENT_FIELDS:
                    if field in part:
                        part[field] = FORGOTTEN
                        redacted = True
        fields = []
        if redacted:
            payload["redacted"] = True
            event.payload = payload
            fields.append("payload")
        if words and reason_quotes(event.reason, words):
            event.reason = FORGOTTEN
            fields.append("reason")
        if fields:
            event.save(update_fields=fields)
            changed += 1
    return changed


MERGED_EVENT = "memory.node.merged"  # a duplicate folded into another node; payload["merged_into"] names it


def audit_merge_survivors(*, team_id: int, node_ids: list[int]) -> dict[int, int]:
    """{id: the node it was merged into} for the nodes of `node_ids` folded away as duplicates,
    read from their `memory.node.merged` events (the reverse of audit_merged_into)."""
    if not node_ids:
        return {}
    events = AuditEvent.objects.filter(team_id=team_id, event_type=MERGED_EVENT, node_id__in=list(node_ids))
    return {int(pk): target for pk, target in events.values_list("node_id", "payload__merged_into")
            if isinstance(target, int)}


def audit_merged_into(*, team_id: int, node_ids: list[int]) -> list[int]:
    """Ids of the nodes merged into any of `node_ids` (memory.capture.consolidate), read from
    their `memory.node.merged` events: a duplicate says what its survivor says, so forgetting
    the survivor for good takes them along."""
    if not node_ids:
        return []
    events = AuditEvent.objects.filter(team_id=team_id, event_type=MERGED_EVENT, node_id__isnull=False,
                                       payload__merged_into__in=list(node_ids))
    return sorted(set(events.values_list("node_id", flat=True)))
