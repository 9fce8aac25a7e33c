"""Idempotency-Key on writes (R-API): a retried write returns the first answer and writes nothing twice.

A write sent with `Idempotency-Key: <key>` runs inside `idempotent_write(...)`, one
transaction holding both the write and its IdempotencyRecord:

- the first request with a key inserts the record, runs, and stores its answer if it is a
  2xx; any other answer (4xx, 5xx, an exception) rolls the write and the record back
  together, so a retry runs again;
- a retry with the same key and the same request (method, path, query string and raw body)
  gets the stored status and body without running;
- the same key with a different request is refused: IdempotencyKeyReused (422);
- two concurrent requests with one key: the second waits on the record's unique index
  until the first finishes, then replays the first's answer (or runs itself if the first
  stored nothing). Exactly one of them executes. Only if the winner's record cannot be read
  after that wait does the second get IdempotencyInProgress (409).

Keys belong to the caller (one agent key or one login) within its team; a record older than
limits.IDEMPOTENCY_TTL_HOURS counts as absent and is replaced by the next request with its key.
"""

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone
from django_scopes import scope

from accounts.models import Team
from accounts.principal import Principal
from memory.errors import Conflict, MemoryError
from memory.limits import IDEMPOTENCY_KEY_MAX, IDEMPOTENCY_TTL_HOURS
from memory.models import IdempotencyRecord

PURGE_BATCH = 100  # expired records deleted after each stored answer


class IdempotencyKeyReused(MemoryError):
    """422: the key was first used for a different request (method, path, query or body)."""

    status = 422
    code = "idempotency_key_reused"


class IdempotencyInProgress(Conflict):
    """409: another request with this key holds it; retry later."""

    code = "idempotency_in_progress"


@dataclass(frozen=True)
class WriteRequest:
    """What a key promises to repeat: the method, the path, the raw query string and body."""

    method: str
    path: str
    query: str
    body: bytes

    @property
    def fingerprint(self) -> str:
        """SHA-256 (64 hex characters) of the method, path, query string and body."""
        digest = hashlib.sha256()
        for part in (self.method.encode(), self.path.encode(), self.query.encode()):
            digest.update(len(part).to_bytes(8, "big") + part)  # length-prefixed: no two requests collide by shifting bytes
        digest.update(self.body)
        return digest.hexdigest()


@dataclass(frozen=True)
class StoredResponse:
    status: int
    body: str  # rendered JSON text ("" for an empty body)


@dataclass
class IdempotentWrite:
    """A key held for one request: either the stored answer to replay, or a fresh record to fill."""

    record: IdempotencyRecord | None = None
    replay: StoredResponse | None = None
    stored: bool = False

    def store(self, *, status: int, body: str) -> None:
        """Keep a 2xx answer (status, rendered JSON body) for retries; other statuses are not stored."""
        if self.record is None or not 200 <= status < 300:
            return
        self.record.response_status = status
        self.record.response_body = body
        self.record.save(update_fields=["response_status", "response_body"])
        self.stored = True
        transaction.on_commit(lambda team=self.record.team: idempotency_purge_expired(team=team), robust=True)


def idempotency_key_problem(value: str) -> str | None:
    """Why `value` is not a valid Idempotency-Key (1–255 printable ASCII characters, no spaces), or None."""
    if not value:
        return "is empty"
    if len(value) > IDEMPOTENCY_KEY_MAX:
        return f"is {len(value)} characters long"
    for position, ch in enumerate(value):
        if not "!" <= ch <= "~":
            return f"has {ch!r} at position {position}"
    return None


def idempotency_caller(principal: Principal) -> str:
    """Whose keys these are: `key:<agent key id>`, `user:<user id>` or `system:<job>`."""
    if principal.agent_key is not None:
        return f"key:{principal.agent_key.pk}"
    if principal.user is not None:
        return f"user:{principal.user.pk}"
    return f"system:{principal.role}"


def _expiry_cutoff() -> datetime:
    return timezone.now() - timedelta(hours=IDEMPOTENCY_TTL_HOURS)


def _replay_or_refuse(record: IdempotencyRecord, fingerprint: str) -> IdempotentWrite:
    if record.fingerprint != fingerprint:
        raise IdempotencyKeyReused(
            f"this Idempotency-Key was already used for a different request ({record.method} {record.path}); "
            "use a new key for a new request"
        )
    return IdempotentWrite(replay=StoredResponse(status=record.response_status, body=record.response_body))


@contextmanager
def idempotent_write(*, principal: Principal, key: str, request: WriteRequest) -> Iterator[IdempotentWrite]:
    """Hold `key` for `request` in one transaction with the write run inside the block.

    Yields an IdempotentWrite: if `.replay` is set, do not run the write, answer with the
    stored status and body. Otherwise run it and call `.store(status=, body=)` with the
    answer; the transaction commits the write and the record together when a 2xx answer was
    stored, and rolls both back otherwise (also when the block raises).
    Raises IdempotencyKeyReused (422) for the same key with a different request, and
    IdempotencyInProgress (409) if a concurrent holder's record cannot be read.
    The key must be valid (see idempotency_key_problem).
    """
    caller = idempotency_caller(principal)
    fingerprint = request.fingerprint
    with transaction.atomic():
        records = IdempotencyRecord.objects.filter(team=principal.team, caller=caller, key=key)
        records.filter(created_at__lte=_expiry_cutoff()).delete()
        existing = records.first()
        if existing is not None:
            claim = _replay_or_refuse(existing, fingerprint)
        else:
            try:
                # On PostgreSQL a concurrent holder's uncommitted row makes this insert wait
                # for its transaction: afterwards its answer is visible, or the key is free.
                with transaction.atomic():
                    record = IdempotencyRecord.objects.create(
                        team=principal.team, caller=caller, key=key, method=request.method,
                        path=request.path, fingerprint=fingerprint,
                    )
                claim = IdempotentWrite(record=record)
            except IntegrityError:
                winner = records.first()
                if winner is None:
                    raise IdempotencyInProgress("a request with this Idempotency-Key is in progress; retry later") from None
                claim = _replay_or_refuse(winner, fingerprint)
        yield claim
        if not claim.stored:
            transaction.set_rollback(True)


def idempotency_purge_expired(*, team: Team) -> int:
    """Delete up to PURGE_BATCH of the team's expired records; returns how many.

    Rows another transaction holds are skipped (PostgreSQL), so purges never wait or deadlock.
    """
    with scope(team=team), transaction.atomic():
        expired = IdempotencyRecord.objects.filter(team=team, created_at__lte=_expiry_cutoff())
        ids = list(expired.select_for_update(skip_locked=True).values_list("pk", flat=True)[:PURGE_BATCH])
        if not ids:
            return 0
        deleted, _ = IdempotencyRecord.objects.filter(pk__in=ids).delete()
        return deleted


FORGOTTEN_ANSWER = json.dumps({"error": {
    "code": "answer_forgotten",
    "message": "this request was already applied; its answer was erased by a hard forget and is not repeated",
}}, ensure_ascii=False)


def idempotency_forget_answers(*, team: Team) -> int:
    """Erase the team's stored answers (R-STORE provable forgetting): an answer may quote what a
    hard forget just erased, and which one does cannot be told from its text reliably. The
    records stay, so a retry still runs nothing twice: it gets 409 `answer_forgotten`.
    Called inside the forget's transaction; the record of the request in progress (not
    answered yet) is left alone. Returns how many answers were erased."""
    return (
        IdempotencyRecord.objects.filter(team=team)
        .exclude(response_status=0)
        .exclude(response_body=FORGOTTEN_ANSWER)
        .update(response_status=409, response_body=FORGOTTEN_ANSWER)
    )
