"""The worker threads: each claims a job, runs its handler and records the outcome."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError, InterfaceError

from .. import services, tracing
from ..drivers import JobRow, Owner
from ..models import JobStatus
from ..registry import HandlerSpec, get_handler
from ..signals import attempt_finished, attempt_started
from ..storable import UnstorableValue, to_storable_json
from .attempts import Attempt
from .config import make_worker_id
from .context import JobContext
from .recovery import (
    Incident,
    announce_database_error,
    drop_connection,
    error_details,
    error_message,
    retry_database,
)

if TYPE_CHECKING:
    from .runner import WorkerRunner

logger = logging.getLogger("jobs.worker")


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
        self.runner.in_flight.remove(attempt)
        try:
            self._fail(attempt, f"Worker thread died: {error_message(exc)}", error_details(exc))
        except Exception:
            logger.exception("action=fail_on_death_failed job_id=%s", attempt.job.id)

    def _loop(self) -> None:
        incident = Incident("database_error", worker_id=self.worker_id)
        stop = self.runner.stop_event
        while not stop.is_set() and not self.abandoned:
            try:
                claimed = self.run_once()
                incident.ended()
            except (DatabaseError, InterfaceError) as exc:
                announce_database_error("thread", exc)
                delay = incident.failed(exc)
                drop_connection()
                stop.wait(delay)
                continue
            except Exception:
                logger.exception("action=loop_error worker_id=%s", self.worker_id)
                stop.wait(self.config.poll_interval_seconds)
                continue
            if not claimed:
                if self.runner.completer is not None:
                    self.runner.completer.flush_now()  # idle: nothing to batch with
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
        """The next job of this thread's queues, taking the queues in turn (with batched
        fetch, claimed together with the process's other idle threads)."""
        fetcher = self.runner.fetcher
        if fetcher is not None:
            job = fetcher.next_job(self.worker_id)
            if job is not None and (self.runner.stop_event.is_set() or self.abandoned):
                fetcher.release([job])  # the stop came first: it never starts
                return None
            return job
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
        attempt = Attempt(
            job=job,
            thread=self,
            timeout_seconds=self._timeout(job, spec),
            heartbeat=spec is None or spec.heartbeat,
        )
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
        if attempt.state.cancel_requested:
            # Cancelled between its claim and now (seen by a heartbeat): it never starts.
            error = "Cancelled before its handler started"
            details = services.ErrorDetails(reason="cancelled")
            return self._finish(attempt, *self._fail(attempt, error, details))
        try:
            # The attempt's consumer span (jobs.tracing), current while the handler runs;
            # it ends with the outcome _finish announces.
            with tracing.attempt(job, self.worker_id):
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
        completer = self.runner.completer
        if completer is not None:
            # Batched completion: checked here, written by the completer with others.
            try:
                result_json = None if result is None else to_storable_json(result)
            except UnstorableValue as exc:
                error = f"Handler returned a result that cannot be stored: {exc}"
                details = services.ErrorDetails(reason="unstorable_result")
                return self._finish(attempt, *self._fail(attempt, error, details))
            self.current = None
            attempt.timeout_seconds = None  # its handler is done: no deadline while it waits
            completer.submit(attempt, result_json)
            return "submitted"
        try:
            row = self._complete(attempt, result)
        except UnstorableValue as exc:
            error = f"Handler returned a result that cannot be stored: {exc}"
            details = services.ErrorDetails(reason="unstorable_result")
            return self._finish(attempt, *self._fail(attempt, error, details))
        if row is None:
            return self._finish(attempt, *self.stale(attempt))
        return self._finish(attempt, "succeeded", row, None)

    def _finish(self, attempt: Attempt, outcome: str, row: JobRow | None, error: str | None) -> str:
        """The attempt is over and recorded: announce it (``attempt_finished``) and return
        its outcome's name."""
        self.current = None
        return self.announce(attempt, outcome, row, error)

    def announce(
        self, attempt: Attempt, outcome: str, row: JobRow | None, error: str | None
    ) -> str:
        """The attempt's outcome is recorded: it leaves the in-flight set and
        ``attempt_finished`` is sent (by this thread, or by the completer for a batched
        success)."""
        job = attempt.job
        self.runner.in_flight.remove(attempt)
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
            return self.stale(attempt)
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

    def stale(self, attempt: Attempt) -> tuple[str, JobRow | None, str | None]:
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
