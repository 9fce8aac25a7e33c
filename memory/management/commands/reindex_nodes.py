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
        parser.add_argument("--without-concepts", action="store_true",
                            help="with MEMORY_CONCEPTS off: remove every node's concepts (refused without it)")

    def handle(self, *args, **options):
        try:
            concepts_on = thesaurus() is not None
        except ImproperlyConfigured as error:
            raise CommandError(str(error)) from None
        if not concepts_on and not options["without_concepts"]:
            raise CommandError("concepts are off (MEMORY_CONCEPTS): re-indexing now would remove every node's concepts; "
                               "pass --without-concepts to do that")
        for team in teams_chosen(options["team"]):
            done = nodes_reindex(team=team)
            self.stdout.write(f"{team.slug}: {done['nodes']} nodes read, {done['changed']} re-indexed")
