"""Which rows belong to an export (docs/export.md): one queryset per record type, by kind.

- team: every row of the team of every record type;
- workspace W: the sessions of W (their messages, summaries, working memory, capture jobs),
  the nodes whose workspace_id is W (workspace scope, and session scope in W's sessions),
  W's budget policy, pinned instructions and synonym sets, and the audit events about W;
- user U: the sessions of U in every workspace (with what hangs from them), the nodes whose
  user_id is U (user scope, and session scope in U's sessions), U's profile and its versions,
  and the audit events about U.
Configuration of the whole team (controlled schema, synonyms, value rules, categories, the
team policy, instructions and team-wide synonym sets) goes with a team export only. The hit ledger, KPI feedback and
idempotency records are never exported. Every queryset starts from the team (R-TEN).
"""

from dataclasses import dataclass

from django.db.models import Q, QuerySet

from accounts.models import Team
from memory.errors import InvalidInput
from memory.services.portability.records import RECORD_TYPES, SPECS
from memory.validation import clean_identity

KINDS = ("team", "workspace", "user")
SESSION_CHILDREN = ("message", "summary", "working_memory", "capture_job")


@dataclass(frozen=True)
class ExportRequest:
    """What to export: `kind` team | workspace | user, with the workspace_id or user_id it needs."""

    kind: str
    workspace_id: str = ""
    user_id: str = ""

    @classmethod
    def of(cls, *, kind: str, workspace_id: str | None = "", user_id: str | None = "") -> "ExportRequest":
        """Validated request. Raises InvalidInput for an unknown kind or a missing/bad id."""
        if kind not in KINDS:
            raise InvalidInput(f"kind must be one of {', '.join(KINDS)}", fields={"kind": ["invalid choice"]})
        workspace = clean_identity(workspace_id or "", field="workspace_id", required=kind == "workspace")
        user = clean_identity(user_id or "", field="user_id", required=kind == "user")
        if kind != "workspace" and workspace:
            raise InvalidInput("workspace_id goes with kind=workspace only", fields={"workspace_id": ["not allowed"]})
        if kind != "user" and user:
            raise InvalidInput("user_id goes with kind=user only", fields={"user_id": ["not allowed"]})
        return cls(kind=kind, workspace_id=workspace, user_id=user)

    @property
    def filters(self) -> dict[str, str]:
        return {"workspace_id": self.workspace_id} if self.kind == "workspace" else (
            {"user_id": self.user_id} if self.kind == "user" else {})

    def owner_q(self, prefix: str = "") -> Q:
        """Rows whose owner columns (under `prefix`) fall in this export; everything for a team."""
        if self.kind == "workspace":
            return Q(**{f"{prefix}workspace_id": self.workspace_id})
        if self.kind == "user":
            return Q(**{f"{prefix}user_id": self.user_id})
        return Q()


TEAM_ONLY = ("schema_rule", "key_synonym", "value_rule", "category")


NOT_IN = {"workspace": frozenset({*TEAM_ONLY, "profile", "profile_version"}),
          "user": frozenset({*TEAM_ONLY, "budget_policy", "instructions", "lexicon_set"}), "team": frozenset()}


def record_types(kind: str) -> tuple[str, ...]:
    """The record types an export of `kind` carries, in file order."""
    return tuple(name for name in RECORD_TYPES if name not in NOT_IN[kind])


def export_querysets(*, team: Team, request: ExportRequest) -> dict[str, QuerySet]:
    """The queryset of every record type the export holds (record_types), in file order."""
    result: dict[str, QuerySet] = {}
    for name in record_types(request.kind):
        base = SPECS[name].model.objects.filter(team=team)
        if name in SESSION_CHILDREN:
            result[name] = base.filter(request.owner_q("session__"), session__isnull=False)
        else:  # session, node, audit
            result[name] = base.filter(request.owner_q())
    return result
