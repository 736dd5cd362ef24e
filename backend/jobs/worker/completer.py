"""Batched completion (issue 25): the successes of a process's threads, written together.

A thread whose handler returned hands the attempt over (``submit``) and claims its next job
at once; the completer writes what it was given in one statement per batch
(``services.complete_jobs``, each row under its own ownership guard). A batch is written
when it is full (``JOB_WORKER_COMPLETE_BATCH_SIZE``), when its oldest success has waited
``JOB_WORKER_COMPLETE_FLUSH_MS``, or at once when a thread of the process found nothing to
claim (``flush_now``). Until its row is written an attempt stays in flight: the heartbeat
keeps its lease and the outcome is announced (``attempt_finished``) only once committed.
A batch size of 1 starts no completer: each thread completes and claims in one statement,
as before.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from .. import services
from ..drivers import Completion, JobRow
from .fetcher import Handover
from .recovery import drop_connection, error_message, retry_database

if TYPE_CHECKING:
    from .attempts import Attempt

logger = logging.getLogger("jobs.worker")

# Handler return -> committed, in seconds, of the newest completions (for the bench's p50/p99).
LATENCY_SAMPLES = 10_000


class Completer(threading.Thread):
    def __init__(
        self,
        *,
        batch_size: int,
        flush_seconds: float,
        lease_seconds: int,
        synchronous_commit: bool = True,
    ) -> None:
        super().__init__(name="job-completer", daemon=True)
        self.synchronous_commit = synchronous_commit
        self.batch_size = batch_size
        self.flush_seconds = flush_seconds
        self.lease_seconds = lease_seconds
        self._lock = threading.Lock()
        self._pending: list[tuple[Attempt, str | None, float]] = []
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self.latencies: deque[float] = deque(maxlen=LATENCY_SAMPLES)
        self.batches = 0

    def submit(self, attempt: Attempt, result_json: str | None) -> None:
        """Queue ``attempt``'s success (its result already checked as storable JSON)."""
        with self._lock:
            self._pending.append((attempt, result_json, time.monotonic()))
            full = len(self._pending) >= self.batch_size
        if full:
            self._wake.set()

    def flush_now(self) -> None:
        """A thread is idle: write what waits without waiting for the interval."""
        with self._lock:
            waiting = bool(self._pending)
        if waiting:
            self._wake.set()

    def stop(self) -> None:
        """Write everything still waiting, then end (the threads submit no more)."""
        self._stopping.set()
        self._wake.set()

    def run(self) -> None:
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

    def take(self) -> Handover | None:
        """Hand the successes waiting (up to a batch) to a fetch that writes them in its own
        transaction (``JOB_WORKER_CLAIM_BATCH_SIZE`` > 1): one commit for both. ``None``
        when none waits."""
        with self._lock:
            batch = self._pending[: self.batch_size]
            del self._pending[: self.batch_size]
        if not batch:
            return None
        return Handover(
            completions=[
                Completion(attempt.owner, result_json) for attempt, result_json, _ in batch
            ],
            committed=lambda rows: self._announce(batch, rows),
            failed=lambda: self._give_back(batch),
        )

    def _give_back(self, batch: list[tuple[Attempt, str | None, float]]) -> None:
        with self._lock:
            self._pending[:0] = batch
        self._wake.set()

    def _write(self, batch: list[tuple[Attempt, str | None, float]]) -> None:
        completions = [Completion(attempt.owner, result_json) for attempt, result_json, _ in batch]
        try:
            rows = retry_database(
                lambda: services.complete_jobs(
                    completions=completions, synchronous_commit=self.synchronous_commit
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
                attempt.thread.announce(attempt, "lease_lost", None, None)
            return
        self._announce(batch, rows)

    def _announce(self, batch: list[tuple[Attempt, str | None, float]], rows: list[JobRow]) -> None:
        """The batch is committed: each attempt's outcome is announced."""
        committed = time.monotonic()
        self.batches += 1
        by_id = {row.id: row for row in rows}
        for attempt, _, returned in batch:
            self.latencies.append(committed - returned)
            row = by_id.get(attempt.job.id)
            if row is None:
                attempt.thread.announce(attempt, *attempt.thread.stale(attempt))
            else:
                attempt.thread.announce(attempt, "succeeded", row, None)
