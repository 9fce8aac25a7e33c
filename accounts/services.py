"""Creating teams, members and agent keys (R-TEN). Each write is audited with it."""

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django_scopes import scope

from accounts.models import AgentKey, KeyKind, Membership, Role, Team, hash_key
from accounts.principal import AGENT_DEFAULT_WRITABLE_SCOPES, SCOPES, Principal, system_principal
from memory.errors import Conflict, InvalidInput
from memory.services.audit import audit_record
from memory.services.schema import schema_seed_defaults
from memory.validation import clean_identity


def team_create(*, slug: str, name: str = "", actor: Principal | None = None) -> Team:
    """Create a team. Raises Conflict if the slug is taken."""
    with transaction.atomic():
        if Team.objects.filter(slug=slug).exists():
            raise Conflict(f"team {slug!r} already exists")
        team = Team.objects.create(slug=slug, name=name or slug)
        schema_seed_defaults(team)
        with scope(team=team):
            audit_record(principal=actor or system_principal(team, "setup"), event_type="accounts.team.created",
                         payload={"slug": slug, "schema": "default"})
    return team


def membership_set(*, team: Team, username: str, role: str, password: str | None = None,
                   actor: Principal | None = None):
    """Create the login if needed and give it `role` in `team`. Returns (user, created_user)."""
    if role not in Role.values:
        raise InvalidInput(f"role must be one of {', '.join(Role.values)}", fields={"role": ["invalid choice"]})
    user_model = get_user_model()
    with transaction.atomic():
        user, created = user_model.objects.get_or_create(username=username)
        if password:
            user.set_password(password)
            user.save(update_fields=["password"])
        elif created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        Membership.objects.update_or_create(team=team, user=user, defaults={"role": role})
        with scope(team=team):
            audit_record(principal=actor or system_principal(team, "setup"), event_type="accounts.member.set",
                         payload={"username": username, "role": role})
    return user, created


def agent_key_create(
    *,
    team: Team,
    name: str,
    kind: str = KeyKind.AGENT,
    workspace_ids: Iterable[str] | None = None,
    writable_scopes: Iterable[str] | None = None,
    actor: Principal | None = None,
) -> tuple[AgentKey, str]:
    """Create an agent key; returns (key, raw_key). The raw key is not stored and cannot be shown again.

    `workspace_ids` None = every workspace; `writable_scopes` None = session, workspace, user
    (plus global for an admin key); an empty list makes a read-only key.
    """
    if kind not in KeyKind.values:
        raise InvalidInput(f"kind must be one of {', '.join(KeyKind.values)}", fields={"kind": ["invalid choice"]})
    if writable_scopes is None:
        scopes = list(SCOPES if kind == KeyKind.ADMIN else AGENT_DEFAULT_WRITABLE_SCOPES)
    else:
        scopes = list(dict.fromkeys(writable_scopes))
    unknown = [item for item in scopes if item not in SCOPES]
    if unknown:
        raise InvalidInput(f"unknown scopes: {', '.join(unknown)}", fields={"writable_scopes": ["invalid choice"]})
    workspaces = None
    if workspace_ids is not None:
        workspaces = [clean_identity(item, field="workspace_ids", required=True) for item in workspace_ids]
    prefix, raw = AgentKey.generate()
    with transaction.atomic():
        key = AgentKey.objects.create(
            team=team, name=name, kind=kind, prefix=prefix, key_hash=hash_key(raw),
            workspace_ids=workspaces, writable_scopes=scopes,
            created_by=actor.user if actor is not None else None,
        )
        with scope(team=team):
            audit_record(principal=actor or system_principal(team, "setup"), event_type="accounts.key.created",
                         payload={"prefix": prefix, "name": name, "kind": kind, "workspace_ids": workspaces,
                                  "writable_scopes": scopes})
    return key, raw


def agent_key_revoke(*, key: AgentKey, actor: Principal | None = None) -> AgentKey:
    with transaction.atomic():
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        with scope(team=key.team):
            audit_record(principal=actor or system_principal(key.team, "setup"), event_type="accounts.key.revoked",
                         payload={"prefix": key.prefix})
    return key
