"""Teams (the tenant), memberships with roles, and agent API keys (R-TEN)."""

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone


class Team(models.Model):
    """The tenant. Every stored memory row belongs to exactly one team."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)
    # Nodes below this confidence are left out of search and context as low_confidence (R-QUERY).
    # The team budget policy's min_confidence (0.0 when it inherits), kept in step by
    # memory.services.policies.policy_set; set it there, not here.
    min_confidence = models.FloatField(default=0.0)

    def __str__(self) -> str:
        return self.slug


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer"
    EDITOR = "editor", "Editor"
    ADMIN = "admin", "Admin"



class Membership(models.Model):
    """A login's role in one team: viewer reads, editor reviews and corrects, admin also configures."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="membership_team_user_unique")]


class KeyKind(models.TextChoices):
    AGENT = "agent", "Agent"
    ADMIN = "admin", "Admin (may write global scope)"


KEY_PREFIX_LENGTH = 12


def hash_key(raw_key: str) -> str:
    """SHA-256 of the whole key. Keys carry 256 bits of randomness, so a fast hash is enough."""
    return hashlib.sha256(raw_key.encode()).hexdigest()


class AgentKey(models.Model):
    """An API key an agent sends as `Authorization: Bearer <key>`.

    The raw key is `mk_<prefix>_<secret>`; only its SHA-256 is stored, and it is shown once.
    `workspace_ids` None means every workspace; a list (even empty) limits the key to those.
    `writable_scopes` empty means the key is read-only.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="agent_keys")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=KeyKind.choices, default=KeyKind.AGENT)
    prefix = models.CharField(max_length=KEY_PREFIX_LENGTH, unique=True)
    key_hash = models.CharField(max_length=64)
    workspace_ids = models.JSONField(null=True, blank=True, default=None)
    writable_scopes = models.JSONField(default=list)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix})"

    @staticmethod
    def generate() -> tuple[str, str]:
        """Return (prefix, raw_key) for a new key."""
        prefix = secrets.token_hex(KEY_PREFIX_LENGTH // 2)
        return prefix, f"mk_{prefix}_{secrets.token_urlsafe(32)}"
