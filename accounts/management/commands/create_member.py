import os

from django.core.management.base import BaseCommand, CommandError

from accounts.models import Role, Team
from accounts.services import membership_set
from memory.errors import MemoryError


class Command(BaseCommand):
    help = "Create a login (if needed) and give it a role in a team. The password comes from --password or $MEMBER_PASSWORD."

    def add_arguments(self, parser):
        parser.add_argument("team")
        parser.add_argument("username")
        parser.add_argument("--role", choices=Role.values, default=Role.VIEWER)
        parser.add_argument("--password", default=None)

    def handle(self, *args, team, username, role, password, **options):
        found = Team.objects.filter(slug=team).first()
        if found is None:
            raise CommandError(f"no team {team!r}")
        try:
            membership_set(team=found, username=username, role=role,
                           password=password or os.environ.get("MEMBER_PASSWORD"))
        except MemoryError as error:
            raise CommandError(error.message) from error
        self.stdout.write(f"{username} is {role} of {team}")
