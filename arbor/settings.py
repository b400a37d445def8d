"""Arbor settings, read from the environment (SPEC §15)."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

from arbor import secret_key

BASE_DIR = Path(__file__).resolve().parent.parent

# Unset: a random key generated on first start and kept in a git-ignored 0600 file, so
# restarts keep users logged in without any configuration.
SECRET_KEY = os.environ.get("ARBOR_SECRET_KEY") or secret_key.load_or_create(
    Path(os.environ.get("ARBOR_SECRET_KEY_FILE") or BASE_DIR / ".arbor-secret-key")
)
# Off unless asked for: DEBUG pages list every URL pattern and leak settings.
DEBUG = os.environ.get("ARBOR_DEBUG", "0") == "1"
ALLOWED_HOSTS = [h for h in os.environ.get("ARBOR_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",  # "3 minutes ago" in the session list
    "channels",
    "django_htmx",
    "axes",  # failed sign-ins lock out (sessions_app/login_throttle.py)
    "ninja",  # serves the API docs page's assets locally instead of from a CDN
    "sessions_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Serves static files (admin, API docs) under daphne, with DEBUG on or off.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "sessions_app.pages.Middleware",  # Content-Security-Policy on every page (CONTENT_SECURITY_POLICY)
    "django.contrib.sessions.middleware.SessionMiddleware",
    "sessions_app.live.middleware.Common",  # Django's CommonMiddleware, one resolve less
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "sessions_app.pages.Messages",  # django.contrib.messages, but not under /api/
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A view that got no database connection in time answers 503, not 500 (db_pool.py).
    "sessions_app.live.middleware.NoConnection",
    # A sign-in refused for too many failures becomes the 429 page (login_throttle.py).
    "axes.middleware.AxesMiddleware",
    # Last: a write's live events go out after its response (and the chain runs sync).
    "sessions_app.live.middleware.EventsAfterResponse",
]

ROOT_URLCONF = "arbor.urls"
WSGI_APPLICATION = None
ASGI_APPLICATION = "arbor.asgi.application"

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
            ],
        },
    },
]

# --- Database -------------------------------------------------------------
# SQLite file by default; DATABASE_URL=postgres://... for scale.
# An empty DATABASE_URL means the default, as an unset one does.
# No persistent connections (CONN_MAX_AGE=0) on either database: under ASGI each request's
# sync code runs in a thread of its own, and a connection kept per thread outlived its
# thread, one per request, until Postgres refused every client (issue 25).
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'arbor.sqlite3'}",
        conn_max_age=0,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {
        # IMMEDIATE takes the write lock at BEGIN, so concurrent writers queue on
        # busy_timeout instead of failing with "database is locked" on upgrade.
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        # auto_vacuum takes effect in a new file only (before its first table): freed
        # pages are then given back to the file system by `incremental_vacuum` runs.
        "init_command": "PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL; "
        "PRAGMA synchronous=NORMAL; "
        "PRAGMA foreign_keys=ON; PRAGMA busy_timeout=30000",
    }
    # A file, not shared-cache memory: threads in tests need real WAL locking.
    DATABASES["default"]["TEST"] = {
        "NAME": os.environ.get("ARBOR_TEST_SQLITE", str(BASE_DIR / ".test-arbor.sqlite3"))
    }

# Postgres: each worker process borrows connections from one bounded pool (Django's psycopg
# pool): a request takes one at its first query and gives it back when it ends. One that
# waits longer than ARBOR_DB_POOL_TIMEOUT seconds answers 503 with Retry-After
# (sessions_app/db_pool.py). Size: workers x ARBOR_DB_POOL_MAX, plus room for psql and
# maintenance, must stay under the server's max_connections (README, "Running on
# PostgreSQL"). ARBOR_DB_POOL_MAX=0: no pool, a connection per request (behind PgBouncer).
ARBOR_DB_POOL_MAX = int(os.environ.get("ARBOR_DB_POOL_MAX", "20"))
ARBOR_DB_POOL_MIN = min(int(os.environ.get("ARBOR_DB_POOL_MIN", "2")), ARBOR_DB_POOL_MAX)
ARBOR_DB_POOL_TIMEOUT = float(os.environ.get("ARBOR_DB_POOL_TIMEOUT", "5"))
if ARBOR_DB_POOL_MAX < 0 or ARBOR_DB_POOL_MIN < 0 or ARBOR_DB_POOL_TIMEOUT <= 0:
    raise ImproperlyConfigured(
        "ARBOR_DB_POOL_MAX and ARBOR_DB_POOL_MIN must be 0 or more (MAX 0: no pool), "
        "ARBOR_DB_POOL_TIMEOUT a number of seconds above 0")
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    pg_options = DATABASES["default"].setdefault("OPTIONS", {})
    if ARBOR_DB_POOL_MAX:
        pg_options["pool"] = {"min_size": ARBOR_DB_POOL_MIN, "max_size": ARBOR_DB_POOL_MAX,
                              "timeout": ARBOR_DB_POOL_TIMEOUT, "name": "arbor"}
    if os.environ.get("ARBOR_PG_PREPARED", "1") == "1":
        # Server-side binding lets psycopg prepare the hot statements (append, path) after
        # a few uses instead of re-planning them every call; a pooled connection keeps
        # them from one request to the next. Set ARBOR_PG_PREPARED=0 behind PgBouncer
        # < 1.21 in transaction mode, which cannot keep prepared statements.
        pg_options.update({"server_side_binding": True, "prepare_threshold": 5})
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# WhiteNoise serves straight from the apps' static folders, indexed once at start-up, so
# `make run` and the tests need no collectstatic step and no stale copy can be served.
# A deployment that puts static files on a CDN sets ARBOR_STATIC_ROOT and runs collectstatic.
WHITENOISE_USE_FINDERS = True
STATIC_ROOT = os.environ.get("ARBOR_STATIC_ROOT") or None

# The first backend refuses any sign-in while its username or address is locked out.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- Security (manage.py check --deploy) -----------------------------------
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# `make run` serves plain http on loopback; behind TLS (a proxy that sets
# X-Forwarded-Proto) set ARBOR_HTTPS=1 for secure cookies, the redirect and HSTS.
ARBOR_HTTPS = os.environ.get("ARBOR_HTTPS", "0") == "1"
if ARBOR_HTTPS:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = int(os.environ.get("ARBOR_HSTS_SECONDS", "31536000"))
SILENCED_SYSTEM_CHECKS = [
    # HSTS covers Arbor's own host; subdomains and preload lists are the site owner's call.
    "security.W005",
    "security.W021",
]
if not ARBOR_HTTPS:
    SILENCED_SYSTEM_CHECKS += [
        "security.W004",  # no HSTS over plain http; ARBOR_HTTPS=1 sets it
        "security.W008",  # no https redirect on loopback http; ARBOR_HTTPS=1 sets it
        "security.W012",  # session cookie must travel over http here; ARBOR_HTTPS=1 secures it
        "security.W016",  # CSRF cookie likewise; ARBOR_HTTPS=1 secures it
    ]

# --- Sign-in throttling (django-axes; the rule is in sessions_app/login_throttle.py) ----
# The Nth wrong password for one username, or the Mth from one address, locks it until
# ARBOR_LOGIN_COOLOFF seconds after the last failure, for the app's and the admin's
# sign-in pages; the page (429, Retry-After) says when. Admins unlock in the admin
# (Access attempts) or with `manage.py axes_reset_username <name>`.
ARBOR_LOGIN_FAILURES = int(os.environ.get("ARBOR_LOGIN_FAILURES", "5"))
# An address is shared by everyone behind one NAT or proxy, so it gets a larger budget.
ARBOR_LOGIN_FAILURES_PER_ADDRESS = int(os.environ.get("ARBOR_LOGIN_FAILURES_PER_ADDRESS", "20"))
ARBOR_LOGIN_COOLOFF = int(os.environ.get("ARBOR_LOGIN_COOLOFF", "900"))
AXES_FAILURE_LIMIT = ARBOR_LOGIN_FAILURES
AXES_COOLOFF_TIME = timedelta(seconds=ARBOR_LOGIN_COOLOFF)
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one locks; order matters to the handler
AXES_HANDLER = "sessions_app.login_throttle.Handler"
AXES_LOCKOUT_CALLABLE = "sessions_app.login_throttle.locked_out"
# A refused attempt while locked does not push the end back, so the page's time holds.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# Not reset on success: one account's right password would wipe its address's failures,
# and with them the counts of the other usernames tried from there.
AXES_RESET_ON_SUCCESS = False
AXES_DISABLE_ACCESS_LOG = True  # failures only: successful sign-ins are not recorded
AXES_VERBOSE = False
# Behind N reverse proxies, set ARBOR_PROXY_COUNT=N so the address is the client's (from
# X-Forwarded-For), not the proxy's, which would lock everyone out together.
ARBOR_PROXY_COUNT = int(os.environ.get("ARBOR_PROXY_COUNT", "0"))
if ARBOR_PROXY_COUNT:
    AXES_IPWARE_PROXY_COUNT = ARBOR_PROXY_COUNT
    AXES_IPWARE_META_PRECEDENCE_ORDER = ("HTTP_X_FORWARDED_FOR", "REMOTE_ADDR")

# --- Content-Security-Policy (django-csp; sessions_app/pages.py adds the socket's host) ----
# Scripts only from our own files: no inline <script>, no on*= handlers, no eval (htmx is
# told not to either, in base.html). Inline style *attributes* stay allowed (the usage
# gauges' widths, the admin's templates, Swagger UI); style sheets come from files only.
# Images: ours and data: URIs (Swagger UI's and the admin's icons).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "style-src-attr": [UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],  # the page's own ws:// and wss:// are added per request
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# --- Channels -------------------------------------------------------------
# Several workers share events through Redis; one process (`make run`) needs nothing.
# RedisChannelLayer rather than the pub/sub layer: each consumer has a bounded queue
# (`capacity`, `expiry`), so a stalled subscriber loses frames — which it then fills from
# the outbox by seq, or resumes — instead of buffering without limit or slowing writers.
# The consumer's blocking read (BZPOPMIN) waits 5 s, exactly redis-py's default socket
# timeout: left as it is, an idle subscriber is closed with 1011 after ~5 s
# (channels_redis#422). A longer socket timeout plus keepalive and health checks keeps it.
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [{
                    "address": REDIS_URL,
                    "socket_timeout": 15,  # > the layer's 5 s blocking read
                    "socket_connect_timeout": 2,  # a Redis outage delays a publish at most this
                    "socket_keepalive": True,
                    "health_check_interval": 30,
                    "retry_on_timeout": True,
                }],
                "capacity": 500,  # frames queued per consumer; beyond that, dropped for it
                "expiry": 10,  # seconds an undelivered frame is kept
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer",
                                  "CONFIG": {"capacity": 500, "expiry": 10}}}

# --- Arbor ----------------------------------------------------------------
ARBOR_MAX_BODY_BYTES = int(os.environ.get("ARBOR_MAX_BODY_BYTES", str(5 * 1024 * 1024)))
DATA_UPLOAD_MAX_MEMORY_SIZE = ARBOR_MAX_BODY_BYTES
# Tool outputs longer than this are stored as a preview and a note to re-run the tool.
ARBOR_MAX_TOOL_OUTPUT_CHARS = int(os.environ.get("ARBOR_MAX_TOOL_OUTPUT_CHARS", "100000"))
# Versions kept per context block (README "Block versions"); the oldest are pruned first.
ARBOR_BLOCK_VERSIONS = int(os.environ.get("ARBOR_BLOCK_VERSIONS", "1000"))
# Skill files (SPEC §4): a local folder unless STORAGES["skills"] names another backend.
ARBOR_SKILLS_DIR = os.environ.get("ARBOR_SKILLS_DIR", str(BASE_DIR / "skills"))
ARBOR_LLM_BASE_URL = os.environ.get("ARBOR_LLM_BASE_URL", "")
ARBOR_LLM_API_KEY = os.environ.get("ARBOR_LLM_API_KEY", "")
ARBOR_LLM_MODEL = os.environ.get("ARBOR_LLM_MODEL", "")
ARBOR_ANTHROPIC_API_KEY = os.environ.get("ARBOR_ANTHROPIC_API_KEY", "")
# Seconds between the chunks the offline demo model streams (0: no pause), so streaming,
# Stop and live updates can be watched without an LLM.
ARBOR_DEMO_STREAM_DELAY = float(os.environ.get("ARBOR_DEMO_STREAM_DELAY", "0.03"))
# The model's context size in tokens, for the prompt panel's gauge (unset: unknown).
ARBOR_CONTEXT_WINDOW = int(os.environ["ARBOR_CONTEXT_WINDOW"]) if os.environ.get(
    "ARBOR_CONTEXT_WINDOW", "").strip().isdigit() else None

# Background jobs (sessions_app/lifecycle/worker.py): seconds between a worker's turns at
# each; with several workers one runs a job at a time (sessions_app/storage/jobs.py).
ARBOR_RETENTION_EVERY_SECONDS = float(os.environ.get("ARBOR_RETENTION_EVERY_SECONDS", "3600"))
ARBOR_PURGE_EVERY_SECONDS = float(os.environ.get("ARBOR_PURGE_EVERY_SECONDS", "300"))
ARBOR_OUTBOX_PRUNE_EVERY_SECONDS = float(os.environ.get("ARBOR_OUTBOX_PRUNE_EVERY_SECONDS",
                                                        "600"))
ARBOR_COMPACTION_RETRY_EVERY_SECONDS = float(
    os.environ.get("ARBOR_COMPACTION_RETRY_EVERY_SECONDS", "60"))
# The server's sessions compact automatically past this many tokens (unset: never).
ARBOR_COMPACT_AFTER = int(os.environ["ARBOR_COMPACT_AFTER"]) if os.environ.get(
    "ARBOR_COMPACT_AFTER", "").strip().isdigit() else None
# /ready: seconds it waits for the database and for Redis before answering 503.
ARBOR_READY_TIMEOUT = float(os.environ.get("ARBOR_READY_TIMEOUT", "2"))

# Search by meaning (README "Search"), on by default: "on" is the offline multilingual
# model unless ARBOR_EMBEDDINGS_URL names an OpenAI-compatible /v1/embeddings endpoint;
# "off" searches by words only. Read by sessions_app/semantic/config.py only.
ARBOR_EMBEDDINGS = os.environ.get("ARBOR_EMBEDDINGS", "on").strip() or "on"
ARBOR_EMBEDDINGS_URL = os.environ.get("ARBOR_EMBEDDINGS_URL", "").strip()
# Which offline model: "use+minilm" (the default: the multilingual Universal Sentence
# Encoder beside English MiniLM), "use" (USE alone: faster, weaker on paraphrase) or "e5"
# (multilingual-e5-small, the `e5` extra). Each model's vectors are kept apart, by name.
ARBOR_EMBEDDINGS_LOCAL = (os.environ.get("ARBOR_EMBEDDINGS_LOCAL", "use+minilm").strip().lower()
                         or "use+minilm")
ARBOR_EMBEDDINGS_MODEL = os.environ.get("ARBOR_EMBEDDINGS_MODEL", "").strip()
ARBOR_EMBEDDINGS_API_KEY = os.environ.get("ARBOR_EMBEDDINGS_API_KEY", "")
ARBOR_EMBEDDINGS_TIMEOUT = float(os.environ.get("ARBOR_EMBEDDINGS_TIMEOUT", "10") or 10)
# The cosine a message found by meaning alone needs to be a hit (unset: the model's own).
ARBOR_EMBEDDINGS_MIN_SIMILARITY = (float(os.environ["ARBOR_EMBEDDINGS_MIN_SIMILARITY"])
                                   if os.environ.get("ARBOR_EMBEDDINGS_MIN_SIMILARITY", "").strip()
                                   else None)
# Cores the offline model uses (one leaves the other to requests on a small machine).
ARBOR_EMBEDDINGS_THREADS = int(os.environ.get("ARBOR_EMBEDDINGS_THREADS", "1") or 1)
# The background worker that embeds new and edited messages starts with the server
# (arbor/asgi.py) unless this is 0; `manage.py embed` does the same work on demand.
ARBOR_EMBEDDINGS_WORKER = os.environ.get("ARBOR_EMBEDDINGS_WORKER", "1") == "1"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("ARBOR_LOG_LEVEL", "WARNING")},
}
