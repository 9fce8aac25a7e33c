"""What a restored database must answer exactly as the original did (R-OPS, backups).

`store_fingerprint()` describes a database by what agents get from it: for every team, its row
counts per table, and the memory context of its latest context calls replayed from the hit
ledger (memory.models.Retrieval: same owner, query and domain), built with record=False so that
taking the fingerprint writes nothing. Each context is reduced to a SHA-256 of its rendered
block and the ids of the items it injected. Two fingerprints compared with
`fingerprints_compare` tell whether a restore gave back the same memory.
"""

import hashlib
import json
from dataclasses import dataclass

from django_scopes import scope

from accounts.models import Team
from accounts.principal import system_principal
from memory.models import AuditEvent, Message, Node, Retrieval, Session, Summary
from memory.selectors.context import ContextRequest, context_build
from memory.selectors.nodes import Owner

CALLS_PER_TEAM = 200
COUNTED = {"sessions": Session, "messages": Message, "summaries": Summary, "nodes": Node, "audit_events": AuditEvent,
           "retrievals": Retrieval}


def _context_digest(principal, row: Retrieval) -> str:
    session = row.session.external_id if row.session is not None and row.session.deleted_at is None else ""
    request = ContextRequest(owner=Owner(workspace_id=row.workspace_id, user_id=row.user_id, session_id=session),
                             query=row.query, domain=row.domain)
    context = context_build(principal=principal, request=request, record=False)
    injected = [[item.kind, item.obj.pk] for item in context.items]
    payload = json.dumps({"block": context.block, "items": injected, "status": context.store_status}, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


def store_fingerprint(*, calls_per_team: int = CALLS_PER_TEAM) -> dict:
    """{"teams": {slug: {"counts": {table: rows}, "contexts": {"retrieval:<id>": sha256}}}}.

    Reads every team, each inside its own scope; the context calls of a team run as its
    system principal.
    """
    teams: dict[str, dict] = {}
    for team in Team.objects.order_by("slug"):
        with scope(team=team):
            principal = system_principal(team, "backup-check")
            counts = {name: model.objects.filter(team=team).count() for name, model in COUNTED.items()}
            rows = Retrieval.objects.filter(team=team).select_related("session").order_by("-pk")[:calls_per_team]
            contexts = {f"retrieval:{row.pk}": _context_digest(principal, row) for row in rows}
            teams[team.slug] = {"counts": counts, "contexts": contexts}
    return {"teams": teams}


@dataclass
class Comparison:
    teams: int
    contexts: int
    identical: int
    differences: list[str]

    @property
    def same(self) -> bool:
        return not self.differences


def fingerprints_compare(before: dict, after: dict) -> Comparison:
    """Which teams, row counts and contexts differ between two fingerprints."""
    differences: list[str] = []
    contexts = identical = 0
    old, new = before["teams"], after["teams"]
    for slug in sorted(set(old) | set(new)):
        if slug not in old or slug not in new:
            differences.append(f"team {slug!r} is only {'after' if slug in new else 'before'}")
            continue
        for table, rows in old[slug]["counts"].items():
            if new[slug]["counts"].get(table) != rows:
                differences.append(f"{slug}: {table} {rows} rows before, {new[slug]['counts'].get(table)} after")
        for key, digest in old[slug]["contexts"].items():
            contexts += 1
            if new[slug]["contexts"].get(key) == digest:
                identical += 1
            else:
                differences.append(f"{slug}: context of {key} differs")
        differences += [f"{slug}: context of {key} only after"
                        for key in new[slug]["contexts"] if key not in old[slug]["contexts"]]
    return Comparison(teams=len(set(old) | set(new)), contexts=contexts, identical=identical, differences=differences)
