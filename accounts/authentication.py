"""`Authorization: Bearer mk_<prefix>_<secret>` authentication for agents (R-TEN, R-API)."""

import hmac
from datetime import timedelta

from django.db import connections, router
from django.utils import timezone
from rest_framework import authentication, exceptions

from accounts.models import AgentKey, Team, hash_key
from memory.selectors.rows import columns, instances

LAST_USED_RESOLUTION = timedelta(minutes=1)


def _key_with_team(prefix: str) -> AgentKey | None:
    """AgentKey.objects.select_related("team").filter(prefix=prefix).first(), written out: it
    runs on every API call, and the ORM's compile cost ~0.8 ms of CPU (memory.selectors.rows).
    Any team's key: the key names the team."""
    using = router.db_for_read(AgentKey)
    sql = (f"SELECT {columns(AgentKey, 'k')}, {columns(Team, 't')} FROM {AgentKey._meta.db_table} k "
           f"JOIN {Team._meta.db_table} t ON t.id = k.team_id WHERE k.prefix = %s ORDER BY k.id LIMIT 1")
    with connections[using].cursor() as cursor:
        cursor.execute(sql, [prefix])
        rows = cursor.fetchall()
    if not rows:
        return None
    width = len(AgentKey._meta.concrete_fields)
    key = instances(AgentKey, rows, using=using)[0]
    key.team = instances(Team, [rows[0][width:]], using=using)[0]
    return key


class AgentKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != self.keyword.lower():  # the scheme is case-insensitive
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <key>'")
        return self.authenticate_key(parts[1])

    def authenticate_key(self, raw_key: str):
        pieces = raw_key.split("_", 2)
        if len(pieces) != 3 or pieces[0] != "mk" or not pieces[1] or not pieces[2]:
            raise exceptions.AuthenticationFailed("malformed API key")
        key = _key_with_team(pieces[1])
        if key is None or not hmac.compare_digest(key.key_hash, hash_key(raw_key)):
            raise exceptions.AuthenticationFailed("invalid API key")
        if key.revoked_at is not None:
            raise exceptions.AuthenticationFailed("this API key was revoked")
        now = timezone.now()
        if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
            AgentKey.objects.filter(pk=key.pk).update(last_used_at=now)
            key.last_used_at = now
        return (None, key)

    def authenticate_header(self, request) -> str:
        return self.keyword
