"""System checks of the app's settings (``manage.py check``; every management command,
``run_job_workers`` and ``migrate`` included, runs them first and refuses to start).

Each integer setting has a range whose upper end keeps the arithmetic valid: a lease or a
backoff becomes ``now + timedelta(seconds=...)`` and a timestamp column, a poll interval
a ``sleep()``, a batch size a ``LIMIT`` and a list in memory. The ranges are generous for
any real deployment; values past them are mistakes (an extra digit, milliseconds given as
seconds) that would otherwise surface as an ``OverflowError`` on every claim.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, register

from . import extras
from .conf import app_settings
from .flowcontrol import schedule_problems
from .limits import MAX_ATTEMPTS_MAX, QUEUE_NAME_PATTERN, TIMEOUT_SECONDS_MAX
from .tracing import RECORDABLE

DAY = 24 * 3600

# Setting -> (lowest, highest) accepted value.
INTEGER_RANGES: dict[str, tuple[int, int]] = {
    "JOB_WORKER_THREADS": (1, 256),
    "JOB_WORKER_POLL_INTERVAL_MS": (1, 3_600_000),  # an hour
    "JOB_WORKER_LEASE_SECONDS": (1, DAY),
    "JOB_WORKER_CLEANUP_INTERVAL_SECONDS": (1, DAY),
    "JOB_WORKER_CLEANUP_BATCH_SIZE": (1, 10_000),
    "JOB_WORKER_CLAIM_BATCH_SIZE": (0, 1_000),  # 0: chosen by the worker
    "JOB_WORKER_PREFETCH": (0, 10_000),
    "JOB_WORKER_COMPLETE_BATCH_SIZE": (0, 1_000),  # 0: chosen by the worker
    "JOB_WORKER_COMPLETE_FLUSH_MS": (0, 60_000),
    "JOB_WORKER_VACUUM_DEAD_ROWS": (0, 10**12),  # 0: autovacuum alone
    "JOB_WORKER_BACKOFF_BASE_SECONDS": (0, 30 * DAY),
    "JOB_WORKER_BACKOFF_MAX_SECONDS": (0, 30 * DAY),
    "JOB_WORKER_MAX_ATTEMPTS_DEFAULT": (1, MAX_ATTEMPTS_MAX),  # what the API accepts
    "JOB_WORKER_TIMEOUT_SECONDS": (0, TIMEOUT_SECONDS_MAX),  # 0: no timeout
    "JOB_API_MAX_BODY_BYTES": (1024, 64 * 1024 * 1024),
    "JOB_STATS_EXACT_MAX_ROWS": (0, 10**12),
    "JOB_STATS_CACHE_SECONDS": (0, DAY),
    "JOB_WORKER_HEARTBEAT_SECONDS": (0, DAY - 1),  # 0: a third; shorter than the lease
    # A tick this old when first seen was missed; past a day, a pass could owe a schedule
    # of one second 86,400 on-time jobs.
    "JOB_SCHEDULE_GRACE_SECONDS": (0, DAY),
    "JOB_DB_STATEMENT_DEADLINE_SECONDS": (0, DAY - 1),  # 0: the heartbeat; below the lease
    "JOB_WORKER_LISTEN_PROBE_SECONDS": (1, DAY),
}
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _integer_errors(name: str, value: Any) -> list[CheckMessage]:
    low, high = INTEGER_RANGES[name]
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return []
    return [
        Error(
            f"{name} is {value!r}; it must be an integer from {low} to {high}.",
            hint=f"Set {name} (in the environment or the settings) within {low}..{high}.",
            obj=name,
            id="jobs.E001",
        )
    ]


def _log_level_errors(value: Any) -> list[CheckMessage]:
    if isinstance(value, str) and value.upper() in LOG_LEVELS:
        return []
    return [
        Error(
            f"JOB_WORKER_LOG_LEVEL is {value!r}; it must be one of {', '.join(LOG_LEVELS)}.",
            obj="JOB_WORKER_LOG_LEVEL",
            id="jobs.E002",
        )
    ]


def _queues_errors(value: Any) -> list[CheckMessage]:
    names = list(value) if isinstance(value, list | tuple) else None
    valid = bool(names) and all(
        isinstance(name, str) and (name == "*" or re.fullmatch(QUEUE_NAME_PATTERN, name))
        for name in names or []
    )
    if valid:
        return []
    return [
        Error(
            f"JOB_WORKER_QUEUES is {value!r}; it must be a non-empty list of queue names "
            '(letters, digits and . _ : -) or ["*"] for every queue.',
            obj="JOB_WORKER_QUEUES",
            id="jobs.E003",
        )
    ]


@register
def check_settings(
    app_configs: Sequence[AppConfig] | None = None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[CheckMessage]:
    """Every ``JOB_*`` setting within its range (``jobs.E001``-``E004``), the
    transaction-pooling rules (``jobs.E005``, ``E006``), the metrics extra when a
    worker is to serve metrics (``jobs.E007``), the tracing settings with the otel
    extra when tracing is on (``jobs.E008``, ``E009``), and a statement deadline shorter
    than the lease (``jobs.E010``)."""
    errors: list[CheckMessage] = []
    for name in INTEGER_RANGES:
        errors += _integer_errors(name, getattr(app_settings, name))
    errors += _log_level_errors(app_settings.JOB_WORKER_LOG_LEVEL)
    errors += _queues_errors(app_settings.JOB_WORKER_QUEUES)
    if not errors:
        errors += _heartbeat_errors(
            app_settings.JOB_WORKER_HEARTBEAT_SECONDS, app_settings.JOB_WORKER_LEASE_SECONDS
        )
        errors += _deadline_errors(
            app_settings.JOB_DB_STATEMENT_DEADLINE_SECONDS, app_settings.JOB_WORKER_LEASE_SECONDS
        )
    if app_settings.JOB_DB_TRANSACTION_POOLING:
        errors += _transaction_pooling_errors()
    errors += _metrics_errors(app_settings.JOB_WORKER_METRICS_PORT)
    errors += _tracing_errors(app_settings.JOB_TRACING, app_settings.JOB_TRACING_RECORD)
    errors += _flow_control_errors(
        app_settings.JOB_SCHEDULES, app_settings.JOB_CONCURRENCY_KEY_LIMITS
    )
    return errors


def _flow_control_errors(schedules: Any, key_limits: Any) -> list[CheckMessage]:
    """``jobs.E024``: a field of a ``JOB_SCHEDULES`` entry that cannot be served, one error
    per field, each naming the schedule and the field, by the rules the API applies to a
    job (``jobs.flowcontrol.schedule_problems``); ``jobs.E025``: a
    ``JOB_CONCURRENCY_KEY_LIMITS`` entry that is not a pattern and a limit >= 1."""
    errors: list[CheckMessage] = []
    if not isinstance(schedules, dict):
        errors.append(
            Error(
                f"JOB_SCHEDULES is {type(schedules).__name__}; it must be a dict of "
                "name -> schedule.",
                obj="JOB_SCHEDULES",
                id="jobs.E024",
            )
        )
        schedules = {}
    for name, raw in schedules.items():
        for problem in schedule_problems(
            name, raw, default_timezone=str(settings.TIME_ZONE or "UTC")
        ):
            field, _, reason = problem.partition(": ")
            errors.append(
                Error(
                    f"JOB_SCHEDULES[{name!r}].{field}: {reason}.",
                    hint="Correct or remove the schedule: workers start once every one is valid.",
                    obj=f"JOB_SCHEDULES[{name!r}]",
                    id="jobs.E024",
                )
            )
    if not isinstance(key_limits, dict) or not all(
        isinstance(pattern, str)
        and isinstance(limit, int)
        and not isinstance(limit, bool)
        and limit >= 1
        for pattern, limit in key_limits.items()
    ):
        errors.append(
            Error(
                "JOB_CONCURRENCY_KEY_LIMITS must map key patterns to limits >= 1, "
                'e.g. {"customer:*": 2, "default": 10}.',
                id="jobs.E025",
            )
        )
    return errors


def _tracing_errors(tracing: Any, record: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    if not isinstance(tracing, bool):
        errors.append(
            Error(
                f"JOB_TRACING is {tracing!r}; it must be True or False.",
                obj="JOB_TRACING",
                id="jobs.E008",
            )
        )
    # Only asked when tracing is on: looking for the package imports its namespace.
    elif tracing and not extras.installed("otel"):
        errors.append(
            Error(
                "JOB_TRACING is on, but opentelemetry-api is not installed.",
                hint=f"{extras.install_command('otel')}, or set JOB_TRACING = False.",
                obj="JOB_TRACING",
                id="jobs.E008",
            )
        )
    names = list(record) if isinstance(record, list | tuple) else None
    if names is None or any(name not in RECORDABLE for name in names):
        errors.append(
            Error(
                f"JOB_TRACING_RECORD is {record!r}; it must be a list of any of "
                f"{', '.join(RECORDABLE)} (none: the messaging attributes only).",
                obj="JOB_TRACING_RECORD",
                id="jobs.E009",
            )
        )
    return errors


def _metrics_errors(port: Any) -> list[CheckMessage]:
    # run_job_workers runs the checks before it starts: a worker asked to serve metrics
    # without the client stops here, naming the extra, not on its first scrape.
    if not port or extras.installed("metrics"):
        return []
    return [
        Error(
            f"JOB_WORKER_METRICS_PORT is {port!r}, but prometheus-client is not installed.",
            hint=f"{extras.install_command('metrics')}, or unset JOB_WORKER_METRICS_PORT.",
            obj="JOB_WORKER_METRICS_PORT",
            id="jobs.E007",
        )
    ]


def _transaction_pooling_errors() -> list[CheckMessage]:
    # In transaction pooling each transaction may get another server connection: a
    # prepared statement or a LISTEN stays behind on the one it was made on.
    errors: list[CheckMessage] = []
    if app_settings.JOB_DB_PREPARED_STATEMENTS:
        errors.append(
            Error(
                "JOB_DB_PREPARED_STATEMENTS is on with JOB_DB_TRANSACTION_POOLING; PgBouncer "
                "before 1.21 in transaction mode cannot carry prepared statements.",
                hint="Set JOB_DB_PREPARED_STATEMENTS = False.",
                obj="JOB_DB_PREPARED_STATEMENTS",
                id="jobs.E005",
            )
        )
    options = app_settings.JOB_WORKER_LISTEN_OPTIONS
    if app_settings.JOB_WORKER_LISTEN and not (options.get("host") or options.get("port")):
        errors.append(
            Error(
                "JOB_WORKER_LISTEN is on with JOB_DB_TRANSACTION_POOLING but the listener "
                "would connect through the pooler, where notifications are lost.",
                hint="Point POSTGRES_LISTEN_HOST/POSTGRES_LISTEN_PORT "
                "(JOB_WORKER_LISTEN_OPTIONS) at PostgreSQL itself, or set "
                "JOB_WORKER_LISTEN=false to poll only.",
                obj="JOB_WORKER_LISTEN",
                id="jobs.E006",
            )
        )
    return errors


def _heartbeat_errors(heartbeat: int, lease: int) -> list[CheckMessage]:
    # A heartbeat as long as the lease would let leases lapse between two renewals.
    if heartbeat < lease:
        return []
    return [
        Error(
            f"JOB_WORKER_HEARTBEAT_SECONDS is {heartbeat}; it must be shorter than "
            f"JOB_WORKER_LEASE_SECONDS ({lease}), or leases would lapse between heartbeats.",
            hint="Leave JOB_WORKER_HEARTBEAT_SECONDS at 0 (a third of the lease).",
            obj="JOB_WORKER_HEARTBEAT_SECONDS",
            id="jobs.E004",
        )
    ]


def _deadline_errors(deadline: int, lease: int) -> list[CheckMessage]:
    # A statement allowed to wait as long as the lease could outlive the leases it renews.
    if deadline < lease:
        return []
    return [
        Error(
            f"JOB_DB_STATEMENT_DEADLINE_SECONDS is {deadline}; it must be shorter than "
            f"JOB_WORKER_LEASE_SECONDS ({lease}), or a heartbeat stuck on a dead server "
            "would outlast the leases it renews.",
            hint="Leave JOB_DB_STATEMENT_DEADLINE_SECONDS at 0 (the heartbeat interval).",
            obj="JOB_DB_STATEMENT_DEADLINE_SECONDS",
            id="jobs.E010",
        )
    ]
