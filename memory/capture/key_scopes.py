"""What background capture may write from the turns it reads: never more than the agent key
that appended them may write itself (R-TEN: keys limited to a set of writable scopes;
R-EXTRACT).

Each message records the key that appended it (Message.agent_key; null for a login, the
system or an import, whose turns capture reads as before: session, workspace and user). A
proposal is held to the keys of the user turns it cites, or, citing none, of every turn of
the window: capture acts with the scopes all of them allow. A proposal for a scope outside
them is narrowed to the session when the keys may write session memory (as the rules keep
what the user did not ask to keep: in the session), with the narrowing said in its reason
and in the job's notes; otherwise the proposal service refuses it (`scope_not_allowed`), and
the job's notes say which key held it back.

A key revoked after it appended still bounds what capture takes from its turns: a key's
scopes never change after it is created, and revoking stops the key's own calls but does not
take back turns it appended while it was valid (the job usually runs before anyone could
revoke; an outcome that depends on that race would be arbitrary). Forget the conversation to
take those back.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field

from accounts.models import Team
from memory.models import Message, Scope

CAPTURE_SCOPES = frozenset({Scope.SESSION.value, Scope.WORKSPACE.value, Scope.USER.value})


@dataclass(frozen=True)
class KeyScopes:
    """The limited keys among some turns: message id → (key prefix, the scopes capture may
    write from that turn). Turns of a login or of a key that may write every capture scope are
    not listed."""

    limits: dict[int, tuple[str, frozenset[str]]] = field(default_factory=dict)

    def allowed(self, message_ids: Iterable[int]) -> tuple[frozenset[str], tuple[str, ...]]:
        """The scopes capture may write from all of `message_ids`, and the prefixes of the keys
        that narrow them (sorted; empty when nothing does)."""
        scopes, keys = CAPTURE_SCOPES, set()
        for message_id in message_ids:
            limit = self.limits.get(message_id)
            if limit is not None:
                keys.add(limit[0])
                scopes = scopes & limit[1]
        return scopes, tuple(sorted(keys))


def key_scopes(*, team: Team, message_ids: Iterable[int]) -> KeyScopes:
    """The KeyScopes of `team`'s messages `message_ids` (one query; ids of other teams are ignored)."""
    rows = Message.objects.filter(team=team, pk__in=list(message_ids), agent_key__isnull=False).values_list(
        "pk", "agent_key__prefix", "agent_key__writable_scopes")
    limits = {}
    for message_id, prefix, scopes in rows:
        allowed = CAPTURE_SCOPES.intersection(scopes if isinstance(scopes, list) else ())
        if allowed != CAPTURE_SCOPES:
            limits[message_id] = (prefix, allowed)
    return KeyScopes(limits)


def narrowed_to_session(node: dict, allowed: frozenset[str]) -> str | None:
    """The scope a proposed `node` asked for, when the keys do not allow it and do allow the
    session: the caller then proposes it as session memory. None: left as it is (allowed,
    no scope named — the schema's default decides and the service checks it — or nothing to
    narrow to)."""
    wanted = node.get("scope")
    if wanted in CAPTURE_SCOPES and wanted not in allowed and Scope.SESSION in allowed:
        return wanted
    return None


def limit_note(keys: tuple[str, ...], allowed: frozenset[str]) -> str:
    """How the reason and the job's notes name a limit: "key 3f9a… may write session"."""
    return f"key{'s' if len(keys) > 1 else ''} {', '.join(keys)} may write {', '.join(sorted(allowed)) or 'nothing'}"
