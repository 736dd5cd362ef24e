"""Timeouts: an attempt past its deadline is recorded as failed, and its thread replaced.

An attempt's deadline is its job's ``timeout_seconds``, else its type's, else
``JOB_WORKER_TIMEOUT_SECONDS``. At the deadline the attempt is failed as timed out (retried
with backoff while attempts remain), and its context is marked so the handler's next
check-in raises ``JobTimedOut``. A Python thread cannot be killed: the handler's thread is
abandoned and the process starts another in its place, keeping its capacity.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

from ..attempts import InFlight, Outcome

logger = logging.getLogger("jobs.worker")


class TimeoutEnforcer:
    """Due at the earliest deadline of the attempts running, also while the process stops."""

    name = "timeouts"
    while_stopping = True

    def __init__(
        self,
        in_flight: InFlight,
        *,
        record: Callable[[Outcome], None],
        abandon: Callable[[str], None],
    ) -> None:
        self.in_flight = in_flight
        self.record = record
        self.abandon = abandon

    def next_due(self, now: float) -> float:
        return min(self.deadlines(), default=math.inf)

    def run(self, now: float) -> int:
        return self.run_once(now)

    def deadlines(self) -> list[float]:
        """The deadlines still to come (monotonic seconds), for the thread's next wake-up."""
        return [
            deadline
            for attempt in self.in_flight.snapshot()
            if (deadline := attempt.deadline) is not None and not attempt.state.timed_out
        ]

    def run_once(self, now: float) -> int:
        """Hand every attempt whose deadline has passed by ``now`` (monotonic seconds) to the
        completer as timed out, and abandon its thread; return how many were ended. An
        attempt that finished or was lost meanwhile is left alone (the ownership guard
        refuses the write)."""
        ended = 0
        for attempt in self.in_flight.snapshot():
            deadline = attempt.deadline
            if deadline is None or deadline > now or attempt.state.timed_out:
                continue
            self.record(Outcome.timed_out(attempt))
            state = attempt.state  # the completer marks it timed out once recorded
            if state.timed_out:
                ended += 1
                self.abandon(attempt.worker_id)
        return ended
