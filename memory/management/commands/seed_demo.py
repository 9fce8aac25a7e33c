"""Set up the demo team for `make run`: an admin login, an agent key, and the Chinese cooking
conversation replayed through the API (once). Prints the login and the key."""

import secrets
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django_scopes import scopes_disabled

from accounts.models import AgentKey, Role, Team
from accounts.services import agent_key_create, agent_key_revoke, membership_set, team_create
from memory.models import Session

DEMO_FILE = Path(settings.BASE_DIR) / "demo" / "cooking_zh.json"
LOCOMO_FILE = Path(settings.SHARED_DATA_DIR) / "locomo" / "locomo5.json"


class Command(BaseCommand):
    help = "Create or refresh the demo team, its admin login and agent key, and replay the demo conversation."

    def add_arguments(self, parser):
        parser.add_argument("--team", default="demo")
        parser.add_argument("--username", default="admin")
        parser.add_argument("--port", type=int, default=8000, help="the port the demo server will listen on (printed)")
        parser.add_argument("--with-locomo", action="store_true",
                            help="also replay LoCoMo conversation conv-26 (about 400 turns) if the data is present")

    def handle(self, *args, team, username, with_locomo, port, **options):
        with scopes_disabled():
            found = Team.objects.filter(slug=team).first() or team_create(slug=team, name="Demo team")
            password = secrets.token_urlsafe(9)
            membership_set(team=found, username=username, role=Role.ADMIN, password=password)
            for old in AgentKey.objects.filter(team=found, name="demo agent", revoked_at__isnull=True):
                agent_key_revoke(key=old)
            _, raw_key = agent_key_create(team=found, name="demo agent")
            replayed = Session.objects.filter(team=found, external_id="cooking-1").exists()
        if not replayed:
            call_command("replay", str(DEMO_FILE), team=team, quiet=True, stdout=self.stdout)
        if with_locomo and LOCOMO_FILE.exists():
            with scopes_disabled():
                done = Session.objects.filter(team=found, external_id="conv-26-s1").exists()
            if not done:
                call_command("replay", str(LOCOMO_FILE), team=team, conversation="conv-26", quiet=True,
                             stdout=self.stdout)
        # Capture what the replay left uncaptured (without a broker there is no beat to do it).
        call_command("capture_run", stdout=self.stdout)
        credentials = (
            f"Dashboard: http://127.0.0.1:{port}/  login: {username}  password: {password}\n"
            f"Agent key (team {team}): {raw_key}\n"
        )
        (Path(settings.BASE_DIR) / ".demo-credentials").write_text(credentials)
        self.stdout.write(self.style.SUCCESS(credentials))
