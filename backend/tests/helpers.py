"""Helpers of the test suite that know this project: workers in this process, child
processes on this run's test database, and the figures the fault tests print.

The servers and processes themselves come from ``harness``, which the benchmark shares.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.db import InternalError, connection

import harness
from harness import BACKEND_DIR, wait_until
from jobs.worker import WorkerConfig, WorkerRunner

# Queries one stats read makes: the counts, the queue names, and on PostgreSQL the
# planner's table estimate.
STATS_QUERIES = 3 if connection.vendor == "postgresql" else 2


class ReadOnlySqlTransaction(Exception):
    """What psycopg raises for SQLSTATE 25006 (a write on a hot standby, or on a primary
    being demoted), as Django wraps it (its ``__cause__``)."""

    sqlstate = "25006"


def read_only_error(statement: str = "UPDATE") -> InternalError:
    """The error Django raises for a write that a read-only server refused."""
    error = InternalError(f"cannot execute {statement} in a read-only transaction")
    error.__cause__ = ReadOnlySqlTransaction()
    return error


def worker_config(threads: int = 1, **overrides: Any) -> WorkerConfig:
    """A worker configuration for tests: polls every 50 ms, 30 s lease."""
    values: dict[str, Any] = {
        "threads": threads,
        "poll_interval_seconds": 0.05,
        "lease_seconds": 30,
        "cleanup_interval_seconds": 5,
        "cleanup_batch_size": 100,
        "vacuum_dead_rows": 0,  # the test database's vacuum is test_vacuum's to exercise
    }
    return WorkerConfig(**(values | overrides))


def worker_runner(threads: int = 1, **overrides: Any) -> WorkerRunner:
    """Real worker threads in this process (``worker_config``); not started yet."""
    return WorkerRunner(worker_config(threads, **overrides))


def run_workers_in_burst(threads: int = 1, **overrides: Any) -> WorkerRunner:
    """Run real worker threads in this process until nothing is claimable."""
    runner = worker_runner(threads, burst=True, **overrides)
    runner.run()
    return runner


def plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node of an ``EXPLAIN (FORMAT JSON)`` plan, the root first."""
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def child_env(**extra: str) -> dict[str, str]:
    """Environment for a subprocess that must use this test run's database."""
    env = dict(os.environ)
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        env.update(
            DATABASE_ENGINE="postgres",
            POSTGRES_DB=db["NAME"],
            POSTGRES_HOST=db["HOST"] or "127.0.0.1",
            POSTGRES_PORT=str(db["PORT"] or 5432),
            POSTGRES_USER=db["USER"],
            POSTGRES_PASSWORD=db["PASSWORD"] or "",
        )
    else:
        env.update(DATABASE_ENGINE="sqlite", SQLITE_PATH=str(db["NAME"]))
    env.update(
        DEBUG="true",
        ENABLE_DJANGO_DEBUG_TOOLBAR="false",
        JOB_WORKER_POLL_INTERVAL_MS="50",
        JOB_WORKER_LOG_LEVEL="DEBUG",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def run_manage(*args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """``manage.py <args>`` in a child process with ``child_env(**env)``; output captured."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BACKEND_DIR,
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class WorkerProcess(harness.WorkerProcess):
    """``manage.py run_job_workers`` of this project on this run's database
    (``child_env(**env)``)."""

    def __init__(self, log_path: Path, *args: str, **env: str) -> None:
        super().__init__(log_path, *args, env=child_env(**env))


def handlers_begun(worker: WorkerProcess, job_type: str) -> int:
    """How many jobs of ``job_type`` a worker started with ``JOB_WORKER_LOG_LEVEL=DEBUG``
    has begun running. A row reading ``running`` is not enough before a stop: a job claimed
    but not yet handed to its thread when the stop comes is released, by design."""
    return sum(
        "action=claimed" in line and f"type={job_type} " in line
        for line in worker.log().splitlines()
    )


def pid_of(worker_id: str) -> str:
    """``hostname:pid:thread-N:random`` -> pid."""
    return worker_id.split(":")[1]


def stop_all(workers: list[WorkerProcess]) -> list[int]:
    """SIGTERM every worker, then their exit codes."""
    for worker in workers:
        worker.signal(signal.SIGTERM)
    return [worker.wait(timeout=30) for worker in workers]


def drain_on(workers: list[WorkerProcess], total: int, job_type: str, threads: int = 4) -> float:
    """Once each worker's ``threads`` threads run, ``total`` jobs of ``job_type`` become
    visible at once to all of them; the seconds until every one succeeded. Every worker is
    then stopped by SIGTERM and must exit 0 (and is killed whatever happens)."""
    from jobs.models import Job
    from tests.factories import queued_jobs

    try:
        for worker in workers:
            wait_until(
                lambda w=worker: w.log().count("action=thread_started") == threads, 30, "threads"
            )
        queued_jobs(total, job_type)
        started = time.monotonic()
        wait_until(
            lambda: Job.objects.filter(status=Job.Status.SUCCEEDED).count() == total, 120, "drain"
        )
        drained_in = time.monotonic() - started
        assert stop_all(workers) == [0] * len(workers)
    finally:
        for worker in workers:
            worker.kill()
    return drained_in


class HealthPoller(threading.Thread):
    """Polls /api/health/ every 50 ms, recording (monotonic time, status, body)."""

    def __init__(self, api: harness.HttpServer) -> None:
        super().__init__(daemon=True)
        self.api = api
        self.samples: list[tuple[float, int, dict]] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.is_set():
            self.samples.append((time.monotonic(), *self.api.json("GET", "/api/health/")))
            self.stop_event.wait(0.05)


def figures(title: str, **values: object) -> None:
    """One line of measured figures, shown with ``pytest -s``."""
    print(f"\n[fault] {title}: " + ", ".join(f"{k}={v}" for k, v in values.items()))


def production_child_env(**extra: str) -> dict[str, str]:
    """This run's database in production mode (DEBUG=false) behind a pretend TLS proxy:
    requests carrying ``X-Forwarded-Proto: https`` count as HTTPS, so the HTTPS defaults
    (redirect, HSTS, secure cookies) stay on."""
    env = child_env(
        **{
            "DEBUG": "false",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "DJANGO_SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO,https",
            **extra,  # a module may set its own secret, e.g. to sign sessions it writes
        }
    )
    env.pop("GUNICORN_CMD_ARGS", None)
    return env


_MEMORY_EXPORTER: Any = None


def memory_exporter() -> Any:
    """The OpenTelemetry SDK's in-memory exporter behind this process's tracer provider,
    set up on first use (a process has one global provider), cleared."""
    global _MEMORY_EXPORTER
    if _MEMORY_EXPORTER is None:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        _MEMORY_EXPORTER = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_MEMORY_EXPORTER))
        trace.set_tracer_provider(provider)
    _MEMORY_EXPORTER.clear()
    return _MEMORY_EXPORTER
