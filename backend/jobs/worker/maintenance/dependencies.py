"""Waiting jobs settled: queued once their parents succeeded, cancelled (or run, by their
policy) once one failed for good or was cancelled (``services.settle_waiting_jobs``).
Every second, from the start: a chain's next step waits up to that long after the step before
it. With nothing waiting it is one probe of an empty partial index; ``SKIP LOCKED`` splits the
work between workers."""

from __future__ import annotations

import logging

from ... import services
from .loop import Periodic

logger = logging.getLogger("jobs.worker")

SETTLE_INTERVAL_SECONDS = 1.0


class DependencySettler(Periodic):
    """Settles waiting jobs a batch at a time until a batch comes back short."""

    name = "dependencies"

    def __init__(
        self, *, batch_size: int, interval_seconds: float = SETTLE_INTERVAL_SECONDS
    ) -> None:
        super().__init__(interval_seconds)
        self.batch_size = batch_size

    def run_once(self) -> tuple[int, int]:
        """Return how many waiting jobs were queued and cancelled."""
        queued = cancelled = 0
        while True:
            done = services.settle_waiting_jobs(limit=self.batch_size)
            if any(done):
                logger.info("action=settle_dependents queued=%d cancelled=%d", *done)
            queued += done[0]
            cancelled += done[1]
            if sum(done) < self.batch_size:
                return queued, cancelled
