"""The completer: every outcome of every attempt goes here, is written, then announced.

One interface (``record``, ``take``, ``continuing``, ``flush_now``), two implementations:

* ``InlineCompleter`` (``JOB_WORKER_COMPLETE_BATCH_SIZE=1``): a thread's success waits for
  that thread's next fetch, which writes it in its claim's statement (one round trip and
  one commit for both), or is written at once when the thread goes idle or stops;
* ``BatchCompleter``: successes are written together, by a thread of its own, when a batch
  is full (``JOB_WORKER_COMPLETE_BATCH_SIZE``), when its oldest has waited
  ``JOB_WORKER_COMPLETE_FLUSH_MS``, or at once when a thread of the process found nothing
  to claim; any fetch meanwhile carries the waiting ones in its statement.

Failures, timeouts and interruptions are written (or not) at once by both. Until its row
is written an attempt stays in flight: the heartbeat keeps its lease, and its outcome is
announced (``attempt_finished``) only once committed. Announcing is the completer's: the
attempt leaves the in-flight set and the signal goes out, from the thread that wrote.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

from .. import services
from ..drivers import Completion, JobRow
from ..models import JobStatus
from ..signals import attempt_finished
from .attempts import Attempt, InFlight, Outcome
from .fetcher import Handover
from .recovery import drop_connection, error_message, retry_database

logger = logging.getLogger("jobs.worker")

# Handler return -> committed, in seconds, of the newest completions (for the bench's p50/p99).
LATENCY_SAMPLES = 10_000

_Waiting = tuple[Attempt, str | None, float]  # a success: its attempt, result, returned at


class Completer:
    """What both implementations share: writing failures, timeouts and interruptions, and
    announcing every outcome once it is recorded."""

    def __init__(
        self,
        *,
        in_flight: InFlight,
        lease_seconds: int,
        lean: bool = False,
        synchronous_commit: bool = True,
    ) -> None:
        self.in_flight = in_flight
        self.lease_seconds = lease_seconds
        self.lean = lean
        self.synchronous_commit = synchronous_commit
        self._lock = threading.Lock()
        self._pending: list[_Waiting] = []
        self.latencies: deque[float] = deque(maxlen=LATENCY_SAMPLES)
        self.batches = 0
        # Told when a workflow member's outcome is recorded: the settler's next pass comes
        # soon (the runner sets it; the maintenance loop is built after the completer).
        self.workflow_member_finished: Callable[[], None] | None = None

    # The interface ----------------------------------------------------------------------

    def record(self, outcome: Outcome) -> None:
        """Take ``outcome``: write it (a success may wait to be written with others, or
        with its thread's next claim), then announce it."""
        attempt = outcome.attempt
        if outcome.kind == "succeeded":
            with self._lock:
                self._pending.append((attempt, outcome.result_json, time.monotonic()))
                full = len(self._pending) >= self.batch_size
            if full:
                self._full()
        elif outcome.kind == "failed":
            self._write_failure(
                attempt,
                outcome.error,
                outcome.details,
                delay_seconds=outcome.delay_seconds,
                give_up=outcome.give_up,
            )
        elif outcome.kind == "snoozed":
            self._write_snooze(attempt, outcome.delay_seconds or 0.0)
        elif outcome.kind == "timed_out":
            self._write_timeout(attempt)
        else:
            self._interrupted(attempt)

    def take(self, worker_ids: Sequence[str]) -> Handover | None:
        """Successes waiting (up to a batch) for a fetch of ``worker_ids`` to write in its
        own statement; then ``committed(rows)``, or ``failed()`` to give them back."""
        with self._lock:
            batch = self._taken(worker_ids)
        if not batch:
            return None
        return Handover(
            completions=[Completion(a.owner, result) for a, result, _ in batch],
            committed=lambda rows: self._committed(batch, rows),
            failed=lambda: self._give_back(batch),
        )

    def flush_now(self) -> None:
        """A thread is idle or stops: nothing will carry what waits; write it now."""
        raise NotImplementedError

    def continuing(self, worker_id: str) -> None:
        """The thread of ``worker_id`` starts a job it holds, without a fetch: its
        successes must not wait for the fetch after that job."""

    batch_size = 1

    def start(self) -> None:
        """Start what the implementation runs beside the threads (nothing inline)."""

    def stop(self) -> None:
        """Write everything still waiting; the threads record no more."""
        self.flush_now()

    def join(self, timeout: float | None = None) -> None:
        pass

    # Shared parts -----------------------------------------------------------------------

    def _taken(self, worker_ids: Sequence[str]) -> list[_Waiting]:
        raise NotImplementedError

    def _full(self) -> None:
        pass

    def _give_back(self, batch: list[_Waiting]) -> None:
        with self._lock:
            self._pending[:0] = batch

    def _write(self, batch: list[_Waiting]) -> None:
        """Write ``batch`` in a statement of its own (``complete_jobs``)."""
        completions = [Completion(attempt.owner, result) for attempt, result, _ in batch]
        try:
            rows = retry_database(
                lambda: services.complete_jobs(
                    completions=completions,
                    synchronous_commit=self.synchronous_commit,
                    lean=self.lean,
                ),
                within=self.lease_seconds,
                what="completer",
            )
        except Exception as exc:
            # The leases lapse and the jobs run again (at least once); nothing is lost.
            logger.error(
                "action=complete_batch_failed jobs=%d error=%s", len(batch), error_message(exc)
            )
            for attempt, _, _ in batch:
                self.announce(attempt, "lease_lost", None, None)
            return
        self._committed(batch, rows)

    def _committed(self, batch: list[_Waiting], rows: list[JobRow]) -> None:
        """``batch`` is committed: each attempt's outcome is announced."""
        committed = time.monotonic()
        self.batches += 1
        by_id = {row.id: row for row in rows}
        for attempt, _, returned in batch:
            self.latencies.append(committed - returned)
            row = by_id.get(attempt.job.id)
            if row is None:
                self._stale(attempt)
            else:
                self.announce(attempt, "succeeded", row, None)

    def _write_failure(
        self,
        attempt: Attempt,
        error: str,
        details: services.ErrorDetails,
        *,
        delay_seconds: float | None = None,
        give_up: bool = False,
    ) -> None:
        """Write the failure as the retry policy decided (``delay_seconds``, ``give_up``),
        retrying for a lease; past that the attempt is given up as a success is
        (``_write``): it leaves the in-flight set, so the heartbeat no longer renews a
        lease that only the rescuer can now end."""
        owner = attempt.owner
        failure = services.AttemptFailure(
            owner, error, details, delay_seconds=delay_seconds, give_up=give_up
        )
        try:
            rows = retry_database(
                lambda: services.fail_jobs(failures=[failure]),
                within=self.lease_seconds,
                what=owner.worker_id,
            )
        except Exception as exc:
            # Its lease lapses and the rescuer retries (or fails) the job: nothing is lost.
            logger.error(
                "action=fail_write_failed job_id=%s attempt=%d worker_id=%s error=%s",
                attempt.job.id,
                attempt.job.attempts,
                owner.worker_id,
                error_message(exc),
            )
            self.announce(attempt, "lease_lost", None, None)
            return
        if not rows:
            self._stale(attempt)
            return
        (row,) = rows
        outcome = "retry_scheduled" if row.status == JobStatus.QUEUED else str(row.status)
        self.announce(attempt, outcome, row, error)

    def _write_snooze(self, attempt: Attempt, seconds: float) -> None:
        """The handler snoozed: its job goes back to queued for ``seconds``, the attempt
        not spent. A write that fails past a lease leaves the job to the rescuer, as a
        failure's does."""
        owner = attempt.owner
        try:
            row = retry_database(
                lambda: services.snooze_job(
                    job_id=owner.job_id,
                    worker_id=owner.worker_id,
                    attempt=owner.attempt,
                    seconds=seconds,
                ),
                within=self.lease_seconds,
                what=owner.worker_id,
            )
        except Exception as exc:
            logger.error(
                "action=snooze_write_failed job_id=%s attempt=%d worker_id=%s error=%s",
                attempt.job.id,
                attempt.job.attempts,
                owner.worker_id,
                error_message(exc),
            )
            self.announce(attempt, "lease_lost", None, None)
            return
        if row is None:
            self._stale(attempt)
            return
        outcome = "snoozed" if row.status == JobStatus.QUEUED else str(row.status)
        self.announce(attempt, outcome, row, None)

    def _write_timeout(self, attempt: Attempt) -> None:
        """Its deadline passed: failed as timed out (retried while attempts remain). It
        stays in flight until its handler returns (its thread is abandoned meanwhile)."""
        owner = attempt.owner
        row = services.time_out_job(
            job_id=owner.job_id,
            worker_id=owner.worker_id,
            attempt=owner.attempt,
            timeout_seconds=attempt.timeout_seconds or 0,
        )
        if row is None:
            return  # it finished or was lost meanwhile: its own outcome says so
        attempt.state.timed_out = True
        logger.warning(
            "action=timed_out job_id=%s attempt=%d worker_id=%s timeout_seconds=%s outcome=%s",
            attempt.job.id,
            attempt.job.attempts,
            owner.worker_id,
            attempt.timeout_seconds,
            row.status,
        )
        self._signal(attempt, "timeout", row, row.last_error)

    def _interrupted(self, attempt: Attempt) -> None:
        """It ended after it was timed out or lost: nothing more is written."""
        timed_out = attempt.state.timed_out
        logger.warning(
            "action=%s job_id=%s attempt=%d worker_id=%s",
            "late_result_discarded" if timed_out else "lease_lost",
            attempt.job.id,
            attempt.job.attempts,
            attempt.owner.worker_id,
        )
        # A timeout was announced when it was recorded.
        self.announce(attempt, "timeout" if timed_out else "lease_lost", None, None)

    def _stale(self, attempt: Attempt) -> None:
        logger.warning(
            "action=stale_write_rejected job_id=%s attempt=%d worker_id=%s",
            attempt.job.id,
            attempt.job.attempts,
            attempt.owner.worker_id,
        )
        self.announce(attempt, "stale", None, None)

    def announce(
        self, attempt: Attempt, outcome: str, row: JobRow | None, error: str | None
    ) -> None:
        """The attempt's outcome is recorded: it leaves the in-flight set and
        ``attempt_finished`` is sent (a timeout's was sent when it was recorded)."""
        self.in_flight.remove(attempt)
        if outcome != "timeout":
            self._signal(attempt, outcome, row, error)
        logger.debug(
            "action=finished job_id=%s type=%s attempt=%d worker_id=%s outcome=%s duration_ms=%d",
            attempt.job.id,
            attempt.job.type,
            attempt.job.attempts,
            attempt.owner.worker_id,
            outcome,
            attempt.run_seconds * 1000,
        )

    def _signal(
        self, attempt: Attempt, outcome: str, row: JobRow | None, error: str | None
    ) -> None:
        if attempt.job.workflow_id is not None and self.workflow_member_finished is not None:
            self.workflow_member_finished()
        attempt_finished.send_robust(
            type(self),
            job=attempt.job,
            outcome=outcome,
            row=row,
            error=error,
            run_seconds=attempt.run_seconds,
            worker_id=attempt.owner.worker_id,
        )

    def report(self) -> None:
        ordered = sorted(self.latencies)
        if ordered:
            logger.info(
                "action=completer_stopped batches=%d completed=%d latency_p50_ms=%.1f "
                "latency_p99_ms=%.1f",
                self.batches,
                len(ordered),
                ordered[len(ordered) // 2] * 1000,
                ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
            )


class InlineCompleter(Completer):
    """A success waits for its own thread's next fetch (``take`` of that thread's worker
    id), which writes it with its claim: one round trip and one commit for both, as a
    thread that completes and claims in one statement. ``flush_now`` (the thread found
    nothing to claim, or stops) writes what waits."""

    def _taken(self, worker_ids: Sequence[str]) -> list[_Waiting]:
        mine = set(worker_ids)
        batch: list[_Waiting] = []
        kept: list[_Waiting] = []
        for waiting in self._pending:
            (batch if waiting[0].owner.worker_id in mine else kept).append(waiting)
        self._pending = kept
        return batch

    def flush_now(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
        if batch:
            self._write(batch)

    def continuing(self, worker_id: str) -> None:
        with self._lock:
            batch = self._taken([worker_id])
        if batch:
            self._write(batch)


class BatchCompleter(Completer):
    """Successes written together by a thread of its own (``job-completer``), or carried by
    any fetch meanwhile."""

    def __init__(self, *, batch_size: int, flush_seconds: float, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.batch_size = batch_size
        self.flush_seconds = flush_seconds
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="job-completer", daemon=True)

    def _taken(self, worker_ids: Sequence[str]) -> list[_Waiting]:
        batch = self._pending[: self.batch_size]
        del self._pending[: self.batch_size]
        return batch

    def _full(self) -> None:
        self._wake.set()

    def _give_back(self, batch: list[_Waiting]) -> None:
        super()._give_back(batch)
        self._wake.set()

    def flush_now(self) -> None:
        with self._lock:
            waiting = bool(self._pending)
        if waiting:
            self._wake.set()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        try:
            while True:
                with self._lock:
                    oldest = self._pending[0][2] if self._pending else None
                if oldest is None:
                    if self._stopping.is_set():
                        return
                    self._wake.wait(1.0)
                else:
                    delay = oldest + self.flush_seconds - time.monotonic()
                    if delay > 0 and not self._stopping.is_set():
                        self._wake.wait(delay)
                self._wake.clear()
                with self._lock:
                    batch, self._pending = self._pending, []
                for start in range(0, len(batch), self.batch_size):
                    self._write(batch[start : start + self.batch_size])
        finally:
            drop_connection()
            self.report()
