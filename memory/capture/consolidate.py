"""Consolidation, the distiller's second channel (seed 004 UserMemoryDistiller: 合并 and 压缩;
R-EXTRACT consolidation): duplicates merge into one node, and a user's profile document is
rebuilt from their active user-scope nodes. Background work, audited as system:consolidation.

Duplicates (nodes_merge_duplicates) are the ones the slot index (node_active_slot_unique)
lets through, among the active nodes of one owner (a user's user-scope nodes, a workspace's
workspace-scope nodes, a conversation's session-scope nodes), grouped by whether they expire:
- keyless notes of one domain and type whose title and content read the same as a write
  compares them (memory.services.node_input.note_text: full/half width, case,
  traditional/simplified, spacing and the marks that only punctuate a sentence aside):
  用户不吃香菜 / 用户不吃香菜。 / 「用户 不吃香菜」. A write refuses such a twin, so they come from
  stores written before it did (migration 0021 left them active, each with a slot of its
  own); a lone such twin takes its note's slot once no other active copy holds it;
- keyed nodes of one domain with the same key and the same value (canonical JSON) stored
  under different types (a preference and a constraint `avoid_ingredient = 香菜`).
The oldest node of a group survives. It gains the others' source messages (in order, no
repeats, at most limits.NODE_SOURCES_MAX), tags and entities (united, first seen first, at
most limits.NODE_LIST_ITEMS_MAX), the highest confidence and importance, `explicit` when any
was stated by the user, and the latest expiry of a group that expires; its title and content
stay as they are (never concatenated). It is audited `memory.node.updated` with the ids it
absorbed. Each other node becomes `deleted` with a `memory.node.merged` event naming the
survivor; it keeps its own source links, so forgetting its conversation still finds it, and
forgetting the survivor for good takes it along (memory.services.forgetting). Node.supersedes
is one-to-one, so a merge is not a supersede.

The profile (profile_consolidate) follows the seed's distiller: a new version after
limits.PROFILE_CONSOLIDATE_AT (8) notes — the user's user-scope nodes created or changed
since the last consolidation, whatever their status now — and not within
limits.PROFILE_COOLDOWN_SECONDS (10 minutes) of the last version, unless forced; the layout
and compaction are memory.services.profiles'. With MEMORY_LLM_BASE_URL set, the language model
may rewrite the same lines into prose; any failure keeps the deterministic text.
"""

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_scopes import scope

from accounts.models import Team
from accounts.principal import Principal, system_principal
from memory import limits
from memory.capture.base import ExtractorError
from memory.capture.llm_client import LLMConfig, chat_json
from memory.models import Node, NodeSource, NodeStatus, Scope
from memory.profile_models import ProfileGenerator, UserProfile, UserProfileVersion
from memory.selectors.nodes import status_q
from memory.services.audit import MERGED_EVENT, audit_record
from memory.services.node_input import conflict_slot, node_search_tokens, note_text
from memory.services.profiles import (
    COMPACT_BUDGET,
    ProfileDraft,
    profile_draft,
    profile_lock,
    profile_version_append,
)
from memory.validation import clean_identity, text_problem

ACTOR = "consolidation"


@dataclass(frozen=True)
class Merge:
    """One group of duplicates: the node that stayed and the ones folded into it.
    `match` is "text" (near-identical keyless notes) or "value" (same key and value)."""

    survivor_id: int
    merged_ids: list[int]
    match: str


@dataclass
class ProfileConsolidation:
    """The outcome of profile_consolidate: the new version, or why none was written —
    `skipped` is "below_threshold", "cooldown", "empty" (no memories, no profile yet) or
    "unchanged" (the current version has the same lines). `changed` counts the notes since the
    last consolidation."""

    version: UserProfileVersion | None
    changed: int
    skipped: str = ""


@dataclass
class ConsolidationReport:
    merges: list[Merge] = field(default_factory=list)
    profile: ProfileConsolidation | None = None


def _group_key(node: Node) -> tuple | None:
    expiring = node.expires_at is not None
    if node.key:
        return ("value", node.domain, node.key, node.value_hash, expiring)
    if not any(ch.isalnum() for ch in node.title + node.content):
        return None  # nothing but punctuation or symbols: too little to call two notes the same
    # the same note as a write compares it (its conflict slot), so a merge never joins notes
    # that a write would keep apart
    return ("text", node.domain, node.type, note_text(node.title), note_text(node.content), expiring)


def _united(lists: list[list[Any]], cap: int) -> list[Any]:
    return list(dict.fromkeys(item for values in lists for item in values))[:cap]


def _merge(principal: Principal, group: list[Node], now: datetime, match: str) -> Merge:
    survivor, duplicates = group[0], group[1:]
    before = {"tags": list(survivor.tags), "entities": list(survivor.entities), "confidence": survivor.confidence,
              "importance": survivor.importance, "explicit": survivor.explicit,
              "expires_at": survivor.expires_at.isoformat() if survivor.expires_at else None}
    survivor.tags = _united([node.tags for node in group], limits.NODE_LIST_ITEMS_MAX)
    survivor.entities = _united([node.entities for node in group], limits.NODE_LIST_ITEMS_MAX)
    survivor.confidence = max(node.confidence for node in group)
    survivor.importance = max(node.importance for node in group)
    survivor.explicit = any(node.explicit for node in group)
    if survivor.expires_at is not None:
        survivor.expires_at = max(node.expires_at for node in group)
    links = list(NodeSource.objects.filter(node__in=group).order_by("position", "pk").values_list("node_id", "message_id"))
    held = [message for node_id, message in links if node_id == survivor.pk]
    ordered = held + [message for node in duplicates for node_id, message in links if node_id == node.pk]
    added = [message for message in dict.fromkeys(ordered) if message not in held][
        : max(0, limits.NODE_SOURCES_MAX - len(held))]
    NodeSource.objects.bulk_create([NodeSource(node=survivor, message_id=message, position=len(held) + index)
                                    for index, message in enumerate(added)])
    survivor.version += 1
    survivor.updated_at = now
    survivor.search_tokens = node_search_tokens(survivor)
    survivor.save(update_fields=["tags", "entities", "confidence", "importance", "explicit", "expires_at",
                                 "version", "updated_at", "search_tokens"])
    merged_ids = [node.pk for node in duplicates]
    for node in duplicates:
        node.status = NodeStatus.DELETED
        node.updated_at = now
        node.save(update_fields=["status", "updated_at"])
        audit_record(principal=principal, event_type=MERGED_EVENT, node=node, reason=f"duplicate of node {survivor.pk}",
                     payload={"merged_into": survivor.pk, "previous_status": NodeStatus.ACTIVE, "match": match})
    slot_taken = _take_note_slot(survivor)
    after = {"tags": survivor.tags, "entities": survivor.entities, "confidence": survivor.confidence,
             "importance": survivor.importance, "explicit": survivor.explicit,
             "expires_at": survivor.expires_at.isoformat() if survivor.expires_at else None}
    changed = [name for name in before if before[name] != after[name]]
    audit_record(
        principal=principal, event_type="memory.node.updated", node=survivor,
        reason=f"merged {len(merged_ids)} duplicate{'s' if len(merged_ids) > 1 else ''}",
        payload={"before": {name: before[name] for name in changed}, "after": {name: after[name] for name in changed},
                 "version": survivor.version, "rule": "merge_duplicates", "match": match, "absorbed": merged_ids,
                 "source_message_ids_added": added, "slot_taken": slot_taken},
    )
    return Merge(survivor_id=survivor.pk, merged_ids=merged_ids, match=match)


def _take_note_slot(node: Node) -> bool:
    """A keyless active note that holds a slot of its own (legacy:<id>, migration 0021) takes
    the slot its text gives once no other active node holds it — a twin just merged into it,
    or one deleted, expired or superseded since — so the next write of the same note finds it
    instead of adding a twin again. Returns whether it did."""
    if node.key or not node.slot.startswith("legacy:"):
        return False
    slot = conflict_slot(key="", value=None, cardinality="one", title=node.title, content=node.content)
    holders = Node.objects.filter(team_id=node.team_id, status=NodeStatus.ACTIVE, session_id=node.session_id,
                                  scope=node.scope, workspace_id=node.workspace_id, user_id=node.user_id,
                                  domain=node.domain, type=node.type, key="", slot=slot)
    if holders.exists():
        return False
    node.slot = slot
    node.save(update_fields=["slot"])
    return True


def nodes_merge_duplicates(*, team: Team, user_id: str = "", workspace_id: str = "", session_id: int | None = None,
                           now: datetime | None = None) -> list[Merge]:
    """Merge the duplicate active nodes (see the module doc) of `user_id`'s user-scope
    memory, of `workspace_id`'s workspace-scope memory and of the session-scope memory of the
    session whose primary key is `session_id` (the team's), one transaction per owner; with
    none, nothing (global memory is curated by admins). Returns the merges by survivor id.
    Raises InvalidInput for a malformed id."""
    user_id = clean_identity(user_id, field="user_id")
    workspace_id = clean_identity(workspace_id, field="workspace_id")
    owners = []
    if user_id:
        owners.append(Q(scope=Scope.USER, user_id=user_id))
    if workspace_id:
        owners.append(Q(scope=Scope.WORKSPACE, workspace_id=workspace_id))
    if session_id is not None:
        owners.append(Q(scope=Scope.SESSION, session_id=session_id))
    principal = system_principal(team, ACTOR)
    merges: list[Merge] = []
    for owner in owners:
        with scope(team=team), transaction.atomic():
            moment = now or timezone.now()
            nodes = list(Node.objects.select_for_update().filter(owner, status_q(NodeStatus.ACTIVE, moment), team=team)
                         .order_by("pk"))
            groups: dict[tuple, list[Node]] = {}
            for node in sorted(nodes, key=lambda node: (node.created_at, node.pk)):
                key = _group_key(node)
                if key is not None:
                    groups.setdefault(key, []).append(node)
            for key, group in groups.items():
                if len(group) > 1:
                    merges.append(_merge(principal, group, moment, match=key[0]))
            for node in nodes:  # a twin kept apart by migration 0021 whose slot is free again
                if node.status == NodeStatus.ACTIVE and _take_note_slot(node):
                    audit_record(principal=principal, event_type="memory.node.updated", node=node,
                                 reason="takes its note's slot: no other active copy holds it",
                                 payload={"rule": "note_slot", "before": {"slot": "legacy"}, "after": {"slot": node.slot}})
    return sorted(merges, key=lambda merge: merge.survivor_id)


def _changed_since(team: Team, user_id: str, since: datetime | None) -> int:
    nodes = Node.objects.filter(team=team, scope=Scope.USER, user_id=user_id)
    if since is not None:
        nodes = nodes.filter(updated_at__gt=since)
    return nodes.count()


def _active_user_nodes(team: Team, user_id: str, now: datetime) -> list[Node]:
    return list(Node.objects.filter(status_q(NodeStatus.ACTIVE, now), team=team, scope=Scope.USER, user_id=user_id))


PROFILE_PROMPT = (
    "You keep the profile document of one end user for an AI agent. You get the user's memories as JSON lines, "
    "each with a group heading, best first. Answer with one JSON object {\"summary\": string, \"content\": "
    "string}: content rewrites every line under its group heading (\"## group\"), in the lines' own language, "
    f"adding nothing that the lines do not say, at most {COMPACT_BUDGET} characters; summary is the few most "
    f"important points in at most {limits.PROFILE_SUMMARY_MAX} characters."
)


def _llm_text(draft: ProfileDraft) -> tuple[str, str] | None:
    """(summary, content) written by the configured language model from the draft's lines,
    or None without an endpoint, on ExtractorError, or for an answer out of shape or budget."""
    config = LLMConfig.from_settings()
    if config is None or not draft.lines:
        return None
    lines = [{"group": line.group, "text": line.text} for line in draft.lines]
    try:
        answer = chat_json(config, system=PROFILE_PROMPT, user=json.dumps({"lines": lines}, ensure_ascii=False))
    except ExtractorError:
        return None
    summary, content = answer.get("summary"), answer.get("content")
    if not isinstance(summary, str) or not isinstance(content, str) or not content.strip():
        return None
    summary, content = summary.strip(), content.strip()
    if len(summary) > limits.PROFILE_SUMMARY_MAX or len(content) > COMPACT_BUDGET:
        return None
    if text_problem(summary) or text_problem(content):
        return None
    return summary, content


def _due(current: UserProfileVersion | None, changed: int, now: datetime, force: bool) -> str:
    """"" when a version may be written now, else why not."""
    if force:
        return ""
    if changed < limits.PROFILE_CONSOLIDATE_AT:
        return "below_threshold"
    if current is not None and now - current.created_at < timedelta(seconds=limits.PROFILE_COOLDOWN_SECONDS):
        return "cooldown"
    return ""


def _plan(team: Team, user_id: str, now: datetime, force: bool) -> ProfileDraft | None:
    """The draft a consolidation would write now, read without locks (for the language model), or None."""
    profile = UserProfile.objects.filter(team=team, user_id=user_id).first() or UserProfile(team=team, user_id=user_id)
    if _due(_current(profile), _changed_since(team, user_id, profile.last_consolidated_at), now, force):
        return None
    return profile_draft(_active_user_nodes(team, user_id, now))


def _current(profile: UserProfile) -> UserProfileVersion | None:
    if not profile.current_version:
        return None
    return UserProfileVersion.objects.filter(team=profile.team, user_id=profile.user_id,
                                             version=profile.current_version).first()


def profile_consolidate(*, team: Team, user_id: str, force: bool = False,
                        now: datetime | None = None) -> ProfileConsolidation:
    """Write the next version of `user_id`'s profile when it is due (see the module doc);
    `force` skips the threshold and the cooldown. `now` (default: the current time) stamps
    the version and measures the cooldown. Returns ProfileConsolidation. Raises InvalidInput
    for a malformed user_id.

    The language model, when configured, is asked outside the database transaction; its text
    is used only if the user's memories did not change meanwhile.
    """
    user_id = clean_identity(user_id, field="user_id", required=True)
    now = now or timezone.now()
    principal = system_principal(team, ACTOR)
    with scope(team=team):
        planned = _plan(team, user_id, now, force) if LLMConfig.from_settings() is not None else None
        written = _llm_text(planned) if planned is not None else None
        with transaction.atomic():
            profile = profile_lock(team=team, user_id=user_id)
            current = _current(profile)
            changed = _changed_since(team, user_id, profile.last_consolidated_at)
            skipped = _due(current, changed, now, force)
            if skipped:
                return ProfileConsolidation(version=None, changed=changed, skipped=skipped)
            draft = profile_draft(_active_user_nodes(team, user_id, now))
            if written is not None and planned is not None and planned.lines == draft.lines:
                draft.summary, draft.content = written
                draft.generator = ProfileGenerator.LLM
            if not draft.lines and current is None:
                skipped = "empty"
            elif current is not None and current.lines == [line.as_json() for line in draft.lines]:
                skipped = "unchanged"  # the same memories, laid out the same way
            if skipped:
                profile.last_consolidated_at = now
                profile.save(update_fields=["last_consolidated_at"])
                return ProfileConsolidation(version=None, changed=changed, skipped=skipped)
            version = profile_version_append(principal=principal, profile=profile, draft=draft, now=now,
                                             extra={"changed_notes": changed})
    return ProfileConsolidation(version=version, changed=changed)


def consolidation_run(*, team: Team, user_id: str = "", workspace_id: str = "", session_id: int | None = None,
                      force: bool = False, now: datetime | None = None) -> ConsolidationReport:
    """The whole consolidation for one owner, as a background job runs it: merge duplicates
    (user, workspace and session memory), then the user's profile when it is due."""
    report = ConsolidationReport(merges=nodes_merge_duplicates(team=team, user_id=user_id, workspace_id=workspace_id,
                                                               session_id=session_id, now=now))
    if user_id:
        # A duplicate folded away may be the one the profile's line names (the survivor left out by
        # compaction): the document is laid out again now, not after 8 more changes.
        merged = {pk for merge in report.merges for pk in merge.merged_ids}
        force = force or _profile_names(team, user_id, merged)
        report.profile = profile_consolidate(team=team, user_id=user_id, force=force, now=now)
    return report


def _profile_names(team: Team, user_id: str, node_ids: set[int]) -> bool:
    """Whether the current version of `user_id`'s profile has a line of one of `node_ids`."""
    if not node_ids:
        return False
    with scope(team=team):
        profile = UserProfile.objects.filter(team=team, user_id=user_id).first()
        current = _current(profile) if profile is not None else None
    return current is not None and not node_ids.isdisjoint(current.source_node_ids)
