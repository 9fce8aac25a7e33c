"""Exporting a team, a workspace or one end user's memories as JSON Lines (docs/export.md).

The file: a manifest line, then one record per line in RECORD_TYPES order, each type in
ascending source id, then an `end` line with the counts and the SHA-256 of every byte before
it. Rows are read in keyset pages of EXPORT_CHUNK, so a large team is never held in memory.

Who may export (R-TEN): a team admin (login or admin key not limited to workspaces) and the
management command (a system principal) any kind; an admin key limited to workspaces only a
workspace it may read; any login of the team the end user whose user_id equals its username
(the right to a copy). The export is audited (`memory.<kind>.exported`, with its filters and
counts) before the first byte is sent.
"""

import hashlib
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django_scopes import scope

from accounts.principal import AccessDenied, Principal
from memory.models import Node, NodeSource
from memory.selectors.portability import ExportRequest, export_querysets
from memory.services.audit import audit_record
from memory.services.portability.records import FORMAT, SCHEMA_VERSION, SPECS, Spec, columns, to_record

EXPORT_CHUNK = 2000
CONTENT_TYPE = "application/x-ndjson"


def export_check(*, principal: Principal, request: ExportRequest) -> None:
    """Raise AccessDenied unless `principal` may export `request` (see the module docstring)."""
    if principal.is_admin or principal.kind == "system":
        if principal.workspace_ids is None:
            return
        if request.kind == "workspace" and principal.can_read_workspace(request.workspace_id):
            return
        raise AccessDenied("this key is limited to some workspaces: it may export those workspaces only")
    own = principal.user is not None and request.kind == "user" and request.user_id == principal.user.get_username()
    if not own:
        raise AccessDenied("team admins only (a login may export the end user whose user_id is its username)")


def export_filename(*, team_slug: str, request: ExportRequest) -> str:
    """A file name for the download: `<team>-<kind>[-<id>]-<UTC date>.jsonl`, ids reduced to safe characters."""
    owner = request.workspace_id or request.user_id
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in owner)[:64]
    return f"{team_slug}-{request.kind}{'-' + safe if safe else ''}-{timezone.now():%Y%m%d}.jsonl"


def attachment_header(filename: str) -> str:
    """The Content-Disposition of a download named `filename` (RFC 6266): the name as a quoted
    ASCII `filename` (other characters as "_") for old clients, and the exact UTF-8 name as
    `filename*` (RFC 5987) when it is not plain ASCII. A header must be ASCII: a Chinese id set
    as is came out MIME-encoded as a whole, which no browser reads as a file name."""
    fallback = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_.") else "_" for ch in filename)
    if fallback == filename:
        return f'attachment; filename="{filename}"'
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"


def _line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _pages(queryset: QuerySet, spec: Spec) -> Iterator[list[dict[str, Any]]]:
    """`values()` rows of `queryset` in ascending id, EXPORT_CHUNK at a time (keyset paging)."""
    cols = columns(spec)
    if "id" not in cols:
        cols = ["id", *cols]
    last = 0
    while True:
        rows = list(queryset.filter(pk__gt=last).order_by("pk").values(*cols)[:EXPORT_CHUNK])
        if not rows:
            return
        yield rows
        last = rows[-1]["id"]


def _node_links(rows: list[dict[str, Any]], nodes: QuerySet, request: ExportRequest) -> None:
    """Give each node row its source message ids (in order) and drop references to nodes or
    messages outside the export (a workspace's node may cite another workspace's message)."""
    ids = [row["id"] for row in rows]
    sources: dict[int, list[int]] = {pk: [] for pk in ids}
    links = NodeSource.objects.filter(request.owner_q("message__session__"), node_id__in=ids).order_by("node_id",
                                                                                                      "position")
    for node_id, message_id in links.values_list("node_id", "message_id"):
        sources[node_id].append(message_id)
    wanted = {row[name] for row in rows for name in ("parent_id", "supersedes_id") if row[name] is not None}
    inside = set(nodes.filter(pk__in=wanted).values_list("pk", flat=True)) if wanted else set()
    for row in rows:
        row["source_message_ids"] = sources[row["id"]]
        for name in ("parent_id", "supersedes_id"):
            if row[name] is not None and row[name] not in inside:
                row[name] = None


def export_counts(*, principal: Principal, request: ExportRequest) -> dict[str, int]:
    """Rows of each record type the export holds now."""
    return {name: queryset.count() for name, queryset in export_querysets(team=principal.team, request=request).items()}


def export_begin(*, principal: Principal, request: ExportRequest) -> dict[str, Any]:
    """Check the right to export, audit it and return the manifest. Raises AccessDenied."""
    export_check(principal=principal, request=request)
    with transaction.atomic():
        event = audit_record(principal=principal, event_type=f"memory.{request.kind}.exported",
                             workspace_id=request.workspace_id, user_id=request.user_id,
                             payload={"filters": request.filters, "schema_version": SCHEMA_VERSION})
        # Counted after the event, which an export of its owner holds too: the manifest and the
        # end record then agree unless the team changes while the file streams.
        counts = export_counts(principal=principal, request=request)
        event.payload["counts"] = counts
        event.save(update_fields=["payload"])
    return {
        "type": "manifest",
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "exported_at": timezone.now().isoformat(),
        "source_team": principal.team.slug,
        "kind": request.kind,
        "filters": request.filters,
        "exported_by": principal.actor,
        "counts": counts,
    }


def export_stream(*, principal: Principal, request: ExportRequest, manifest: dict[str, Any]) -> Iterator[bytes]:
    """The file's lines as UTF-8 bytes, for a streaming response or a file (see export_begin).

    Runs its queries inside the team's scope itself, since a streaming response is read after
    the view has returned. `counts` in the manifest are taken before the stream starts; the
    `end` line has the counts actually written (they differ only if writes happen meanwhile; the
    export's own audit event is in both).
    """
    digest = hashlib.sha256()
    written: dict[str, int] = {}
    first = _line(manifest)
    digest.update(first)
    yield first
    with scope(team=principal.team):
        querysets = export_querysets(team=principal.team, request=request)
        for name, queryset in querysets.items():
            spec = SPECS[name]
            written[name] = 0
            for rows in _pages(queryset, spec):
                if name == "node":
                    _node_links(rows, querysets["node"], request)
                chunk = b"".join(_line(_record(spec, row)) for row in rows)
                digest.update(chunk)
                written[name] += len(rows)
                yield chunk
    yield _line({"type": "end", "counts": written, "sha256": digest.hexdigest()})


def _record(spec: Spec, row: dict[str, Any]) -> dict[str, Any]:
    record = to_record(spec, row)
    if spec.model is Node:
        record["refs"]["source_messages"] = row["source_message_ids"]
    return record


def export_lines(*, principal: Principal, request: ExportRequest) -> Iterator[bytes]:
    """export_begin then export_stream: the whole file. Raises AccessDenied before any line."""
    manifest = export_begin(principal=principal, request=request)
    return export_stream(principal=principal, request=request, manifest=manifest)
