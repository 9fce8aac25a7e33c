"""The pre-injection budget in force for a context call (seed 004 §7 and §10; R-CTX).

Precedence, lowest first: built-in default < environment (USER_MEMORY_PREINJECT_ENABLED,
_TOPN, _MAXCHARS) < the team's policy < the workspace's policy < the request, which may only
ask for less. Each effective value is reported with its source: "default" | "environment" |
"team" | "workspace" | "request". Sizes are characters (Unicode code points); tokens are
estimated (estimate_tokens).

"Less" means: a switch turned off, a smaller count or size (top_n, max_chars,
recent_messages, a layer's characters), a higher min_confidence. A request for more is
held to the policy with a warning, never an error.

Policies are read with one query per call (the team row and the workspace row together) and
not cached, so the next call in any process follows an admin's change.
"""

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from accounts.models import Team
from memory import limits
from memory.policy_models import BOOLEAN_FIELDS, LAYER_CHARS, LAYER_SWITCHES, POLICY_FIELDS, BudgetPolicy
from memory.selectors.rows import columns, read

BUILTIN: dict[str, Any] = {
    "enabled": True,
    "top_n": 6,
    "max_chars": 1200,
    "recent_messages": 6,
    "min_confidence": 0.0,
    "summary_enabled": True,
    **{name: True for name in LAYER_SWITCHES},
    **{name: None for name in LAYER_CHARS},  # None: no cap on the layer beyond max_chars
}
# Setting name = environment variable name (config/settings.py reads them).
ENVIRONMENT = {
    "enabled": "USER_MEMORY_PREINJECT_ENABLED",
    "top_n": "USER_MEMORY_PREINJECT_TOPN",
    "max_chars": "USER_MEMORY_PREINJECT_MAXCHARS",
}
SOURCES = ("default", "environment", "team", "workspace", "request")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0003134f]")


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate: one per CJK character plus one per 4 other characters (rounded up)."""
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


@dataclass(frozen=True)
class Budget:
    """The effective budget. `lN_enabled` switches layer LN; `lN_chars` caps its characters
    (None: only max_chars applies); `summary_enabled` switches the window's summary (L3);
    nodes under `min_confidence` are left out as low_confidence. `sources[name]` says where
    each value came from (SOURCES)."""

    enabled: bool
    top_n: int
    max_chars: int
    recent_messages: int
    min_confidence: float = 0.0
    summary_enabled: bool = True
    l0_enabled: bool = True
    l1_enabled: bool = True
    l2_enabled: bool = True
    l3_enabled: bool = True
    l4_enabled: bool = True
    l5_enabled: bool = True
    l0_chars: int | None = None
    l1_chars: int | None = None
    l2_chars: int | None = None
    l3_chars: int | None = None
    l4_chars: int | None = None
    l5_chars: int | None = None
    sources: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def layer_enabled(self, layer: str) -> bool:
        """Whether layer `layer` ("L0" … "L5") is switched on."""
        return getattr(self, f"{layer.lower()}_enabled")

    def layer_chars(self, layer: str) -> int | None:
        """The character cap of layer `layer` ("L0" … "L5"), None when only max_chars applies."""
        return getattr(self, f"{layer.lower()}_chars")

    def as_dict(self) -> dict[str, Any]:
        """{setting: {"value", "source"}} for every setting, in POLICY_FIELDS order."""
        return {name: {"value": getattr(self, name), "source": self.sources.get(name, "default")}
                for name in POLICY_FIELDS}


def _process_default() -> tuple[dict[str, Any], dict[str, str]]:
    values = dict(BUILTIN)
    sources = {name: "default" for name in BUILTIN}
    for name, variable in ENVIRONMENT.items():
        values[name] = getattr(settings, variable, BUILTIN[name])
        if variable in os.environ or values[name] != BUILTIN[name]:
            sources[name] = "environment"
    return values, sources


def policy_rows(*, team: Team, workspace_id: str = "") -> tuple[BudgetPolicy | None, BudgetPolicy | None]:
    """(team policy, workspace policy) of `team`, either None when not set; one query.
    Hand-written: it runs on every context call (memory.selectors.rows)."""
    wanted = [""] + ([workspace_id] if workspace_id else [])
    found = read(BudgetPolicy, f"SELECT {columns(BudgetPolicy, 'b')} FROM {BudgetPolicy._meta.db_table} b "
                               f"WHERE b.team_id = %s AND b.workspace_id IN ({', '.join(['%s'] * len(wanted))})",
                 [team.pk, *wanted])
    rows = {row.workspace_id: row for row in found}
    return rows.get(""), rows.get(workspace_id) if workspace_id else None


def _ask_less(name: str, asked: Any, values: dict[str, Any], sources: dict[str, str], warnings: list[str]) -> None:
    current = values[name]
    if name in BOOLEAN_FIELDS:
        if asked is False and current:
            values[name], sources[name] = False, "request"
        elif asked is True and not current:
            what = "pre-injection" if name == "enabled" else name
            warnings.append(f"{what} is disabled by policy; the request cannot enable it")
        return
    if name == "min_confidence":  # a higher floor injects less
        if asked > current:
            values[name], sources[name] = asked, "request"
        elif asked < current:
            warnings.append(f"budget.min_confidence={asked} is below the policy's {current}; the policy's applies")
        return
    if current is None or asked < current:  # a layer without a cap takes any cap asked for
        values[name], sources[name] = asked, "request"
    elif asked > current:
        warnings.append(f"budget.{name}={asked} is above the policy's {current}; capped")


def budget_resolve(requested: dict[str, Any] | None = None, *, team: Team | None = None,
                   workspace_id: str = "", draft: tuple[str, dict[str, Any]] | None = None) -> Budget:
    """The effective budget for a request that asks for `requested` (already type-checked;
    keys are Budget field names, None or absent = no wish).

    Without `team` only the default, the environment and the request count (tests and
    tools). With it, the team's policy and then `workspace_id`'s policy override the
    process default, field by field (None inherits). A request above the policy is held
    to it (with a warning), never an error. `draft` = (level, settings) replaces that level's
    stored settings ("team", or "workspace" for `workspace_id`), as if it were saved: what a
    policy simulation computes.
    """
    values, sources = _process_default()
    if team is not None:
        for level, row in zip(("team", "workspace"), policy_rows(team=team, workspace_id=workspace_id), strict=True):
            stored = {name: getattr(row, name) for name in POLICY_FIELDS} if row is not None else {}
            if draft is not None and draft[0] == level:
                stored = dict(draft[1])
            for name in POLICY_FIELDS:
                value = stored.get(name)
                if value is not None:
                    values[name], sources[name] = value, level
    warnings: list[str] = []
    for name in POLICY_FIELDS:
        asked = (requested or {}).get(name)
        if asked is not None:
            _ask_less(name, asked, values, sources, warnings)
    values["recent_messages"] = min(values["recent_messages"], limits.CONTEXT_RECENT_MESSAGES_MAX)
    return Budget(**values, sources=sources, warnings=tuple(warnings))
