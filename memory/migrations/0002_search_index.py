"""The keyword index over `search_tokens`, per database: see memory/search/schema.py."""

from django.db import migrations


def create_index(apps, schema_editor) -> None:
    from memory.search.schema import ensure_search_index

    ensure_search_index(schema_editor.connection)


def drop_index(apps, schema_editor) -> None:
    from memory.search.schema import drop_search_index

    drop_search_index(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]

    operations = [migrations.RunPython(create_index, drop_index)]
