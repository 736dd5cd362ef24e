"""The threaded worker: N threads, each claiming and running one job at a time.

Each thread loops: run expired-lease cleanup when its interval is due, claim the next job,
run its handler, then complete or fail it through ``jobs.services``. It sleeps only when
nothing was claimable. Database errors (PostgreSQL restarting, network loss) are logged,
the thread's connection is dropped and it retries with capped exponential backoff; no
exception ends a thread silently, and the runner replaces a thread that dies anyway.

The first SIGINT/SIGTERM stops claiming and lets in-flight jobs finish (exit 0); a second
one exits at once, leaving unfinished jobs to lease-expiry cleanup.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from django.conf import settings
from django.db import DatabaseError, InterfaceError, connection

from . import services
from .drivers import JobRow
from .handlers import JobContext, LeaseLost, get_handler
from .models import JobStatus

logger = logging.getLogger("jobs.worker")

DB_RETRY_MAX_SECONDS = 10.0


@dataclass(frozen=True)
class WorkerConfig:
    threads: int
    poll_interval_seconds: float
    lease_seconds: int
    cleanup_interval_seconds: float
    cleanup_batch_size: int
    burst: bool = False

    @classmethod
    def from_settings(cls, *, threads: int | None = None, burst: bool = False) -> WorkerConfig:
        return cls(
            threads=settings.JOB_WORKER_THREADS if threads is None else threads,
            poll_interval_seconds=settings.JOB_WORKER_POLL_INTERVAL_MS / 1000,
            lease_seconds=settings.JOB_WORKER_LEASE_SECONDS,
            cleanup_interval_seconds=settings.JOB_WORKER_CLEANUP_INTERVAL_SECONDS,
            cleanup_batch_size=settings.JOB_WORKER_CLEANUP_BATCH_SIZE,
            burst=burst,
        )


def make_worker_id(thread_number: int) -> str:
    """``hostname:pid:thread-N:random``; unique per thread start, never reused."""
    return f"{socket.gethostname()}:{os.getpid()}:thread-{thread_number}:{secrets.token_hex(4)}"


def _error_message(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


def _drop_connection() -> None:
    """Forget this thread's connection so the next query reconnects."""
    try:
        connection.close()
    except Exception:  # a broken connection may fail to close; it is discarded either way
        logger.debug("action=connection_close_failed", exc_info=True)


class WorkerThread(threading.Thread):
    """One claim-execute-finish loop with its own worker id and cleanup cadence."""

    def __init__(self, number: int, config: WorkerConfig, stop_event: threading.Event) -> None:
        super().__init__(name=f"job-worker-{number}", daemon=True)
        self.number = number
        self.config = config
        self.stop_event = stop_event
        self.worker_id = make_worker_id(number)
        self.jobs_processed = 0
        self._next_cleanup = 0.0

    # The loop ---------------------------------------------------------------------------

    def run(self) -> None:
        logger.info("action=thread_started worker_id=%s", self.worker_id)
        failures = 0
        try:
            while not self.stop_event.is_set():
                try:
                    claimed = self.run_once()
                    failures = 0
                except (DatabaseError, InterfaceError) as exc:
                    failures += 1
                    delay = min(0.5 * 2 ** (failures - 1), DB_RETRY_MAX_SECONDS)
                    logger.warning(
                        "action=database_error worker_id=%s retry_in=%.1fs error=%s",
                        self.worker_id,
                        delay,
                        _error_message(exc),
                    )
                    _drop_connection()
                    self.stop_event.wait(delay)
                    continue
                except Exception:
                    logger.exception("action=loop_error worker_id=%s", self.worker_id)
                    self.stop_event.wait(self.config.poll_interval_seconds)
                    continue
                if not claimed:
                    if self.config.burst:
                        break
                    self.stop_event.wait(self.config.poll_interval_seconds)
        finally:
            _drop_connection()
            logger.info(
                "action=thread_stopped worker_id=%s jobs_processed=%d",
                self.worker_id,
                self.jobs_processed,
            )

    def run_once(self) -> bool:
        """Clean up if due, then claim and run one job. Returns whether a job was claimed."""
        if time.monotonic() >= self._next_cleanup:
            self._cleanup()
        job = services.claim_next_job(
            worker_id=self.worker_id, lease_seconds=self.config.lease_seconds
        )
        if job is None:
            return False
        logger.debug(
            "action=claimed job_id=%s type=%s attempt=%d worker_id=%s",
            job.id,
            job.type,
            job.attempts,
            self.worker_id,
        )
        self.execute(job)
        self.jobs_processed += 1
        return True

    def _cleanup(self) -> None:
        result = services.cleanup_expired_jobs(
            batch_size=self.config.cleanup_batch_size, worker_id=self.worker_id
        )
        # Schedule the next pass only after a successful one, so a failed pass is retried.
        self._next_cleanup = time.monotonic() + self.config.cleanup_interval_seconds
        if result.total:
            logger.info(
                "action=cleanup worker_id=%s requeued=%d failed=%d",
                self.worker_id,
                result.requeued,
                result.failed,
            )

    # One job ----------------------------------------------------------------------------

    def execute(self, job: JobRow) -> str:
        """Run the job's handler and record the outcome. Returns the outcome's name."""
        started = time.monotonic()
        context = JobContext(
            job_id=job.id,
            type=job.type,
            payload=job.payload if isinstance(job.payload, dict) else {"value": job.payload},
            attempt=job.attempts,
            worker_id=self.worker_id,
            lease_seconds=self.config.lease_seconds,
        )
        error: str | None = None
        result: Any = None
        spec = get_handler(job.type)
        try:
            if spec is None:
                raise LookupError(f"No handler is registered for job type {job.type!r}")
            result = spec.fn(context)
        except LeaseLost as exc:
            logger.warning(
                "action=lease_lost job_id=%s attempt=%d worker_id=%s detail=%s",
                job.id,
                job.attempts,
                self.worker_id,
                exc,
            )
            return "lease_lost"
        except Exception as exc:
            error = _error_message(exc)

        finished: JobRow | None = None
        if error is None:
            try:
                finished = self._finish(
                    services.complete_job,
                    job_id=job.id,
                    worker_id=self.worker_id,
                    attempt=job.attempts,
                    result=result,
                )
                outcome = "succeeded"
            except (TypeError, ValueError) as exc:  # complete_job refused it, wrote nothing
                error = f"Handler returned a result that is not JSON-serialisable: {exc}"
        if error is not None:
            finished = self._finish(
                services.fail_job,
                job_id=job.id,
                worker_id=self.worker_id,
                attempt=job.attempts,
                error=error,
            )
            outcome = "failed" if finished is None else finished.status
            if outcome == JobStatus.QUEUED:
                outcome = "retry_scheduled"
        if finished is None:
            logger.warning(
                "action=stale_write_rejected job_id=%s attempt=%d worker_id=%s outcome=%s",
                job.id,
                job.attempts,
                self.worker_id,
                outcome,
            )
            return "stale"
        logger.debug(
            "action=finished job_id=%s type=%s attempt=%d worker_id=%s outcome=%s duration_ms=%d",
            job.id,
            job.type,
            job.attempts,
            self.worker_id,
            outcome,
            (time.monotonic() - started) * 1000,
        )
        return outcome

    def _finish(self, write: Callable[..., JobRow | None], **kwargs: Any) -> JobRow | None:
        """Record the outcome, retrying through a database outage for up to one lease.

        If the database stays away longer, the lease expires and cleanup retries the job.
        """
        deadline = time.monotonic() + self.config.lease_seconds
        delay = 0.2
        while True:
            try:
                return write(**kwargs)
            except (DatabaseError, InterfaceError) as exc:
                _drop_connection()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise
                delay = min(delay, remaining)
                logger.warning(
                    "action=finish_retry job_id=%s worker_id=%s retry_in=%.1fs error=%s",
                    kwargs["job_id"],
                    self.worker_id,
                    delay,
                    _error_message(exc),
                )
                time.sleep(delay)
                delay = min(delay * 2, DB_RETRY_MAX_SECONDS)


class WorkerRunner:
    """Starts the worker threads, handles signals, and waits for a graceful stop."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.stop_event = threading.Event()
        self.threads: list[WorkerThread] = []
        self._signals_received = 0

    def start(self) -> None:
        for number in range(1, self.config.threads + 1):
            self._start_thread(number)

    def _start_thread(self, number: int) -> WorkerThread:
        thread = WorkerThread(number, self.config, self.stop_event)
        thread.start()
        if number <= len(self.threads):
            self.threads[number - 1] = thread
        else:
            self.threads.append(thread)
        return thread

    def stop(self) -> None:
        self.stop_event.set()

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._signals_received += 1
        name = signal.Signals(signum).name
        if self._signals_received == 1:
            busy = sum(1 for t in self.threads if t.is_alive())
            logger.info(
                "action=shutdown_requested signal=%s detail=no new claims; "
                "waiting for in-flight jobs threads=%d",
                name,
                busy,
            )
            self.stop()
        else:
            logger.warning("action=forced_exit signal=%s detail=leases will expire", name)
            os._exit(1)

    def wait(self) -> None:
        """Block until every thread has stopped, replacing any thread that died."""
        while True:
            alive = [t for t in self.threads if t.is_alive()]
            if not alive:
                return
            if not self.stop_event.is_set() and not self.config.burst:
                for thread in self.threads:
                    if not thread.is_alive():
                        logger.error(
                            "action=thread_died worker_id=%s detail=starting a replacement",
                            thread.worker_id,
                        )
                        self._start_thread(thread.number)
            alive[0].join(timeout=0.5)

    def run(self) -> int:
        """Run until stopped (or drained in burst mode). Returns the exit code."""
        logger.info(
            "action=worker_started threads=%d lease_seconds=%d poll_interval_ms=%d "
            "cleanup_interval_seconds=%s database=%s burst=%s",
            self.config.threads,
            self.config.lease_seconds,
            self.config.poll_interval_seconds * 1000,
            self.config.cleanup_interval_seconds,
            connection.vendor,
            self.config.burst,
        )
        self.start()
        self.wait()
        processed = sum(t.jobs_processed for t in self.threads)
        logger.info("action=worker_stopped jobs_processed=%d", processed)
        return 0
