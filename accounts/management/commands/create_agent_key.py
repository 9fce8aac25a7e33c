from django.core.management.base import BaseCommand, CommandError

from accounts.models import KeyKind, Team
from accounts.services import agent_key_create
from memory.errors import MemoryError


class Command(BaseCommand):
    help = "Create an agent API key for a team and print it once (only its hash is stored)."

    def add_arguments(self, parser):
        parser.add_argument("team")
        parser.add_argument("--name", default="agent")
        parser.add_argument("--kind", choices=KeyKind.values, default=KeyKind.AGENT)
        parser.add_argument("--workspace", action="append", dest="workspaces",
                            help="limit the key to this workspace (repeatable)")
        parser.add_argument("--scopes", default=None,
                            help="comma-separated writable scopes; empty string for a read-only key")

    def handle(self, *args, team, name, kind, workspaces, scopes, **options):
        found = Team.objects.filter(slug=team).first()
        if found is None:
            raise CommandError(f"no team {team!r}")
        writable = None if scopes is None else [item for item in scopes.split(",") if item]
        try:
            _, raw = agent_key_create(team=found, name=name, kind=kind, workspace_ids=workspaces,
                                      writable_scopes=writable)
        except MemoryError as error:
            raise CommandError(error.message) from error
        self.stdout.write(raw)
