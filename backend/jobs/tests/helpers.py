"""Shared test helpers: running real workers against the test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from django.db import connection

from jobs.worker import WorkerConfig, WorkerRunner

BACKEND_DIR = Path(__file__).resolve().parents[2]


def run_workers_in_burst(threads: int = 1, lease_seconds: int = 30, **overrides) -> WorkerRunner:
    """Run real worker threads in this process until nothing is claimable."""
    config = WorkerConfig(
        threads=threads,
        poll_interval_seconds=overrides.pop("poll_interval_seconds", 0.05),
        lease_seconds=lease_seconds,
        cleanup_interval_seconds=overrides.pop("cleanup_interval_seconds", 5),
        cleanup_batch_size=overrides.pop("cleanup_batch_size", 100),
        burst=True,
    )
    runner = WorkerRunner(config)
    runner.run()
    return runner


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


class WorkerProcess:
    """``manage.py run_job_workers`` as a real child process with its log in a file."""

    def __init__(self, log_path: Path, *args: str, **env: str) -> None:
        self.log_path = log_path
        self._log = log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "run_job_workers", *args],
            cwd=BACKEND_DIR,
            env=child_env(**env),
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def log(self) -> str:
        return self.log_path.read_text()

    def wait_for_log(self, text: str, timeout: float = 20) -> None:
        wait_until(lambda: text in self.log(), timeout, f"log line {text!r}")

    def signal(self, signum: int = signal.SIGTERM) -> None:
        self.proc.send_signal(signum)

    def wait(self, timeout: float = 30) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self._log.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._log.close()


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
