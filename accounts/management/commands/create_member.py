import os

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
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
        password = password or os.environ.get("MEMBER_PASSWORD")
        if password:
            try:
                validate_password(password)  # as the dashboard's Members page asks of a new login
            except ValidationError as error:
                raise CommandError(f"password: {' '.join(error.messages)}") from None
        try:
            _, created = membership_set(team=found, username=username, role=role, password=password)
        except MemoryError as error:
            raise CommandError(error.message) from error
        # A login may be in several teams: say when its password, everywhere, was replaced.
        replaced = " (an existing login: its password is replaced)" if password and not created else ""
        self.stdout.write(f"{username} is {role} of {team}{replaced}")
