"""Waiting jobs settled: queued once their parents succeeded, cancelled (or run, by their
policy) once one failed for good or was cancelled (``services.settle_waiting_jobs``).
Every second, from the start: a chain's next step waits up to that long after the step before
it. With nothing waiting it is one probe of an empty partial index; ``SKIP LOCKED`` splits the
work between workers."""

from __future__ import annotations

import logging
from datetime import datetime
from uuid import UUID

from ... import services
from .loop import Periodic

logger = logging.getLogger("jobs.worker")

SETTLE_INTERVAL_SECONDS = 1.0


# Windows of waiting jobs one pass looks at, at most: a pass reads at most this many times
# the batch size of job_waiting_idx, however many jobs wait on unfinished parents.
WINDOWS_PER_PASS = 10


class DependencySettler(Periodic):
    """Settles waiting jobs a window at a time, from where its last pass stopped: every
    waiting job is looked at within ``ceil(waiting / (WINDOWS_PER_PASS x batch))`` passes
    (one pass, a second, with up to 1,000 waiting at the default batch of 100)."""

    name = "dependencies"

    def __init__(
        self, *, batch_size: int, interval_seconds: float = SETTLE_INTERVAL_SECONDS
    ) -> None:
        super().__init__(interval_seconds)
        self.batch_size = batch_size
        self.resume_after: tuple[datetime, UUID] | None = None

    def run_once(self) -> tuple[int, int]:
        """Return how many waiting jobs were queued and cancelled."""
        queued = cancelled = 0
        for _ in range(WINDOWS_PER_PASS):
            settled = services.settle_waiting_window(after=self.resume_after, limit=self.batch_size)
            if settled.queued or settled.cancelled:
                logger.info(
                    "action=settle_dependents queued=%d cancelled=%d",
                    settled.queued,
                    settled.cancelled,
                )
            queued += settled.queued
            cancelled += settled.cancelled
            self.resume_after = settled.resume_after
            if self.resume_after is None:  # the last waiting job: the next pass starts over
                break
        return queued, cancelled
