"""The schedule ticker (issue 24): every worker process enqueues the due ticks of the
schedules in ``JOB_SCHEDULES``, twice a second.

No leader is elected: ``services.enqueue_due_ticks`` handles each schedule under a lock on
its state row, and each tick's job carries the permanent idempotency key
``schedule:<name>:<tick>``, so however many processes tick, a tick is one job. With no
schedule configured the ticker does nothing at all.
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

    def run_once(self) -> int:
        """Enqueue what is due; return how many jobs this process created."""
        created = services.enqueue_due_ticks()
        if created:
            logger.info("action=schedule_ticks worker_id=%s enqueued=%d", self.worker_id, created)
        return created
