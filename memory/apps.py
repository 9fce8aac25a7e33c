from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _ensure_search_index(sender, using, **kwargs) -> None:
    from django.db import connections

    from memory.search.schema import TABLES, ensure_search_index

    connection = connections[using]
    if set(TABLES) <= set(connection.introspection.table_names()):
        ensure_search_index(connection)


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from django.urls import register_converter

        from config.converters import IdConverter
        from memory.api import schema  # noqa: F401 - registers the OpenAPI extensions

        # `<id:…>` in every URL configuration: ids a 64-bit column can hold, else no match.
        register_converter(IdConverter, "id")
        # SQLite table rebuilds in later migrations drop the index triggers; restore them.
        post_migrate.connect(_ensure_search_index, sender=self, dispatch_uid="memory.ensure_search_index")
