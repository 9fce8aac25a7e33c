"""Messages record the agent key that appended them (null: a login, the system, an import), so
that background capture writes nothing from a turn beyond that key's writable scopes
(memory.capture.key_scopes; R-TEN, R-EXTRACT).

Earlier turns are filled in from their audit events (`memory.messages.appended` names the key
and the message ids), so a turn a forget re-reads later (memory.services.forgotten_repeats)
is held to its key too. A turn whose event names no key stays null, as a login's would.
"""

import django.db.models.deletion
from django.db import migrations, models

BATCH = 2000


def fill_from_audit(apps, schema_editor) -> None:
    AuditEvent = apps.get_model("memory", "AuditEvent")
    Message = apps.get_model("memory", "Message")
    events = (AuditEvent.objects.filter(event_type="memory.messages.appended", actor_key__isnull=False)
              .order_by("id").values_list("id", flat=True))
    # Ids first, then each batch read and written: SQLite gives no isolation between a cursor
    # still reading a table and writes to it on the same connection.
    order = list(events)
    for start in range(0, len(order), BATCH):
        by_key: dict[tuple[int, int], list[int]] = {}
        rows = AuditEvent.objects.filter(pk__in=order[start : start + BATCH]).values_list("team_id", "actor_key_id",
                                                                                          "payload")
        for team_id, key_id, payload in rows:
            ids = payload.get("message_ids") if isinstance(payload, dict) else None
            if isinstance(ids, list):
                by_key.setdefault((team_id, key_id), []).extend(i for i in ids if isinstance(i, int))
        for (team_id, key_id), ids in by_key.items():
            for at in range(0, len(ids), BATCH):
                Message.objects.filter(team_id=team_id, pk__in=ids[at : at + BATCH], agent_key__isnull=True).update(
                    agent_key_id=key_id)


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0002_team_min_confidence"),
        ("memory", "0027_message_unshown_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="agent_key",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.RESTRICT,
                                    related_name="+", to="accounts.agentkey"),
        ),
        migrations.RunPython(fill_from_audit, migrations.RunPython.noop),
    ]
