"""Recompute every node's keyword index text, team by team (memory.services.reindex): after
turning concepts on (MEMORY_CONCEPTS) with nodes written while they were off.

    python manage.py reindex_nodes                # every team
    python manage.py reindex_nodes --team acme
"""

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from memory.management.teams import teams_chosen
from memory.search.concepts import thesaurus
from memory.services.reindex import nodes_reindex


class Command(BaseCommand):
    help = "Recompute the keyword index text (search_tokens) of every node of every team (or --team SLUG)."

    def add_arguments(self, parser):
        parser.add_argument("--team", help="only this team's slug")

    def handle(self, *args, **options):
        try:
            thesaurus()
        except ImproperlyConfigured as error:
            raise CommandError(str(error)) from None
        for team in teams_chosen(options["team"]):
            done = nodes_reindex(team=team)
            self.stdout.write(f"{team.slug}: {done['nodes']} nodes read, {done['changed']} re-indexed")
