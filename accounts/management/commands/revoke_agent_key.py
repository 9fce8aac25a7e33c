from django.core.management.base import BaseCommand, CommandError

from accounts.models import AgentKey
from accounts.services import agent_key_revoke


class Command(BaseCommand):
    help = "Revoke an agent key by its prefix (the part after mk_), or by the whole key."

    def add_arguments(self, parser):
        parser.add_argument("key", help="the key's prefix, e.g. 20d426071868, or the whole mk_… key")

    def handle(self, *args, key, **options):
        prefix = key.split("_")[1] if key.startswith("mk_") and key.count("_") >= 2 else key
        found = AgentKey.objects.select_related("team").filter(prefix=prefix).first()
        if found is None:
            raise CommandError(f"no key with prefix {prefix!r}")
        if found.revoked_at is not None:
            raise CommandError(f"key {prefix} was already revoked at {found.revoked_at.isoformat()}")
        agent_key_revoke(key=found)
        self.stdout.write(f"revoked key {prefix} ({found.name}) of team {found.team.slug}")
