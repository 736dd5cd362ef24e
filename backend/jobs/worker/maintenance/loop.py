"""The generic duty loop: one thread that runs duties on their own cadences.

A duty says when it wants to run next (``next_due``) and does one pass (``run``); the loop
knows nothing else about it. A duty that fails is retried on a back-off of its own, so a
broken duty neither stops nor slows the others of its loop; a duty's cost is its own to
bound. A database outage is one incident per duty in the log (``recovery.Incident``): a
WARNING when the duty first fails, DEBUG for its retries, an INFO ``database_recovered``
when it next succeeds. The process runs two loops: the heartbeat alone, and every other
duty (``jobs.worker.maintenance.Maintenance``).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from django.db import DatabaseError, InterfaceError

from ..recovery import Incident, announce_database_error, drop_connection

logger = logging.getLogger("jobs.worker")

# The first retry of a failed duty comes this soon; each further failure doubles it.
RETRY_FIRST_SECONDS = 0.5
# The longest the loop sleeps with nothing due.
IDLE_WAIT_MAX_SECONDS = 60.0


class Duty(Protocol):
    """One background duty of a worker process."""

    name: str
    # Whether it keeps running once the process is stopping (attempts still run: the
    # heartbeat, timeouts and presence do; rescue, vacuum and schedules do not).
    while_stopping: bool

    def next_due(self, now: float) -> float:
        """The monotonic time of its next pass (``math.inf``: none planned)."""
        ...

    def run(self, now: float) -> object:
        """One pass; it plans the next one itself. Raises to be retried on back-off."""
        ...


class Periodic:
    """The cadence of a duty that runs every ``interval_seconds``: at once when started,
    or one interval later (``first_after_interval``)."""

    while_stopping = False

    def __init__(self, interval_seconds: float, *, first_after_interval: bool = False) -> None:
        self.interval_seconds = interval_seconds
        self._next = time.monotonic() + (interval_seconds if first_after_interval else 0.0)

    def next_due(self, now: float) -> float:
        return self._next

    def run(self, now: float) -> object:
        result = self.run_once()
        self._next = now + self.interval_seconds
        return result

    def run_once(self) -> object:
        raise NotImplementedError


@dataclass
class _Backoff:
    # The duty's database errors since its last success, told as one incident.
    incident: Incident
    failures: int = 0
    retry_at: float = 0.0


class DutyLoop(threading.Thread):
    """Runs ``duties`` in one thread, each when it is due and, after a failure, when its
    own back-off allows (``RETRY_FIRST_SECONDS``, doubling up to ``retry_max_seconds``);
    a duty's database errors are one incident until it succeeds again.
    ``wake`` set from outside makes it look again at once (an attempt added); ``finished``
    ends it after the current pass (with a ``wake``, set that too to end it at once)."""

    def __init__(
        self,
        name: str,
        duties: list[Duty],
        *,
        worker_id: str,
        stopping: threading.Event,
        finished: threading.Event,
        retry_max_seconds: float,
        wake: threading.Event | None = None,
        on_exit: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.duties = duties
        self.worker_id = worker_id
        self.stopping = stopping
        self.finished = finished
        self.retry_max_seconds = retry_max_seconds
        # What interrupts its sleep besides ``finished`` (which ends it).
        self.wake = wake
        self.first_pass = threading.Event()  # set after the first pass, done or failed
        self.on_exit = on_exit
        self._backoff = {
            id(duty): _Backoff(
                Incident("maintenance_database_error", worker_id=worker_id, duty=duty.name)
            )
            for duty in duties
        }

    def _due_at(self, duty: Duty, now: float) -> float:
        if self.stopping.is_set() and not duty.while_stopping:
            return math.inf
        return max(duty.next_due(now), self._backoff[id(duty)].retry_at)

    def run_due(self, now: float) -> None:
        """One pass: every duty that is due runs once, in order."""
        for duty in self.duties:
            if self._due_at(duty, now) > now:
                continue
            backoff = self._backoff[id(duty)]
            try:
                duty.run(now)
            except Exception as exc:
                backoff.failures += 1
                delay = min(
                    RETRY_FIRST_SECONDS * 2 ** min(backoff.failures - 1, 16),
                    self.retry_max_seconds,
                )
                backoff.retry_at = now + delay
                if isinstance(exc, DatabaseError | InterfaceError):
                    announce_database_error(duty.name, exc)
                    backoff.incident.record(exc, retry_in=delay)
                    drop_connection()
                else:
                    logger.exception(
                        "action=maintenance_error worker_id=%s duty=%s retry_in=%.1fs",
                        self.worker_id,
                        duty.name,
                        delay,
                    )
            else:
                backoff.failures = 0
                backoff.retry_at = 0.0
                backoff.incident.ended()

    def run(self) -> None:
        try:
            while not self.finished.is_set():
                self.run_due(time.monotonic())
                self.first_pass.set()
                # Cleared before the next times are read: a wake-up set meanwhile counts.
                if self.wake is not None:
                    self.wake.clear()
                if self.finished.is_set():
                    break
                now = time.monotonic()
                due = min((self._due_at(duty, now) for duty in self.duties), default=math.inf)
                # Without a wake-up of its own it sleeps on ``finished``: a stop ends it at once.
                (self.wake or self.finished).wait(min(max(due - now, 0.01), IDLE_WAIT_MAX_SECONDS))
        finally:
            self.first_pass.set()
            if self.on_exit is not None:
                self.on_exit()
            drop_connection()
