"""Rewriting the ids inside imported audit payloads and profile lines (docs/export.md).

Audit payloads name nodes and messages by id (a node's snapshot, `superseded_by`,
`merged_into` — which forgetting reads, memory.services.audit.audit_merged_into — lists of
node or message ids). After an import those ids must be the new ones. An id that is not in
the file (a node forgotten for good before the export, or outside a workspace's or user's
export) becomes null in a scalar and leaves a list; the event's own `imported` marker keeps
the source ids of the event and of its node.
"""

from typing import Any

NODE_SCALARS = frozenset({"superseded_by", "merged_into", "duplicate_of", "restored_from", "supersedes_id"})
NODE_LISTS = frozenset({"node_ids", "kept_node_ids", "used_node_ids"})
MESSAGE_LISTS = frozenset({"message_ids", "source_message_ids"})
SNAPSHOT_SECTIONS = ("node", "before", "after")


def _one(value: Any, ids: dict[int, int]) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return ids.get(value)
    return value


def _many(value: Any, ids: dict[int, int]) -> Any:
    if not isinstance(value, list):
        return value
    return [ids[item] for item in value if isinstance(item, int) and not isinstance(item, bool) and item in ids]


def remap_payload(payload: Any, ids: dict[str, dict[int, int]]) -> Any:
    """A copy of an audit `payload` with its node and message ids mapped through `ids`
    (record type → source id → new id). Other values are kept as they are."""
    if not isinstance(payload, dict):
        return payload
    nodes, messages = ids["node"], ids["message"]
    result: dict[str, Any] = {}
    for key, value in payload.items():
        if key in NODE_SCALARS:
            value = _one(value, nodes)
        elif key in NODE_LISTS:
            value = _many(value, nodes)
        elif key in MESSAGE_LISTS:
            value = _many(value, messages)
        elif key in SNAPSHOT_SECTIONS and isinstance(value, dict):
            value = dict(value)
            if "id" in value:
                value["id"] = _one(value["id"], nodes)
            if "supersedes_id" in value:
                value["supersedes_id"] = _one(value["supersedes_id"], nodes)
        result[key] = value
    return result


def remap_profile_lines(lines: Any, nodes: dict[int, int]) -> Any:
    """Profile version lines [{node_id, …}] with node ids mapped; a line whose node is not in
    the file keeps its text with node_id null (forgetting that node can no longer find it)."""
    if not isinstance(lines, list):
        return lines
    return [{**line, "node_id": _one(line.get("node_id"), nodes)} if isinstance(line, dict) else line
            for line in lines]
