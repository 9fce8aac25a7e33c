"""Export a team, a workspace or one end user's memories to a JSON Lines file, for a move to
another instance (docs/export.md). Audited as `system:export` in the source team."""

import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django_scopes import scope

from accounts.models import Team
from accounts.principal import system_principal
from memory.errors import MemoryError
from memory.selectors.portability import KINDS, ExportRequest
from memory.services.portability.export import export_lines


class Command(BaseCommand):
    help = "Write a team's (or a workspace's or an end user's) memories as JSON Lines."

    def add_arguments(self, parser):
        parser.add_argument("--team", required=True, help="slug of the team to export")
        parser.add_argument("--kind", choices=KINDS, default="team")
        parser.add_argument("--workspace-id", default="")
        parser.add_argument("--user-id", default="")
        parser.add_argument("--output", "-o", type=Path, help="file to write (default: standard output)")

    def handle(self, *args, team, kind, workspace_id, user_id, output, **options):
        found = Team.objects.filter(slug=team).first()
        if found is None:
            raise CommandError(f"no team {team!r}")
        principal = system_principal(found, "export")
        started = time.perf_counter()
        size = 0
        try:
            request = ExportRequest.of(kind=kind, workspace_id=workspace_id, user_id=user_id)
            with scope(team=found):
                lines = export_lines(principal=principal, request=request)
            with (output.open("wb") if output else _stdout()) as sink:
                for chunk in lines:
                    sink.write(chunk)
                    size += len(chunk)
        except MemoryError as error:
            raise CommandError(error.message) from None
        except OSError as error:
            raise CommandError(f"cannot write {output}: {error.strerror}") from None
        if output:
            self.stderr.write(f"exported {kind} of team {team} to {output}: {size} bytes in "
                              f"{time.perf_counter() - started:.1f} s")


class _stdout:  # noqa: N801 - a context manager over the binary standard output that does not close it
    def __enter__(self):
        return sys.stdout.buffer

    def __exit__(self, *exc):
        sys.stdout.buffer.flush()
