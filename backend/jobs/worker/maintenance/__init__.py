"""The maintenance thread: one per worker process, beside its worker threads, for the duties
that must not wait for a free worker thread. Each duty is a small part of its own, with a
``run_once`` that returns what it did (River's maintenance services, Oban's plugins):

* ``heartbeat.Heartbeat``: renews the leases of this process's attempts;
* ``timeouts.TimeoutEnforcer``: ends attempts past their deadline, replaces their threads;
* ``rescuer.LeaseRescuer``: takes back the jobs of processes that died (expired leases);
* ``presence.Presence``: says the process is alive, every half heartbeat interval.
* ``scheduler.ScheduleTicker``: enqueues the due ticks of ``JOB_SCHEDULES`` (issue 24).
* ``vacuum.HotTableVacuum``: vacuums ``jobs_job`` once its dead rows pass autovacuum's
  threshold and ``JOB_WORKER_VACUUM_DEAD_ROWS`` (issue 25), every cleanup interval, and
  analyzes it once its live rows outgrow the planner's count, checked every second.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from django.db import DatabaseError, InterfaceError

from ..attempts import InFlight
from ..config import WorkerConfig, make_worker_id
from ..recovery import (
    DB_RETRY_MAX_SECONDS,
    announce_database_error,
    drop_connection,
    error_message,
)
from .heartbeat import Heartbeat
from .presence import Presence
from .rescuer import LeaseRescuer
from .scheduler import TICK_CHECK_SECONDS, ScheduleTicker
from .timeouts import TimeoutEnforcer
from .vacuum import ANALYZE_CHECK_SECONDS, HotTableVacuum

if TYPE_CHECKING:
    from ..executor import WorkerThread

logger = logging.getLogger("jobs.worker")

__all__ = [
    "Heartbeat",
    "HotTableVacuum",
    "LeaseRescuer",
    "Maintenance",
    "Presence",
    "ScheduleTicker",
    "TimeoutEnforcer",
]


class Maintenance(threading.Thread):
    """Runs the four duties on their cadences: the heartbeat every heartbeat interval,
    timeouts at each deadline, lease rescue every cleanup interval (not once the process
    is stopping), presence every half heartbeat interval (its row is taken back when the
    thread ends). A database error is logged and retried with capped backoff."""

    def __init__(
        self,
        config: WorkerConfig,
        in_flight: InFlight,
        *,
        stopping: threading.Event,
        abandon: Callable[[WorkerThread], None],
        threads: Callable[[], list[str]] = list,
    ) -> None:
        super().__init__(name="job-maintenance", daemon=True)
        self.config = config
        self.in_flight = in_flight
        self.stopping = stopping
        self.worker_id = make_worker_id(0)
        self.heartbeat = Heartbeat(in_flight, lease_seconds=config.lease_seconds)
        self.timeouts = TimeoutEnforcer(in_flight, abandon=abandon)
        self.rescuer = LeaseRescuer(batch_size=config.cleanup_batch_size, worker_id=self.worker_id)
        self.presence = Presence(
            queues=config.queues,
            threads_configured=config.threads,
            heartbeat_interval_seconds=config.heartbeat_interval_seconds,
            threads=threads,
        )
        self.ticker = ScheduleTicker(worker_id=self.worker_id)
        self.vacuum = (
            HotTableVacuum(min_dead_rows=config.vacuum_dead_rows)
            if config.vacuum_dead_rows
            else None
        )
        self.finished = threading.Event()  # the runner sets it once no attempt is left
        self.first_pass = threading.Event()  # set after the first loop, done or failed

    def run(self) -> None:
        logger.info("action=maintenance_started worker_id=%s", self.worker_id)
        now = time.monotonic()
        next_beat = now + self.config.heartbeat_interval_seconds
        next_cleanup = now
        next_presence = now
        ticking = self.ticker.enabled and not self.config.burst
        next_tick = now if ticking else float("inf")
        next_analyze = now if self.vacuum is not None else float("inf")
        last_analyze = -float("inf")

        def analyze_soon_if_busy(next_analyze: float) -> float:
            # A backlog that arrives while the checks run at the idle cadence is looked at
            # a second after the last check, not a cleanup interval: its first claims run
            # under whatever the last ANALYZE saw (an empty table, say).
            if self.vacuum is not None and self.in_flight.snapshot():
                return min(next_analyze, last_analyze + ANALYZE_CHECK_SECONDS)
            return next_analyze

        failures = 0
        try:
            while not self.finished.is_set():
                now = time.monotonic()
                next_analyze = analyze_soon_if_busy(next_analyze)
                try:
                    if now >= next_beat:
                        self.heartbeat.run_once()
                        next_beat = now + self.config.heartbeat_interval_seconds
                    self.timeouts.run_once(now)
                    if (
                        self.vacuum is not None
                        and now >= next_analyze
                        and not self.stopping.is_set()
                    ):
                        self.vacuum.analyze_once()
                        last_analyze = now
                        # Every second while attempts run (a backlog is being claimed under
                        # the plans it misleads); idle, every cleanup interval, and the
                        # first attempt claimed wakes this thread.
                        busy = bool(self.in_flight.snapshot())
                        next_analyze = now + (
                            ANALYZE_CHECK_SECONDS if busy else self.config.cleanup_interval_seconds
                        )
                        self.in_flight.wake_when_busy = not busy
                    if now >= next_cleanup and not self.stopping.is_set():
                        self.rescuer.run_once()
                        if self.vacuum is not None:
                            self.vacuum.run_once()
                        next_cleanup = now + self.config.cleanup_interval_seconds
                    if now >= next_presence:
                        self.presence.run_once()
                        next_presence = now + self.presence.interval_seconds
                    if now >= next_tick and not self.stopping.is_set():
                        next_tick = now + TICK_CHECK_SECONDS
                        self.ticker.run_once()
                    failures = 0
                except (DatabaseError, InterfaceError) as exc:
                    announce_database_error("maintenance", exc)
                    failures += 1
                    logger.warning(
                        "action=maintenance_database_error worker_id=%s error=%s",
                        self.worker_id,
                        error_message(exc),
                    )
                    drop_connection()
                    self.first_pass.set()
                    self.finished.wait(min(0.5 * 2 ** (failures - 1), DB_RETRY_MAX_SECONDS))
                    continue
                except Exception:
                    logger.exception("action=maintenance_error worker_id=%s", self.worker_id)
                self.first_pass.set()
                # Cleared before the deadlines are read: an attempt added meanwhile wakes us.
                self.in_flight.changed.clear()
                if self.finished.is_set():
                    # Set during this pass, with a wake-up the clear above just swallowed:
                    # waiting now would hold the runner's shutdown until the next deadline.
                    break
                next_analyze = analyze_soon_if_busy(next_analyze)
                wake = min(
                    next_beat,
                    next_cleanup,
                    next_presence,
                    next_tick,
                    next_analyze,
                    *self.timeouts.deadlines(),
                )
                self.in_flight.changed.wait(max(wake - time.monotonic(), 0.01))
        finally:
            self.first_pass.set()
            self.presence.remove()
            drop_connection()
            logger.info("action=maintenance_stopped worker_id=%s", self.worker_id)
