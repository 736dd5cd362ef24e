"""The worker threads: each asks the fetcher for a job, has the executor run its attempt
and the completer record it, until the process stops.

With a prefetch (throughput mode) a thread asks for its share of it too and holds those
jobs, claimed under its own worker id, until it has run the one before: each is in flight
from its claim (the heartbeat renews its lease), its timeout counts from its handler's
start, one whose cancel was requested while held never starts, and a stop, the thread's
replacement or its death gives the held ones back at once (``release_held``), their
attempts not spent. Held jobs wait behind their thread's current job: a prefetch suits
short handlers.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from datetime import datetime

from django.db import DatabaseError, InterfaceError

from ..worker_ids import make_worker_id
from .attempts import Attempt, InFlight, Outcome
from .completer import Completer
from .config import WorkerConfig
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
        hold: int | None = None,
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
        # Jobs claimed for this thread beyond the one it runs, in claim order; at most
        # `hold` (its share of the prefetch, or the share of the thread it replaces).
        self.hold = config.prefetch_of(number) if hold is None else hold
        self.held: deque[Attempt] = deque()

    def run(self) -> None:
        logger.info("action=thread_started worker_id=%s", self.worker_id)
        try:
            self._loop()
        except BaseException as exc:  # a bug in the worker: the runner replaces the thread
            self.died = exc
            logger.exception("action=thread_crashed worker_id=%s", self.worker_id)
            self._fail_current(exc)
        finally:
            self.release_held()
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
        """Run the next job this thread holds, or else of its queues; whether there was
        one."""
        attempt = self._next_attempt()
        if attempt is None:
            return False
        self.current = attempt
        try:
            self.executor.run(attempt, sender=WorkerThread)
        except Exception:
            # Recording its outcome raised and the loop carries on: the thread no longer
            # runs it, and a later death of the thread must not fail it again. (An error
            # that ends the thread leaves it current: ``run`` fails it at once.)
            self.current = None
            raise
        self.current = None
        self.jobs_processed += 1
        return True

    def _next_attempt(self) -> Attempt | None:
        try:
            attempt = self.held.popleft()
        except IndexError:
            return self._fetched()
        if self.stopping.is_set() or self.abandoned:
            self._release([attempt])  # the stop came first: it never starts
            return None
        # Its successes so far must not wait for a fetch that comes after this job.
        self.completer.continuing(self.worker_id)
        return attempt

    def _fetched(self) -> Attempt | None:
        jobs = self.fetcher.next_jobs(self.worker_id, 1 + self.hold)
        if not jobs:
            return None
        if self.stopping.is_set() or self.abandoned:
            self.fetcher.release(jobs)  # the stop came first: none starts
            return None
        # There may be more where these came from: let another idle thread look too.
        self.waker.wake_one()
        attempts = [attempt_of(job, self.worker_id, self.config) for job in jobs]
        for attempt in attempts:
            self.in_flight.add(attempt)
            logger.debug(
                "action=claimed job_id=%s type=%s queue=%s attempt=%d worker_id=%s",
                attempt.job.id,
                attempt.job.type,
                attempt.job.queue,
                attempt.job.attempts,
                self.worker_id,
            )
        self.held.extend(attempts[1:])
        if self.stopping.is_set():
            # The stop came while they were handed over: the runner's release may have
            # looked before they were held.
            self._release([attempts[0]])
            self.release_held()
            return None
        return attempts[0]

    def release_held(self) -> None:
        """Give back the jobs this thread holds and has not started, at once (their
        attempts not spent). Safe from any thread: each held job is taken once, by this or
        by the thread itself."""
        taken: list[Attempt] = []
        while True:
            try:
                taken.append(self.held.popleft())
            except IndexError:
                break
        if taken:
            self._release(taken)

    def _release(self, attempts: list[Attempt]) -> None:
        for attempt in attempts:
            self.in_flight.remove(attempt)
        self.fetcher.release([attempt.job for attempt in attempts])
