"""The app's settings and their defaults, read in one place.

Every ``JOB_*`` setting is optional: a project that adds ``jobs`` to ``INSTALLED_APPS``
and defines none of them gets these defaults (the spec's). This project's
``config/settings.py`` reads them from the environment; another project may set them in
its settings module like any Django setting. ``jobs.checks`` validates them at start-up.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

DEFAULTS: dict[str, Any] = {
    "JOB_WORKER_THREADS": 4,
    "JOB_WORKER_POLL_INTERVAL_MS": 500,
    "JOB_WORKER_LEASE_SECONDS": 30,
    # Seconds between a worker process's heartbeats; 0: a third of the lease.
    "JOB_WORKER_HEARTBEAT_SECONDS": 0,
    "JOB_WORKER_CLEANUP_INTERVAL_SECONDS": 5,
    # Batched fetch: a process's idle threads claim together, up to this many
    # jobs per statement (never more than the threads that are idle); 1: one by one;
    # 0: as many as the process has threads where batching pays (jobs.worker.config).
    "JOB_WORKER_CLAIM_BATCH_SIZE": 0,
    # Batched completion: successes written together, up to this many per
    # statement, the oldest waiting at most JOB_WORKER_COMPLETE_FLUSH_MS (or none when a
    # thread is idle); 1: each thread completes its job together with its next claim;
    # 0: 10 where batching pays, the jobs in hand with a prefetch, else 1.
    "JOB_WORKER_COMPLETE_BATCH_SIZE": 0,
    "JOB_WORKER_COMPLETE_FLUSH_MS": 5,
    # False (opt-in, throughput mode, PostgreSQL): a transaction that writes successes (a
    # batch, or a fetch carrying them) commits without waiting for the WAL to reach disk;
    # a database crash may forget it and those jobs run again. Never for enqueue.
    "JOB_WORKER_COMPLETE_SYNCHRONOUS_COMMIT": True,
    # True (opt-in, throughput mode): no claimed and succeeded events on the success path;
    # the job row keeps who ran it and when (claimed_by, claimed_at, finished_at).
    "JOB_WORKER_LEAN_TIMELINE": False,
    # Throughput mode (opt-in): jobs a worker process holds beyond those its threads run,
    # at most this many, each claimed for the thread that will run it; 0: none.
    "JOB_WORKER_PREFETCH": 0,
    "JOB_WORKER_CLEANUP_BATCH_SIZE": 100,
    # Each worker process vacuums jobs_job (PostgreSQL) every cleanup interval once its dead
    # rows pass both the threshold autovacuum itself would act on and this many, and
    # analyzes it once its live rows outgrow the planner's count; 0: never (autovacuum alone).
    "JOB_WORKER_VACUUM_DEAD_ROWS": 20_000,
    "JOB_WORKER_BACKOFF_BASE_SECONDS": 5,
    "JOB_WORKER_BACKOFF_MAX_SECONDS": 300,
    "JOB_WORKER_MAX_ATTEMPTS_DEFAULT": 3,
    "JOB_WORKER_LOG_LEVEL": "INFO",
    # Queues a worker serves: names, or "*" for every queue that has jobs.
    "JOB_WORKER_QUEUES": ["*"],
    # Seconds an attempt may run when neither the job nor its type says; 0: no limit.
    "JOB_WORKER_TIMEOUT_SECONDS": 0,
    # Modules imported at start-up so their @jobs.handlers.register handlers exist.
    "JOB_HANDLER_MODULES": [],
    "JOB_API_MAX_BODY_BYTES": 256 * 1024,
    # Creating a job due now sends a PostgreSQL notification that wakes an idle worker at
    # once (the workers poll anyway; off: wait up to JOB_WORKER_POLL_INTERVAL_MS).
    "JOB_NOTIFY": True,
    # Worker processes LISTEN for those notifications (PostgreSQL). Off behind a pooler
    # that cannot carry LISTEN, or point JOB_WORKER_LISTEN_OPTIONS (psycopg connection
    # keywords, e.g. {"host": "postgres", "port": 5432}) straight at the server.
    "JOB_WORKER_LISTEN": True,
    "JOB_WORKER_LISTEN_OPTIONS": {},
    # A listener whose probe (a notification to itself, sent every half period) has not
    # come back reconnects: one that stopped hearing is replaced within this many seconds.
    "JOB_WORKER_LISTEN_PROBE_SECONDS": 10,
    # Above this many rows (planner estimate) finished counts in the stats are estimated
    # from PostgreSQL's statistics instead of counted on every poll.
    "JOB_STATS_EXACT_MAX_ROWS": 200_000,
    # Stats are computed at most once per this many seconds per cache (Django's default
    # cache; a shared one, e.g. Redis, makes it once for all API processes). 0: always.
    "JOB_STATS_CACHE_SECONDS": 1,
    # Prepare the hot statements once per connection (PostgreSQL). Turn off behind a
    # PgBouncer older than 1.21 in transaction mode, which cannot carry them.
    "JOB_DB_PREPARED_STATEMENTS": True,
    # The database connection goes through a pooler in transaction mode (PgBouncer):
    # prepared statements must be off and the listener needs a direct connection
    # (jobs.E005, jobs.E006).
    "JOB_DB_TRANSACTION_POOLING": False,
    # Seconds a statement may wait on a server that says nothing before its connection is
    # abandoned and reopened (jobs.drivers.deadline); 0: the heartbeat interval in worker
    # processes, 25 s elsewhere.
    "JOB_DB_STATEMENT_DEADLINE_SECONDS": 0,
    # A worker process serves its Prometheus metrics on this port (None or 0: off) and
    # address; run_job_workers starts the server.
    "JOB_WORKER_METRICS_PORT": None,
    "JOB_WORKER_METRICS_ADDRESS": "127.0.0.1",
    # Log lines as "text" (action=... key=value) or "json" (one object per line).
    "JOB_LOG_FORMAT": "text",
    # OpenTelemetry spans around enqueue and every attempt (jobs.tracing; the otel extra),
    # and what they record beyond the messaging attributes: any of "payload", "result",
    # "metadata" (none by default: payloads and results may hold personal data).
    "JOB_TRACING": False,
    "JOB_TRACING_RECORD": [],
    # Periodic jobs: name -> {"task": path | "type": job type, "cron": expr |
    # "interval": seconds, "args"/"kwargs" | "payload", "queue", "priority", "timezone",
    # "missed": "latest" | "skip"}; every worker process enqueues their due ticks.
    "JOB_SCHEDULES": {},
    # A tick older than this when a worker first sees it was missed (no worker ran).
    "JOB_SCHEDULE_GRACE_SECONDS": 30,
    # Per-key concurrency limits: {"customer:*": 2, "default": 10} (exact keys, fnmatch
    # patterns, "default"); rows of ConcurrencyKeyLimit join them at run time.
    "JOB_CONCURRENCY_KEY_LIMITS": {},
}


class AppSettings:
    """``app_settings.JOB_X``: the project's setting if it has one, else the default.

    Read at each access, so ``override_settings`` and pytest-django's ``settings`` work.
    """

    def __getattr__(self, name: str) -> Any:
        if name not in DEFAULTS:
            raise AttributeError(f"{name} is not a setting of the jobs app")
        return getattr(settings, name, DEFAULTS[name])


app_settings = AppSettings()
