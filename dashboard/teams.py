"""Which team a dashboard request works in, and the scope it runs in (R-TEN, R-UI).

A logged-in user works in the team stored in the session (`team_slug`) while they are still
a member of it, else in their first team by slug. A superuser may pick any team; in a team
they are not a member of they act as an admin. Every dashboard view runs inside
`django_scopes.scope(team=...)`, so a query that forgets the team raises instead of reading
another team's rows.
"""

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django_htmx.http import HttpResponseClientRedirect
from django_scopes import scope

from accounts.models import Role
from accounts.principal import TeamChoice, principal_for_user_role, team_choices
from memory.errors import AccessDenied, NotFound

SESSION_TEAM_KEY = "team_slug"


def pick_team(choices: list[TeamChoice], wanted_slug: str | None) -> TeamChoice | None:
    """The choice named `wanted_slug` if it is one of `choices`, else the first, else None."""
    for choice in choices:
        if choice.team.slug == wanted_slug:
            return choice
    return choices[0] if choices else None


def team_required(view):
    """Require a login and a team; set request.team, team_role, principal and team_choices,
    and run `view` inside the team's scope.

    Anonymous users go to the login page (an HTMX request is told to redirect the whole
    page). A user without a team gets 403. Domain errors become HTTP errors here, once:
    NotFound → 404 (another team's id looks exactly like a missing one), AccessDenied → 403.
    """

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            if request.htmx:
                return HttpResponseClientRedirect(redirect_to_login(request.get_full_path()).url)
            return redirect_to_login(request.get_full_path())
        choices = team_choices(request.user)
        choice = pick_team(choices, request.session.get(SESSION_TEAM_KEY))
        if choice is None:
            raise PermissionDenied("You are not a member of any team yet. Ask a team admin to add you.")
        request.team = choice.team
        request.team_role = choice.role
        request.team_choices = choices
        request.principal = principal_for_user_role(choice.team, request.user, choice.role)
        # Views render eagerly (render(), not TemplateResponse): querysets built while the
        # template renders (reverse relations use the scoped default manager) need the scope too.
        with scope(team=choice.team):
            try:
                return view(request, *args, **kwargs)
            except NotFound as error:
                raise Http404(error.message) from error
            except AccessDenied as error:
                raise PermissionDenied(str(error)) from error

    return wrapped


EDIT_ROLES = frozenset({Role.EDITOR, Role.ADMIN})


def edit_refusal(request) -> str | None:
    """Why the request's login may not change memories or conversations in its team, or None
    when it may (R-TEN: viewers read; editors and admins review, correct, forget, restore).

    Checked by every dashboard write on the server; hiding the buttons is only a courtesy.
    The services check again through the principal's writable scopes (an editor may not
    change global memory).
    """
    if getattr(request, "team_role", None) in EDIT_ROLES:
        return None
    return f"Your role in this team ({request.team_role}) reads only; editors and admins make changes."


def admin_refusal(request, changes: str = "members, keys and schemas") -> str | None:
    """Why the request's login may not change the team's `changes` (members, agent keys,
    controlled schema, budgets), or None when it may (R-TEN: admins only; a superuser acts as
    an admin). Checked by every administration write on the server; the services check again.
    """
    if getattr(request, "team_role", None) == Role.ADMIN:
        return None
    return f"Your role in this team ({request.team_role}) may not do this; only team admins change {changes}."


def require_admin_reader(request) -> None:
    """Raise PermissionDenied unless the login may read the administration pages: the audit
    log, members, agent keys and the schema are shown to editors and admins, not to viewers."""
    if getattr(request, "team_role", None) not in EDIT_ROLES:
        raise PermissionDenied(f"Your role in this team ({request.team_role}) does not show the administration pages; "
                               "editors and admins see them.")
