"""The controlled schema (R-UI Administration; seed 000 受控 Schema; R-TOOLS): the team's schema
rules, key synonyms, value rules and category taxonomy, listed, created, edited and deleted.

Editors and admins read the page; only admins change it (viewers get 403 on GET, editors on
POST). One URL, one view, one template with a partial per table. GET `?domain=` narrows every
table to one domain; `?edit=<kind>&id=<id>` opens that row's form in its table (404 for another
team's row). POST `kind` = rule | synonym | value_rule | category, `action` = save (with `id`
to edit) | delete (`id`), the fields prefixed by the kind (`rule-key`…). Each write goes
through memory.services.schema_edit — the services that check, write and audit it in one
transaction and whose rows memory.services.schema applies to the next proposal. A bad field
is shown on the form with 400; a category still used by a rule, 409. An HTMX request gets the
table's partial back; a plain post is redirected to the page (its domain filter kept).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.db import models
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers

from dashboard.admin_forms import CategoryForm, KeySynonymForm, SchemaRuleForm, ValueRuleForm
from dashboard.teams import admin_refusal, require_admin_reader, team_required
from dashboard.views.admin_common import run_service
from memory import limits
from memory.errors import NotFound
from memory.models import Category, KeySynonym, SchemaRule, ValueRule
from memory.selectors.schema import schema_domains, schema_rows
from memory.services import schema_edit

TEMPLATE = "dashboard/schema.html"


@dataclass(frozen=True)
class Kind:
    """One table of the page: its model, form, services and the names it is shown by."""

    name: str  # the `kind` posted, and the prefix of its form's fields
    section: str  # its partial and the id of its element
    label: str
    model: type[models.Model]
    form: type[forms.Form]
    save: Callable[..., Any]
    delete: Callable[..., Any]
    id_arg: str  # the services' keyword for the row's id

    def describe(self, row: Any) -> str:
        if self.model is SchemaRule:
            return f"{row.domain}/{row.type}/{row.key}"
        if self.model is KeySynonym:
            return f"{row.synonym} → {row.key}"
        if self.model is ValueRule:
            return f"{row.pattern} ({row.domain}{'/' + row.key if row.key else ''})"
        return f"{row.domain}: {row.path_text}"


KINDS = {kind.name: kind for kind in (
    Kind("rule", "rules", "schema rule", SchemaRule, SchemaRuleForm, schema_edit.schema_rule_save,
         schema_edit.schema_rule_delete, "rule_id"),
    Kind("synonym", "synonyms", "key synonym", KeySynonym, KeySynonymForm, schema_edit.key_synonym_save,
         schema_edit.key_synonym_delete, "synonym_id"),
    Kind("value_rule", "value_rules", "value rule", ValueRule, ValueRuleForm, schema_edit.value_rule_save,
         schema_edit.value_rule_delete, "value_rule_id"),
    Kind("category", "categories", "category", Category, CategoryForm, schema_edit.category_save,
         schema_edit.category_delete, "category_id"),
)}
SECTIONS = {kind.section: kind for kind in KINDS.values()}


@dataclass
class SectionState:
    """What one table shows besides its rows: its form, the row being edited, a notice or problem."""

    form: forms.Form
    editing: Any = None
    notice: str = ""
    problem: str = ""


def _row_id(value: str | None) -> int | None:
    if value and value.isdigit() and int(value) <= limits.ID_MAX:
        return int(value)
    return None


def _row(request, kind: Kind, row_id: int) -> Any:
    row = kind.model.objects.filter(team=request.team, pk=row_id).first()
    if row is None:
        raise NotFound(f"no such {kind.label} in this team")
    return row


def _blank_states(request) -> dict[str, SectionState]:
    states = {name: SectionState(form=kind.form(prefix=name)) for name, kind in KINDS.items()}
    kind = KINDS.get(request.GET.get("edit", ""))
    row_id = _row_id(request.GET.get("id"))
    if kind is not None and row_id is not None and admin_refusal(request) is None:
        row = _row(request, kind, row_id)
        states[kind.name] = SectionState(form=kind.form(prefix=kind.name, initial=kind.form.initial_of(row)), editing=row)
    return states


def _render(request, states: dict[str, SectionState], *, status: int = 200, partial: str = "", problem: str = ""):
    domain = request.GET.get("domain", "")[: limits.NODE_DOMAIN_MAX]
    context = {
        "rows": schema_rows(principal=request.principal, domain=domain),
        "domains": schema_domains(principal=request.principal),
        "domain": domain,
        "states": states,
        "can_admin": admin_refusal(request) is None,
        "problem": problem,
    }
    template = f"{TEMPLATE}#{partial}" if partial and request.htmx else TEMPLATE
    return render(request, template, context, status=status)


def _get_partial(request) -> str:
    """The partial an HTMX GET asks for by its target: one table, or all of them."""
    if not request.htmx or request.htmx.history_restore_request:
        return ""
    target = request.htmx.target or ""
    return target if target in SECTIONS or target == "schema" else ""


def _post(request, kind: Kind) -> tuple[int, SectionState, str]:
    """Run the posted action on `kind`; returns (status, the table's state, success message or "")."""
    action = request.POST.get("action", "")
    row_id = _row_id(request.POST.get("id"))
    if action == "delete":
        if row_id is None:
            return 400, SectionState(kind.form(prefix=kind.name), problem="Pick a row to delete."), ""
        row = _row(request, kind, row_id)
        outcome = run_service(None, lambda: kind.delete(principal=request.principal, **{kind.id_arg: row.pk}))
        if not outcome.ok:
            return outcome.status, SectionState(kind.form(prefix=kind.name), problem=outcome.problem), ""
        return 200, SectionState(kind.form(prefix=kind.name)), f"Deleted the {kind.label} {kind.describe(row)}."
    if action != "save":
        return 400, SectionState(kind.form(prefix=kind.name), problem="Unknown action; use save or delete."), ""
    editing = _row(request, kind, row_id) if row_id is not None else None
    form = kind.form(request.POST, prefix=kind.name)
    if not form.is_valid():
        return 400, SectionState(form, editing=editing), ""
    outcome = run_service(form, lambda: kind.save(principal=request.principal, data=form.data_input(),
                                                  **{kind.id_arg: row_id}))
    if not outcome.ok:
        return outcome.status, SectionState(form, editing=editing, problem=outcome.problem), ""
    verb = "Saved" if editing is not None else "Added"
    return 200, SectionState(kind.form(prefix=kind.name)), f"{verb} the {kind.label} {kind.describe(outcome.result)}."


@vary_on_headers("HX-Request", "HX-Target")
@require_http_methods(["GET", "POST"])
@team_required
def schema_page(request):
    """GET: the four tables (see the module docstring for `domain`, `edit` and `id`). POST:
    save or delete one row. 403 for a viewer (any method) or an editor (POST); 404 for another
    team's row; 400 for a bad field or kind; 409 for a category a rule still uses."""
    require_admin_reader(request)
    if request.method == "GET":
        return _render(request, _blank_states(request), partial=_get_partial(request))
    kind = KINDS.get(request.POST.get("kind", ""))
    states = {name: SectionState(form=item.form(prefix=name)) for name, item in KINDS.items()}
    if kind is None:
        return _render(request, states, status=400, partial="schema",
                       problem=f"Unknown kind; use one of {', '.join(KINDS)}.")
    refusal = admin_refusal(request)
    if refusal:
        states[kind.name].problem = refusal
        return _render(request, states, status=403, partial=kind.section)
    status, states[kind.name], message = _post(request, kind)
    if status != 200:
        return _render(request, states, status=status, partial=kind.section)
    if request.htmx:
        states[kind.name].notice = message
        return _render(request, states, partial=kind.section)
    messages.success(request, message)
    query = urlencode({"domain": request.GET["domain"]}) if request.GET.get("domain") else ""
    return redirect(f"{reverse('dashboard:schema')}{'?' + query if query else ''}#{kind.section}")

