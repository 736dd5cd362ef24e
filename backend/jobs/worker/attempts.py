"""What a worker process is running: one ``Attempt`` per handler at work, and the set of
them (``InFlight``) that the threads add to and the maintenance thread looks after."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..drivers import JobRow, Owner
from .context import AttemptState

if TYPE_CHECKING:
    from .executor import WorkerThread


@dataclass
class Attempt:
    """One running attempt of this process: what the maintenance thread looks after."""

    job: JobRow
    thread: WorkerThread
    timeout_seconds: int | None
    state: AttemptState = field(default_factory=AttemptState)
    # False: its handler opted out of the heartbeat (``register(..., heartbeat=False)``):
    # the heartbeat watches the attempt but does not extend its lease.
    heartbeat: bool = True
    started: float = field(default_factory=time.monotonic)

    @property
    def owner(self) -> Owner:
        return Owner(self.job.id, self.thread.worker_id, self.job.attempts)

    @property
    def deadline(self) -> float | None:
        return None if self.timeout_seconds is None else self.started + self.timeout_seconds


class InFlight:
    """The attempts running in this process, shared by its threads.

    Keyed by job and attempt: a timed-out attempt's abandoned thread may still be running
    when the job's next attempt starts in this process, and its removal must not drop that
    one from the heartbeat and the timeouts.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attempts: dict[tuple[Any, int], Attempt] = {}
        self.changed = threading.Event()  # wakes the maintenance thread
        # Set by the maintenance thread while it checks at an idle worker's cadence: the
        # next attempt added wakes it, once.
        self.wake_when_busy = False

    def add(self, attempt: Attempt) -> None:
        with self._lock:
            self._attempts[attempt.job.id, attempt.job.attempts] = attempt
            wake, self.wake_when_busy = self.wake_when_busy, False
        # Only a deadline, or work arriving at an idle process, can come before the
        # maintenance thread's next wake-up (heartbeat and cleanup keep their own
        # cadence): waking it for every job cost a thread switch per job.
        if wake or attempt.timeout_seconds is not None:
            self.changed.set()

    def remove(self, attempt: Attempt) -> None:
        with self._lock:
            self._attempts.pop((attempt.job.id, attempt.job.attempts), None)

    def snapshot(self) -> list[Attempt]:
        with self._lock:
            return list(self._attempts.values())
