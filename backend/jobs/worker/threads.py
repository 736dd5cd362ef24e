"""The worker threads: each asks the fetcher for a job, has the executor run its attempt
and the completer record it, until the process stops."""

from __future__ import annotations

import logging
import threading
from datetime import datetime

from django.db import DatabaseError, InterfaceError

from .attempts import Attempt, InFlight, Outcome
from .completer import Completer
from .config import WorkerConfig, make_worker_id
from .executor import Executor, attempt_of
from .fetcher import Fetcher
from .queues import Waker
from .recovery import (
    Incident,
    announce_database_error,
    drop_connection,
    error_details,
    error_message,
)

logger = logging.getLogger("jobs.worker")


class WorkerThread(threading.Thread):
    """One loop with its own worker id: a job, its attempt, its outcome, again."""

    def __init__(
        self,
        number: int,
        *,
        config: WorkerConfig,
        stopping: threading.Event,
        waker: Waker,
        fetcher: Fetcher,
        executor: Executor,
        completer: Completer,
        in_flight: InFlight,
    ) -> None:
        super().__init__(name=f"job-worker-{number}", daemon=True)
        self.number = number
        self.config = config
        self.stopping = stopping
        self.waker = waker
        self.fetcher = fetcher
        self.executor = executor
        self.completer = completer
        self.in_flight = in_flight
        self.worker_id = make_worker_id(number)
        self.jobs_processed = 0
        # Set when its attempt timed out and a replacement took its place: it finishes
        # the handler it is stuck in, then exits instead of claiming again.
        self.abandoned = False
        # When it was abandoned (for the workers page: how long its handler has hung).
        self.abandoned_at: datetime | None = None
        self.died: BaseException | None = None
        self.current: Attempt | None = None

    def run(self) -> None:
        logger.info("action=thread_started worker_id=%s", self.worker_id)
        try:
            self._loop()
        except BaseException as exc:  # a bug in the worker: the runner replaces the thread
            self.died = exc
            logger.exception("action=thread_crashed worker_id=%s", self.worker_id)
            self._fail_current(exc)
        finally:
            drop_connection()
            logger.info(
                "action=thread_stopped worker_id=%s jobs_processed=%d abandoned=%s",
                self.worker_id,
                self.jobs_processed,
                self.abandoned,
            )

    def _fail_current(self, exc: BaseException) -> None:
        """End the attempt this thread was running at once, not at lease expiry."""
        attempt, self.current = self.current, None
        if attempt is None or attempt.state.timed_out or attempt.state.lost:
            return
        try:
            error = f"Worker thread died: {error_message(exc)}"
            self.completer.record(Outcome.failed(attempt, error, error_details(exc)))
        except Exception:
            logger.exception("action=fail_on_death_failed job_id=%s", attempt.job.id)

    def _loop(self) -> None:
        incident = Incident("database_error", worker_id=self.worker_id)
        while not self.stopping.is_set() and not self.abandoned:
            try:
                claimed = self.run_once()
                incident.ended()
            except (DatabaseError, InterfaceError) as exc:
                announce_database_error("thread", exc)
                delay = incident.failed(exc)
                drop_connection()
                self.stopping.wait(delay)
                continue
            except Exception:
                logger.exception("action=loop_error worker_id=%s", self.worker_id)
                self.stopping.wait(self.config.poll_interval_seconds)
                continue
            if not claimed:
                self.completer.flush_now()  # idle: nothing will carry what waits
                if self.config.burst:
                    break
                self.waker.wait(self.config.poll_interval_seconds)
        self.completer.flush_now()

    def run_once(self) -> bool:
        """Run the next job of this thread's queues; whether there was one."""
        job = self.fetcher.next_job(self.worker_id)
        if job is None:
            return False
        if self.stopping.is_set() or self.abandoned:
            self.fetcher.release([job])  # the stop came first: it never starts
            return False
        # There may be more where this came from: let another idle thread look too.
        self.waker.wake_one()
        attempt = attempt_of(job, self.worker_id, self.config)
        self.in_flight.add(attempt)
        self.current = attempt
        logger.debug(
            "action=claimed job_id=%s type=%s queue=%s attempt=%d worker_id=%s",
            job.id,
            job.type,
            job.queue,
            job.attempts,
            self.worker_id,
        )
        self.executor.run(attempt, sender=WorkerThread)
        self.current = None
        self.jobs_processed += 1
        return True
