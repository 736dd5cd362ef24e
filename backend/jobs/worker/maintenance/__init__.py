"""A worker process's background duties, beside its worker threads, for what must not
wait for a free worker thread. Each duty is a small part of its own with a ``run_once``
that returns what it did (River's maintenance services, Oban's plugins), and owns its
cadence (``loop.Duty``):

* ``heartbeat.Heartbeat``: renews the leases of this process's attempts;
* ``timeouts.TimeoutEnforcer``: ends attempts past their deadline, replaces their threads;
* ``rescuer.LeaseRescuer``: takes back the jobs of processes that died (expired leases);
* ``presence.Presence``: says the process is alive, every half heartbeat interval;
* ``dependencies.DependencySettler``: queues (or cancels) the waiting jobs their parents
  decided;
* ``scheduler.ScheduleTicker``: enqueues the due ticks of ``JOB_SCHEDULES``;
* ``vacuum.HotTableVacuum`` and ``vacuum.StaleEstimateCheck``: vacuum ``jobs_job`` once its
  dead rows pass autovacuum's threshold and ``JOB_WORKER_VACUUM_DEAD_ROWS``, and analyze it
  once its live rows outgrow the planner's count.

The heartbeat runs alone in a thread of its own (its own database connection, its own
error back-off): no other duty's cost, hang or failure can delay a renewal, so a lease is
renewed at least once per heartbeat interval while the database answers, and a failed
renewal is retried within a third of the interval. The vacuum duties, whose cost grows
with the table, run in a thread of their own too, so a long VACUUM delays neither the
presence row (a process vacuuming would otherwise read as dead on the dashboard) nor
timeouts and lease rescue. The other duties share the maintenance thread, each on its own
back-off.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ...worker_ids import make_worker_id
from ..attempts import InFlight, Outcome
from ..config import WorkerConfig
from ..recovery import DB_RETRY_MAX_SECONDS
from .dependencies import DependencySettler
from .heartbeat import Heartbeat
from .loop import Duty, DutyLoop
from .presence import Presence
from .rescuer import LeaseRescuer
from .scheduler import ScheduleTicker
from .timeouts import TimeoutEnforcer
from .vacuum import HotTableVacuum, StaleEstimateCheck

logger = logging.getLogger("jobs.worker")

__all__ = [
    "DependencySettler",
    "Duty",
    "DutyLoop",
    "Heartbeat",
    "HotTableVacuum",
    "LeaseRescuer",
    "Maintenance",
    "Presence",
    "ScheduleTicker",
    "StaleEstimateCheck",
    "TimeoutEnforcer",
]


class Maintenance:
    """The process's duty loops: ``job-heartbeat`` (the heartbeat alone),
    ``job-maintenance`` (timeouts, lease rescue, dependencies, presence, schedules) and,
    with the vacuum on, ``job-vacuum``. Started and joined together; ``finished`` (set by
    the runner once no attempt is left) ends them all, the heartbeat last in effect: it
    runs while attempts do.
    ``first_pass`` is set after the maintenance loop's first pass (its first lease rescue),
    done or failed."""

    def __init__(
        self,
        config: WorkerConfig,
        in_flight: InFlight,
        *,
        stopping: threading.Event,
        abandon: Callable[[str], None],
        record: Callable[[Outcome], None],
        threads: Callable[[], list[str]] = list,
        abandoned: Callable[[], list[dict[str, Any]]] = list,
    ) -> None:
        self.config = config
        self.in_flight = in_flight
        self.stopping = stopping
        self.worker_id = make_worker_id(0)
        self.finished = threading.Event()  # the runner sets it once no attempt is left
        self.heartbeat = Heartbeat(
            in_flight,
            lease_seconds=config.lease_seconds,
            interval_seconds=config.heartbeat_interval_seconds,
        )
        self.timeouts = TimeoutEnforcer(in_flight, record=record, abandon=abandon)
        self.rescuer = LeaseRescuer(
            batch_size=config.cleanup_batch_size,
            worker_id=self.worker_id,
            interval_seconds=config.cleanup_interval_seconds,
        )
        self.settler = DependencySettler(
            batch_size=config.cleanup_batch_size, wake=in_flight.changed, in_flight=in_flight
        )
        self.presence = Presence(
            queues=config.queues,
            threads_configured=config.threads,
            heartbeat_interval_seconds=config.heartbeat_interval_seconds,
            threads=threads,
            abandoned=abandoned,
        )
        self.ticker = ScheduleTicker(worker_id=self.worker_id)
        self.vacuum = (
            HotTableVacuum(
                min_dead_rows=config.vacuum_dead_rows,
                interval_seconds=config.cleanup_interval_seconds,
            )
            if config.vacuum_dead_rows
            else None
        )
        duties: list[Duty] = [self.timeouts, self.rescuer, self.settler, self.presence]
        if self.ticker.enabled and not config.burst:
            duties.append(self.ticker)
        self.duties = DutyLoop(
            "job-maintenance",
            duties,
            worker_id=self.worker_id,
            stopping=stopping,
            finished=self.finished,
            retry_max_seconds=DB_RETRY_MAX_SECONDS,
            wake=in_flight.changed,
            on_exit=self.presence.remove,
        )
        # A failed renewal is retried three times within an interval, each much sooner
        # than the lease (three intervals) can lapse.
        self.beats = DutyLoop(
            "job-heartbeat",
            [self.heartbeat],
            worker_id=self.worker_id,
            stopping=stopping,
            finished=self.finished,
            retry_max_seconds=config.heartbeat_interval_seconds / 3,
        )
        self.vacuums = (
            DutyLoop(
                "job-vacuum",
                [
                    StaleEstimateCheck(
                        self.vacuum, in_flight, idle_seconds=config.cleanup_interval_seconds
                    ),
                    self.vacuum,
                ],
                worker_id=self.worker_id,
                stopping=stopping,
                finished=self.finished,
                retry_max_seconds=DB_RETRY_MAX_SECONDS,
                wake=in_flight.busy,
            )
            if self.vacuum is not None
            else None
        )
        self.first_pass = self.duties.first_pass

    def _loops(self) -> list[DutyLoop]:
        return [self.duties, self.beats] + ([self.vacuums] if self.vacuums is not None else [])

    def start(self) -> None:
        logger.info("action=maintenance_started worker_id=%s", self.worker_id)
        self.beats.start()
        self.duties.start()
        if self.vacuums is not None:
            self.vacuums.start()

    def stop(self) -> None:
        """End every loop after its current pass (what ``finished`` does)."""
        self.finished.set()
        self.in_flight.changed.set()
        self.in_flight.busy.set()

    def join(self, timeout: float | None = None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        for loop in self._loops():
            loop.join(None if deadline is None else max(deadline - time.monotonic(), 0))
        if not self.is_alive():
            logger.info("action=maintenance_stopped worker_id=%s", self.worker_id)

    def is_alive(self) -> bool:
        return any(loop.is_alive() for loop in self._loops())
