"""What the administration pages (audit, members, keys, schema) share: running a service for a
form and turning its domain errors into the page's answer (R-UI, R-TEN).

The services raise; this module maps once: InvalidInput → 400 with the messages on the form's
fields, AccessDenied → 403, Conflict → 409 (e.g. the team's last admin), any other domain
error → its own status, each with the message shown on the page. NotFound passes through to
@team_required, which answers 404 (another team's id looks exactly like a missing one).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import forms

from dashboard.admin_forms import show_errors
from memory.errors import AccessDenied, InvalidInput, MemoryError, NotFound


@dataclass(frozen=True)
class Outcome:
    """A service call's answer for the page: its result, or the status and problem to show."""

    result: Any = None
    status: int = 200
    problem: str = ""

    @property
    def ok(self) -> bool:
        return self.status < 300


def run_service(form: forms.Form | None, call: Callable[[], Any]) -> Outcome:
    """Run `call` (a service write) and map its domain errors (see the module docstring)."""
    try:
        return Outcome(result=call())
    except NotFound:
        raise
    except InvalidInput as error:
        if form is None:
            return Outcome(status=400, problem=error.message)
        show_errors(form, error)
        return Outcome(status=400)
    except AccessDenied as error:
        return Outcome(status=403, problem=str(error))
    except MemoryError as error:
        return Outcome(status=error.status, problem=error.message)


def template_for(request, template: str, partial: str) -> str:
    """The page, or only its `partial` for an HTMX request (not for a history restore)."""
    if partial and request.htmx and not request.htmx.history_restore_request:
        return f"{template}#{partial}"
    return template
