"""The hit preview (R-UI; seed 004 §10 记忆命中预览): pick a workspace, user and session, type a
question, and see what the context call would inject — the rendered block, characters and
estimated tokens per layer, the items by section with why and what matched, the nodes left
out with their reasons, the other items the budget left out with the limit that did it —
under the budget in force and, beside it, under a draft budget, with the items the draft
adds or removes highlighted.

Built by memory.selectors.dashboard_tuning.context_preview over context_build, the API's own
selector, with record=False: a preview never writes to the hit ledger. Every role may use
it (it only reads). GET only: one URL for the page and, for HTMX, its `preview` partial.
"""

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from dashboard.budget_forms import LABELS, DraftBudgetForm, PreviewForm
from dashboard.teams import team_required
from memory.errors import InvalidInput
from memory.policy_models import LAYER_NAMES, POLICY_FIELDS
from memory.selectors.budget import estimate_tokens
from memory.selectors.context import ContextRequest, MemoryContext, limit_value
from memory.selectors.context_items import SECTIONS
from memory.selectors.dashboard_tuning import context_preview, known_ids, node_titles
from memory.selectors.nodes import Owner

TEMPLATE = "dashboard/preview.html"
OMITTED_SHOWN = 50  # left-out nodes listed per column; all of them are counted by reason


def _key(item) -> tuple:
    return (item.section, item.kind, item.obj.pk, item.text)


@dataclass
class Side:
    """One column of the preview: a MemoryContext laid out for the page. `state` marks what
    differs from the other column: "added" (only here) or "removed" (only in the other)."""

    title: str
    context: MemoryContext
    sections: list[dict[str, Any]] = field(default_factory=list)
    omitted: list[dict[str, Any]] = field(default_factory=list)  # at most OMITTED_SHOWN
    omitted_total: int = 0
    omitted_by_reason: list[tuple[str, int]] = field(default_factory=list)  # most first
    dropped: list[dict[str, Any]] = field(default_factory=list)  # items but nodes the budget left out, with the limit
    layers: list[dict[str, Any]] = field(default_factory=list)
    budget: list[dict[str, Any]] = field(default_factory=list)
    total_chars: int = 0
    total_tokens: int = 0
    added: int = 0
    removed: int = 0


def _side(title: str, context: MemoryContext, other: MemoryContext | None, *, draft: bool) -> Side:
    side = Side(title=title, context=context, total_chars=len(context.block), total_tokens=estimate_tokens(context.block))
    mine = {_key(item) for item in context.items}
    theirs = {_key(item) for item in other.items} if other is not None else mine
    state = "added" if draft else "removed"
    for name, (layer, header) in SECTIONS.items():
        items = [{"item": item, "state": state if _key(item) not in theirs else ""}
                 for item in context.items if item.section == name]
        if items:
            side.sections.append({"name": name, "layer": layer, "header": header, "items": items})
    changed = sum(1 for key in mine if key not in theirs)
    side.added, side.removed = (changed, 0) if draft else (0, changed)
    other_omitted = {(o.node_id, o.reason) for o in other.omitted} if other is not None else None
    limits = {left.item.obj.pk: f"{left.limit}={limit_value(context.budget, left.limit)}"
              for left in context.dropped if left.item.kind == "node"}
    omitted = [{"node_id": o.node_id, "reason": o.reason, "title": "",
                "limit": limits.get(o.node_id) if o.reason == "over_limit" else None,
                "state": "added" if draft and other_omitted is not None and (o.node_id, o.reason) not in other_omitted
                else ""} for o in context.omitted]
    side.omitted_total = len(omitted)
    side.omitted_by_reason = Counter(row["reason"] for row in omitted).most_common()
    # What the draft newly leaves out first; a large store leaves out hundreds of superseded
    # and expired nodes, which the counts by reason cover.
    side.omitted = sorted(omitted, key=lambda row: not row["state"])[:OMITTED_SHOWN]
    # Messages, the summary, profile and working-memory lines have no place in `omitted` (nodes
    # only, R-QUERY) but the budget's warning counts them: listed here so the two agree.
    side.dropped = [{"item": left.item, "layer": left.item.layer, "header": SECTIONS[left.item.section][1],
                     "limit": f"{left.limit}={limit_value(context.budget, left.limit)}"}
                    for left in context.dropped if left.item.kind != "node"]
    budget, other_budget = context.budget, other.budget if other is not None else None
    for layer in LAYER_NAMES:
        before = other.chars_by_layer[layer] if draft and other is not None else None
        side.layers.append({"layer": layer, "chars": context.chars_by_layer[layer],
                            "tokens": context.tokens_by_layer[layer], "enabled": budget.layer_enabled(layer),
                            "cap": budget.layer_chars(layer),
                            "delta": None if before is None else context.chars_by_layer[layer] - before})
    for name, entry in budget.as_dict().items():
        differs = draft and other_budget is not None and getattr(other_budget, name) != entry["value"]
        side.budget.append({"name": name, "label": LABELS[name], **entry, "changed": differs})
    return side


def _preview(principal, form: PreviewForm, draft_form: DraftBudgetForm) -> dict[str, Any]:
    data = form.cleaned_data
    request = ContextRequest(owner=Owner(workspace_id=data["workspace_id"], user_id=data["user_id"],
                                         session_id=data["session_id"]), query=data["q"],
                             timezone=data["timezone"])
    preview = context_preview(principal=principal, request=request, draft_changes=draft_form.changes())
    current = _side("In force", preview.current, preview.draft, draft=False)
    draft = None
    if preview.draft is not None:
        draft = _side(f"Draft ({preview.level} policy)", preview.draft, preview.current, draft=True)
    shown = [row for side in (current, draft) if side is not None for row in side.omitted]
    titles = node_titles(principal=principal, node_ids=[row["node_id"] for row in shown])
    for row in shown:
        row["title"] = titles.get(row["node_id"], "")
    return {"current": current, "draft": draft, "level": preview.level}


@vary_on_headers("HX-Request")
@require_GET
@team_required
def preview(request):
    """GET with `workspace_id`, `user_id`, `session_id`, `q` and draft settings
    (`draft-top_n`, `draft-max_chars`, … `draft-l5_enabled` on|off): the preview of that
    context call, in force and under the draft. 400 with the messages for bad ids or draft
    values (the draft's ranges are checked by the service); never writes anything."""
    form = PreviewForm(request.GET)
    draft_form = DraftBudgetForm(request.GET, prefix="draft")
    context: dict[str, Any] = {"form": form, "draft_form": draft_form, "current": None, "draft": None,
                               "draft_fields": [draft_form[name] for name in POLICY_FIELDS],
                               # Without any id the page offers recent conversations to start from.
                               "picked": any(request.GET.get(name) for name in ("workspace_id", "user_id", "session_id"))}
    status = 200
    if form.is_valid() and draft_form.is_valid():
        context["draft_open"] = bool(draft_form.changes())
        try:
            context.update(_preview(request.principal, form, draft_form))
        except InvalidInput as error:
            for name, messages in (error.fields or {}).items():
                target = draft_form if name in draft_form.fields else form
                for message in messages:
                    target.add_error(name if name in target.fields else None, message)
            status = 400
    else:
        status = 400
    context["draft_open"] = context.get("draft_open") or bool(draft_form.errors)
    template = TEMPLATE
    if request.htmx and not request.htmx.history_restore_request:
        template += "#preview"
    else:
        context["known"] = known_ids(principal=request.principal)
    return render(request, template, context, status=status)
