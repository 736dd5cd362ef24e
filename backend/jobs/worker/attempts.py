"""What a worker process is running: one ``Attempt`` per claimed job, the set of them
(``InFlight``) that the heartbeat and the timeouts look after, and how an attempt ended
(``Outcome``), which the executor hands to the completer."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from ..drivers import JobRow, Owner
from ..services import ErrorDetails
from .context import AttemptState

# A success has no error details: one shared (frozen) value, not one built per job.
NO_DETAILS = ErrorDetails()


@dataclass
class Attempt:
    """One attempt of this process: claimed for ``worker_id``, held until its handler
    starts (``started`` is then set), looked after by the heartbeat from its claim."""

    job: JobRow
    worker_id: str
    timeout_seconds: int | None = None
    state: AttemptState = field(default_factory=AttemptState)
    # False: its handler opted out of the heartbeat (``register(..., heartbeat=False)``):
    # the heartbeat watches the attempt but does not extend its lease.
    heartbeat: bool = True
    # Monotonic seconds its handler started; None while it is held (claimed, not started).
    started: float | None = None
    claimed: float = field(default_factory=time.monotonic)

    @cached_property
    def owner(self) -> Owner:
        # Built once: an attempt's job, worker id and number never change, and the hot
        # path reads it several times a job.
        return Owner(self.job.id, self.job.locked_by or self.worker_id, self.job.attempts)

    @property
    def deadline(self) -> float | None:
        """Its timeout's deadline, counted from its handler's start (none while held)."""
        if self.timeout_seconds is None or self.started is None:
            return None
        return self.started + self.timeout_seconds

    @property
    def run_seconds(self) -> float:
        """Seconds since its handler started (0 while held)."""
        return 0.0 if self.started is None else time.monotonic() - self.started


@dataclass(frozen=True)
class Outcome:
    """How an attempt ended, for the completer to record and announce.

    ``succeeded``: the handler returned ``result_json`` (already checked storable).
    ``failed``: it raised, or could not start or finish (``error``, ``details``; the retry
    policy's ``delay_seconds``, or ``give_up``).
    ``snoozed``: it asked to run again in ``delay_seconds``, its attempt not spent.
    ``timed_out``: it ran past its deadline (the maintenance thread saw it).
    ``interrupted``: it ended after its attempt was timed out or lost; nothing is written.
    """

    attempt: Attempt
    kind: str
    result_json: str | None = None
    error: str = ""
    details: ErrorDetails = NO_DETAILS
    delay_seconds: float | None = None
    give_up: bool = False

    @classmethod
    def succeeded(cls, attempt: Attempt, result_json: str | None) -> Outcome:
        return cls(attempt, "succeeded", result_json=result_json)

    @classmethod
    def failed(
        cls,
        attempt: Attempt,
        error: str,
        details: ErrorDetails,
        *,
        delay_seconds: float | None = None,
        give_up: bool = False,
    ) -> Outcome:
        return cls(
            attempt,
            "failed",
            error=error,
            details=details,
            delay_seconds=delay_seconds,
            give_up=give_up,
        )

    @classmethod
    def snoozed(cls, attempt: Attempt, seconds: float) -> Outcome:
        return cls(attempt, "snoozed", delay_seconds=seconds)

    @classmethod
    def timed_out(cls, attempt: Attempt) -> Outcome:
        return cls(attempt, "timed_out")

    @classmethod
    def interrupted(cls, attempt: Attempt) -> Outcome:
        return cls(attempt, "interrupted")


class Recorder(Protocol):
    """Where every outcome of every attempt goes (the completer): written, then announced."""

    def record(self, outcome: Outcome) -> None: ...


class InFlight:
    """The attempts this process holds or runs, shared by its threads.

    Keyed by job and attempt: a timed-out attempt's abandoned thread may still be running
    when the job's next attempt starts in this process, and its removal must not drop that
    one from the heartbeat and the timeouts.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attempts: dict[tuple[Any, int], Attempt] = {}
        self.changed = threading.Event()  # wakes the maintenance thread (a deadline)
        self.busy = threading.Event()  # wakes the vacuum thread (work at an idle process)
        # Set by the vacuum thread while it checks at an idle worker's cadence: the next
        # attempt added wakes it, once.
        self.wake_when_busy = False

    def add(self, attempt: Attempt) -> None:
        with self._lock:
            self._attempts[attempt.job.id, attempt.job.attempts] = attempt
            wake, self.wake_when_busy = self.wake_when_busy, False
        # Only work arriving at an idle process can come before the vacuum thread's next
        # check (and only a deadline before the maintenance thread's next pass): waking a
        # thread for every job cost a thread switch per job.
        if wake:
            self.busy.set()

    def start(self, attempt: Attempt) -> None:
        """Its handler starts now: its deadline counts from here."""
        attempt.started = time.monotonic()
        if attempt.timeout_seconds is not None:
            self.changed.set()

    def remove(self, attempt: Attempt) -> None:
        with self._lock:
            self._attempts.pop((attempt.job.id, attempt.job.attempts), None)

    def snapshot(self) -> list[Attempt]:
        with self._lock:
            return list(self._attempts.values())

    def __len__(self) -> int:
        return len(self._attempts)
