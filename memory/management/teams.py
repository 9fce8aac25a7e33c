"""Which teams a management command works on."""

from django.core.management.base import CommandError
from django_scopes import scopes_disabled

from accounts.models import Team


def teams_chosen(slug: str | None) -> list[Team]:
    """Every team in id order (`slug` None), or the one named `slug`. Raises CommandError for a
    slug no team has, the empty one included."""
    with scopes_disabled():
        teams = Team.objects.order_by("pk")
        if slug is not None:  # "" (an unset $TEAM) names no team rather than all of them
            teams = teams.filter(slug=slug)
            if not teams.exists():
                raise CommandError(f"no team {slug!r}")
        return list(teams)
