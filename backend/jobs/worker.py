"""The threaded worker: N threads that claim and run jobs, and one maintenance thread.

Each ``WorkerThread`` loops: claim the next job of its queues (taken in turn, so a busy
queue cannot starve another), run its handler, record the outcome through
``jobs.services``. Whatever the handler does (return, raise, ``sys.exit()``, hang), the
attempt ends truthfully and the thread carries on.

The ``Maintenance`` thread does what must not depend on a free worker thread:
* heartbeat: every ``JOB_WORKER_HEARTBEAT_SECONDS`` (a third of the lease by default) it
  renews the lease of every attempt this process runs, in one statement, and learns which
  attempts were lost or asked to cancel;
* timeouts: at an attempt's deadline it records the attempt as timed out; the handler's
  thread cannot be killed, so it is abandoned and a replacement keeps the capacity;
* cleanup: every cleanup interval it releases the expired leases of any process.

Database errors (PostgreSQL restarting, network loss) are logged, the thread's connection
is dropped and it retries with capped backoff. The first SIGINT/SIGTERM stops claiming and
lets in-flight jobs finish (the heartbeat keeps their leases meanwhile); a second one
exits at once, leaving unfinished jobs to lease-expiry cleanup.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from selectors import EVENT_READ, DefaultSelector
from types import FrameType
from typing import Any

from django.db import DatabaseError, InterfaceError, connection

from . import selectors, services
from .conf import app_settings
from .drivers import JobRow, ListenerUnusable, Owner, get_driver
from .handlers import AttemptState, JobContext
from .models import JobStatus
from .registry import HandlerSpec, get_handler
from .signals import attempt_finished, attempt_started, database_error
from .storable import UnstorableValue

logger = logging.getLogger("jobs.worker")

ALL_QUEUES = "*"
LISTENER_APPLICATION_NAME = "job-queue-listener"
DB_RETRY_MAX_SECONDS = 10.0
# Thread deaths (a bug in the worker, never a handler's doing) tolerated per minute before
# the process gives up and exits non-zero, so a supervisor restarts it.
MAX_THREAD_DEATHS_PER_MINUTE = 10


@dataclass(frozen=True)
class WorkerConfig:
    threads: int
    poll_interval_seconds: float
    lease_seconds: int
    cleanup_interval_seconds: float
    cleanup_batch_size: int
    queues: tuple[str, ...] = (ALL_QUEUES,)
    timeout_seconds: int = 0  # default for jobs whose type sets none; 0: no timeout
    burst: bool = False
    heartbeat_seconds: float = 0  # 0: a third of the lease

    @property
    def heartbeat_interval_seconds(self) -> float:
        return self.heartbeat_seconds or self.lease_seconds / 3

    @classmethod
    def from_settings(
        cls,
        *,
        threads: int | None = None,
        queues: tuple[str, ...] | None = None,
        burst: bool = False,
    ) -> WorkerConfig:
        return cls(
            threads=app_settings.JOB_WORKER_THREADS if threads is None else threads,
            poll_interval_seconds=app_settings.JOB_WORKER_POLL_INTERVAL_MS / 1000,
            lease_seconds=app_settings.JOB_WORKER_LEASE_SECONDS,
            cleanup_interval_seconds=app_settings.JOB_WORKER_CLEANUP_INTERVAL_SECONDS,
            cleanup_batch_size=app_settings.JOB_WORKER_CLEANUP_BATCH_SIZE,
            queues=tuple(app_settings.JOB_WORKER_QUEUES) if queues is None else queues,
            timeout_seconds=app_settings.JOB_WORKER_TIMEOUT_SECONDS,
            burst=burst,
            heartbeat_seconds=app_settings.JOB_WORKER_HEARTBEAT_SECONDS,
        )


def make_worker_id(thread_number: int) -> str:
    """``hostname:pid:thread-N:random``; unique per thread start, never reused."""
    return f"{socket.gethostname()}:{os.getpid()}:thread-{thread_number}:{secrets.token_hex(4)}"


def error_message(exc: BaseException) -> str:
    """The exception's text, or its class name; an exception whose ``str()`` raises is
    described by its class rather than lost."""
    try:
        text = str(exc).strip()
    except BaseException as failure:
        return f"{type(exc).__name__} (its message could not be read: {type(failure).__name__})"
    return text or type(exc).__name__


def error_details(exc: BaseException, *, reason: str = "") -> services.ErrorDetails:
    kind = type(exc)
    try:
        trace = "".join(traceback.format_exception(exc))
    except BaseException:
        trace = ""
    return services.ErrorDetails(
        exception_class=f"{kind.__module__}.{kind.__qualname__}", traceback=trace, reason=reason
    )


def _database_error(component: str, exc: BaseException) -> None:
    """Announce a database error the worker recovers from (the metrics count them)."""
    database_error.send_robust(WorkerRunner, component=component, error=exc)


def _drop_connection() -> None:
    """Forget this thread's connection so the next query reconnects."""
    try:
        connection.close()
    except Exception:  # a broken connection may fail to close; it is discarded either way
        logger.debug("action=connection_close_failed", exc_info=True)


def retry_database[T](write: Callable[[], T], *, within: float, what: str) -> T:
    """Run ``write``, retrying through a lost connection for up to ``within`` seconds.

    Past that the error propagates: the lease is then about to expire and cleanup will
    retry the job.
    """
    deadline = time.monotonic() + within
    delay = 0.2
    while True:
        try:
            return write()
        except (DatabaseError, InterfaceError) as exc:
            _database_error("write", exc)
            _drop_connection()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise
            delay = min(delay, remaining)
            logger.warning(
                "action=write_retry what=%s retry_in=%.1fs error=%s",
                what,
                delay,
                error_message(exc),
            )
            time.sleep(delay)
            delay = min(delay * 2, DB_RETRY_MAX_SECONDS)


# --- What a process is running --------------------------------------------------------


@dataclass
class Attempt:
    """One running attempt of this process: what the maintenance thread looks after."""

    job: JobRow
    thread: WorkerThread
    timeout_seconds: int | None
    state: AttemptState = field(default_factory=AttemptState)
    started: float = field(default_factory=time.monotonic)

    @property
    def owner(self) -> Owner:
        return Owner(self.job.id, self.thread.worker_id, self.job.attempts)

    @property
    def deadline(self) -> float | None:
        return None if self.timeout_seconds is None else self.started + self.timeout_seconds


class InFlight:
    """The attempts running in this process, shared by its threads.

    Keyed by job and attempt: a timed-out attempt's abandoned thread may still be running
    when the job's next attempt starts in this process, and its removal must not drop that
    one from the heartbeat and the timeouts.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attempts: dict[tuple[Any, int], Attempt] = {}
        self.changed = threading.Event()  # wakes the maintenance thread

    def add(self, attempt: Attempt) -> None:
        with self._lock:
            self._attempts[attempt.job.id, attempt.job.attempts] = attempt
        # Only a deadline can come before the maintenance thread's next wake-up (heartbeat
        # and cleanup keep their own cadence): waking it for every job cost a thread switch
        # per job.
        if attempt.timeout_seconds is not None:
            self.changed.set()

    def remove(self, attempt: Attempt) -> None:
        with self._lock:
            self._attempts.pop((attempt.job.id, attempt.job.attempts), None)

    def snapshot(self) -> list[Attempt]:
        with self._lock:
            return list(self._attempts.values())


class QueueSet:
    """The queues a process serves: named ones, or ``*`` for every queue with jobs, looked
    up once per poll interval by idle threads, at most once per ``BUSY_REFRESH_SECONDS``
    by busy ones, and shared by the threads.

    A busy thread claims its next job together with its last completion and asks for the
    list on every job; refreshed at the poll interval, the lookup ran tens of times a
    second under load (the bench polls every 20 ms) for a list that rarely changes. A new
    queue is learned at once from its notification, else within that second.
    """

    BUSY_REFRESH_SECONDS = 1.0

    def __init__(
        self,
        names: tuple[str, ...],
        refresh_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.all_queues = ALL_QUEUES in names
        self.names = [] if self.all_queues else list(dict.fromkeys(names))
        self.refresh_seconds = refresh_seconds
        self.busy_refresh_seconds = max(refresh_seconds, self.BUSY_REFRESH_SECONDS)
        self._clock = clock
        self._lock = threading.Lock()
        self._refreshed = -float("inf")

    def serves(self, queue: str) -> bool:
        """Whether jobs of ``queue`` are this process's; a ``*`` process learns it now."""
        if not self.all_queues:
            return queue in self.names
        with self._lock:
            if queue not in self.names:
                self.names = sorted([*self.names, queue])
        return True

    def current(self, *, busy: bool = False) -> list[str]:
        if not self.all_queues:
            return self.names
        max_age = self.busy_refresh_seconds if busy else self.refresh_seconds
        with self._lock:
            if self._clock() - self._refreshed >= max_age:
                self.names = selectors.active_queues()
                self._refreshed = self._clock()
            return self.names


class Waker:
    """Where idle threads wait for work: woken by a notification, or after the poll interval.

    One notification wakes one thread; a woken thread that finds a job wakes the next, so a
    burst of jobs fans out to as many threads as it keeps busy, and one job wakes one.
    """

    def __init__(self) -> None:
        self._condition = threading.Condition()

    def wait(self, timeout: float) -> None:
        with self._condition:
            self._condition.wait(timeout)

    def wake_one(self) -> None:
        with self._condition:
            self._condition.notify()

    def wake_all(self) -> None:
        with self._condition:
            self._condition.notify_all()


class Listener(threading.Thread):
    """LISTENs on a connection of its own for the notifications ``create_jobs`` sends and
    wakes an idle thread for each queue this process serves.

    Only a shortcut: the threads poll anyway, so a lost notification (a dropped
    connection) costs at most one poll interval. It reconnects with capped backoff.

    Through a pooler (PgBouncer in transaction mode hands LISTEN's server connection to
    other clients, and notifications arriving on it are dropped without an error) it would
    wait for nothing: it says so at ERROR (``action=listener_unusable``) and stops, and the
    process polls. Point POSTGRES_LISTEN_HOST/PORT at PostgreSQL itself instead.
    """

    def __init__(self, runner: WorkerRunner) -> None:
        super().__init__(name="job-listener", daemon=True)
        self.runner = runner
        self.listening = threading.Event()  # set while LISTEN is in place

    def run(self) -> None:
        failures = 0
        while not self.runner.stop_event.is_set():
            try:
                self._listen()
                failures = 0
            except ListenerUnusable as exc:
                # A configuration mistake, not an outage: retrying would not help.
                logger.error(
                    "action=listener_unusable host=%s port=%s detail=%s; polling only. "
                    "Point POSTGRES_LISTEN_HOST/PORT (JOB_WORKER_LISTEN_OPTIONS) at "
                    "PostgreSQL itself, or set JOB_WORKER_LISTEN=false",
                    exc.host,
                    exc.port,
                    exc,
                )
                return
            except Exception as exc:  # any connection failure: retry, polling covers meanwhile
                _database_error("listener", exc)
                self.listening.clear()
                failures += 1
                delay = min(0.5 * 2 ** (failures - 1), DB_RETRY_MAX_SECONDS)
                logger.warning(
                    "action=listener_error retry_in=%.1fs error=%s", delay, error_message(exc)
                )
                self.runner.stop_event.wait(delay)

    def _listen(self) -> None:
        with get_driver().listen(application_name=LISTENER_APPLICATION_NAME) as listening:
            self.listening.set()
            logger.info("action=listening channel=%s", listening.channel)
            # Sleep in the kernel until the socket has data (or a second passes, to see a
            # stop): psycopg's notifies(timeout=...) wakes every 0.1 s to check for signals,
            # which made an idle listener cost more CPU than the polling it spares.
            with DefaultSelector() as waiting:
                waiting.register(listening.fileno(), EVENT_READ)
                while not self.runner.stop_event.is_set():
                    if not waiting.select(timeout=1.0):
                        continue
                    for queue in listening.received():
                        if self.runner.queues.serves(queue):
                            self.runner.waker.wake_one()


# --- Worker threads -------------------------------------------------------------------


class WorkerThread(threading.Thread):
    """One claim-execute-record loop with its own worker id."""

    def __init__(self, number: int, runner: WorkerRunner) -> None:
        super().__init__(name=f"job-worker-{number}", daemon=True)
        self.number = number
        self.runner = runner
        self.config = runner.config
        self.worker_id = make_worker_id(number)
        self.jobs_processed = 0
        # Set when its attempt timed out and a replacement took its place: it finishes
        # the handler it is stuck in, then exits instead of claiming again.
        self.abandoned = False
        self.died: BaseException | None = None
        self.current: Attempt | None = None
        self._next: JobRow | None = None  # claimed together with the last completion
        self._cursor = 0

    def run(self) -> None:
        logger.info("action=thread_started worker_id=%s", self.worker_id)
        try:
            self._loop()
        except BaseException as exc:  # a bug in the worker: the runner replaces the thread
            self.died = exc
            logger.exception("action=thread_crashed worker_id=%s", self.worker_id)
            self._fail_current(exc)
        finally:
            _drop_connection()
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
        self.runner.in_flight.remove(attempt)
        try:
            self._fail(attempt, f"Worker thread died: {error_message(exc)}", error_details(exc))
        except Exception:
            logger.exception("action=fail_on_death_failed job_id=%s", attempt.job.id)

    def _loop(self) -> None:
        failures = 0
        stop = self.runner.stop_event
        while not stop.is_set() and not self.abandoned:
            try:
                claimed = self.run_once()
                failures = 0
            except (DatabaseError, InterfaceError) as exc:
                _database_error("thread", exc)
                failures += 1
                delay = min(0.5 * 2 ** (failures - 1), DB_RETRY_MAX_SECONDS)
                logger.warning(
                    "action=database_error worker_id=%s retry_in=%.1fs error=%s",
                    self.worker_id,
                    delay,
                    error_message(exc),
                )
                _drop_connection()
                stop.wait(delay)
                continue
            except Exception:
                logger.exception("action=loop_error worker_id=%s", self.worker_id)
                stop.wait(self.config.poll_interval_seconds)
                continue
            if not claimed:
                if self.config.burst:
                    break
                self.runner.waker.wait(self.config.poll_interval_seconds)

    def run_once(self) -> bool:
        """Claim and run jobs until a claim finds none. Returns whether one was claimed.

        A success is recorded together with the next claim (``complete_and_claim_next``),
        so a busy thread pays one round trip and one commit per job.
        """
        job = self.claim()
        if job is None:
            return False
        # There may be more where this came from: let another idle thread look too.
        self.runner.waker.wake_one()
        while job is not None:
            logger.debug(
                "action=claimed job_id=%s type=%s queue=%s attempt=%d worker_id=%s",
                job.id,
                job.type,
                job.queue,
                job.attempts,
                self.worker_id,
            )
            self.execute(job)
            self.jobs_processed += 1
            job, self._next = self._next, None
        return True

    def _next_queue(self) -> str | None:
        """The queue to claim from together with a completion, or ``None`` to claim
        nothing (stopping, abandoned, or no queue with jobs)."""
        if self.runner.stop_event.is_set() or self.abandoned:
            return None
        queues = self.runner.queues.current(busy=True)
        if not queues:
            return None
        self._cursor = (self._cursor + 1) % len(queues)
        return queues[(self._cursor - 1) % len(queues)]

    def claim(self) -> JobRow | None:
        """The next job of this thread's queues, taking the queues in turn."""
        queues = self.runner.queues.current()
        for offset in range(len(queues)):
            queue = queues[(self._cursor + offset) % len(queues)]
            job = services.claim_next_job(
                worker_id=self.worker_id, queue=queue, lease_seconds=self.config.lease_seconds
            )
            if job is not None:
                self._cursor = (self._cursor + offset + 1) % len(queues)
                return job
        return None

    # One job ----------------------------------------------------------------------------

    def execute(self, job: JobRow) -> str:
        """Run the job's handler and record the outcome. Returns the outcome's name."""
        spec = get_handler(job.type)
        attempt = Attempt(job=job, thread=self, timeout_seconds=self._timeout(job, spec))
        context = JobContext(
            job_id=job.id,
            type=job.type,
            payload=job.payload if isinstance(job.payload, dict) else {"value": job.payload},
            attempt=job.attempts,
            worker_id=self.worker_id,
            lease_seconds=self.config.lease_seconds,
            queue=job.queue,
            timeout_seconds=attempt.timeout_seconds,
            state=attempt.state,
            retrying=self._retrying,
        )
        self.current = attempt
        self.runner.in_flight.add(attempt)
        attempt_started.send_robust(type(self), job=job, worker_id=self.worker_id)
        try:
            if spec is None:
                raise LookupError(f"No handler or task is registered for job type {job.type!r}")
            result = spec.fn(context)
        except BaseException as exc:
            # Recorded and announced while the exception is being handled, as Django's own
            # backends send task_finished: a receiver that logs (django.tasks does) gets
            # the handler's exception and traceback from sys.exc_info().
            return self._finish(attempt, *self._failed(attempt, exc))
        if attempt.state.timed_out or attempt.state.lost:
            return self._finish(attempt, *self._interrupted(attempt))
        try:
            row = self._complete(attempt, result)
        except UnstorableValue as exc:
            error = f"Handler returned a result that cannot be stored: {exc}"
            details = services.ErrorDetails(reason="unstorable_result")
            return self._finish(attempt, *self._fail(attempt, error, details))
        if row is None:
            return self._finish(attempt, *self._stale(attempt))
        return self._finish(attempt, "succeeded", row, None)

    def _finish(self, attempt: Attempt, outcome: str, row: JobRow | None, error: str | None) -> str:
        """The attempt is over and recorded: announce it (``attempt_finished``) and return
        its outcome's name."""
        job = attempt.job
        self.runner.in_flight.remove(attempt)
        self.current = None
        run_seconds = time.monotonic() - attempt.started
        if outcome != "timeout":  # a timeout was announced by the maintenance thread
            attempt_finished.send_robust(
                type(self),
                job=job,
                outcome=outcome,
                row=row,
                error=error,
                run_seconds=run_seconds,
                worker_id=self.worker_id,
            )
        logger.debug(
            "action=finished job_id=%s type=%s attempt=%d worker_id=%s outcome=%s duration_ms=%d",
            job.id,
            job.type,
            job.attempts,
            self.worker_id,
            outcome,
            run_seconds * 1000,
        )
        return outcome

    def _timeout(self, job: JobRow, spec: HandlerSpec | None) -> int | None:
        seconds = job.timeout_seconds
        if seconds is None and spec is not None:
            seconds = spec.timeout_seconds
        if seconds is None:
            seconds = self.config.timeout_seconds
        return seconds or None

    def _failed(
        self, attempt: Attempt, failure: BaseException
    ) -> tuple[str, JobRow | None, str | None]:
        """(outcome, the row as recorded, error) of an attempt whose handler raised."""
        if attempt.state.timed_out or attempt.state.lost:
            return self._interrupted(attempt)
        reason = "cancelled" if attempt.state.cancel_requested else ""
        return self._fail(attempt, error_message(failure), error_details(failure, reason=reason))

    def _complete(self, attempt: Attempt, result: Any) -> JobRow | None:
        queue = self._next_queue()
        if queue is None:
            row: JobRow | None = self._record(services.complete_job, attempt.owner, result=result)
            return row
        row, self._next = self._record(
            services.complete_and_claim_next,
            attempt.owner,
            result=result,
            queue=queue,
            lease_seconds=self.config.lease_seconds,
        )
        return row

    def _fail(
        self, attempt: Attempt, error: str, details: services.ErrorDetails
    ) -> tuple[str, JobRow | None, str | None]:
        row = self._record(services.fail_job, attempt.owner, error=error, details=details)
        if row is None:
            return self._stale(attempt)
        outcome = {JobStatus.QUEUED: "retry_scheduled"}.get(row.status, row.status)
        return outcome, row, error

    def _interrupted(self, attempt: Attempt) -> tuple[str, JobRow | None, str | None]:
        """The attempt was ended elsewhere (timed out) or lost: nothing more is written."""
        outcome = "timeout" if attempt.state.timed_out else "lease_lost"
        logger.warning(
            "action=%s job_id=%s attempt=%d worker_id=%s",
            "late_result_discarded" if outcome == "timeout" else "lease_lost",
            attempt.job.id,
            attempt.job.attempts,
            self.worker_id,
        )
        return outcome, None, None

    def _stale(self, attempt: Attempt) -> tuple[str, JobRow | None, str | None]:
        logger.warning(
            "action=stale_write_rejected job_id=%s attempt=%d worker_id=%s",
            attempt.job.id,
            attempt.job.attempts,
            self.worker_id,
        )
        return "stale", None, None

    def _record(self, write: Callable[..., Any], owner: Owner, **kwargs: Any) -> Any:
        return self._retrying(
            lambda: write(
                job_id=owner.job_id, worker_id=owner.worker_id, attempt=owner.attempt, **kwargs
            )
        )

    def _retrying[T](self, write: Callable[[], T]) -> T:
        """The handler's and the thread's writes survive a lost connection within a lease."""
        return retry_database(write, within=self.config.lease_seconds, what=self.worker_id)


# --- Maintenance ----------------------------------------------------------------------


class Maintenance(threading.Thread):
    """Heartbeat, timeouts and expired-lease cleanup for the whole process."""

    def __init__(self, runner: WorkerRunner) -> None:
        super().__init__(name="job-maintenance", daemon=True)
        self.runner = runner
        self.config = runner.config
        self.worker_id = make_worker_id(0)
        self.finished = threading.Event()  # the runner sets it once no attempt is left
        self.first_pass = threading.Event()  # set after the first loop, done or failed

    def run(self) -> None:
        logger.info("action=maintenance_started worker_id=%s", self.worker_id)
        now = time.monotonic()
        next_beat = now + self.config.heartbeat_interval_seconds
        next_cleanup = now
        failures = 0
        try:
            while not self.finished.is_set():
                now = time.monotonic()
                try:
                    if now >= next_beat:
                        self.heartbeat()
                        next_beat = now + self.config.heartbeat_interval_seconds
                    self.enforce_timeouts(now)
                    if now >= next_cleanup and not self.runner.stop_event.is_set():
                        self.cleanup()
                        next_cleanup = now + self.config.cleanup_interval_seconds
                    failures = 0
                except (DatabaseError, InterfaceError) as exc:
                    _database_error("maintenance", exc)
                    failures += 1
                    logger.warning(
                        "action=maintenance_database_error worker_id=%s error=%s",
                        self.worker_id,
                        error_message(exc),
                    )
                    _drop_connection()
                    self.first_pass.set()
                    self.finished.wait(min(0.5 * 2 ** (failures - 1), DB_RETRY_MAX_SECONDS))
                    continue
                except Exception:
                    logger.exception("action=maintenance_error worker_id=%s", self.worker_id)
                self.first_pass.set()
                # Cleared before the deadlines are read: an attempt added meanwhile wakes us.
                self.runner.in_flight.changed.clear()
                wake = min(next_beat, next_cleanup, *self._deadlines())
                self.runner.in_flight.changed.wait(max(wake - time.monotonic(), 0.01))
        finally:
            self.first_pass.set()
            _drop_connection()
            logger.info("action=maintenance_stopped worker_id=%s", self.worker_id)

    def _deadlines(self) -> list[float]:
        return [
            deadline
            for attempt in self.runner.in_flight.snapshot()
            if (deadline := attempt.deadline) is not None and not attempt.state.timed_out
        ]

    def heartbeat(self) -> None:
        attempts = [a for a in self.runner.in_flight.snapshot() if not a.state.timed_out]
        if not attempts:
            return
        # An attempt past its deadline is not renewed, so even if recording its timeout
        # fails, its lease runs out and cleanup ends it.
        now = time.monotonic()
        live = [a for a in attempts if a.deadline is None or a.deadline > now]
        beats = {
            beat.job_id: beat
            for beat in services.heartbeat(
                attempts=[a.owner for a in live], lease_seconds=self.config.lease_seconds
            )
        }
        for attempt in live:
            beat = beats.get(attempt.job.id)
            if beat is None:
                attempt.state.lost = True
            elif beat.cancel_requested and not attempt.state.cancel_requested:
                attempt.state.cancel_requested = True
                logger.info(
                    "action=cancel_requested job_id=%s attempt=%d worker_id=%s",
                    attempt.job.id,
                    attempt.job.attempts,
                    attempt.thread.worker_id,
                )

    def enforce_timeouts(self, now: float) -> None:
        for attempt in self.runner.in_flight.snapshot():
            deadline = attempt.deadline
            if deadline is None or deadline > now or attempt.state.timed_out:
                continue
            owner = attempt.owner
            row = services.time_out_job(
                job_id=owner.job_id,
                worker_id=owner.worker_id,
                attempt=owner.attempt,
                timeout_seconds=attempt.timeout_seconds or 0,
            )
            if row is None:  # it finished or was lost meanwhile: nothing to end
                continue
            attempt.state.timed_out = True
            logger.warning(
                "action=timed_out job_id=%s attempt=%d worker_id=%s timeout_seconds=%s outcome=%s",
                attempt.job.id,
                attempt.job.attempts,
                owner.worker_id,
                attempt.timeout_seconds,
                row.status,
            )
            attempt_finished.send_robust(
                type(self),
                job=attempt.job,
                outcome="timeout",
                row=row,
                error=row.last_error,
                run_seconds=now - attempt.started,
                worker_id=owner.worker_id,
            )
            self.runner.abandon(attempt.thread)

    def cleanup(self) -> None:
        while True:
            result = services.cleanup_expired_jobs(
                batch_size=self.config.cleanup_batch_size, worker_id=self.worker_id
            )
            if result.total:
                logger.info(
                    "action=cleanup worker_id=%s requeued=%d failed=%d",
                    self.worker_id,
                    result.requeued,
                    result.failed,
                )
            if result.total < self.config.cleanup_batch_size:
                return


# --- The process ----------------------------------------------------------------------


class WorkerRunner:
    """Starts the threads, handles signals, replaces threads that die or get stuck, and
    waits for a graceful stop."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.stop_event = threading.Event()
        self.threads: list[WorkerThread] = []
        self.in_flight = InFlight()
        self.queues = QueueSet(config.queues, refresh_seconds=config.poll_interval_seconds)
        self.maintenance = Maintenance(self)
        self.waker = Waker()
        self.listener: Listener | None = None
        if get_driver().supports_listen and app_settings.JOB_WORKER_LISTEN:
            self.listener = Listener(self)
        self._lock = threading.Lock()
        self._signals_received = 0
        self._deaths: list[float] = []
        self._replaced: set[str] = set()
        self.gave_up = False

    # Threads -----------------------------------------------------------------------------

    def _start_thread(self) -> WorkerThread:
        with self._lock:
            thread = WorkerThread(len(self.threads) + 1, self)
            self.threads.append(thread)
        thread.start()
        return thread

    def serving(self) -> list[WorkerThread]:
        """The threads that claim jobs: alive and not abandoned."""
        return [t for t in self.threads if t.is_alive() and not t.abandoned]

    def abandon(self, thread: WorkerThread) -> None:
        """``thread`` is stuck in a timed-out handler: let a new thread take its place.

        At most ``threads`` abandoned threads at a time, so a handler that hangs on every
        job cannot grow the process without bound; past that, capacity shrinks (logged).
        """
        thread.abandoned = True
        stuck = sum(1 for t in self.threads if t.abandoned and t.is_alive())
        if self.stop_event.is_set():
            return
        if stuck > self.config.threads:
            logger.error(
                "action=thread_not_replaced worker_id=%s stuck_threads=%d detail=too many "
                "stuck handlers; capacity is reduced until they return",
                thread.worker_id,
                stuck,
            )
            return
        replacement = self._start_thread()
        logger.warning(
            "action=thread_replaced worker_id=%s replacement=%s stuck_threads=%d",
            thread.worker_id,
            replacement.worker_id,
            stuck,
        )

    def _replace_dead(self) -> bool:
        """Start a replacement for each thread that died; ``True`` if any was started."""
        replaced = False
        for thread in list(self.threads):
            if thread.died is None or thread.worker_id in self._replaced:
                continue
            self._replaced.add(thread.worker_id)
            now = time.monotonic()
            self._deaths = [t for t in self._deaths if now - t < 60] + [now]
            if len(self._deaths) > MAX_THREAD_DEATHS_PER_MINUTE:
                logger.error("action=worker_gave_up detail=worker threads keep dying")
                self.gave_up = True
                self.stop()
                return False
            if not self.stop_event.is_set() and not self.config.burst:
                replaced = True
                replacement = self._start_thread()
                logger.error(
                    "action=thread_died worker_id=%s replacement=%s",
                    thread.worker_id,
                    replacement.worker_id,
                )
        return replaced

    # Lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        # The maintenance thread first sweeps expired leases once, before any claim: in
        # burst mode the threads may otherwise drain and stop before the first sweep.
        self.maintenance.start()
        self.maintenance.first_pass.wait(timeout=self.config.lease_seconds)
        for _ in range(self.config.threads):
            self._start_thread()
        if self.listener is not None and not self.config.burst:
            self.listener.start()

    def stop(self) -> None:
        self.stop_event.set()
        self.waker.wake_all()

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._signals_received += 1
        name = signal.Signals(signum).name
        if self._signals_received == 1:
            logger.info(
                "action=shutdown_requested signal=%s detail=no new claims; "
                "waiting for in-flight jobs in_flight=%d",
                name,
                len(self.in_flight.snapshot()),
            )
            self.stop()
        else:
            logger.warning("action=forced_exit signal=%s detail=leases will expire", name)
            os._exit(1)

    def wait(self) -> None:
        """Block until every serving thread has stopped, replacing any that died."""
        while True:
            replaced = self._replace_dead()
            serving = self.serving()
            if serving:
                serving[0].join(timeout=0.5)
            elif not replaced:
                break
        # Abandoned threads may never return; they are daemons and die with the process.
        self.maintenance.finished.set()
        self.in_flight.changed.set()
        self.maintenance.join(timeout=self.config.lease_seconds)
        if self.listener is not None and self.listener.is_alive():
            self.stop_event.set()  # in burst mode nothing else stops it
            self.listener.join(timeout=5)

    def run(self) -> int:
        """Run until stopped (or drained in burst mode). Returns the exit code."""
        logger.info(
            "action=worker_started threads=%d queues=%s lease_seconds=%d "
            "heartbeat_seconds=%.1f poll_interval_ms=%d cleanup_interval_seconds=%s "
            "timeout_seconds=%s database=%s burst=%s",
            self.config.threads,
            ",".join(self.config.queues),
            self.config.lease_seconds,
            self.config.heartbeat_interval_seconds,
            self.config.poll_interval_seconds * 1000,
            self.config.cleanup_interval_seconds,
            self.config.timeout_seconds or "none",
            connection.vendor,
            self.config.burst,
        )
        self.start()
        self.wait()
        processed = sum(t.jobs_processed for t in self.threads)
        died = sum(1 for t in self.threads if t.died is not None)
        code = 1 if self.gave_up or (died and self.config.burst) else 0
        logger.info(
            "action=worker_stopped jobs_processed=%d threads_died=%d exit_code=%d",
            processed,
            died,
            code,
        )
        return code
