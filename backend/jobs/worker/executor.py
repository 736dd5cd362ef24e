"""The executor: runs exactly one attempt (its handler, in its consumer span) and hands how
it ended, an ``Outcome``, to the completer, which writes and announces it. A failure is
handed over while its exception is being handled, so the receivers of ``attempt_finished``
(Django's ``task_finished`` log among them) see the handler's exception and traceback."""

from __future__ import annotations

import logging
from collections.abc import Callable

from .. import services, tracing
from ..drivers import JobRow
from ..registry import HandlerSpec, RetryPolicy, get_handler
from ..signals import attempt_started
from ..storable import UnstorableValue, to_storable_json
from .attempts import Attempt, InFlight, Outcome, Recorder
from .config import WorkerConfig
from .context import JobContext, JobSnoozed
from .recovery import error_details, error_message, retry_database
from .retries import decide

logger = logging.getLogger("jobs.worker")


def attempt_of(job: JobRow, worker_id: str, config: WorkerConfig) -> Attempt:
    """A claimed job as an attempt of ``worker_id``: its handler's timeout and heartbeat."""
    spec = get_handler(job.type)
    return Attempt(
        job=job,
        worker_id=worker_id,
        timeout_seconds=_timeout(job, spec, config),
        heartbeat=spec is None or spec.heartbeat,
    )


def _timeout(job: JobRow, spec: HandlerSpec | None, config: WorkerConfig) -> int | None:
    seconds = job.timeout_seconds
    if seconds is None and spec is not None:
        seconds = spec.timeout_seconds
    if seconds is None:
        seconds = config.timeout_seconds
    return seconds or None


class Executor:
    """Runs one attempt of a process's worker thread: the handler the registry names for
    its job type, never anything a client named, with the context the handler sees."""

    def __init__(self, config: WorkerConfig, in_flight: InFlight, recorder: Recorder) -> None:
        self.config = config
        self.in_flight = in_flight
        self.recorder = recorder

    def run(self, attempt: Attempt, *, sender: type) -> Outcome:
        """Run ``attempt`` (in flight since its claim) and hand its outcome to the
        completer; the outcome. Whatever the handler does (return, raise,
        ``sys.exit()``), an outcome is recorded."""
        outcome = self._run(attempt, sender=sender)
        if outcome.kind != "failed":  # failures were recorded as their exception was handled
            self.recorder.record(outcome)
        return outcome

    def _run(self, attempt: Attempt, *, sender: type) -> Outcome:
        job = attempt.job
        spec = get_handler(job.type)
        context = JobContext(
            job_id=job.id,
            type=job.type,
            payload=job.payload if isinstance(job.payload, dict) else {"value": job.payload},
            attempt=job.attempts,
            worker_id=attempt.owner.worker_id,
            lease_seconds=self.config.lease_seconds,
            queue=job.queue,
            timeout_seconds=attempt.timeout_seconds,
            state=attempt.state,
            retrying=self.retrying,
        )
        if attempt.state.lost:
            # Held (throughput mode) until its lease was lost: another owns it now.
            return Outcome.interrupted(attempt)
        self.in_flight.start(attempt)
        attempt_started.send_robust(sender, job=job, worker_id=attempt.owner.worker_id)
        if attempt.state.cancel_requested:
            # Cancelled between its claim and now (seen by a heartbeat): it never starts.
            return self._failed(
                attempt,
                "Cancelled before its handler started",
                services.ErrorDetails(reason="cancelled"),
            )
        try:
            # The attempt's consumer span (jobs.tracing), current while the handler runs;
            # it ends with the outcome the completer announces.
            with tracing.attempt(job, attempt.owner.worker_id):
                if spec is None:
                    raise LookupError(f"No handler or task is registered for job type {job.type!r}")
                result = spec.fn(context)
        except BaseException as exc:
            # What the heartbeat and the timeouts learned while the handler ran.
            state = attempt.state
            if state.timed_out or state.lost:
                return Outcome.interrupted(attempt)
            if isinstance(exc, JobSnoozed):
                return Outcome.snoozed(attempt, exc.seconds)
            reason = "cancelled" if state.cancel_requested else ""
            # The type's retry policy (a missing handler has none: the default backoff).
            retry = decide(spec.retry if spec else RetryPolicy(), exc, attempt.owner.attempt)
            outcome = Outcome.failed(
                attempt,
                error_message(exc),
                error_details(exc, reason=reason),
                delay_seconds=retry.delay_seconds,
                give_up=retry.give_up,
            )
            self.recorder.record(outcome)  # inside the except: receivers see the exception
            return outcome
        if attempt.state.timed_out or attempt.state.lost:
            return Outcome.interrupted(attempt)
        try:
            result_json = None if result is None else to_storable_json(result)
        except UnstorableValue as exc:
            return self._failed(
                attempt,
                f"Handler returned a result that cannot be stored: {exc}",
                services.ErrorDetails(reason="unstorable_result"),
            )
        return Outcome.succeeded(attempt, result_json)

    def _failed(self, attempt: Attempt, error: str, details: services.ErrorDetails) -> Outcome:
        """A failure, recorded at once (inside the ``except`` that caught it, if any)."""
        outcome = Outcome.failed(attempt, error, details)
        self.recorder.record(outcome)
        return outcome

    def retrying[T](self, write: Callable[[], T]) -> T:
        """The handler's own writes (renew, progress) survive a lost connection within a
        lease."""
        return retry_database(write, within=self.config.lease_seconds, what="handler")
