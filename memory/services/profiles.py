"""Writing the user profile document (seed 004 L2 长期用户记忆; R-EXTRACT consolidation, R-STORE forgetting).

A version is laid out from lines, one per active user-scope node of the user: `title:
content` (the title alone when the content adds nothing), at most limits.PROFILE_LINE_MAX
characters, grouped under a heading per domain and category path. Nodes are ranked by
importance, then recency (updated_at), then id, all descending; groups follow their best
line, lines their rank. The summary is the titles in rank order within
limits.PROFILE_SUMMARY_MAX characters. The same nodes always give the same text.

Past limits.PROFILE_COMPACT_RATIO × limits.PROFILE_CONTENT_MAX characters (6400) the
content is compacted: the best-ranked lines that fit the budget are kept, the others left
out, and the version says reason `compact`.

Versions are append-only: consolidation (memory.capture.consolidate) and rollback add one;
nothing deletes one. Forgetting a node for good takes its line out of every version that
has it (profile_forget_nodes), in the transaction of the forget.
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone
from django_scopes import scope

from accounts.models import Team
from accounts.principal import Principal, system_principal
from memory import limits
from memory.errors import NotFound
from memory.models import Node, Scope
from memory.profile_models import ProfileGenerator, ProfileReason, UserProfile, UserProfileVersion
from memory.search.text import normalize
from memory.services.audit import audit_record
from memory.validation import clean_identity, clean_text

COMPACT_BUDGET = int(limits.PROFILE_CONTENT_MAX * limits.PROFILE_COMPACT_RATIO)  # characters
SUMMARY_SEPARATOR = "; "
UNKNOWN_NODE = -1  # ProfileLine.read: a stored line whose node_id names no node
ELLIPSIS = "…"


@dataclass(frozen=True)
class ProfileLine:
    """One node's line of a profile version. `rank` 0 is the most important node."""

    node_id: int
    group: str
    title: str
    text: str
    rank: int

    def as_json(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "group": self.group, "title": self.title, "text": self.text,
                "rank": self.rank}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ProfileLine":
        return cls(node_id=int(data["node_id"]), group=str(data["group"]), title=str(data["title"]),
                   text=str(data["text"]), rank=int(data["rank"]))

    @classmethod
    def read(cls, data: Any) -> "ProfileLine | None":
        """A stored line, leniently: None for one that is no line (not an object, no title); a
        node_id that names no node (null from an import whose file lacked the node, a string
        of no number) reads as UNKNOWN_NODE, so the line is kept but never matched."""
        if not isinstance(data, dict) or not isinstance(data.get("title"), str):
            return None
        try:
            node_id = int(data.get("node_id"))
        except (TypeError, ValueError):
            node_id = UNKNOWN_NODE
        try:
            rank = int(data.get("rank", 0))
        except (TypeError, ValueError):
            rank = 0
        title = data["title"]
        return cls(node_id=node_id, group=str(data.get("group") or ""), title=title,
                   text=data["text"] if isinstance(data.get("text"), str) else title, rank=rank)


@dataclass
class ProfileDraft:
    """What a new version will hold. `dropped_node_ids`: nodes left out by compaction."""

    summary: str
    content: str
    lines: list[ProfileLine]
    reason: str = ProfileReason.CONSOLIDATE
    generator: str = ProfileGenerator.RULES
    dropped_node_ids: list[int] = field(default_factory=list)

    @property
    def source_node_ids(self) -> list[int]:
        return [line.node_id for line in self.lines]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(ELLIPSIS)] + ELLIPSIS


def _one_line(text: str) -> str:
    return " ".join(text.split())


def group_label(node: Node) -> str:
    """`domain / category / …`; a category path that starts with the domain is not repeated."""
    path = [part for part in node.category_path if part]
    parts = path if path and path[0] == node.domain else [node.domain, *path]
    return " / ".join(parts)


def profile_title(title: str) -> str:
    """A node's title as its profile line holds it: one line, at most 200 characters."""
    return _clip(_one_line(title), 200)


def line_text(node: Node) -> str:
    return line_text_of(node.title, node.content)


def line_text_of(title: str, content: str | None) -> str:
    """A profile line's text: `title: content` on one line (the title alone when the content adds
    nothing), at most limits.PROFILE_LINE_MAX characters."""
    title, content = _one_line(title), _one_line(content or "")
    if not content or normalize(content) == normalize(title):
        return _clip(title, limits.PROFILE_LINE_MAX)
    return _clip(f"{title}: {content}", limits.PROFILE_LINE_MAX)


def profile_lines(nodes: list[Node]) -> list[ProfileLine]:
    """The lines of `nodes`, ranked (importance, updated_at, id; descending), in document order:
    groups by their best line, lines by rank within a group."""
    ranked = sorted(nodes, key=lambda node: (node.importance, node.updated_at, node.pk), reverse=True)
    lines = [ProfileLine(node_id=node.pk, group=group_label(node), title=profile_title(node.title),
                         text=line_text(node), rank=rank) for rank, node in enumerate(ranked)]
    return document_order(lines)


def document_order(lines: list[ProfileLine]) -> list[ProfileLine]:
    best: dict[str, int] = {}
    for line in sorted(lines, key=lambda line: line.rank):
        best.setdefault(line.group, line.rank)
    return sorted(lines, key=lambda line: (best[line.group], line.rank))


def render_content(lines: list[ProfileLine]) -> str:
    """Markdown-like text: a `## group` heading, then `- line` per line; groups apart by a blank line."""
    blocks: list[str] = []
    group = None
    for line in lines:
        if line.group != group:
            group = line.group
            blocks.append(f"## {group}")
        blocks[-1] += f"\n- {line.text}"
    return "\n\n".join(blocks)


def render_summary(lines: list[ProfileLine]) -> str:
    """The titles by rank, `; ` apart, as many whole titles as fit limits.PROFILE_SUMMARY_MAX."""
    summary = ""
    for line in sorted(lines, key=lambda line: line.rank):
        candidate = f"{summary}{SUMMARY_SEPARATOR}{line.title}" if summary else line.title
        if len(candidate) > limits.PROFILE_SUMMARY_MAX:
            break
        summary = candidate
    return summary


def compact(lines: list[ProfileLine], *, budget: int = COMPACT_BUDGET) -> tuple[list[ProfileLine], list[int]]:
    """The best-ranked lines whose rendered content fits `budget` characters (document order),
    and the ids of the nodes left out."""
    kept: list[ProfileLine] = []
    dropped: list[int] = []
    for line in sorted(lines, key=lambda line: line.rank):
        trial = document_order([*kept, line])
        if len(render_content(trial)) <= budget:
            kept = trial
        else:
            dropped.append(line.node_id)
    return kept, dropped


def profile_draft(nodes: list[Node]) -> ProfileDraft:
    """The deterministic version for `nodes` (see the module doc), compacted when over budget."""
    lines = profile_lines(nodes)
    content = render_content(lines)
    if len(content) <= COMPACT_BUDGET:
        return ProfileDraft(summary=render_summary(lines), content=content, lines=lines)
    kept, dropped = compact(lines)
    return ProfileDraft(summary=render_summary(kept), content=render_content(kept), lines=kept,
                        reason=ProfileReason.COMPACT, dropped_node_ids=dropped)


def profile_lock(*, team: Team, user_id: str) -> UserProfile:
    """The user's profile row, created on first use and locked for the caller's transaction
    (so that two writers number their versions one after the other). Must run inside a transaction."""
    profile, _ = UserProfile.objects.select_for_update().get_or_create(team=team, user_id=user_id)
    return profile


def profile_version_append(
    *, principal: Principal, profile: UserProfile, draft: ProfileDraft, now: datetime,
    rolled_back_from: int | None = None, consolidated: bool = True, extra: dict[str, Any] | None = None,
) -> UserProfileVersion:
    """Append version current + 1 of `profile` (locked by the caller) from `draft` and make it
    current; audited `memory.profile.versioned` (ids and sizes only, never the text)."""
    version = UserProfileVersion.objects.create(
        team=profile.team, user_id=profile.user_id, version=profile.current_version + 1,
        summary=draft.summary, content=draft.content, lines=[line.as_json() for line in draft.lines],
        source_node_ids=draft.source_node_ids, reason=draft.reason, generator=draft.generator,
        rolled_back_from=rolled_back_from, actor=principal.actor, created_at=now,
    )
    profile.current_version = version.version
    profile.updated_at = now
    if consolidated:
        profile.last_consolidated_at = now
    profile.save(update_fields=["current_version", "updated_at", "last_consolidated_at"])
    audit_record(
        principal=principal, event_type="memory.profile.versioned", user_id=profile.user_id,
        reason={ProfileReason.ROLLBACK: f"rollback to version {rolled_back_from}",
                ProfileReason.COMPACT: "consolidated and compacted to the content budget"}.get(
                    draft.reason, "consolidated from the user's memories"),
        payload={"version": version.version, "reason": draft.reason, "generator": draft.generator,
                 "source_node_ids": draft.source_node_ids, "dropped_node_ids": draft.dropped_node_ids,
                 "content_chars": len(draft.content), "summary_chars": len(draft.summary),
                 "rolled_back_from": rolled_back_from, **(extra or {})},
    )
    return version


def _check_reach(principal: Principal) -> None:
    """A key limited to an empty list of workspaces reads and writes no user memory (S09)."""
    if principal.workspace_ids is not None and not principal.workspace_ids:
        raise NotFound("no profile for this user")


def profile_rollback(*, principal: Principal, user_id: str, version: int, reason: str = "") -> UserProfileVersion:
    """Make an earlier version current again by appending a copy of it (reason `rollback`,
    `rolled_back_from` = `version`): version N+1 equals version `version`; no version is
    deleted. Audited with the caller as actor.

    Raises InvalidInput (bad user_id or reason), AccessDenied (no right to write user
    memory), NotFound (no such version for this user in the principal's team).
    """
    user_id = clean_identity(user_id, field="user_id", required=True)
    clean_text(reason, field="reason", max_length=limits.REASON_MAX)
    _check_reach(principal)
    principal.check_write_scope(Scope.USER)
    with transaction.atomic():
        profile = UserProfile.objects.select_for_update().filter(team=principal.team, user_id=user_id).first()
        old = None
        if profile is not None:
            old = UserProfileVersion.objects.filter(team=principal.team, user_id=user_id, version=version).first()
        if old is None:
            raise NotFound(f"no version {version} of the profile of user {user_id!r}")
        draft = ProfileDraft(summary=old.summary, content=old.content,
                             lines=[ProfileLine.from_json(item) for item in old.lines],
                             reason=ProfileReason.ROLLBACK, generator=old.generator)
        return profile_version_append(principal=principal, profile=profile, draft=draft, now=timezone.now(),
                                      rolled_back_from=old.version, consolidated=False,
                                      extra={"note": reason} if reason else None)


def profile_forget_nodes(*, team: Team, node_ids: list[int], principal: Principal | None = None) -> int:
    """Take the lines of `node_ids` out of every profile version that has them (R-STORE hard
    delete: nothing forgotten stays in a profile). A version laid out by rules is re-laid
    from its remaining lines; one written by the language model is replaced by the rules
    layout of its remaining lines, as its text cannot be split by node. Returns the number of
    versions changed; audited `memory.profile.redacted` per user (ids only), with
    `principal` (default system:forget) as actor.

    Call it in the transaction of the forget, while the nodes still exist (their owners
    narrow the search); ids of nodes already gone make it look through every version of the team.
    """
    wanted = {int(pk) for pk in node_ids}
    if not wanted:
        return 0
    principal = principal or system_principal(team, "forget")
    changed = 0
    with scope(team=team), transaction.atomic():
        owners = list(Node.objects.filter(team=team, pk__in=wanted).values_list("scope", "user_id"))
        versions = UserProfileVersion.objects.filter(team=team)
        if len(owners) == len(wanted):
            users = sorted({user for node_scope, user in owners if node_scope == Scope.USER and user})
            if not users:
                return 0
            versions = versions.filter(user_id__in=users)
        hits = [pk for pk, sources in versions.values_list("pk", "source_node_ids").iterator(chunk_size=500)
                if wanted.intersection(sources)]
        by_user: dict[str, list[int]] = {}
        now = timezone.now()
        for version in UserProfileVersion.objects.select_for_update().filter(pk__in=hits).order_by("pk"):
            kept = [line for line in map(ProfileLine.read, version.lines) if line is not None and line.node_id not in wanted]
            version.lines = [line.as_json() for line in kept]
            version.source_node_ids = [pk for pk in version.source_node_ids if pk not in wanted]
            version.content = render_content(kept)
            version.summary = render_summary(kept)
            version.generator = ProfileGenerator.RULES
            version.redacted_at = now
            version.save(update_fields=["lines", "source_node_ids", "content", "summary", "generator", "redacted_at"])
            by_user.setdefault(version.user_id, []).append(version.version)
            changed += 1
        for user_id, numbers in sorted(by_user.items()):
            audit_record(principal=principal, event_type="memory.profile.redacted", user_id=user_id,
                         reason="forgotten memories taken out of the profile",
                         payload={"versions": numbers, "node_ids": sorted(wanted)})
    return changed

