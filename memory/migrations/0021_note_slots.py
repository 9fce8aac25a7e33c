"""Keyless notes' conflict slots as writes now compute them: by the note as
memory.services.node_input.note_text reads it (case, width, script, spacing and the marks that
only punctuate aside; symbols and marks that say something kept), so "…非常开心" and "…非常开心。"
are one note and the second write finds the first instead of adding a twin.

Every keyless node's slot is computed again. Where two active notes of one owner, domain and
type now read the same, the oldest keeps the slot — the one consolidation (memory.capture.
consolidate) keeps when it merges them later, audited — and the others take a slot of their
own (legacy:<id>), as migration 0007 did for identical notes: nothing is superseded or
deleted here, so nothing needs an audit event. Slots that are already legacy:<id> stay.

Each keyless note is written twice (freed, then set): on PostgreSQL run VACUUM ANALYZE
memory_node afterwards unless autovacuum is on (docs/deploy.md).
"""

import hashlib

from django.db import migrations
from django.db.models import CharField, Value
from django.db.models.functions import Cast, Concat

BATCH = 2000


def reslot(apps, schema_editor) -> None:
    from memory.services.node_input import conflict_slot

    Node = apps.get_model("memory", "Node")
    keyless = Node.objects.filter(key="").exclude(slot__startswith="legacy:")
    # Free the slots first: until every note has moved, a note's new slot can be another's old one.
    keyless.update(slot=Concat(Value("tmp:"), Cast("id", output_field=CharField())))
    taken: set[bytes] = set()  # digests of (owner, domain, type, slot) of the active notes seen
    fields = ("id", "status", "team_id", "session_id", "scope", "workspace_id", "user_id", "domain", "type",
              "title", "content")
    # Ids first, then each batch read and written: SQLite gives no isolation between a cursor
    # still reading a table and writes to it on the same connection.
    order = list(keyless.order_by("created_at", "id").values_list("id", flat=True))
    for start in range(0, len(order), BATCH):
        found = Node.objects.only(*fields).in_bulk(order[start : start + BATCH])
        batch = [found[pk] for pk in order[start : start + BATCH]]
        for node in batch:
            node.slot = conflict_slot(key="", value=None, cardinality="one", title=node.title, content=node.content)
            if node.status != "active":
                continue
            identity = "\x1f".join(str(part) for part in (node.team_id, node.session_id or 0, node.scope,
                                                          node.workspace_id, node.user_id, node.domain, node.type,
                                                          node.slot))
            digest = hashlib.sha1(identity.encode("utf-8", "surrogatepass")).digest()
            if digest in taken:
                node.slot = f"legacy:{node.pk}"
            else:
                taken.add(digest)
        Node.objects.bulk_update(batch, ["slot"])


class Migration(migrations.Migration):

    dependencies = [
        ("memory", "0020_lexicon"),
    ]

    operations = [
        migrations.RunPython(reslot, migrations.RunPython.noop),
    ]
