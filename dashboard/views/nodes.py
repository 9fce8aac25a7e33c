"""The node page (R-UI): every field, the supersede chain both ways, the audit trail, the source
messages with links into their session, and the review actions by role.

One URL, one view, one template: GET shows the page; POST runs one action, named by the
`action` field, through the service the API uses for it — correct (memory_propose_update
`supersede`, as POST /memory/propose), expire (memory_propose_update `expire`), forget
(memory_forget by id, as POST /memory/forget and DELETE /nodes/{id}) and restore
(node_restore, as POST /nodes/{id}/restore) and keep (memory.services.keep.keep_for_user:
a memory the user stated in one conversation becomes the user's, confirmed by the reviewer in
place of the user's explicit words). The services check the principal's rights and
write the audit event in the same transaction as the change; the view only checks the role
first (viewers get 403) and turns the answer into a page.

An HTMX POST gets the `node` partial back (of the new version after a correction or a restore
of a superseded node, with HX-Push-Url), or HX-Redirect to the memory list after a hard
forget; a plain POST is redirected (post/redirect/get). Refusals and domain errors are shown
on the page with their status (400, 403, 409), never as a 500; another team's id is 404.
"""

from dataclasses import dataclass

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect

from accounts.principal import AccessDenied, Principal
from dashboard.forms import CorrectForm, ForgetForm, KeepForm, ReasonForm
from dashboard.teams import EDIT_ROLES, edit_refusal, team_required
from memory.errors import MemoryError, NotFound
from memory.models import Node, NodeStatus, Scope
from memory.selectors.dashboard import node_merged_into, node_source_messages, node_version_chain
from memory.selectors.nodes import node_audit_trail, node_get
from memory.services.forgetting import ForgetSelector, kept_copy, memory_forget, node_restore
from memory.services.keep import keep_for_user
from memory.services.proposals import Proposal, proposal_apply

ACTIONS = ("correct", "keep", "expire", "forget", "restore")
TEMPLATE = "dashboard/node.html"
# Proposal refusals that are about who asks, not about what they ask for.
_FORBIDDEN_REFUSALS = frozenset({"global_admin_only", "scope_not_allowed"})


class _Problem(Exception):
    """An action that did not happen: shown on the page with `status`."""

    def __init__(self, message: str, status: int, *, confirm_needed: bool = False):
        super().__init__(message)
        self.message = message
        self.status = status
        self.confirm_needed = confirm_needed


@dataclass(frozen=True)
class Done:
    """A finished action: the message to show and the node to show next (None: it is gone)."""

    message: str
    node_id: int | None


def forget_modes(node: Node) -> tuple[str, ...]:
    """Soft forgetting hides an active or expired node; hard erases a node of any status."""
    return ("soft", "hard") if node.status in (NodeStatus.ACTIVE, NodeStatus.EXPIRED) else ("hard",)


def available_actions(*, principal: Principal, role: str, node: Node, merged: bool = False) -> dict[str, bool]:
    """Which actions the page offers on `node` to this login: {action: bool}, plus "any".

    Editors and admins act on the scopes they may write (global memory: admins only); what a
    status allows follows the services (correct and expire an active node; restore a deleted
    or superseded one; forget any; keep an active memory of a user's conversation, not a passing
    state, for that user, when the login may write user memory).
    """
    allowed = role in EDIT_ROLES and node.scope in principal.writable_scopes
    current = node.current_status
    offered = {
        "correct": allowed and current == NodeStatus.ACTIVE,
        "keep": (allowed and current == NodeStatus.ACTIVE and node.scope == Scope.SESSION and bool(node.user_id)
                 and node.expires_at is None and Scope.USER in principal.writable_scopes),
        "expire": allowed and current == NodeStatus.ACTIVE,
        "forget": allowed,
        # a duplicate merged into another node is not restored: that node says it (a 409 every time)
        "restore": allowed and node.status in (NodeStatus.DELETED, NodeStatus.SUPERSEDED) and not merged,
    }
    return {**offered, "any": any(offered.values())}


def _form(action: str, node: Node, data=None):
    if action == "correct":
        return CorrectForm(data, node=node, prefix=action)
    if action == "forget":
        return ForgetForm(data, modes=forget_modes(node), prefix=action)
    if action == "keep":
        return KeepForm(data, prefix=action)
    return ReasonForm(data, prefix=action)


def _render(request, node: Node, *, status: int = 200, bound=None, action: str = "", problem: str = "",
            confirm_needed: bool = False, push_url: bool = False):
    principal = request.principal
    chain = node_version_chain(principal=principal, node=node)
    position = [item.pk for item in chain].index(node.pk)
    forms = {name: _form(name, node) for name in ACTIONS}
    merged = node_merged_into(principal=principal, node=node)
    if bound is not None:
        forms[action] = bound
    context = {
        "node": node,
        "chain": chain,
        # The version that replaced this one, and the newest of the chain when that is another.
        "successor": chain[position + 1] if position + 1 < len(chain) else None,
        "newest": chain[-1] if chain[-1].pk != node.pk else None,
        "kept_copy": kept_copy(node),  # a forget of this version takes it along
        "audit": node_audit_trail(principal=principal, node_ids=[item.pk for item in chain]),
        "sources": node_source_messages(principal=principal, node=node),
        "merged_into": merged,
        "actions": available_actions(principal=principal, role=request.team_role, node=node, merged=merged is not None),
        "forms": forms,
        "open_action": action if (problem or bound is not None) else "",
        "problem": problem,
        "confirm_needed": confirm_needed,
    }
    template = TEMPLATE + "#node" if request.htmx else TEMPLATE
    response = render(request, template, context, status=status)
    if push_url and request.htmx:
        response["HX-Push-Url"] = reverse("dashboard:node", args=[node.pk])
    return response


def _correct(principal: Principal, node: Node, form: CorrectForm) -> Done:
    # The corrected version is what those turns should have given: it cites them too, so that
    # forgetting the conversation takes it along (a review's find: a typo fix left it with no
    # source, and it outlived the conversation's hard forget) and Keep for <user> can bind it.
    cited = [message.pk for message in node_source_messages(principal=principal, node=node)]
    result = proposal_apply(principal=principal, proposal=Proposal(
        operation="supersede", target_id=node.pk, node={"source_message_ids": cited, **form.changes()},
        reason=form.cleaned_data["reason"],
        # The successor keeps whether the end user stated it; the reviewer's edit does not change that.
        explicit_user_intent=node.explicit, confirm=form.cleaned_data["confirm"],
    ))
    if not result.accepted:
        _refused(result)
    return Done(f"Corrected: #{node.pk} is superseded by #{result.node_id}.", result.node_id)


def _keep(principal: Principal, node: Node, form: KeepForm) -> Done:
    result = keep_for_user(principal=principal, node_id=node.pk, reason=form.cleaned_data["reason"],
                           confirm=form.cleaned_data["confirm"])
    if not result.accepted:
        _refused(result)
    return Done(f"Kept for user {result.node.user_id}: #{result.node_id} replaces #{node.pk}, and all their "
                f"conversations reach it.", result.node_id)


def _expire(principal: Principal, node: Node, form: ReasonForm) -> Done:
    result = proposal_apply(principal=principal, proposal=Proposal(
        operation="expire", target_id=node.pk, node={}, reason=form.cleaned_data["reason"]))
    if not result.accepted:
        _refused(result)
    return Done(f"Expired #{node.pk}: it stays readable here and leaves search and context.", node.pk)


def _forget(principal: Principal, node: Node, form: ForgetForm) -> Done:
    mode = form.cleaned_data["mode"]
    # The confirmation the tool asks for is the word typed into the form (checked by ForgetForm).
    result = memory_forget(principal=principal, selector=ForgetSelector(node_id=node.pk), mode=mode,
                           reason=form.cleaned_data["reason"], confirm=True)
    if not result.deleted_ids:
        raise _Problem(f"Nothing to forget: #{node.pk} is {node.status}.", 409)
    if mode == "soft":
        return Done(f"Forgot #{node.pk} (soft): hidden from search and context; it can be restored.", node.pk)
    others = len(result.deleted_ids) - 1  # the versions it replaced, the copy keeping it for its user
    also = f" with {others} other version{'s' if others != 1 else ''} of it" if others > 0 else ""
    return Done(f"Erased #{node.pk}{also} for good; the audit keeps that it happened.", None)


def _restore(principal: Principal, node: Node, form: ReasonForm) -> Done:
    restored = node_restore(principal=principal, node_id=node.pk, reason=form.cleaned_data["reason"])
    if restored.pk == node.pk:
        return Done(f"Restored #{node.pk}: it is {restored.status} again.", node.pk)
    return Done(f"Restored #{node.pk} as #{restored.pk}, the new current version.", restored.pk)


def _refused(result) -> None:
    needs = result.requires_confirmation or result.reason == "sensitive_needs_confirmation"
    status = 403 if result.reason in _FORBIDDEN_REFUSALS else (409 if needs else 400)
    hint = " Tick “Confirm” and save again to keep it." if needs else ""
    raise _Problem(f"Refused ({result.reason}): {result.message}.{hint}", status, confirm_needed=needs)


HANDLERS = {"correct": _correct, "keep": _keep, "expire": _expire, "forget": _forget, "restore": _restore}


@vary_on_headers("HX-Request")
@require_http_methods(["GET", "POST"])
@team_required
def node_page(request, node_id: int):
    """GET: one node with its chain, audit trail, source messages and the actions this login
    may take. POST `action` = correct | keep | expire | forget | restore with that form's fields
    (prefixed by the action: `correct-reason`…): see the module docstring. 404 for an id
    outside the team; 403 for a viewer; 400 for a bad form; the service's status otherwise."""
    node = node_get(principal=request.principal, node_id=node_id)
    if request.method == "GET":
        return _render(request, node)
    action = request.POST.get("action", "")
    if action not in HANDLERS:
        return _render(request, node, status=400, problem=f"Unknown action; use one of {', '.join(ACTIONS)}.")
    refusal = edit_refusal(request)
    if refusal:
        return _render(request, node, status=403, problem=refusal)
    if action == "forget" and request.POST.get("forget-mode") == "soft" and node.status == NodeStatus.DELETED:
        # a second submit of the same form: say so, not "soft is not one of the available choices"
        merged = node_merged_into(principal=request.principal, node=node)
        then = (f"it was merged into #{merged.pk}, which says it: change that one" if merged is not None
                else "restore it, or erase it for good (hard)")
        return _render(request, node, status=409, action=action, problem=f"#{node.pk} is already forgotten (soft); {then}.")
    form = _form(action, node, request.POST)
    if not form.is_valid():
        return _render(request, node, status=400, bound=form, action=action)
    try:
        done = HANDLERS[action](request.principal, node, form)
    except NotFound:
        raise
    except _Problem as problem:
        return _render(request, node, status=problem.status, bound=form, action=action, problem=problem.message,
                       confirm_needed=problem.confirm_needed)
    except AccessDenied as denied:
        return _render(request, node, status=403, bound=form, action=action, problem=str(denied))
    except MemoryError as error:
        return _render(request, node, status=error.status, bound=form, action=action, problem=error.message)
    messages.success(request, done.message)
    if done.node_id is None:
        url = reverse("dashboard:memories")
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    if not request.htmx:
        return redirect("dashboard:node", node_id=done.node_id)
    shown = node_get(principal=request.principal, node_id=done.node_id)
    return _render(request, shown, push_url=shown.pk != node.pk)
