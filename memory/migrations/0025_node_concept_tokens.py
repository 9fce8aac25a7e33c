"""Recompute every node's search_tokens: a field of concept tokens (the thesaurus categories of
its Chinese words, memory.search.concepts) now comes before the owner tokens, empty for a node
without such words or with MEMORY_CONCEPTS off. Messages are unchanged."""

from django.db import migrations

BATCH = 2000


def recompute(apps, schema_editor) -> None:
    # node_search_tokens reads only plain fields, which the historical model has too.
    from memory.services.node_input import node_search_tokens

    Node = apps.get_model("memory", "Node")
    batch = []
    for node in Node.objects.all().iterator(chunk_size=BATCH):
        node.search_tokens = node_search_tokens(node)
        batch.append(node)
        if len(batch) == BATCH:
            Node.objects.bulk_update(batch, ["search_tokens"])
            batch = []
    Node.objects.bulk_update(batch, ["search_tokens"])


class Migration(migrations.Migration):
    dependencies = [("memory", "0024_message_system_index")]

    operations = [migrations.RunPython(recompute, migrations.RunPython.noop)]
