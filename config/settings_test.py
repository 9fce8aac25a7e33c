"""Test settings: the same module, with fast password hashing and no secure cookies."""

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
