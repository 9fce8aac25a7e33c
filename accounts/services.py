"""Creating teams, members and agent keys (R-TEN). Each write is audited with it."""

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django_scopes import scope

from accounts.models import AgentKey, KeyKind, Membership, Role, Team, hash_key
from accounts.principal import AGENT_DEFAULT_WRITABLE_SCOPES, SCOPES, Principal, system_principal
from memory import limits
from memory.errors import Conflict, InvalidInput, NotFound
from memory.services.audit import audit_record
from memory.services.schema import schema_seed_defaults
from memory.validation import clean_identity, clean_text

KEY_NAME_MAX = limits.KEY_NAME_MAX


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


def _lock_team(team: Team) -> None:
    """Serialise membership changes of one team (PostgreSQL row lock; SQLite writes are serial),
    so two admins demoting each other at once cannot leave the team without an admin."""
    Team.objects.select_for_update().filter(pk=team.pk).first()


def _check_not_last_admin(team: Team, membership: Membership, what: str) -> None:
    if membership.role != Role.ADMIN:
        return
    if not Membership.objects.filter(team=team, role=Role.ADMIN).exclude(pk=membership.pk).exists():
        raise Conflict(f"{membership.user.get_username()} is the team's last admin: make another member admin "
                       f"before you {what} them", code="last_admin")


def _membership_write(*, team: Team, user, role: str, created_user: bool, actor: Principal | None) -> None:
    """Give `user` `role` in `team` and audit it; call inside a transaction that locked the team."""
    current = Membership.objects.select_related("user").filter(team=team, user=user).first()
    if current is not None and role != Role.ADMIN:
        _check_not_last_admin(team, current, "demote")
    previous = current.role if current is not None else None
    Membership.objects.update_or_create(team=team, user=user, defaults={"role": role})
    with scope(team=team):
        audit_record(principal=actor or system_principal(team, "setup"), event_type="accounts.member.set",
                     payload={"username": user.get_username(), "role": role, "previous_role": previous,
                              "created_user": created_user})


def _check_role(role: str) -> None:
    if role not in Role.values:
        raise InvalidInput(f"role must be one of {', '.join(Role.values)}", fields={"role": ["invalid choice"]})


def membership_set(*, team: Team, username: str, role: str, password: str | None = None,
                   actor: Principal | None = None):
    """Create the login if needed and give it `role` in `team`. Returns (user, created_user).

    A new login without a password gets an unusable one (it cannot sign in until it has one).
    Raises InvalidInput for an unknown role and Conflict (409, code `last_admin`) when this
    would demote the team's last admin (R-TEN: a team always keeps an admin).
    """
    _check_role(role)
    user_model = get_user_model()
    with transaction.atomic():
        _lock_team(team)
        user, created = user_model.objects.get_or_create(username=username)
        if password:
            user.set_password(password)
            user.save(update_fields=["password"])
        elif created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        _membership_write(team=team, user=user, role=role, created_user=created, actor=actor)
    return user, created


def member_add(*, team: Team, username: str, role: str, password: str = "", actor: Principal | None = None):
    """Add a login to `team` with `role` (dashboard, R-UI Administration). Returns (user, created_user).

    An existing login is added as it is: giving it a password here is refused, so a team admin
    can never take over a login that other teams share. A new login needs a password that
    passes AUTH_PASSWORD_VALIDATORS. Raises InvalidInput (fields username, password, role) or
    Conflict when the login is a member already (change the role instead).
    """
    _check_role(role)
    user_model = get_user_model()
    try:
        username = user_model._meta.get_field(user_model.USERNAME_FIELD).clean(username, None)
    except ValidationError as error:
        raise InvalidInput(f"username: {' '.join(error.messages)}", fields={"username": error.messages}) from None
    with transaction.atomic():
        _lock_team(team)
        user = user_model.objects.filter(**{user_model.USERNAME_FIELD: username}).first()
        created = user is None
        if user is not None:
            if password:
                raise InvalidInput("this login exists already: add it without a password (its password stays its own)",
                                   fields={"password": ["leave empty for an existing login"]})
            if Membership.objects.filter(team=team, user=user).exists():
                raise Conflict(f"{username} is a member already: change their role instead", code="already_member")
        else:
            if not password:
                raise InvalidInput("a new login needs a password", fields={"password": ["required for a new login"]})
            candidate = user_model(**{user_model.USERNAME_FIELD: username})
            try:
                validate_password(password, candidate)
            except ValidationError as error:
                raise InvalidInput(f"password: {' '.join(error.messages)}",
                                   fields={"password": error.messages}) from None
            try:
                with transaction.atomic():
                    user = user_model.objects.create_user(**{user_model.USERNAME_FIELD: username}, password=password)
            except IntegrityError:  # created by someone else a moment ago: never set its password
                raise Conflict(f"the login {username} was just created elsewhere: add it again without a password",
                               code="login_exists") from None
        _membership_write(team=team, user=user, role=role, created_user=created, actor=actor)
    return user, created


def membership_role_change(*, team: Team, membership_id: int, role: str, actor: Principal | None = None) -> Membership:
    """Give the member `membership_id` of `team` another role (dashboard, R-UI Administration).

    Raises NotFound for a membership of another team, InvalidInput for an unknown role and
    Conflict (409, code `last_admin`) when it would demote the team's last admin.
    Audited as `accounts.member.set` with the previous role.
    """
    _check_role(role)
    with transaction.atomic():
        _lock_team(team)
        membership = Membership.objects.select_related("user").filter(team=team, pk=membership_id).first()
        if membership is None:
            raise NotFound("no such member in this team")
        _membership_write(team=team, user=membership.user, role=role, created_user=False, actor=actor)
        membership.refresh_from_db()
    return membership


def membership_remove(*, team: Team, membership_id: int, actor: Principal | None = None) -> Membership:
    """Remove one member from `team` (the login itself stays; it may belong to other teams).

    Raises NotFound for a membership of another team and Conflict (409, code `last_admin`)
    for the team's last admin. Audited as `accounts.member.removed`.
    """
    with transaction.atomic():
        _lock_team(team)
        membership = Membership.objects.select_related("user").filter(team=team, pk=membership_id).first()
        if membership is None:
            raise NotFound("no such member in this team")
        _check_not_last_admin(team, membership, "remove")
        membership.delete()
        with scope(team=team):
            audit_record(principal=actor or system_principal(team, "setup"), event_type="accounts.member.removed",
                         payload={"username": membership.user.get_username(), "role": membership.role})
    return membership


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
    (plus global for an admin key); an empty list makes a read-only key. Raises InvalidInput
    (fields name, kind, writable_scopes, workspace_ids). The audit payload names the key by its
    prefix: the raw key is in no log, audit event or table.
    """
    name = clean_text(name, field="name", max_length=KEY_NAME_MAX, allow_empty=False).strip()
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
    """Revoke `key` for good: the API refuses it from now on (401). Raises Conflict if it was
    revoked already. Audited as `accounts.key.revoked` with the prefix (never the key)."""
    with transaction.atomic():
        locked = AgentKey.objects.select_for_update().get(pk=key.pk)
        if locked.revoked_at is not None:
            raise Conflict(f"key {key.prefix} was revoked already", code="already_revoked")
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        with scope(team=key.team):
            audit_record(principal=actor or system_principal(key.team, "setup"), event_type="accounts.key.revoked",
                         payload={"prefix": key.prefix, "name": key.name})
    return key
