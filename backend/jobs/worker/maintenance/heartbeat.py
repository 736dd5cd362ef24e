"""Heartbeat: one statement renews the lease of every attempt this process runs.

A handler need not renew its own lease: while its process lives, the maintenance thread
beats every ``JOB_WORKER_HEARTBEAT_SECONDS`` (a third of the lease by default), so a lease
runs out only when the process is gone or stuck. The answer also says which attempts the
process no longer owns (requeued by another process's rescuer, finished) and which were
asked to cancel; each attempt's state is marked, so its handler's next ``check()``,
``renew()`` or ``progress()`` stops it.

A handler registered with ``heartbeat=False`` is watched in the same statement, but its
lease is not extended: it runs out unless the handler renews it itself.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from ... import services
from ..attempts import Attempt, InFlight
from .loop import Periodic

logger = logging.getLogger("jobs.worker")


@dataclass(frozen=True)
class HeartbeatPass:
    """What one beat did: leases renewed, attempts found lost, cancels newly seen."""

    renewed: int
    lost: int
    cancel_requested: int


class Heartbeat(Periodic):
    """Renews this process's leases every ``interval_seconds`` (a third of the lease unless
    given), the first time one interval after it starts: a claim's lease is fresh."""

    name = "heartbeat"
    while_stopping = True

    def __init__(
        self, in_flight: InFlight, *, lease_seconds: int, interval_seconds: float | None = None
    ) -> None:
        super().__init__(
            lease_seconds / 3 if interval_seconds is None else interval_seconds,
            first_after_interval=True,
        )
        self.in_flight = in_flight
        self.lease_seconds = lease_seconds

    def run_once(self) -> HeartbeatPass:
        """Renew every running attempt's lease (one statement, no event) and mark those
        lost or asked to cancel."""
        # An attempt past its deadline is not renewed, so even if recording its timeout
        # fails, its lease runs out and the rescuer ends it.
        now = time.monotonic()
        live = [
            attempt
            for attempt in self.in_flight.snapshot()
            if not attempt.state.timed_out and (attempt.deadline is None or attempt.deadline > now)
        ]
        if not live:
            return HeartbeatPass(renewed=0, lost=0, cancel_requested=0)
        # One attempt at most owns a job. Two of the same job here are one that lost it,
        # its handler still running, and a later claim of the job: the later one is the
        # only one that can own it, and the answer (by job) is about that one.
        latest: dict[Any, Attempt] = {}
        for attempt in live:
            seen = latest.get(attempt.job.id)
            if seen is None or attempt.claimed > seen.claimed:
                latest[attempt.job.id] = attempt
        # A held attempt (claimed, not started) is renewed whatever its handler says: the
        # opt-out is the handler's, for the time it runs.
        renewing = [
            attempt for attempt in latest.values() if attempt.heartbeat or attempt.started is None
        ]
        beats = {
            beat.job_id: beat
            for beat in services.heartbeat(
                attempts=[attempt.owner for attempt in renewing],
                watch=[attempt.owner for attempt in latest.values() if not attempt.heartbeat],
                lease_seconds=self.lease_seconds,
            )
        }
        lost = cancelled = 0
        for attempt in live:
            beat = beats.get(attempt.job.id) if latest[attempt.job.id] is attempt else None
            if beat is None:
                attempt.state.lost = True
                lost += 1
            elif beat.cancel_requested and not attempt.state.cancel_requested:
                attempt.state.cancel_requested = True
                cancelled += 1
                logger.info(
                    "action=cancel_requested job_id=%s attempt=%d worker_id=%s",
                    attempt.job.id,
                    attempt.job.attempts,
                    attempt.owner.worker_id,
                )
        renewed = sum(1 for attempt in renewing if attempt.job.id in beats)
        return HeartbeatPass(renewed=renewed, lost=lost, cancel_requested=cancelled)
