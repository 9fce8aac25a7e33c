"""The pre-injection budget in force for a context call (seed 004 §10; R-CTX).

Precedence, lowest first: built-in default < environment (USER_MEMORY_PREINJECT_ENABLED,
_TOPN, _MAXCHARS) < the request, which may only ask for less. Each effective value is
reported with its source. Sizes are characters (Unicode code points); tokens are estimated.
"""

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from memory import limits

BUILTIN = {"enabled": True, "top_n": 6, "max_chars": 1200, "recent_messages": 6}
# Setting name = environment variable name (config/settings.py reads them).
ENVIRONMENT = {
    "enabled": "USER_MEMORY_PREINJECT_ENABLED",
    "top_n": "USER_MEMORY_PREINJECT_TOPN",
    "max_chars": "USER_MEMORY_PREINJECT_MAXCHARS",
}
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0003134f]")


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate: one per CJK character plus one per 4 other characters (rounded up)."""
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


@dataclass(frozen=True)
class Budget:
    enabled: bool
    top_n: int
    max_chars: int
    recent_messages: int
    sources: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            name: {"value": getattr(self, name), "source": self.sources[name]}
            for name in ("enabled", "top_n", "max_chars", "recent_messages")
        }


def _process_default() -> tuple[dict[str, Any], dict[str, str]]:
    values = dict(BUILTIN)
    sources = {name: "default" for name in BUILTIN}
    for name, variable in ENVIRONMENT.items():
        values[name] = getattr(settings, variable, BUILTIN[name])
        if variable in os.environ or values[name] != BUILTIN[name]:
            sources[name] = "environment"
    return values, sources


def budget_resolve(requested: dict[str, Any] | None = None) -> Budget:
    """The effective budget for a request that asks for `requested` (already type-checked).

    A request above the policy is capped to it (with a warning), never an error.
    """
    values, sources = _process_default()
    warnings: list[str] = []
    for name, asked in (requested or {}).items():
        if asked is None:
            continue
        if name == "enabled":
            if asked is False and values["enabled"]:
                values["enabled"], sources["enabled"] = False, "request"
            elif asked is True and not values["enabled"]:
                warnings.append("pre-injection is disabled by policy; the request cannot enable it")
            continue
        if asked <= values[name]:
            if asked != values[name]:
                values[name], sources[name] = asked, "request"
        else:
            warnings.append(f"budget.{name}={asked} is above the policy's {values[name]}; capped")
    values["recent_messages"] = min(values["recent_messages"], limits.CONTEXT_RECENT_MESSAGES_MAX)
    return Budget(**values, sources=sources, warnings=tuple(warnings))
