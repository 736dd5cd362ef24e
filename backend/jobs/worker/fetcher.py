"""Batched fetch (issue 25): a process's idle threads claim together, in one statement.

A thread that wants work waits here. The first one finds no fetch under way and claims
for itself and for the threads already waiting, up to ``JOB_WORKER_CLAIM_BATCH_SIZE``
(``services.claim_next_jobs``): never more jobs than there are idle threads, so a process
never holds jobs another could be running. The n-th job claimed is written to the n-th
thread's worker id, with its own ``claimed`` event and lease, and handed to that thread at
once: nothing waits in a local buffer. Threads that arrived during a fetch fetch next, at
once (a full batch means there may be more); a thread the fetch gave nothing goes back
to waiting for a notification. A queue under flow control that the batch does not apply
(issue 24's pause, limits and key limits) is claimed from one job at a time, through the
claim that applies them.

Stopping: jobs a fetch brought back after the process began to stop are released
(``services.release_unstarted_jobs``: queued again at once, the attempt not spent, a
``released`` event), as is a job a thread received as the stop began.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .. import services
from ..drivers import Completion, JobRow, Owner
from .queues import QueueSet

logger = logging.getLogger("jobs.worker")


@dataclass(frozen=True)
class Handover:
    """Successes the completer hands to a fetch, to be written in its transaction; then
    ``committed(rows)`` with the rows completed, or ``failed()`` to have them back."""

    completions: list[Completion]
    committed: Callable[[list[JobRow]], None]
    failed: Callable[[], None]


class Fetcher:
    def __init__(
        self,
        *,
        batch_size: int,
        lease_seconds: int,
        queues: QueueSet,
        stopping: threading.Event,
        successes: Callable[[], Handover | None] | None = None,
        parallel: int = 1,
    ) -> None:
        # parallel: fetches in flight at once. A commit waits for the disk (a few ms);
        # one fetch at a time would leave the process's other idle threads waiting on it.
        self.parallel = parallel
        # successes: the completer's take(); with it each fetch also writes the successes
        # waiting, in the same transaction (one commit for both).
        self.successes = successes
        self.batch_size = batch_size
        self.lease_seconds = lease_seconds
        self.queues = queues
        self.stopping = stopping
        self._condition = threading.Condition()
        self._idle: list[str] = []  # worker ids waiting for a job, in arrival order
        self._delivered: dict[str, JobRow] = {}
        self._in_fetch: set[str] = set()  # worker ids the fetches under way claim for
        self._fetching = 0
        self._cursor = 0
        self.fetches = 0
        self.claimed = 0

    def next_job(self, worker_id: str) -> JobRow | None:
        """A job claimed for ``worker_id``'s thread, or ``None`` when a fetch found none
        for it (the thread then waits for a notification)."""
        with self._condition:
            self._idle.append(worker_id)
            while True:
                if worker_id in self._delivered:
                    return self._delivered.pop(worker_id)
                if worker_id in self._in_fetch:
                    self._condition.wait()  # a fetch under way claims for it
                    continue
                if worker_id not in self._idle:
                    return None  # it was in a fetch that found nothing for it
                if self._fetching < self.parallel:
                    break
                self._condition.wait()
            # This thread fetches, for itself first and for those waiting with it.
            self._idle.remove(worker_id)
            group = [worker_id, *self._idle[: self.batch_size - 1]]
            del self._idle[: self.batch_size - 1]
            self._in_fetch.update(group)
            self._fetching += 1
        rows: list[JobRow] = []
        try:
            if not self.stopping.is_set():
                rows = self._claim(group)
            if rows and self.stopping.is_set():
                self.release(rows)
                rows = []
        finally:
            with self._condition:
                self._fetching -= 1
                self._in_fetch.difference_update(group)
                # Counted under the lock: fetches run in parallel.
                self.fetches += 1
                self.claimed += len(rows)
                for row in rows:
                    self._delivered[row.locked_by or ""] = row
                mine = self._delivered.pop(worker_id, None)
                self._condition.notify_all()
        return mine

    def _claim(self, group: Sequence[str]) -> list[JobRow]:
        """Up to one job per worker id of ``group``, taking the queues in turn."""
        wanting = list(group)
        claimed: list[JobRow] = []
        queues = self.queues.current()
        handover = self.successes() if self.successes is not None and queues else None
        for offset in range(len(queues)):
            queue = queues[(self._cursor + offset) % len(queues)]
            if handover is not None:
                try:
                    completed, rows, gated = services.complete_jobs_and_claim_next_jobs(
                        completions=handover.completions,
                        worker_ids=wanting,
                        queue=queue,
                        lease_seconds=self.lease_seconds,
                    )
                except BaseException:
                    handover.failed()
                    raise
                handover.committed(completed)
                handover = None
            else:
                rows, gated = services.claim_next_jobs(
                    worker_ids=wanting, queue=queue, lease_seconds=self.lease_seconds
                )
            if gated and not rows:
                # Flow control the batch does not apply: one job, by the claim that does.
                row = services.claim_next_job(
                    worker_id=wanting[0], queue=queue, lease_seconds=self.lease_seconds
                )
                rows = [] if row is None else [row]
            if rows:
                self._cursor = (self._cursor + offset + 1) % len(queues)
                claimed.extend(rows)
                taken = {row.locked_by for row in rows}
                wanting = [worker_id for worker_id in wanting if worker_id not in taken]
                if not wanting:
                    break
        return claimed

    def release(self, rows: Sequence[JobRow]) -> None:
        """Give back jobs claimed but not started: queued again at once, attempt not spent.
        If the release fails, their leases lapse and the cleanup requeues them (at least
        once; nothing lost)."""
        owners = [Owner(row.id, row.locked_by or "", row.attempts) for row in rows]
        try:
            released = services.release_unstarted_jobs(owners=owners)
        except Exception:
            logger.exception("action=release_failed jobs=%d", len(owners))
            return
        logger.info("action=released_unstarted jobs=%d", len(released))
