"""The WSGI application the web machines serve (`gunicorn -c config/gunicorn.conf.py`).

Each worker process imports this module once: it builds the application, loads the concept
thesaurus, then freezes what the start-up loaded (freeze_startup_objects).
"""

import gc
import os

from django.core.wsgi import get_wsgi_application


def freeze_startup_objects() -> None:
    """Move every object alive now into the collector's permanent generation (gc.freeze),
    after collecting what is already garbage. They are mostly modules, settings, URL patterns,
    serializer and model classes, which live as long as the process; one that later becomes
    part of a garbage cycle is never collected (freed by reference counting it still is). A full
    collection, which a request triggers now and then, no longer walks them: at 100k nodes, 300
    context calls paid three full collections of 64–68 ms each without it, and four of at most
    10.4 ms with it (docs/performance.md, "Collector pauses and conflict probes"). Objects
    created later are collected as usual."""
    gc.collect()
    gc.freeze()


os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
# The concept thesaurus (~0.4 s, 72k words) loads now rather than on a worker's first Chinese
# request, and is frozen with the rest.
from memory.search.concepts import thesaurus  # noqa: E402  (needs the settings above)

thesaurus()
freeze_startup_objects()
