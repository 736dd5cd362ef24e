"""Lease rescue: the running jobs of a process that died are taken back.

A process that dies stops beating, so its attempts' leases run out. Every maintenance
thread, whatever its own workers are doing, releases expired leases of any process every
``JOB_WORKER_CLEANUP_INTERVAL_SECONDS``: requeued with backoff while attempts remain,
failed on the last one, cancelled if a cancel was asked (``services.cleanup_expired_jobs``,
which locks with SKIP LOCKED so concurrent rescuers split the work). River's job rescuer
is the model.
"""

from __future__ import annotations

import logging

from ... import services
from .loop import Periodic

logger = logging.getLogger("jobs.worker")


class LeaseRescuer(Periodic):
    """Every ``interval_seconds`` (the cleanup interval), from the start; not once the
    process is stopping."""

    name = "rescue"

    def __init__(self, *, batch_size: int, worker_id: str, interval_seconds: float = 5.0) -> None:
        super().__init__(interval_seconds)
        self.batch_size = batch_size
        self.worker_id = worker_id  # named as the cleaner in the events it writes

    def run_once(self) -> services.CleanupResult:
        """Release expired leases a batch at a time until a batch comes back short;
        return how many jobs were requeued and failed (cancelled count as failed)."""
        requeued = failed = 0
        while True:
            result = services.cleanup_expired_jobs(
                batch_size=self.batch_size, worker_id=self.worker_id
            )
            if result.total:
                logger.info(
                    "action=cleanup worker_id=%s requeued=%d failed=%d",
                    self.worker_id,
                    result.requeued,
                    result.failed,
                )
            requeued += result.requeued
            failed += result.failed
            if result.total < self.batch_size:
                return services.CleanupResult(requeued=requeued, failed=failed)
