"""The synonym lexicon page (R-UI "synonym lexicon"; seed 004 BusinessLexicon; R-QUERY): the
team's synonym sets, listed, added, edited and deleted.

Every member reads the page (viewers too: the sets explain why a search found what it found);
only admins change it (a viewer's or an editor's POST is 403). One URL, one view, one template
with one partial (`lexicon`). GET `?q=` keeps the sets with a term containing the text
(normalised), `?workspace=` one level ("-" for team-wide sets), `?page=` pages, `?edit=<id>`
opens that set's form (404 for another team's set). POST `action` = save (with `id` to edit)
| delete (`id`); the fields are `lexicon-terms` (one per line or separated by commas) and
`lexicon-workspace_id`. Each write goes through memory.services.lexicon, which checks, writes
and audits it in one transaction. A bad field is shown on the form with 400. An HTMX request
gets the partial back; a plain post is redirected to the page.
"""

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers

from dashboard.admin_forms import LexiconSetForm
from dashboard.teams import admin_refusal, team_required
from dashboard.views.admin_common import run_service, template_for
from memory import limits
from memory.errors import NotFound
from memory.lexicon_models import LexiconSet
from memory.selectors.lexicon import lexicon_sets
from memory.services.lexicon import lexicon_set_delete, lexicon_set_save, normalize_term

TEMPLATE = "dashboard/lexicon.html"
PAGE_SIZE = 50
PREFIX = "lexicon"
TEAM_WIDE = "-"  # ?workspace=- : the team-wide sets only


def _row_id(value: str | None) -> int | None:
    if value and value.isdigit() and int(value) <= limits.ID_MAX:
        return int(value)
    return None


def _row(request, row_id: int) -> LexiconSet:
    row = lexicon_sets(principal=request.principal).filter(pk=row_id).first()
    if row is None:
        raise NotFound("no such synonym set in this team")
    return row


MATCHES_SHOWN = PAGE_SIZE * 20  # a text filter lists the first 20 pages of its matches


def _listed(request):
    workspace = request.GET.get("workspace", "")[: limits.IDENTITY_MAX]
    level = "" if workspace == TEAM_WIDE else (workspace or None)
    sets = lexicon_sets(principal=request.principal, workspace_id=level)
    text = normalize_term(request.GET.get("q", "")[: limits.LEXICON_TERM_MAX])
    if text:
        # Terms are JSON: SQLite keeps them \u-escaped, so the filter runs here (a team holds
        # at most LEXICON_SETS_MAX sets) rather than as a text match in the database.
        wanted = [pk for pk, terms in sets.values_list("pk", "terms") if any(text in term for term in terms)]
        sets = sets.filter(pk__in=wanted[:MATCHES_SHOWN])
        return sets, workspace, text, len(wanted)
    return sets, workspace, text, None


def _render(request, *, form: LexiconSetForm, editing: LexiconSet | None = None, notice: str = "",
            problem: str = "", status: int = 200):
    sets, workspace, text, matches = _listed(request)
    page_obj = Paginator(sets, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "page_obj": page_obj,
        "workspaces": sorted(set(lexicon_sets(principal=request.principal).exclude(workspace_id="")
                                 .values_list("workspace_id", flat=True))),
        "workspace": workspace,
        "q": text,
        "matches_cut": matches - MATCHES_SHOWN if matches is not None and matches > MATCHES_SHOWN else 0,
        "form": form,
        "editing": editing,
        "notice": notice,
        "problem": problem,
        "can_admin": admin_refusal(request, "the synonym lexicon") is None,
    }
    return render(request, template_for(request, TEMPLATE, PREFIX), context, status=status)


def _post(request):
    """Run the posted action; returns (status, form, the set being edited, notice, problem)."""
    action = request.POST.get("action", "")
    row_id = _row_id(request.POST.get("id"))
    if action == "delete":
        if row_id is None:
            return 400, LexiconSetForm(prefix=PREFIX), None, "", "Pick a synonym set to delete."
        row = _row(request, row_id)
        outcome = run_service(None, lambda: lexicon_set_delete(principal=request.principal, set_id=row.pk))
        if not outcome.ok:
            return outcome.status, LexiconSetForm(prefix=PREFIX), None, "", outcome.problem
        return 200, LexiconSetForm(prefix=PREFIX), None, f"Deleted the synonym set {' / '.join(row.terms)}.", ""
    if action != "save":
        return 400, LexiconSetForm(prefix=PREFIX), None, "", "Unknown action; use save or delete."
    if row_id is None and request.POST.get("id"):
        # An id that names no set (-1, text, past ID_MAX) edits nothing; saving it as a new set
        # would add a set the admin meant to change.
        raise NotFound("no such synonym set in this team")
    editing = _row(request, row_id) if row_id is not None else None
    form = LexiconSetForm(request.POST, prefix=PREFIX)
    if not form.is_valid():
        return 400, form, editing, "", ""
    outcome = run_service(form, lambda: lexicon_set_save(
        principal=request.principal, terms=form.cleaned_terms(), workspace_id=form.cleaned_data["workspace_id"],
        set_id=row_id))
    if not outcome.ok:
        return outcome.status, form, editing, "", outcome.problem
    verb = "Saved" if editing is not None else "Added"
    return 200, LexiconSetForm(prefix=PREFIX), None, f"{verb} the synonym set {' / '.join(outcome.result.terms)}.", ""


@vary_on_headers("HX-Request", "HX-Target")
@require_http_methods(["GET", "POST"])
@team_required
def lexicon_page(request):
    """GET: the sets (see the module docstring for `q`, `workspace`, `page` and `edit`). POST:
    save or delete one set; 403 unless an admin, 404 for another team's set, 400 for a bad
    field."""
    if request.method == "GET":
        editing = None
        form = LexiconSetForm(prefix=PREFIX)
        row_id = _row_id(request.GET.get("edit"))
        if row_id is not None and admin_refusal(request) is None:
            editing = _row(request, row_id)
            form = LexiconSetForm(prefix=PREFIX, initial=LexiconSetForm.initial_of(editing))
        return _render(request, form=form, editing=editing)
    refusal = admin_refusal(request, "the synonym lexicon")
    if refusal:
        return _render(request, form=LexiconSetForm(prefix=PREFIX), problem=refusal, status=403)
    status, form, editing, notice, problem = _post(request)
    if status != 200 or request.htmx:
        return _render(request, form=form, editing=editing, notice=notice, problem=problem, status=status)
    messages.success(request, notice)
    return redirect(f"{reverse('dashboard:lexicon')}#lexicon")
