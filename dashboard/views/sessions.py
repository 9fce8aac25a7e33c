"""The conversations (R-UI): the session list per workspace and user, and a session's page with
its messages (paged) and its summary chain, where an editor may forget the conversation.

Forgetting goes through memory.services.forget.session_forget, the service of
DELETE /api/v1/sessions/{id}: it checks the principal's rights and audits in the same
transaction. A hard forget needs the confirmation word typed (checked by ForgetForm).
"""

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect

from accounts.principal import AccessDenied
from dashboard.forms import ForgetForm, SessionFilterForm
from dashboard.teams import EDIT_ROLES, edit_refusal, team_required
from memory.errors import MemoryError, NotFound
from memory.models import Session
from memory.selectors.dashboard import (
    session_browse,
    session_counts,
    session_for_page,
    session_message_position,
    session_messages,
    session_summary_chain,
)
from memory.services.forget import session_forget
from memory.services.sessions import SessionRef

PAGE_SIZE = 50
MESSAGE_PAGE_SIZE = 50
TEMPLATE = "dashboard/session.html"


@vary_on_headers("HX-Request")
@require_GET
@team_required
def session_list(request):
    """The team's conversations, filtered by workspace, user, session id and status, most
    recent first, 50 a page, with message, summary and memory counts. An HTMX request gets
    only the `results` partial."""
    form = SessionFilterForm(request.GET)
    page_obj = None
    if form.is_valid():
        sessions = session_browse(principal=request.principal, filters=form.cleaned_data)
        page_obj = Paginator(sessions, PAGE_SIZE).get_page(request.GET.get("page"))
        page_obj.object_list = session_counts(sessions=list(page_obj.object_list))
    template = "dashboard/sessions.html"
    if request.htmx and not request.htmx.history_restore_request:
        template += "#results"
    return render(request, template, {"form": form, "page_obj": page_obj})


def forget_modes(session: Session) -> tuple[str, ...]:
    """A live conversation may be forgotten soft or hard; a soft-forgotten one only for good."""
    return ("hard",) if session.deleted_at is not None else ("soft", "hard")


def _message_page_number(request, session: Session) -> str | int | None:
    """The page asked for, or the page holding `?message=<id>` (links from a node's sources)."""
    wanted = request.GET.get("message", "")
    if wanted.isdigit() and len(wanted) <= 18:
        position = session_message_position(principal=request.principal, session=session, message_id=int(wanted))
        if position is not None:
            return position // MESSAGE_PAGE_SIZE + 1
    return request.GET.get("page")


def _render(request, session: Session, *, status: int = 200, form: ForgetForm | None = None, problem: str = "",
            partial: str = ""):
    principal = request.principal
    chain = session_summary_chain(principal=principal, session=session)
    paginator = Paginator(session_messages(principal=principal, session=session), MESSAGE_PAGE_SIZE)
    page_obj = paginator.get_page(_message_page_number(request, session))
    starts = {summary.from_message_id: summary for summary in chain}
    ends = {summary.to_message_id: summary for summary in chain}
    for message in page_obj.object_list:
        message.summary_starts = starts.get(message.pk)
        message.summary_ends = ends.get(message.pk)
    context = {
        "session": session,
        "chain": chain,
        "page_obj": page_obj,
        "can_edit": request.team_role in EDIT_ROLES,
        "forget_form": form or ForgetForm(modes=forget_modes(session), prefix="forget"),
        "open_action": "forget" if (form is not None or problem) else "",
        "problem": problem,
    }
    template = TEMPLATE + (f"#{partial}" if partial and request.htmx else "")
    return render(request, template, context, status=status)


@vary_on_headers("HX-Request")
@require_http_methods(["GET", "POST"])
@team_required
def session_page(request, session_pk: int):
    """GET: the conversation's ids, its summary chain (each summary's message range linked) and
    its messages, 50 a page, oldest first (`?message=<id>` opens the page holding that message;
    an HTMX request gets only the `messages` partial). POST `action=forget` with
    `forget-mode` soft|hard, `forget-reason` and, for hard, `forget-confirm_word`: forget the
    conversation. 404 for another team's id; 403 for a viewer; 400 for a bad form; the
    service's status (409 for a repeated soft forget) otherwise."""
    session = session_for_page(principal=request.principal, session_pk=session_pk)
    if request.method == "GET":
        return _render(request, session, partial="messages")
    if request.POST.get("action") != "forget":
        return _render(request, session, status=400, problem="Unknown action; use forget.", partial="session")
    refusal = edit_refusal(request)
    if refusal:
        return _render(request, session, status=403, problem=refusal, partial="session")
    form = ForgetForm(request.POST, modes=forget_modes(session), prefix="forget")
    if not form.is_valid():
        return _render(request, session, status=400, form=form, partial="session")
    mode = form.cleaned_data["mode"]
    ref = SessionRef(session_id=session.external_id, workspace_id=session.workspace_id, user_id=session.user_id)
    try:
        result = session_forget(principal=request.principal, ref=ref, mode=mode, reason=form.cleaned_data["reason"])
    except NotFound:
        raise
    except AccessDenied as denied:
        return _render(request, session, status=403, form=form, problem=str(denied), partial="session")
    except MemoryError as error:
        return _render(request, session, status=error.status, form=form, problem=error.message, partial="session")
    counts = result.counts
    summary = (f"{counts['messages']} messages, {counts['summaries']} summaries and {counts['nodes']} memories")
    if mode == "hard":
        messages.success(request, f"Erased conversation {session.external_id} for good: {summary}.")
        url = reverse("dashboard:sessions")
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    messages.success(request, f"Forgot conversation {session.external_id} (soft): {summary} hidden or deleted.")
    if not request.htmx:
        return redirect("dashboard:session", session_pk=session.pk)
    session.refresh_from_db()
    return _render(request, session, partial="session")
