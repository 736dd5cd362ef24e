"""The schedule ticker: every worker process enqueues the due ticks of the schedules in
``JOB_SCHEDULES``, twice a second.

No leader is elected: ``services.enqueue_due_ticks`` handles each schedule under a lock on
its state row (a process that finds it held skips it), and each tick's job carries the
permanent idempotency key ``schedule:<name>:<tick>``, so however many processes tick, a
tick is one job. A schedule that fails is kept apart (its error on its row, retried on a
back-off) and never stops the others. With no schedule configured there is no ticker.
"""

from __future__ import annotations

import logging

from ... import services
from ...conf import app_settings
from .loop import Periodic

logger = logging.getLogger("jobs.worker")

# Seconds between two looks at the schedules: well inside the grace a tick has
# (JOB_SCHEDULE_GRACE_SECONDS) before it counts as missed.
TICK_CHECK_SECONDS = 0.5


class ScheduleTicker(Periodic):
    """Every ``TICK_CHECK_SECONDS`` from the start; not once the process is stopping."""

    name = "schedules"

    def __init__(self, *, worker_id: str) -> None:
        super().__init__(TICK_CHECK_SECONDS)
        self.worker_id = worker_id

    @property
    def enabled(self) -> bool:
        return bool(app_settings.JOB_SCHEDULES)

    def run_once(self) -> services.TickPass:
        """Enqueue what is due; what this process did. A schedule that starts failing, or
        fails otherwise, is logged once (by the process that met it), and again once it
        runs; the others go on meanwhile."""
        done = services.enqueue_due_ticks()
        if done.created:
            logger.info(
                "action=schedule_ticks worker_id=%s enqueued=%d", self.worker_id, done.created
            )
        for name, error in done.failed.items():
            logger.error(
                "action=schedule_failed worker_id=%s schedule=%s error=%s",
                self.worker_id,
                name,
                error,
            )
        for name in done.recovered:
            logger.info("action=schedule_recovered worker_id=%s schedule=%s", self.worker_id, name)
        return done
