"""Recompute search_tokens: English words are indexed by their Snowball stem, and a message's
speaker name (metadata) is a field of its own (memory.search.text, memory.services.messages)."""

from django.db import migrations

BATCH = 2000


def recompute(apps, schema_editor) -> None:
    # The services' own helpers read only plain fields, which historical models have too.
    from memory.services.messages import message_search_tokens
    from memory.services.node_input import node_search_tokens

    Node = apps.get_model("memory", "Node")
    Message = apps.get_model("memory", "Message")
    batch = []
    for node in Node.objects.all().iterator(chunk_size=BATCH):
        node.search_tokens = node_search_tokens(node)
        batch.append(node)
        if len(batch) == BATCH:
            Node.objects.bulk_update(batch, ["search_tokens"])
            batch = []
    Node.objects.bulk_update(batch, ["search_tokens"])
    batch = []
    for message in Message.objects.select_related("session").iterator(chunk_size=BATCH):
        message.search_tokens = message_search_tokens(message.content, message.session, message.metadata)
        batch.append(message)
        if len(batch) == BATCH:
            Message.objects.bulk_update(batch, ["search_tokens"])
            batch = []
    Message.objects.bulk_update(batch, ["search_tokens"])


class Migration(migrations.Migration):
    dependencies = [("memory", "0014_node_slot_owner_idx")]

    operations = [migrations.RunPython(recompute, migrations.RunPython.noop)]
