from django.core.management.base import BaseCommand, CommandError

from accounts.services import team_create
from memory.errors import MemoryError


class Command(BaseCommand):
    help = "Create a team (the tenant)."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", default="")

    def handle(self, *args, slug, name, **options):
        try:
            team = team_create(slug=slug, name=name)
        except MemoryError as error:
            raise CommandError(error.message) from error
        self.stdout.write(f"team {team.slug} created")
