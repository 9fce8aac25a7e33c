"""The memory store (seed 000 核心数据模型 / SQLite 落地方案, R-STORE).

Four tables of the seed — messages, summaries, nodes, audit events — plus the session
they hang from, the hit ledger and the stored answers of writes sent with an
Idempotency-Key. Every row carries `team`; the default manager of each model is scoped by
django-scopes, so a query outside `scope(team=...)` raises instead of reading across teams.

Identity strings (workspace_id, user_id, session_id) are the agent's own, namespaced by
team: a session is keyed by (team, workspace_id, user_id, session_id), so two users or two
teams that both say "s1" talk about different sessions.
"""

from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models.functions import Coalesce
from django.utils import timezone
from django_scopes import ScopedManager

from accounts.models import AgentKey, Team
from memory.search.fields import SearchTokensField


def TeamScopedManager():  # noqa: N802 - reads like a class at the use site
    return ScopedManager(team="team")


class Scope(models.TextChoices):
    SESSION = "session"
    WORKSPACE = "workspace"
    USER = "user"
    GLOBAL = "global"


# Retrieval priority: narrower scope first (R-TEN, seed 000 查询优先级).
SCOPE_PRIORITY = {Scope.SESSION: 0, Scope.WORKSPACE: 1, Scope.USER: 2, Scope.GLOBAL: 3}


class NodeType(models.TextChoices):
    PREFERENCE = "preference"
    FACT = "fact"
    DECISION = "decision"
    TASK = "task"
    RECIPE = "recipe"
    SKILL = "skill"
    CONSTRAINT = "constraint"
    CORRECTION = "correction"


class NodeStatus(models.TextChoices):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    EXPIRED = "expired"
    DELETED = "deleted"


class MessageRole(models.TextChoices):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class Session(models.Model):
    """One conversation, keyed by the agent's ids within the team."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    workspace_id = models.CharField(max_length=128, blank=True, default="")
    user_id = models.CharField(max_length=128, blank=True, default="")
    external_id = models.CharField(max_length=128)
    created_at = models.DateTimeField(default=timezone.now)
    last_message_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    objects = TeamScopedManager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["team", "workspace_id", "user_id", "external_id"], name="session_owner_unique"
            )
        ]
        indexes = [models.Index(fields=["team", "workspace_id", "user_id", "last_message_at"], name="session_owner_idx")]

    def __str__(self) -> str:
        return self.external_id


SPEAKER_NAME_MAX = 64


def speaker_name(metadata: Any) -> str:
    """The speaker's name an agent gave in a message's metadata (`speaker`, else `name`), or ""."""
    if not isinstance(metadata, dict):
        return ""
    name = metadata.get("speaker") or metadata.get("name")
    return name if isinstance(name, str) and 0 < len(name) <= SPEAKER_NAME_MAX else ""


# A hard forget's mark on the turns its memory was taken from (Message.memory_forgotten_at): earlier
# than any forget, so no restore clears it (memory.services.forgotten_turns).
HIDDEN_FOR_GOOD = datetime(1970, 1, 1, tzinfo=UTC)

# A message the context block never shows: the agent's own instructions, or a turn a forgotten
# memory was taken from (memory.services.forgotten_turns).
UNSHOWN_MESSAGE = models.Q(role="system") | models.Q(memory_forgotten_at__isnull=False)


class Message(models.Model):
    """An append-only turn of a conversation (seed memory_messages).

    Order within a session is the server sequence (`id`), which is stable when
    timestamps tie and when a client sends a late `occurred_at`.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="messages")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    role = models.CharField(max_length=16, choices=MessageRole.choices)
    content = models.TextField()
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    occurred_at = models.DateTimeField(null=True, blank=True)
    # When a memory taken from this turn was forgotten: the turn is not recalled as an earlier
    # message any more (memory.services.nodes.node_delete; the conversation itself keeps it).
    memory_forgotten_at = models.DateTimeField(null=True, blank=True)  # see memory.services.forgotten_turns
    # The agent key that appended the turn (null: a login, the system, or an import): capture
    # writes nothing from it beyond that key's writable scopes (memory.capture.key_scopes).
    # RESTRICT: a key is revoked, never deleted, while its turns stand; a team's deletion takes both.
    agent_key = models.ForeignKey(AgentKey, null=True, blank=True, on_delete=models.RESTRICT, related_name="+")
    search_tokens = SearchTokensField(blank=True, default="")

    objects = TeamScopedManager()

    @property
    def forgotten_for_good(self) -> bool:
        """Whether a hard forget hid this turn (HIDDEN_FOR_GOOD): no restore recalls it."""
        return self.memory_forgotten_at == HIDDEN_FOR_GOOD

    class Meta:
        indexes = [
            models.Index(fields=["session", "id"], name="message_session_seq_idx"),
            models.Index(fields=["session", "created_at"], name="message_session_created_idx"),
            # the turns said in a period a question names (memory.selectors.messages._said_in_periods)
            models.Index(models.F("session"), Coalesce(models.F("occurred_at"), models.F("created_at")),
                         name="message_session_said_idx"),
            # the messages a summary covers that the block never shows — system messages, and turns
            # a forgotten memory was taken from (context_gather._latest_summary)
            models.Index(fields=["session", "id"], condition=UNSHOWN_MESSAGE, name="message_session_unshown_idx"),
        ]


class Summary(models.Model):
    """An append-only link of a session's summary chain (seed memory_summaries).

    Covers messages `from_message..to_message` (inclusive, server order); `parent`
    is the previous summary of the same session.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="summaries")
    parent = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="child"
    )
    from_message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")
    to_message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")
    summary = models.TextField()
    current_goal = models.TextField(blank=True, default="")
    constraints = models.JSONField(default=list, blank=True)
    preferences = models.JSONField(default=list, blank=True)
    decisions = models.JSONField(default=list, blank=True)
    completed_work = models.JSONField(default=list, blank=True)
    pending_work = models.JSONField(default=list, blank=True)
    known_issues = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = TeamScopedManager()

    class Meta:
        indexes = [models.Index(fields=["session", "created_at"], name="summary_session_created_idx")]


class Node(models.Model):
    """A structured memory (seed memory_nodes).

    Owner by scope: session → `session`; workspace → `workspace_id`; user → `user_id`;
    global → the team. `key` + `value_json` make a node exactly retrievable; title,
    content, tags, entities (and value strings) are searchable through `search_tokens`.
    `explicit` records that the end user stated it (R-QUERY ordering: stated over inferred).
    `version` increases with every in-place update (optimistic concurrency).
    """

    # No index of its own: every node index starts with team, and SQLite (no statistics for bound
    # parameters) would otherwise read a whole team through it instead of an owner's rank index.
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+", db_index=False)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    supersedes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="superseded_by"
    )
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.CASCADE, related_name="nodes")
    workspace_id = models.CharField(max_length=128, blank=True, default="")
    user_id = models.CharField(max_length=128, blank=True, default="")
    scope = models.CharField(max_length=16, choices=Scope.choices)
    domain = models.CharField(max_length=64)
    category_path = models.JSONField(default=list, blank=True)
    category_path_text = models.CharField(max_length=600, blank=True, default="")
    type = models.CharField(max_length=16, choices=NodeType.choices)
    key = models.CharField(max_length=128, blank=True, default="")
    value_json = models.JSONField(null=True, blank=True)
    value_hash = models.CharField(max_length=40, blank=True, default="")  # SHA-1 of the canonical value_json
    # Which active node this one competes with: "" for a one-valued key, the value hash for a
    # many-valued key, a hash of the text for a keyless node (memory.services.node_input.conflict_slot).
    slot = models.CharField(max_length=48, blank=True, default="")
    title = models.CharField(max_length=200)
    content = models.TextField(blank=True, default="")
    status = models.CharField(max_length=16, choices=NodeStatus.choices, default=NodeStatus.ACTIVE)
    confidence = models.FloatField(default=0.8)
    importance = models.FloatField(default=0.5)
    tags = models.JSONField(default=list, blank=True)
    entities = models.JSONField(default=list, blank=True)
    explicit = models.BooleanField(default=False)
    version = models.PositiveIntegerField(default=1)
    sources = models.ManyToManyField(Message, through="NodeSource", related_name="derived_nodes", blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    search_tokens = SearchTokensField(blank=True, default="")

    objects = TeamScopedManager()

    class Meta:
        indexes = [
            models.Index(
                fields=["team", "scope", "status", "domain", "type", "importance", "updated_at"],
                name="node_lookup_idx",
            ),
            models.Index(fields=["team", "scope", "status", "domain", "type", "key", "updated_at"], name="node_key_idx"),
            models.Index(fields=["team", "category_path_text"], name="node_category_idx"),
            models.Index(fields=["session", "status", "updated_at"], name="node_session_idx"),
            models.Index(fields=["team", "workspace_id", "status", "updated_at"], name="node_workspace_idx"),
            models.Index(fields=["team", "user_id", "status", "updated_at"], name="node_user_idx"),
            # The context's default layers read the top nodes by importance of one owner and
            # scope; these let the database stop after LIMIT rows instead of sorting them all.
            models.Index(
                fields=["team", "workspace_id", "scope", "status", "-importance", "-updated_at"],
                name="node_workspace_rank_idx",
            ),
            models.Index(fields=["team", "user_id", "scope", "status", "-importance", "-updated_at"], name="node_user_rank_idx"),
            models.Index(fields=["session", "status", "-importance", "-updated_at"], name="node_session_rank_idx"),
            # Conflict resolution reads the active rivals of a few slots among the owners a caller
            # reaches (memory.selectors.conflicts). Not partial: SQLite uses a partial index only
            # when the query repeats its condition as a literal, never with a bound parameter.
            models.Index(fields=["team", "key", "slot", "user_id", "workspace_id"], name="node_slot_owner_idx"),
            # A team's newest node id in one index probe: the dashboard list (newest first) needs it
            # as a bound, or the planner walks the primary key backwards past every newer row of
            # other teams — 1M rows, ~1 s, for a large team that went quiet (docs/performance.md).
            models.Index(fields=["team", "-id"], name="node_team_recent_idx"),
            # The dashboard's counts per status read this index alone instead of the table.
            models.Index(fields=["team", "status", "expires_at", "id"], name="node_team_status_idx"),
        ]
        constraints = [
            # One active node per slot of one owner: a repeated or racing write finds the
            # existing node instead of adding a duplicate (S01), and a one-valued key can never
            # hold two active values (S03).
            models.UniqueConstraint(
                models.F("team"),
                Coalesce(models.F("session"), models.Value(0)),
                models.F("scope"),
                models.F("workspace_id"),
                models.F("user_id"),
                models.F("domain"),
                models.F("type"),
                models.F("key"),
                models.F("slot"),
                condition=models.Q(status="active"),
                name="node_active_slot_unique",
            ),
            models.CheckConstraint(
                condition=models.Q(confidence__gte=0, confidence__lte=1), name="node_confidence_range"
            ),
            models.CheckConstraint(
                condition=models.Q(importance__gte=0, importance__lte=1), name="node_importance_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type}:{self.title}"

    @property
    def current_status(self) -> str:
        """The status as of now: an active node past its expires_at reads as expired even
        before the expiry sweep rewrites its row (see selectors.nodes.status_q)."""
        if self.status == NodeStatus.ACTIVE and self.expires_at is not None and self.expires_at <= timezone.now():
            return NodeStatus.EXPIRED
        return self.status

    @property
    def source_message_ids(self) -> list[int]:
        return [link.message_id for link in self.source_links.all()]


class NodeSource(models.Model):
    """The messages a node was derived from, in the order given (seed sourceMessageIds)."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="source_links")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="node_links")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position"]
        constraints = [models.UniqueConstraint(fields=["node", "message"], name="node_source_unique")]


class AuditEvent(models.Model):
    """What changed, who did it and why (seed memory_audit_events).

    Written by the service in the same transaction as the change. `node_id` is a plain
    integer so that the event outlives a hard-deleted node; the forgotten content is
    redacted from `payload` at that point.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    event_type = models.CharField(max_length=64)
    node_id = models.BigIntegerField(null=True, blank=True)
    session_id = models.CharField(max_length=128, blank=True, default="")
    workspace_id = models.CharField(max_length=128, blank=True, default="")
    user_id = models.CharField(max_length=128, blank=True, default="")
    actor = models.CharField(max_length=200)
    actor_key = models.ForeignKey(AgentKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.TextField(blank=True, default="")
    payload = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = TeamScopedManager()

    class Meta:
        indexes = [
            models.Index(fields=["team", "node_id", "created_at"], name="audit_node_idx"),
            models.Index(fields=["team", "created_at"], name="audit_team_created_idx"),
        ]


class Retrieval(models.Model):
    """One context call in the hit ledger (R-CTX): what was asked, injected and omitted, and why.

    Holds ids, reasons and sizes, never the injected text, so forgetting a node leaves no
    copy of it here.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    actor = models.CharField(max_length=200)
    agent_key = models.ForeignKey(AgentKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    workspace_id = models.CharField(max_length=128, blank=True, default="")
    user_id = models.CharField(max_length=128, blank=True, default="")
    query = models.TextField(blank=True, default="")
    domain = models.CharField(max_length=64, blank=True, default="")
    policy = models.JSONField(default=dict)
    items = models.JSONField(default=list)
    omitted = models.JSONField(default=list)
    used_node_ids = models.JSONField(default=list)
    message_ids = models.JSONField(default=list)
    summary_id = models.BigIntegerField(null=True, blank=True)
    chars_by_layer = models.JSONField(default=dict)
    tokens_by_layer = models.JSONField(default=dict)
    total_chars = models.PositiveIntegerField(default=0)
    total_tokens = models.PositiveIntegerField(default=0)
    truncated = models.BooleanField(default=False)
    store_status = models.CharField(max_length=16, default="ok")
    warnings = models.JSONField(default=list)
    latency_ms = models.FloatField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    objects = TeamScopedManager()

    class Meta:
        indexes = [
            models.Index(fields=["team", "created_at"], name="retrieval_team_created_idx"),
            # The KPIs of one workspace read its calls of a date range (memory.selectors.kpis).
            models.Index(fields=["team", "workspace_id", "created_at"], name="retrieval_ws_created_idx"),
        ]


class IdempotencyRecord(models.Model):
    """The first successful answer to a write sent with an `Idempotency-Key` header (R-API).

    One row per (team, caller, key). It is inserted, still empty, at the start of the
    write's transaction and filled with the answer before that transaction commits, so a
    committed row always holds a complete 2xx answer and a committed write always has its
    row. `caller` is `key:<agent key id>` or `user:<user id>`. `fingerprint` is the SHA-256
    (hex) of the method, path, query string and raw body. `response_body` is the rendered
    JSON text, so a replay is byte-identical (jsonb would reorder its keys). Rows older than
    limits.IDEMPOTENCY_TTL_HOURS count as absent.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    caller = models.CharField(max_length=64)
    key = models.CharField(max_length=255)
    method = models.CharField(max_length=8)
    path = models.TextField()
    fingerprint = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField(default=0)
    response_body = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    objects = TeamScopedManager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "caller", "key"], name="idempotency_caller_key_unique")
        ]
        indexes = [models.Index(fields=["team", "created_at"], name="idempotency_team_created_idx")]

    def __str__(self) -> str:
        return f"{self.caller}:{self.key}"


from memory.capture_models import CaptureJob, JobKind, JobStatus  # noqa: E402,F401 - registers the model
from memory.embedding_models import Embedding  # noqa: E402,F401 - registers the model
from memory.instruction_models import PinnedInstructions  # noqa: E402,F401 - registers the model
from memory.kpi_models import OutcomeSource, ProposalOutcome, RetrievalFeedback  # noqa: E402,F401 - registers the models
from memory.lexicon_models import LexiconSet, LexiconVersion  # noqa: E402,F401 - registers the models
from memory.ops_models import Heartbeat  # noqa: E402,F401 - registers the model
from memory.policy_models import BudgetPolicy  # noqa: E402,F401 - registers the model
from memory.profile_models import ProfileGenerator, ProfileReason, UserProfile, UserProfileVersion  # noqa: E402,F401 - registers the models
from memory.schema_rules import Category, KeySynonym, SchemaRule, ValueRule  # noqa: E402,F401 - registers the models
from memory.working_models import WorkingMemory  # noqa: E402,F401 - registers the model
