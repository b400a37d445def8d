"""Arbor settings, read from the environment (SPEC §15)."""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("ARBOR_SECRET_KEY", "arbor-dev-only-insecure-secret-key-change-me")
DEBUG = os.environ.get("ARBOR_DEBUG", "1") == "1"
ALLOWED_HOSTS = [h for h in os.environ.get("ARBOR_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "ninja",  # serves the API docs page's assets locally instead of from a CDN
    "sessions_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
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
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'arbor.sqlite3'}",
        conn_max_age=int(os.environ.get("ARBOR_CONN_MAX_AGE", "60")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {
        # IMMEDIATE takes the write lock at BEGIN, so concurrent writers queue on
        # busy_timeout instead of failing with "database is locked" on upgrade.
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
        "PRAGMA foreign_keys=ON; PRAGMA busy_timeout=30000",
    }
    # A file, not shared-cache memory: threads in tests need real WAL locking.
    DATABASES["default"]["TEST"] = {
        "NAME": os.environ.get("ARBOR_TEST_SQLITE", str(BASE_DIR / ".test-arbor.sqlite3"))
    }
    # Persistent connections are per thread; SQLite opens cheaply.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and os.environ.get(
    "ARBOR_PG_PREPARED", "1"
) == "1":
    # Server-side binding lets psycopg prepare the hot statements (append, path) after a
    # few uses instead of re-planning them every call. Set ARBOR_PG_PREPARED=0 behind
    # PgBouncer < 1.21 in transaction mode, which cannot keep prepared statements.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"server_side_binding": True, "prepare_threshold": 5}
    )
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
STATIC_ROOT = BASE_DIR / "staticfiles"

LOGIN_URL = "/admin/login/"

# --- Channels -------------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- Arbor ----------------------------------------------------------------
ARBOR_MAX_BODY_BYTES = int(os.environ.get("ARBOR_MAX_BODY_BYTES", str(5 * 1024 * 1024)))
DATA_UPLOAD_MAX_MEMORY_SIZE = ARBOR_MAX_BODY_BYTES
# Tool outputs longer than this are stored as a preview and a note to re-run the tool.
ARBOR_MAX_TOOL_OUTPUT_CHARS = int(os.environ.get("ARBOR_MAX_TOOL_OUTPUT_CHARS", "100000"))
# Skill files (SPEC §4): a local folder unless STORAGES["skills"] names another backend.
ARBOR_SKILLS_DIR = os.environ.get("ARBOR_SKILLS_DIR", str(BASE_DIR / "skills"))
ARBOR_LLM_BASE_URL = os.environ.get("ARBOR_LLM_BASE_URL", "")
ARBOR_LLM_API_KEY = os.environ.get("ARBOR_LLM_API_KEY", "")
ARBOR_LLM_MODEL = os.environ.get("ARBOR_LLM_MODEL", "")
ARBOR_ANTHROPIC_API_KEY = os.environ.get("ARBOR_ANTHROPIC_API_KEY", "")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("ARBOR_LOG_LEVEL", "WARNING")},
}
