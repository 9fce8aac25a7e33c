"""Writing the team synonym lexicon (seed 004 BusinessLexicon 同义词; R-QUERY, R-UI).

Team admins only (an admin login or an admin key; R-TEN). A set is saved or deleted and
audited in one transaction (`memory.lexicon.created|updated|deleted`, payload `{"before",
"after"}` with the set's workspace and terms; a bulk load is one `memory.lexicon.loaded`
event with its counts). Each change also bumps the team's LexiconVersion, in the same
transaction: the next search or context call notices it by one primary-key read
(memory.selectors.lexicon).

A term is stored as memory.search.text.normalize gives it (NFKC, case-fold, traditional →
simplified) with its runs of white space made one space; it must keep at least one
searchable token (a stop word alone, or punctuation, expands nothing). A set holds 2 to
limits.LEXICON_TERMS_MAX distinct terms of at most limits.LEXICON_TERM_MAX characters; the
same set (the same terms in any order) is stored once per level (team or workspace); a team
holds at most limits.LEXICON_SETS_MAX sets.
"""

import hashlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from accounts.principal import Principal
from memory import limits
from memory.errors import AccessDenied, InvalidInput, NotFound
from memory.lexicon_models import LexiconSet, LexiconVersion
from memory.search.text import normalize, query_tokens
from memory.services.audit import audit_record
from memory.validation import clean_identity, text_problem


def _require_admin(principal: Principal) -> None:
    if not (principal.is_admin or principal.kind == "system"):  # a management command acts as an admin
        raise AccessDenied("only team admins edit the synonym lexicon")


def lexicon_lock(*, team) -> None:
    """Lock `team`'s LexiconVersion row (created if missing) until the transaction ends. Every
    change of the team's sets takes it first, before any set's row: concurrent changes then run
    one after the other, a count against LEXICON_SETS_MAX sees every change committed before
    it, and no two changes wait on each other's locks."""
    # A new row starts from the clock, not from 0: a team id used again (a test database rolled
    # back, a restored backup) never finds the sets of the team before it in a process's cache.
    LexiconVersion.objects.select_for_update().get_or_create(team=team, defaults={"version": time.time_ns()})


def lexicon_touch(*, team) -> None:
    """Count one change of `team`'s synonym sets; call inside the change's transaction (it
    takes lexicon_lock if the change has not yet)."""
    lexicon_lock(team=team)
    LexiconVersion.objects.filter(team=team).update(version=F("version") + 1)


def term_problem(term: str) -> str | None:
    """Why a normalised term cannot be stored, or None."""
    if not term:
        return "is empty"
    if not term.isprintable():  # white space is already one space; what is left is a control character
        return "must be printable (no control characters)"
    if len(term) > limits.LEXICON_TERM_MAX:
        return f"has more than {limits.LEXICON_TERM_MAX} characters once normalised ({len(term)})"
    if not query_tokens(term, None):
        return "has no searchable word (only stop words or punctuation)"
    return None


def normalize_term(value: str) -> str:
    """A term as it is stored and matched: normalised, white space runs made one space."""
    return " ".join(normalize(value).split())


def lexicon_terms_clean(terms: Any) -> list[str]:
    """The terms of one set as stored (input order, normalised). Raises InvalidInput with every
    problem on `terms`: not a list of strings, NUL or a lone surrogate, an empty or too long
    term, two terms equal once normalised, fewer than 2 or more than LEXICON_TERMS_MAX terms."""
    problems: list[str] = []
    if not isinstance(terms, (list, tuple)):
        raise InvalidInput("terms must be a list of strings", fields={"terms": ["must be a list of strings"]})
    if not 2 <= len(terms) <= limits.LEXICON_TERMS_MAX:
        problems.append(f"a set has 2–{limits.LEXICON_TERMS_MAX} terms (got {len(terms)})")
    cleaned: list[str] = []
    for index, value in enumerate(terms[: limits.LEXICON_TERMS_MAX + 1]):
        if not isinstance(value, str):
            problems.append(f"term {index + 1} must be a string")
            continue
        problem = text_problem(value)
        if problem is None and len(value) > 4 * limits.LEXICON_TERM_MAX:
            problem = f"has more than {limits.LEXICON_TERM_MAX} characters ({len(value)})"
        term = normalize_term(value) if problem is None else ""
        problem = problem or term_problem(term)
        if problem:
            problems.append(f"term {index + 1} {problem}")
        elif term in cleaned:
            problems.append(f"term {index + 1} ({term}) repeats term {cleaned.index(term) + 1} once normalised")
        else:
            cleaned.append(term)
    if problems:
        raise InvalidInput(f"synonym set not saved: {'; '.join(problems)}", fields={"terms": problems})
    return cleaned


def terms_key(terms: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(sorted(terms)).encode()).hexdigest()


def _snapshot(row: LexiconSet | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {"id": row.pk, "workspace_id": row.workspace_id, "terms": list(row.terms)}


def _workspace(principal: Principal, workspace_id: str | None) -> str:
    workspace_id = clean_identity(workspace_id or "", field="workspace_id")
    principal.check_workspace(workspace_id)
    return workspace_id


def _get(principal: Principal, set_id: int) -> LexiconSet:
    row = LexiconSet.objects.select_for_update().filter(team=principal.team, pk=set_id).first()
    if row is None or not principal.can_read_workspace(row.workspace_id) and row.workspace_id:
        raise NotFound("no such synonym set in this team")
    return row


def _duplicate(workspace_id: str) -> InvalidInput:
    level = f"workspace {workspace_id}" if workspace_id else "the team"
    message = f"{level} has a synonym set with these terms already"
    return InvalidInput(message, fields={"terms": [message]})


def lexicon_set_save(*, principal: Principal, terms: Any, workspace_id: str | None = None,
                     set_id: int | None = None) -> LexiconSet:
    """Create a synonym set (set_id None) or replace set `set_id`'s terms and, when given, its
    workspace ("" = team-wide). `terms` None keeps an existing set's terms as they are when it
    is locked (a PATCH of the workspace alone never restores terms another admin just changed).
    Returns the row. Raises AccessDenied (not a team admin, or a workspace outside a key's
    limit), NotFound (not this team's set) and InvalidInput (see lexicon_terms_clean; the same
    set at the level already; the team's LEXICON_SETS_MAX). An update that changes nothing is
    neither written nor audited."""
    _require_admin(principal)
    if terms is None and set_id is None:
        raise InvalidInput("terms: a new synonym set needs its terms", fields={"terms": ["required"]})
    cleaned = None if terms is None else lexicon_terms_clean(terms)
    with transaction.atomic():
        lexicon_lock(team=principal.team)
        row = None if set_id is None else _get(principal, set_id)
        if row is not None:
            principal.check_workspace(row.workspace_id)
            if cleaned is None:
                cleaned = list(row.terms)
        assert cleaned is not None
        target = _workspace(principal, workspace_id) if workspace_id is not None or row is None else row.workspace_id
        if row is not None and row.terms == cleaned and row.workspace_id == target:
            return row
        if row is None and LexiconSet.objects.filter(team=principal.team).count() >= limits.LEXICON_SETS_MAX:
            message = f"a team holds at most {limits.LEXICON_SETS_MAX} synonym sets"
            raise InvalidInput(message, fields={"terms": [message]})
        before = _snapshot(row)
        row = row or LexiconSet(team=principal.team)
        row.workspace_id, row.terms, row.terms_key = target, cleaned, terms_key(cleaned)
        row.updated_at, row.updated_by = timezone.now(), principal.actor
        try:
            with transaction.atomic():
                row.save()
        except IntegrityError:
            raise _duplicate(target) from None
        lexicon_touch(team=principal.team)
        audit_record(principal=principal, event_type=f"memory.lexicon.{'updated' if before else 'created'}",
                     workspace_id=target, payload={"before": before, "after": _snapshot(row)})
    return row


def lexicon_set_delete(*, principal: Principal, set_id: int) -> None:
    """Delete one synonym set. Raises AccessDenied and NotFound as lexicon_set_save does."""
    _require_admin(principal)
    with transaction.atomic():
        lexicon_lock(team=principal.team)
        row = _get(principal, set_id)
        principal.check_workspace(row.workspace_id)
        before = _snapshot(row)
        row.delete()
        lexicon_touch(team=principal.team)
        audit_record(principal=principal, event_type="memory.lexicon.deleted", workspace_id=before["workspace_id"],
                     payload={"before": before, "after": None})


@dataclass
class LoadReport:
    """What a bulk load did: sets created, sets already there, sets skipped by reason."""

    created: int = 0
    present: int = 0
    replaced: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def _load_terms(raw: Iterable[str]) -> tuple[list[str], str]:
    """A loaded set's terms, forgiving what a thesaurus holds: repeats and unusable terms are
    dropped; the reason a set cannot be stored at all, or ""."""
    terms: list[str] = []
    for value in raw:
        if not isinstance(value, str) or text_problem(value):
            continue
        term = normalize_term(value)
        if term_problem(term) is None and term not in terms:
            terms.append(term)
    if len(terms) < 2:
        return terms, "fewer than 2 usable terms"
    if len(terms) > limits.LEXICON_TERMS_MAX:
        return terms, f"more than {limits.LEXICON_TERMS_MAX} terms"
    return terms, ""


def lexicon_load(*, principal: Principal, sets: Iterable[Iterable[str]], source: str, workspace_id: str = "",
                 replace: bool = False) -> LoadReport:
    """Add many synonym sets at one level (a thesaurus, manage.py lexicon_load), in one
    transaction with one audit event `memory.lexicon.loaded` {source, created, present,
    replaced, skipped}. Sets already stored are kept; a set that cannot be stored is skipped
    and counted by reason. `replace` first deletes the level's sets. Raises AccessDenied, and
    InvalidInput when the team would pass LEXICON_SETS_MAX (nothing is stored then)."""
    _require_admin(principal)
    workspace_id = _workspace(principal, workspace_id)
    report = LoadReport()
    with transaction.atomic():
        lexicon_lock(team=principal.team)
        level = LexiconSet.objects.filter(team=principal.team, workspace_id=workspace_id)
        if replace:
            report.replaced, _ = level.delete()
        known = set(level.values_list("terms_key", flat=True))
        now = timezone.now()
        rows: list[LexiconSet] = []
        for raw in sets:
            terms, reason = _load_terms(raw)
            if reason:
                report.skip(reason)
                continue
            key = terms_key(terms)
            if key in known:
                report.present += 1
                continue
            known.add(key)
            rows.append(LexiconSet(team=principal.team, workspace_id=workspace_id, terms=terms, terms_key=key,
                                   created_at=now, updated_at=now, updated_by=principal.actor))
        total = LexiconSet.objects.filter(team=principal.team).count() + len(rows)
        if total > limits.LEXICON_SETS_MAX:
            message = f"a team holds at most {limits.LEXICON_SETS_MAX} synonym sets; this load would make {total}"
            raise InvalidInput(message, fields={"source": [message]})
        LexiconSet.objects.bulk_create(rows, batch_size=500)
        report.created = len(rows)
        lexicon_touch(team=principal.team)
        audit_record(principal=principal, event_type="memory.lexicon.loaded", workspace_id=workspace_id,
                     payload={"source": source, "created": report.created, "present": report.present,
                              "replaced": report.replaced, "skipped": report.skipped})
    return report
