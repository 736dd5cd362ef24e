"""Which queues a worker process serves, and where its idle threads wait for work."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .. import selectors
from .config import ALL_QUEUES


class QueueSet:
    """The queues a process serves: named ones, or ``*`` for every queue with jobs, looked
    up once per poll interval by idle threads, at most once per ``BUSY_REFRESH_SECONDS``
    by busy ones, and shared by the threads.

    A busy thread claims its next job together with its last completion and asks for the
    list on every job; refreshed at the poll interval, the lookup ran tens of times a
    second under load (the bench polls every 20 ms) for a list that rarely changes. A new
    queue is learned at once from its notification, else within that second.
    """

    BUSY_REFRESH_SECONDS = 1.0

    def __init__(
        self,
        names: tuple[str, ...],
        refresh_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.all_queues = ALL_QUEUES in names
        self.names = [] if self.all_queues else list(dict.fromkeys(names))
        self.refresh_seconds = refresh_seconds
        self.busy_refresh_seconds = max(refresh_seconds, self.BUSY_REFRESH_SECONDS)
        self._clock = clock
        self._lock = threading.Lock()
        self._refreshed = -float("inf")

    def serves(self, queue: str) -> bool:
        """Whether jobs of ``queue`` are this process's; a ``*`` process learns it now."""
        if not self.all_queues:
            return queue in self.names
        with self._lock:
            if queue not in self.names:
                self.names = sorted([*self.names, queue])
        return True

    def current(self, *, busy: bool = False) -> list[str]:
        if not self.all_queues:
            return self.names
        max_age = self.busy_refresh_seconds if busy else self.refresh_seconds
        with self._lock:
            # An empty list is looked up again at once: a job retried or created since
            # (a thread about to stop in burst mode would otherwise miss it).
            if not self.names or self._clock() - self._refreshed >= max_age:
                self.names = selectors.active_queues()
                self._refreshed = self._clock()
            return self.names


class Waker:
    """Where idle threads wait for work: woken by a notification, or after the poll interval.

    One notification wakes one thread; a woken thread that finds a job wakes the next, so a
    burst of jobs fans out to as many threads as it keeps busy, and one job wakes one.
    """

    def __init__(self) -> None:
        self._condition = threading.Condition()

    def wait(self, timeout: float) -> None:
        with self._condition:
            self._condition.wait(timeout)

    def wake_one(self) -> None:
        with self._condition:
            self._condition.notify()

    def wake_all(self) -> None:
        with self._condition:
            self._condition.notify_all()
