from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from django.urls import register_converter

        from config.converters import IdConverter

        # `<id:…>` in every URL configuration: ids a 64-bit column can hold, else no match.
        register_converter(IdConverter, "id")
