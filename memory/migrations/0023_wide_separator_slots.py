"""Keyless notes' conflict slots again where note_words now reads a full-width separator before
a letter as ending the word before it ("Note：meeting" is "Note: meeting"; memory.search.text).
Only notes whose title or content has ，；：！ right before a letter can read differently; their
slots are computed again. A note whose new slot another active note of the same owner, domain
and type already holds takes a slot of its own (legacy:<id>), as migration 0021 did, and
consolidation (memory.capture.consolidate) merges the twins later, audited. Nothing is
superseded or deleted here, so nothing needs an audit event.
"""

import re

from django.db import migrations
from django.db.models import Q

WIDE = "，；：！"
BATCH = 2000


def reslot(apps, schema_editor) -> None:
    from memory.services.node_input import conflict_slot

    Node = apps.get_model("memory", "Node")
    before_letter = re.compile(rf"[{WIDE}](?=[^\W\d_])")
    wide = Q()
    for mark in WIDE:
        wide |= Q(title__contains=mark) | Q(content__contains=mark)
    candidates = (Node.objects.filter(wide, key="").exclude(slot__startswith="legacy:")
                  .order_by("created_at", "id").values_list("id", "title", "content"))
    ids = [pk for pk, title, content in candidates if before_letter.search(title) or before_letter.search(content)]
    for start in range(0, len(ids), BATCH):
        found = Node.objects.in_bulk(ids[start : start + BATCH])
        for pk in ids[start : start + BATCH]:
            node = found[pk]
            slot = conflict_slot(key="", value=None, cardinality="one", title=node.title, content=node.content)
            if slot == node.slot:
                continue
            if node.status == "active" and Node.objects.filter(
                    team_id=node.team_id, session_id=node.session_id, scope=node.scope, workspace_id=node.workspace_id,
                    user_id=node.user_id, domain=node.domain, type=node.type, key="", slot=slot,
                    status="active").exclude(pk=pk).exists():
                slot = f"legacy:{pk}"
            Node.objects.filter(pk=pk).update(slot=slot)


class Migration(migrations.Migration):

    dependencies = [
        ("memory", "0022_message_said_index"),
    ]

    operations = [
        migrations.RunPython(reslot, migrations.RunPython.noop),
    ]
