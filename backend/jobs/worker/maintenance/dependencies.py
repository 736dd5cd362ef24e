"""Waiting jobs settled: queued once their parents succeeded, cancelled (or run, by their
policy) once one failed for good or was cancelled (``services.settle_waiting_jobs``).
Every second, from the start, and at once again while there is more to settle; and soon
after a workflow member of this process finished (``DependencySettler.soon``), so a chain's
next step, a fan-out's children and a fan-in's callback follow their parents at once rather
than up to a second later. A fan-out released by one parent is queued as fast as windows
can be settled. With nothing waiting it is one probe of an empty partial index; ``SKIP
LOCKED`` splits the work between workers."""

from __future__ import annotations

import logging
import math
import threading
import time
from datetime import datetime
from uuid import UUID

from ... import services
from ..attempts import InFlight
from .loop import Periodic

logger = logging.getLogger("jobs.worker")

SETTLE_INTERVAL_SECONDS = 1.0
# A workflow member finished in this process: the next pass comes this soon after the last
# one, not at the next second; a floor between passes, so members finishing at a thousand a
# second ask for ten passes a second at most, not a thousand.
SOON_SECONDS = 0.1


# A window, the waiting jobs one read looks at, is this many times the batch size: an idle
# pass (its window settles nothing) reads at most this many batches of job_waiting_idx,
# however many jobs wait on unfinished parents, in two statements and no transaction.
WINDOWS_PER_PASS = 10
# The longest a pass goes on while its windows keep settling jobs (a fan-out released by
# its parent) before it yields to the maintenance thread's other duties; the next pass
# then comes at once rather than a second later.
PASS_SECONDS = 0.2


class DependencySettler(Periodic):
    """Settles waiting jobs a window at a time, from where its last pass stopped, one
    transaction per window (of the jobs it found settleable: ten batches of a fan-out in
    one commit, 2.4 times faster than a batch per commit in make bench's workflows phase).
    A pass goes on, window after window, while they settle jobs, for
    about ``PASS_SECONDS``, and then comes back at once; a window that settles nothing
    ends it until the next second. So every waiting job is looked at within
    ``ceil(waiting / (WINDOWS_PER_PASS x batch))`` idle passes (one pass, a second, with up
    to 1,000 waiting at the default batch of 100), and a fan-out released by one parent is
    queued as fast as its windows commit, not 1,000 a second."""

    name = "dependencies"

    def __init__(
        self,
        *,
        batch_size: int,
        interval_seconds: float = SETTLE_INTERVAL_SECONDS,
        pass_seconds: float = PASS_SECONDS,
        wake: threading.Event | None = None,
        in_flight: InFlight | None = None,
    ) -> None:
        super().__init__(interval_seconds)
        # The maintenance loop's wake-up: ``soon`` interrupts its sleep.
        self.wake = wake
        self.in_flight = in_flight
        self._soon = False
        self._last_pass = -math.inf
        # The least time between passes ``soon`` asks for while this process is busy.
        self._gap = SOON_SECONDS
        self.batch_size = batch_size
        self.pass_seconds = pass_seconds
        self.resume_after: tuple[datetime, UUID] | None = None
        # Whether the last pass stopped at its time bound with windows still settling.
        self.more = False
        # Windows the last pass read (what the idle-cost tests count).
        self.windows = 0

    def soon(self) -> None:
        """A workflow member of this process finished (any outcome): its dependents may be
        decided now. The next pass comes ``SOON_SECONDS`` after the last one when this
        process holds no attempt (a chain's step done, a fan-out's parent, a fan-in's last
        members); while it is busy, the gap doubles after each pass that settled nothing,
        up to the interval: a fan-in's callback checked ten times a second over 10,000
        parents cost the drain of its members a fifth of its rate. Called from the threads
        that write outcomes; costs them a flag."""
        if self._soon and not self._idle():
            return
        self._soon = True
        if self.wake is not None:
            self.wake.set()

    def _idle(self) -> bool:
        return self.in_flight is None or not len(self.in_flight)

    def next_due(self, now: float) -> float:
        if not self._soon:
            return self._next
        gap = SOON_SECONDS if self._idle() else self._gap
        return min(self._next, self._last_pass + gap)

    def run(self, now: float) -> object:
        # Cleared before the pass reads: an outcome committed meanwhile asks for the next.
        asked, self._soon = self._soon, False
        try:
            queued, cancelled = self.run_once()
        finally:
            self._last_pass = time.monotonic()
        settled = queued or cancelled
        self._gap = (
            SOON_SECONDS if settled or not asked else min(self._gap * 2, self.interval_seconds)
        )
        self._next = time.monotonic() if self.more else now + self.interval_seconds
        return queued, cancelled

    def run_once(self) -> tuple[int, int]:
        """Return how many waiting jobs were queued and cancelled."""
        started = time.monotonic()
        queued = cancelled = 0
        self.more = False
        self.windows = 0
        while True:
            settled = services.settle_waiting_window(
                after=self.resume_after,
                limit=self.batch_size * WINDOWS_PER_PASS,
            )
            self.windows += 1
            self.resume_after = settled.resume_after
            if not (settled.queued or settled.cancelled):
                break
            logger.info(
                "action=settle_dependents queued=%d cancelled=%d",
                settled.queued,
                settled.cancelled,
            )
            queued += settled.queued
            cancelled += settled.cancelled
            if self.resume_after is None:  # the last waiting job: the next pass starts over
                break
            if time.monotonic() - started >= self.pass_seconds:
                self.more = True
                break
        return queued, cancelled
