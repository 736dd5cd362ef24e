"""Vacuum of the hot table: ``jobs_job``'s dead row versions removed as soon as
autovacuum's own threshold for it is passed, not up to a naptime later.

Every claim and completion leaves a dead row version and dead index entries behind, and
the claim's index scan walks them until a vacuum removes them: throughput fell round after
round without it (``make bench``, phase ``decay``). Every cleanup interval, each worker
process's maintenance thread asks ``services.vacuum_jobs_table``, which vacuums only past
that threshold and ``JOB_WORKER_VACUUM_DEAD_ROWS``, and skips a table another vacuum holds.
``JOB_WORKER_VACUUM_DEAD_ROWS=0`` leaves it all to autovacuum. Dead rows a vacuum had to
leave (a long transaction still sees them) count as none: the next vacuum waits until as
many again have piled up, instead of rereading every index each cleanup interval for rows
it cannot remove yet.

The maintenance thread also analyzes ``jobs_job`` when its live rows outgrew the planner's
count, or its queued rows the planner's estimate of them (``services.analyze_jobs_table``,
checked every ``ANALYZE_CHECK_SECONDS`` while attempts run, every cleanup interval while
idle, and at once when the first attempt after an idle spell is claimed): a backlog that
arrives after a vacuum of the drained table, or beside many waiting jobs, looks like no
queued row to the planner until then. The setting switches both.
"""

from __future__ import annotations

import logging
import time

from ... import services
from ...drivers import Analyzed, Vacuumed
from ..attempts import InFlight
from .loop import Periodic

logger = logging.getLogger("jobs.worker")

# How often a busy worker process looks for a stale row estimate: every plan made
# meanwhile reads a backlog as one row, so sooner than the cleanup interval (an idle one
# looks every cleanup interval: its idle cost stays what it was).
ANALYZE_CHECK_SECONDS = 1.0


class HotTableVacuum(Periodic):
    """The vacuum every ``interval_seconds`` (the cleanup interval), from the start; not
    once the process is stopping. ``StaleEstimateCheck`` runs its ``analyze_once``."""

    name = "vacuum"

    def __init__(self, *, min_dead_rows: int, interval_seconds: float = 5.0) -> None:
        super().__init__(interval_seconds)
        self.min_dead_rows = min_dead_rows
        self.left = 0  # dead rows the last vacuum could not remove

    def analyze_once(self) -> Analyzed | None:
        """Analyze ``jobs_job`` if the planner's row count is stale; what it saw, or
        ``None``. Two catalog reads (and, while the planner believes the table nearly
        empty, a bounded count of queued rows), every ``ANALYZE_CHECK_SECONDS`` while
        attempts run."""
        started = time.monotonic()
        analyzed = services.analyze_jobs_table()
        if analyzed is not None:
            logger.info(
                "action=analyze table=jobs_job live_rows=%d estimated_rows=%d seconds=%.2f",
                analyzed.live_rows,
                analyzed.estimated_rows,
                time.monotonic() - started,
            )
        return analyzed

    def run_once(self) -> Vacuumed | None:
        """Vacuum ``jobs_job`` if due; what it did, or ``None``."""
        started = time.monotonic()
        done = services.vacuum_jobs_table(min_dead_rows=self.min_dead_rows + self.left)
        if done is not None:
            self.left = done.remaining
            logger.info(
                "action=vacuum table=jobs_job dead_rows=%d remaining=%d seconds=%.2f",
                done.dead_rows,
                done.remaining,
                time.monotonic() - started,
            )
        return done


class StaleEstimateCheck:
    """``HotTableVacuum.analyze_once`` every ``ANALYZE_CHECK_SECONDS`` while attempts run (a
    backlog is being claimed under the plans a stale estimate misleads) and every
    ``idle_seconds`` (the cleanup interval) while none does; the first attempt after an
    idle spell wakes the loop, so a backlog arriving then is looked at within a second of
    the last check, not a cleanup interval later. Not once the process is stopping."""

    name = "analyze"
    while_stopping = False

    def __init__(self, vacuum: HotTableVacuum, in_flight: InFlight, *, idle_seconds: float) -> None:
        self.vacuum = vacuum
        self.in_flight = in_flight
        self.idle_seconds = idle_seconds
        self._last = -float("inf")
        self._next = time.monotonic()

    def next_due(self, now: float) -> float:
        if self.in_flight.snapshot():
            return min(self._next, self._last + ANALYZE_CHECK_SECONDS)
        return self._next

    def run(self, now: float) -> Analyzed | None:
        analyzed = self.vacuum.analyze_once()
        self._last = now
        busy = bool(self.in_flight.snapshot())
        self._next = now + (ANALYZE_CHECK_SECONDS if busy else self.idle_seconds)
        self.in_flight.wake_when_busy = not busy
        return analyzed
