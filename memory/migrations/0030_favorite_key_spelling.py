"""Respell the keys of stored favorites the way writes spell them now (memory.key_spelling:
fav_colour, favouriteColors → favorite_color), so that a new value of a favorite stored earlier
as fav_colour supersedes it instead of standing beside it.

Every version of a node is renamed (its supersede chain keeps one key), each with an audit event
`memory.node.updated` naming the key before and after. An active node is left as it is where
its owner already has an active node under the new spelling in the same slot (the two are kept;
an editor resolves them). Search tokens are not rebuilt: they still hold the old key's words
until the node is next written (or `manage.py reindex_nodes`).
"""

from django.db import migrations
from django.db.models import Q


def respell(apps, schema_editor) -> None:
    from memory.key_spelling import key_spelling

    Node = apps.get_model("memory", "Node")
    AuditEvent = apps.get_model("memory", "AuditEvent")
    for node in Node.objects.filter(Q(key__istartswith="fav")).select_related("session").order_by("pk").iterator():
        spelled = key_spelling(node.key)
        if spelled == node.key:
            continue
        if node.status == "active" and Node.objects.filter(
                team_id=node.team_id, session_id=node.session_id, scope=node.scope, workspace_id=node.workspace_id,
                user_id=node.user_id, domain=node.domain, type=node.type, key=spelled, slot=node.slot,
                status="active").exists():
            continue
        Node.objects.filter(pk=node.pk).update(key=spelled)
        AuditEvent.objects.create(
            team_id=node.team_id, event_type="memory.node.updated", node_id=node.pk,
            session_id=node.session.external_id if node.session is not None else "",
            workspace_id=node.workspace_id, user_id=node.user_id, actor="migration 0030",
            reason="one spelling of a favorite's key (memory.key_spelling)",
            payload={"before": {"key": node.key}, "after": {"key": spelled}, "version": node.version})


class Migration(migrations.Migration):

    dependencies = [
        ("memory", "0029_fact_key_synonyms"),
    ]

    operations = [
        migrations.RunPython(respell, migrations.RunPython.noop),
    ]
