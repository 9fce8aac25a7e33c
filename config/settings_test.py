"""Test settings: the same module, with fast password hashing and no secure cookies."""

from copy import deepcopy

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Static files are served by the test client's finders; whitenoise would only warn about STATIC_ROOT.
MIDDLEWARE = [item for item in MIDDLEWARE if item != "whitenoise.middleware.WhiteNoiseMiddleware"]  # noqa: F405

# Without a broker, capture jobs run where they are queued, not on threads: a test's database
# transaction is not visible to another thread's connection.
MEMORY_CAPTURE_THREADS = False

# Rate limits off by default: the suite sends far more requests per minute than an agent
# would. tests/accounts/test_throttling.py switches them on.
MEMORY_THROTTLE = False

# The "replica" alias as a test mirror of default (same test database, its own connection), so
# tests can route dashboard reads there (tests/dashboard/test_read_replica.py); reads stay on default unless
# a test turns MEMORY_REPLICA_READS on.
DATABASES["replica"] = {**deepcopy(DATABASES["default"]), "TEST": {"MIRROR": "default"}}  # noqa: F405
MEMORY_REPLICA_READS = False
