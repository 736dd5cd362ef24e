"""Django settings for Job Queue.

Every value comes from the environment (or a `.env` file at the repository root or in
`backend/`), with the defaults documented in `.env.example` and docs/reference/configuration.md.
"""

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured
from dotenv import load_dotenv

from config.database import postgres_database

if TYPE_CHECKING:
    from django.http import HttpRequest

BASE_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = BASE_DIR.parent

# Real environment variables win over .env files; backend/.env wins over the root one.
load_dotenv(BASE_DIR / ".env", override=False)
load_dotenv(REPO_DIR / ".env", override=False)


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be >= {minimum}, got {value}")
    return value


def env_rate(name: str, default: str | None) -> str | None:
    """A DRF throttle rate such as ``10/minute``; ``off`` (or ``none``) turns it off."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"off", "none"}:
        return None
    if not re.fullmatch(r"[1-9][0-9]{0,8}/(s|sec|second|m|min|minute|h|hour|d|day)", value):
        raise ImproperlyConfigured(
            f"{name} must be a rate like 10/minute (a count per second, minute, hour or day) "
            f"or off, got {raw!r}"
        )
    return value


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


# --- Core -------------------------------------------------------------------------------

DEV_SECRET_KEY = "django-insecure-local-development-key-change-me"

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("DJANGO_SECRET_KEY", DEV_SECRET_KEY)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,0.0.0.0")
INTERNAL_IPS = env_list("DJANGO_INTERNAL_IPS", "127.0.0.1,localhost,host.docker.internal")
ENABLE_DJANGO_DEBUG_TOOLBAR = DEBUG and env_bool("ENABLE_DJANGO_DEBUG_TOOLBAR", DEBUG)

if not DEBUG:
    if SECRET_KEY == DEV_SECRET_KEY or not SECRET_KEY.strip():
        raise ImproperlyConfigured("DEBUG=false needs DJANGO_SECRET_KEY set to a real secret.")
    if not ALLOWED_HOSTS:
        raise ImproperlyConfigured("DEBUG=false needs DJANGO_ALLOWED_HOSTS.")

INSTALLED_APPS = [
    "unfold",
    "unfold.contrib.filters",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "corsheaders",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "jobs",
    # The demo.* job types the dashboard offers; a project that installs only jobs has none.
    "jobs.demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # NUL or a lone surrogate in a query parameter: a 400 before any view builds a filter.
    "jobs.middleware.RefuseUnstorableQueryMiddleware",
    # Serves the admin's static files from gunicorn, in the container as well.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "corsheaders.middleware.CorsMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

if ENABLE_DJANGO_DEBUG_TOOLBAR:
    INSTALLED_APPS.append("debug_toolbar")
    MIDDLEWARE.insert(0, "debug_toolbar.middleware.DebugToolbarMiddleware")

    # Only HTML pages get the toolbar; the JSON API stays untouched (the toolbar's panels
    # would otherwise re-read request bodies the API refused, e.g. one over the size limit).
    # The admin does not either: the toolbar covered its pages under `make run`.
    def _show_debug_toolbar(request: "HttpRequest") -> bool:
        from debug_toolbar.middleware import show_toolbar
        from django.urls import NoReverseMatch, reverse

        from jobs.middleware import is_api_request

        try:  # a URLconf without the admin (some tests use one) has no admin pages
            if request.path.startswith(reverse("admin:index")):
                return False
        except NoReverseMatch:
            pass
        return not is_api_request(request) and show_toolbar(request)

    DEBUG_TOOLBAR_CONFIG = {
        "IS_RUNNING_TESTS": False,
        "SHOW_TOOLBAR_CALLBACK": _show_debug_toolbar,
        # Where it shows, it starts as a handle at the edge, not as a panel over the page.
        "SHOW_COLLAPSED": True,
    }

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
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

# --- Database ---------------------------------------------------------------------------
# DATABASE_ENGINE=sqlite|postgres. Unset: PostgreSQL as soon as any POSTGRES_* variable is
# configured, otherwise the embedded SQLite file, so the product runs with nothing installed.

_POSTGRES_VARS = (
    "POSTGRES_DB",
    "POSTGRES_USER",
    "POSTGRES_PASSWORD",
    "POSTGRES_HOST",
    "POSTGRES_DSN",
)
DATABASE_ENGINE = env_str(
    "DATABASE_ENGINE",
    "postgres" if any(os.environ.get(name) for name in _POSTGRES_VARS) else "sqlite",
).lower()

# POSTGRES_HOST/PORT point at PgBouncer (or another pooler) in transaction mode: each
# transaction may run on a different server connection, so nothing may outlive one.
JOB_DB_TRANSACTION_POOLING = env_bool("POSTGRES_TRANSACTION_POOLING", False)

# Prepared statements: each connection parses and plans a statement once, then runs it
# with new parameters. The worker's and the API's job statements always ask for it; on
# this project's own connections Django's queries do too (server-side parameter binding,
# prepared once it has run five times), which matters with persistent connections
# (POSTGRES_CONN_MAX_AGE). Off behind PgBouncer before 1.21 in transaction mode, which
# cannot carry them: off by default with POSTGRES_TRANSACTION_POOLING, and refused there
# (every process, the API included).
JOB_DB_PREPARED_STATEMENTS = env_bool("JOB_DB_PREPARED_STATEMENTS", not JOB_DB_TRANSACTION_POOLING)
if JOB_DB_TRANSACTION_POOLING and JOB_DB_PREPARED_STATEMENTS:
    raise ImproperlyConfigured(
        "JOB_DB_PREPARED_STATEMENTS=true cannot work with POSTGRES_TRANSACTION_POOLING=true: "
        "PgBouncer before 1.21 in transaction mode cannot carry prepared statements. "
        "Leave JOB_DB_PREPARED_STATEMENTS unset."
    )

if DATABASE_ENGINE == "postgres":
    # One server or several (a primary and its standbys), connection and TCP timeouts:
    # config/database.py.
    DATABASES = {
        "default": postgres_database(
            dsn=env_str("POSTGRES_DSN", ""),
            variables={
                "POSTGRES_DB": os.environ.get("POSTGRES_DB"),
                "POSTGRES_USER": os.environ.get("POSTGRES_USER"),
                "POSTGRES_PASSWORD": os.environ.get("POSTGRES_PASSWORD"),
                "POSTGRES_HOST": os.environ.get("POSTGRES_HOST"),
                "POSTGRES_PORT": os.environ.get("POSTGRES_PORT"),
            },
            target_session_attrs=env_str("POSTGRES_TARGET_SESSION_ATTRS", "read-write"),
            connect_timeout=env_int("POSTGRES_CONNECT_TIMEOUT", 5, minimum=2),
            tcp_timeout=env_int("POSTGRES_TCP_TIMEOUT_SECONDS", 10, minimum=1),
            conn_max_age=env_int("POSTGRES_CONN_MAX_AGE", 0, minimum=0),
            prepared_statements=JOB_DB_PREPARED_STATEMENTS,
            transaction_pooling=JOB_DB_TRANSACTION_POOLING,
        )
    }
elif DATABASE_ENGINE == "sqlite":
    _sqlite_path = Path(env_str("SQLITE_PATH", "db.sqlite3"))
    if not _sqlite_path.is_absolute():
        _sqlite_path = BASE_DIR / _sqlite_path
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": _sqlite_path,
            "OPTIONS": {
                # Writers take the lock up front and wait for it instead of failing
                # mid-transaction with "database is locked" when worker threads collide.
                "transaction_mode": "IMMEDIATE",
                "timeout": 30,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            # A file (not in-memory) test database, so worker threads share it.
            "TEST": {"NAME": str(_sqlite_path.with_name("test_" + _sqlite_path.name))},
        }
    }
else:
    raise ImproperlyConfigured(
        f"DATABASE_ENGINE must be sqlite or postgres, got {DATABASE_ENGINE!r}"
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# The events' covering indexes (INCLUDE) are a PostgreSQL optimisation; SQLite builds them
# on their key columns, which is all it needs.
SILENCED_SYSTEM_CHECKS = ["models.W040"]

# --- I18N / time ------------------------------------------------------------------------

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "Asia/Tehran")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

# --- Request limits ---------------------------------------------------------------------

# A job body (payload included) may not exceed this; larger requests are refused with 413.
JOB_API_MAX_BODY_BYTES = 256 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = JOB_API_MAX_BODY_BYTES

# --- HTTPS and cookies ------------------------------------------------------------------
# Production (DEBUG=false) defaults are the safe ones: HTTPS only, HSTS for a year on the
# domain and its subdomains, cookies sent over HTTPS only. Each can be turned off by
# environment, e.g. DJANGO_SECURE_SSL_REDIRECT=false when a proxy already redirects.

SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", not DEBUG)
# Container and load-balancer health probes speak plain HTTP inside the network.
SECURE_REDIRECT_EXEMPT = [r"^api/health/$"]
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("DJANGO_SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("DJANGO_CSRF_COOKIE_SECURE", not DEBUG)
# JSON for the API when Django's CSRF check refuses a request (pages elsewhere).
CSRF_FAILURE_VIEW = "jobs.api.views.csrf_failure"
# Origins (scheme://host[:port]) allowed to send unsafe requests with a session, e.g. the
# admin behind a proxy on another port.
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")
# Behind a TLS-terminating proxy: "HTTP_X_FORWARDED_PROTO,https" makes Django trust that
# header to know a request came over HTTPS. Only set it when the proxy always sets it.
_proxy_ssl_header = env_list("DJANGO_SECURE_PROXY_SSL_HEADER", "")
if _proxy_ssl_header:
    if len(_proxy_ssl_header) != 2:
        raise ImproperlyConfigured(
            "DJANGO_SECURE_PROXY_SSL_HEADER must be HEADER,value, e.g. HTTP_X_FORWARDED_PROTO,https"
        )
    SECURE_PROXY_SSL_HEADER = (_proxy_ssl_header[0], _proxy_ssl_header[1])

# --- CORS -------------------------------------------------------------------------------

CORS_ALLOWED_ORIGINS = env_list(
    "DJANGO_CORS_ALLOWED_ORIGINS", "http://localhost:5173,http://127.0.0.1:5173"
)
# Any origin may call the open local demo API; production allows only the configured ones.
CORS_ALLOW_ALL_ORIGINS = DEBUG
CORS_URLS_REGEX = r"^/api/.*$"
# A job's timeline announces its further pages in a Link header; a dashboard on another
# origin (the Vite dev server) may read it only when CORS exposes it.
CORS_EXPOSE_HEADERS = ["Link"]

# --- Authentication, permissions and rate limits ----------------------------------------

# Passwords (the admin's login and /api/auth/login/): Django's model backend, refusing an
# address that has used up its failed logins (DJANGO_THROTTLE_AUTH_FAILURES).
AUTHENTICATION_BACKENDS = ["jobs.api.throttling.ThrottledModelBackend"]

# Failed logins and wrong API tokens allowed per client address; then 429 until the
# window has passed. Default: 10/minute in production, off in the open local demo.
THROTTLE_AUTH_FAILURES = env_rate("DJANGO_THROTTLE_AUTH_FAILURES", None if DEBUG else "10/minute")
# Jobs one user may create (POST /api/jobs/); then 429. Default: 600/minute in
# production, off in the local demo.
THROTTLE_JOB_CREATE = env_rate("DJANGO_THROTTLE_JOB_CREATE", None if DEBUG else "600/minute")
# Proxies in front of the API that append the client's address to X-Forwarded-For; the
# throttles count per address, so this must match the deployment (1 behind the Compose
# stack's nginx). 0: the TCP peer is the client, X-Forwarded-For is ignored.
NUM_PROXIES = env_int("DJANGO_NUM_PROXIES", 0, minimum=0)

# --- REST framework ---------------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "jobs.api.throttling.ThrottledTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # The local demo (DEBUG=true) is open; production needs a token or a session of a user
    # with the job model permission the request needs (jobs.api.permissions).
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.AllowAny"
        if DEBUG
        else "jobs.api.permissions.JobModelPermissions"
    ],
    "DEFAULT_THROTTLE_RATES": {
        "auth_failures": THROTTLE_AUTH_FAILURES,
        "job_create": THROTTLE_JOB_CREATE,
    },
    "NUM_PROXIES": NUM_PROXIES,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
    # NUL, lone surrogates and absurd nesting in a body are a 400 naming the field.
    "DEFAULT_PARSER_CLASSES": ["jobs.api.parsers.JobJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # The jobs views map their errors themselves; this covers the project's own DRF views
    # (schema, docs, auth): JSON 503 while the database is down, for instance.
    "EXCEPTION_HANDLER": "jobs.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Job Queue API",
    "DESCRIPTION": (
        "PostgreSQL-backed background job queue: create, list, inspect and retry jobs, "
        "follow their event timelines and queue statistics.\n\n"
        f"**Times** are ISO 8601 in the server's `TIME_ZONE`, `{TIME_ZONE}` here, with its "
        "UTC offset (`Z` for UTC): every date-time field, and the times inside event `data` "
        "(`available_at`, `locked_until`), read the same way."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and the docs page need credentials in production like the rest of the API.
    "SERVE_PERMISSIONS": [
        "rest_framework.permissions.AllowAny"
        if DEBUG
        else "rest_framework.permissions.IsAuthenticated"
    ],
    # Swagger UI's JavaScript and CSS from drf-spectacular-sidecar's static files: the docs
    # page works offline and loads nothing from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "JobStatusEnum": "jobs.models.JobStatus",
        "JobEventTypeEnum": "jobs.models.JobEventType",
    },
}

UNFOLD = {
    "SITE_TITLE": "Job Queue admin",
    "SITE_HEADER": "Job Queue",
}

# --- Tasks (django.tasks) -------------------------------------------------------------------
# @task functions become jobs of this queue. No QUEUES list: any valid queue name, as in the
# REST API (a project that wants Django to refuse unknown queues lists them here).
TASKS = {"default": {"BACKEND": "jobs.backends.JobQueueBackend", "QUEUES": []}}

# --- Worker -----------------------------------------------------------------------------
# Read as integers here; their ranges are the jobs app's system checks (jobs/checks.py),
# which `manage.py check`, `migrate` and `run_job_workers` run before anything else.

JOB_WORKER_THREADS = env_int("JOB_WORKER_THREADS", 4)
JOB_WORKER_POLL_INTERVAL_MS = env_int("JOB_WORKER_POLL_INTERVAL_MS", 500)
JOB_WORKER_LEASE_SECONDS = env_int("JOB_WORKER_LEASE_SECONDS", 30)
# Seconds between a worker process's heartbeats (one renewal of all its running attempts'
# leases); 0: a third of the lease. Must be shorter than the lease (jobs.E004).
JOB_WORKER_HEARTBEAT_SECONDS = env_int("JOB_WORKER_HEARTBEAT_SECONDS", 0)
# Seconds a PostgreSQL statement may wait on a server that sends nothing before its
# connection is abandoned and reopened (jobs.drivers.deadline); 0: the heartbeat interval
# in worker processes, 25 s elsewhere.
# Must be shorter than the lease (jobs.E010).
JOB_DB_STATEMENT_DEADLINE_SECONDS = env_int("JOB_DB_STATEMENT_DEADLINE_SECONDS", 0)
JOB_WORKER_CLEANUP_INTERVAL_SECONDS = env_int("JOB_WORKER_CLEANUP_INTERVAL_SECONDS", 5)
JOB_WORKER_CLEANUP_BATCH_SIZE = env_int("JOB_WORKER_CLEANUP_BATCH_SIZE", 100)
# Batched fetch: idle threads of a process claim together; 1: one by one;
# 0: as many as the threads where batching pays (PostgreSQL, statements prepared).
JOB_WORKER_CLAIM_BATCH_SIZE = env_int("JOB_WORKER_CLAIM_BATCH_SIZE", 0)
# Batched completion; 1: each thread completes together with its next claim;
# 0: 10 where batching pays, else 1.
JOB_WORKER_COMPLETE_BATCH_SIZE = env_int("JOB_WORKER_COMPLETE_BATCH_SIZE", 0)
JOB_WORKER_COMPLETE_FLUSH_MS = env_int("JOB_WORKER_COMPLETE_FLUSH_MS", 5)
# Opt-in: batched completions commit without waiting for their WAL to reach disk.
JOB_WORKER_COMPLETE_SYNCHRONOUS_COMMIT = env_bool("JOB_WORKER_COMPLETE_SYNCHRONOUS_COMMIT", True)
JOB_WORKER_LEAN_TIMELINE = env_bool("JOB_WORKER_LEAN_TIMELINE", False)
JOB_WORKER_PREFETCH = env_int("JOB_WORKER_PREFETCH", 0)
JOB_WORKER_VACUUM_DEAD_ROWS = env_int("JOB_WORKER_VACUUM_DEAD_ROWS", 20_000)
JOB_WORKER_BACKOFF_BASE_SECONDS = env_int("JOB_WORKER_BACKOFF_BASE_SECONDS", 5)
JOB_WORKER_BACKOFF_MAX_SECONDS = env_int("JOB_WORKER_BACKOFF_MAX_SECONDS", 300)
JOB_WORKER_MAX_ATTEMPTS_DEFAULT = env_int("JOB_WORKER_MAX_ATTEMPTS_DEFAULT", 3)
JOB_WORKER_LOG_LEVEL = env_str("JOB_WORKER_LOG_LEVEL", "INFO").upper()
if JOB_WORKER_LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    # Checked here, not only by jobs.checks: LOGGING below would fail first, less clearly.
    raise ImproperlyConfigured(
        "JOB_WORKER_LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, "
        f"got {JOB_WORKER_LOG_LEVEL!r}"
    )
# Queues the worker serves, comma-separated; "*" is every queue that has jobs.
JOB_WORKER_QUEUES = env_list("JOB_WORKER_QUEUES", "*")
# Seconds an attempt may run when neither the job nor its type sets a timeout; 0: none.
JOB_WORKER_TIMEOUT_SECONDS = env_int("JOB_WORKER_TIMEOUT_SECONDS", 0)
# Wake idle workers with LISTEN/NOTIFY when a job is created (PostgreSQL); workers poll
# anyway. LISTEN needs a session: behind PgBouncer in transaction mode, point the
# listener straight at PostgreSQL with POSTGRES_LISTEN_HOST/PORT, or turn it off.
JOB_NOTIFY = env_bool("JOB_NOTIFY", True)
JOB_WORKER_LISTEN = env_bool("JOB_WORKER_LISTEN", True)
# A listener proves it hears by notifying itself every half period; one whose probe does
# not come back reconnects, so it is replaced within this many seconds.
JOB_WORKER_LISTEN_PROBE_SECONDS = env_int("JOB_WORKER_LISTEN_PROBE_SECONDS", 10)
JOB_WORKER_LISTEN_OPTIONS = {
    key: value
    for key, value in (
        ("host", env_str("POSTGRES_LISTEN_HOST", "")),
        ("port", env_str("POSTGRES_LISTEN_PORT", "")),
    )
    if value
}
# Stats: exact counts up to this many rows, planner estimates above; computed at most once
# per JOB_STATS_CACHE_SECONDS per cache (0: on every request).
JOB_STATS_EXACT_MAX_ROWS = env_int("JOB_STATS_EXACT_MAX_ROWS", 200_000, minimum=0)
JOB_STATS_CACHE_SECONDS = env_int("JOB_STATS_CACHE_SECONDS", 1, minimum=0)
# Prometheus metrics of each worker process on this port (0: off) and address.
JOB_WORKER_METRICS_PORT = env_int("JOB_WORKER_METRICS_PORT", 0, minimum=0)
JOB_WORKER_METRICS_ADDRESS = env_str("JOB_WORKER_METRICS_ADDRESS", "127.0.0.1")
# Extra modules that register handlers with @jobs.handlers.register, imported at startup.
JOB_HANDLER_MODULES = env_list("JOB_HANDLER_MODULES", "")
# OpenTelemetry spans around enqueue and every attempt (jobs.tracing), and what else they
# record: any of payload, result, metadata (jobs.E009 names a wrong one). Where the spans
# go is the OTEL_* variables' business (config/telemetry.py).
JOB_TRACING = env_bool("JOB_TRACING", False)
JOB_TRACING_RECORD = env_list("JOB_TRACING_RECORD", "")


def env_json_object(name: str) -> dict[str, Any]:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise ImproperlyConfigured(f"{name} must be a JSON object")
    return value


# Flow control: periodic jobs by name, as JSON (see jobs.conf), e.g.
# {"nightly": {"type": "demo.echo", "cron": "0 3 * * *", "missed": "skip"}}, and the
# per-key concurrency limits, e.g. {"customer:*": 2}. Ticks older than the grace when a
# worker first sees them were missed.
JOB_SCHEDULES = env_json_object("JOB_SCHEDULES_JSON")
JOB_SCHEDULE_GRACE_SECONDS = env_int("JOB_SCHEDULE_GRACE_SECONDS", 30, minimum=0)
JOB_CONCURRENCY_KEY_LIMITS = env_json_object("JOB_CONCURRENCY_KEY_LIMITS_JSON")

# Log lines: "text" (time level logger action=... key=value) or "json" (one object per
# line with the same fields, for log shippers).
JOB_LOG_FORMAT = env_str("JOB_LOG_FORMAT", "text").strip().lower()
if JOB_LOG_FORMAT not in {"text", "json"}:
    raise ImproperlyConfigured(f"JOB_LOG_FORMAT must be text or json, got {JOB_LOG_FORMAT!r}")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        # UTC with its Z, as the JSON lines: a log line reads the same in every process
        # whatever its TIME_ZONE (which only the API's and the admin's times follow).
        "plain": {
            "class": "jobs.logformat.UtcFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s %(message)s",
        },
        "json": {"()": "jobs.logformat.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if JOB_LOG_FORMAT == "json" else "plain",
        }
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "jobs": {"handlers": ["console"], "level": JOB_WORKER_LOG_LEVEL, "propagate": False},
        # Django logs every task start and finish at INFO; the worker logs its attempts at
        # DEBUG already, so only failures (ERROR) are shown unless the level is lowered.
        "django.tasks": {
            "handlers": ["console"],
            "level": env_str("DJANGO_TASKS_LOG_LEVEL", "WARNING").upper(),
            "propagate": False,
        },
    },
}
