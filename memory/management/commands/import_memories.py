"""Import an export file into a team of this instance (docs/export.md): all or nothing, ids
remapped, audit preserved. Audited as `system:import` in the target team."""

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django_scopes import scope

from accounts.models import Team
from accounts.principal import system_principal
from accounts.services import team_create
from memory.errors import MemoryError
from memory.services.portability.import_ import import_file


class Command(BaseCommand):
    help = "Import a JSON Lines export file into a team (created with --create, only if the import succeeds)."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--team", required=True, help="slug of the target team")
        parser.add_argument("--create", action="store_true", help="create the team if it does not exist")
        parser.add_argument("--reason", default="")

    def handle(self, *args, file, team, create, reason, **options):
        found = Team.objects.filter(slug=team).first()
        if found is None and not create:
            raise CommandError(f"no team {team!r} (add --create to create it)")
        started = time.perf_counter()
        try:
            # A team made by --create goes with a failed import: created in the import's transaction.
            with file.open("rb") as stream, transaction.atomic():
                if found is None:
                    found = team_create(slug=team, name=team)
                with scope(team=found):
                    # A system principal acts as the team's admin (it may write every scope).
                    principal = system_principal(found, "import")
                    result = import_file(principal=principal, stream=stream, reason=reason)
        except MemoryError as error:
            raise CommandError(error.message) from None
        except OSError as error:
            raise CommandError(f"cannot read {file}: {error.strerror}") from None
        counts = ", ".join(f"{count} {name}" for name, count in result.counts.items())
        self.stdout.write(f"imported {result.kind} of team {result.source_team} into {team} in "
                          f"{time.perf_counter() - started:.1f} s: {counts}")
