"""Recompute search_tokens with the owner tokens (memory.search.text.owner_token) that let
keyword search stay inside the caller's reach in the index itself."""

from django.db import migrations

BATCH = 2000


def recompute(apps, schema_editor) -> None:
    # The services' own helpers read only plain fields, which historical models have too.
    from memory.services.messages import message_search_tokens
    from memory.services.node_input import node_search_tokens

    Node = apps.get_model("memory", "Node")
    Message = apps.get_model("memory", "Message")
    for node in Node.objects.all().iterator(chunk_size=BATCH):
        node.search_tokens = node_search_tokens(node)
        node.save(update_fields=["search_tokens"])
    for message in Message.objects.select_related("session").iterator(chunk_size=BATCH):
        message.search_tokens = message_search_tokens(message.content, message.session)
        message.save(update_fields=["search_tokens"])


class Migration(migrations.Migration):
    dependencies = [("memory", "0003_rank_indexes")]

    operations = [migrations.RunPython(recompute, migrations.RunPython.noop)]
