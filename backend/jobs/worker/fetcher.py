"""The fetcher: the one part of a worker process that claims.

A thread that wants work waits here. The first one finds no fetch under way and claims
for itself and for the threads already waiting, up to ``JOB_WORKER_CLAIM_BATCH_SIZE``
(``services.claim_jobs``; a batch size of 1 claims for the asking thread alone, a batch of
one): never more jobs than there are idle threads, so a process never holds jobs another
could be running. The n-th job claimed is written to the n-th thread's worker id, with its
own ``claimed`` event and lease, and handed to that thread at once: nothing waits in a
local buffer. Threads that arrived during a fetch fetch next, at once (a full batch means
there may be more); a thread the fetch gave nothing goes back to waiting for a
notification. A queue under flow control (a pause, limits, key limits) is claimed from the
same way: the claim applies them.

Each fetch also writes the successes the completer holds for it (``Completer.take``): the
fetching threads' own with an inline completer, any waiting with a batched one, in the
claim's statement, one commit for both.

Gathering: with handlers that return sooner than a fetch takes (no-op or near), the thread
that finishes first would fetch alone and its peers would queue behind it, a fetch of one
or two jobs paying a whole statement and commit. So while the process's recent handlers
ran shorter than its recent fetches took, a thread about to fetch for fewer threads than a
batch waits for its busy peers to come back, at most one fetch's time (and
``GATHER_MAX_SECONDS``; twice that while a fetch under way is about to hand its threads
their jobs), and fetches for all of them. Longer handlers (the usual case:
anything that does I/O) never wait: a fetch is cheaper than their idle time.

Holding (throughput mode, ``JOB_WORKER_PREFETCH``): a thread may ask for more than one job,
its share of the process's prefetch; it is then an entry of the claim as many times, owns
each job it gets under its own worker id and runs them in claim order (``WorkerThread``).
The entries of a fetch take turns between its threads, so a short backlog is spread over
them rather than held by the first; threads that hold never gather (their fetches are
batches already).

Stopping: jobs a fetch brought back after the process began to stop are released
(``services.release_unstarted_jobs``: queued again at once, the attempt not spent, a
``released`` event), as is a job a thread received as the stop began.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.db import DatabaseError, InterfaceError

from .. import services
from ..drivers import ClaimCutShort, Completion, JobRow, Owner, unclaimed
from .queues import QueueSet
from .recovery import announce_database_error, drop_connection, error_message

logger = logging.getLogger("jobs.worker")

# The longest a thread about to fetch waits for its peers.
GATHER_MAX_SECONDS = 0.02


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
        successes: Callable[[Sequence[str]], Handover | None] | None = None,
        parallel: int = 1,
        lean: bool = False,
        synchronous_commit: bool = True,
    ) -> None:
        # parallel: fetches in flight at once. A commit waits for the disk (a few ms);
        # one fetch at a time would leave the process's other idle threads waiting on it.
        self.parallel = parallel
        # successes: the completer's take(); with it each fetch also writes the successes
        # waiting, in the same transaction (one commit for both).
        self.successes = successes
        # No claimed and succeeded events (the rows keep who ran a job and when).
        self.lean = lean
        # False: a fetch that carries successes commits without waiting for the disk.
        self.synchronous_commit = synchronous_commit
        self.batch_size = batch_size
        self.lease_seconds = lease_seconds
        self.queues = queues
        self.stopping = stopping
        self._condition = threading.Condition()
        self._idle: list[str] = []  # worker ids waiting for a job, in arrival order
        self._wanted: dict[str, int] = {}  # how many jobs each of them asks for
        self._delivered: dict[str, list[JobRow]] = {}
        self._in_fetch: set[str] = set()  # worker ids the fetches under way claim for
        self._fetching = 0
        self._cursor = 0
        # Threads running a job this fetcher handed them, and since when.
        self._running: dict[str, float] = {}
        # Moving averages, in seconds: a handed job's turnaround, a fetch's round trip.
        self._run_seconds = 0.0
        self._fetch_seconds = 0.0
        self._gathering = False
        self.fetches = 0
        self.claimed = 0
        self.gathers = 0

    def next_jobs(self, worker_id: str, wanted: int = 1) -> list[JobRow]:
        """Up to ``wanted`` jobs claimed for ``worker_id``'s thread, in claim order, or none
        when a fetch found none for it (the thread then waits for a notification)."""
        with self._condition:
            handed = self._running.pop(worker_id, None)
            if handed is not None:
                self._run_seconds = _average(self._run_seconds, time.monotonic() - handed)
            self._idle.append(worker_id)
            self._wanted[worker_id] = wanted
            self._condition.notify_all()  # a gathering thread counts its peers
            while True:
                if worker_id in self._delivered:
                    return self._delivered.pop(worker_id)
                if worker_id in self._in_fetch:
                    self._condition.wait()  # a fetch under way claims for it
                    continue
                if worker_id not in self._idle:
                    return []  # it was in a fetch that found nothing for it
                if self._fetching < self.parallel and not self._gathering:
                    break
                self._condition.wait()
            # This thread fetches, for itself first and for those waiting with it.
            self._idle.remove(worker_id)
            if wanted == 1:
                self._gather()
            group = [worker_id, *self._idle[: self.batch_size - 1]]
            del self._idle[: self.batch_size - 1]
            entries = _taking_turns([(w, self._wanted.pop(w, 1)) for w in group])
            self._in_fetch.update(group)
            self._fetching += 1
        rows: list[JobRow] = []
        started = time.monotonic()
        try:
            if not self.stopping.is_set():
                rows = self._claim(entries)
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
                now = time.monotonic()
                if rows:
                    self._fetch_seconds = _average(self._fetch_seconds, now - started)
                for row in rows:
                    self._delivered.setdefault(row.locked_by or "", []).append(row)
                    self._running[row.locked_by or ""] = now
                mine = self._delivered.pop(worker_id, [])
                self._condition.notify_all()
        return mine

    def _gather(self) -> None:
        """Called with the lock held by a thread about to fetch: while the process's handlers
        return sooner than a fetch takes, wait (at most one fetch's time, two if a fetch is
        under way) for the busy threads to come back, so one fetch claims for all of them."""
        if not self._handlers_outrun_fetches():
            return
        # One slow fetch (a lock wait, a reconnect) must not hold the next ones for as long.
        bound = min(self._fetch_seconds, GATHER_MAX_SECONDS)
        started = time.monotonic()
        deadline = started + bound
        self._gathering = True
        try:
            while (
                self._peers_returning()
                and len(self._idle) + 1 < self.batch_size
                and not self.stopping.is_set()
            ):
                now = time.monotonic()
                if self._in_fetch:
                    # Its threads come back only once it ends: two fetches that started
                    # together would otherwise use up the wait and stay split. Its time
                    # counts once at most.
                    deadline = max(deadline, min(now + bound, started + 2 * bound))
                left = deadline - now
                if left <= 0:
                    break
                self._condition.wait(left)
        finally:
            self._gathering = False
            self._condition.notify_all()  # threads beyond this batch may fetch in parallel
        self.gathers += 1

    def _handlers_outrun_fetches(self) -> bool:
        """Whether the process's handlers have lately returned sooner than its fetches took
        (no-op or near): the regime in which threads gather."""
        return 0 < self._run_seconds < self._fetch_seconds

    def _peers_returning(self) -> bool:
        """Whether a thread handed a job lately (two fetches' time) has not come back (one
        stuck in a long handler, or given up on, is not waited for), or a fetch under way
        is about to hand its threads their jobs: waiting for those too lets two fetches
        that ran side by side merge into one, instead of staying split for good."""
        if self._in_fetch:
            return True
        since = time.monotonic() - 2 * self._fetch_seconds
        return any(handed > since for handed in self._running.values())

    def _claim(self, entries: Sequence[str]) -> list[JobRow]:
        """Up to one job per entry of ``entries`` (worker ids; one repeats for a thread
        that holds jobs), taking the queues in turn; the first statement also writes the
        successes the completer holds for those threads.

        Every job a committed statement claimed is returned, to be handed over, even when
        a later statement of the fetch fails (``_cut_short``); only a fetch that claimed
        nothing raises."""
        wanting = list(entries)
        claimed: list[JobRow] = []
        group = list(dict.fromkeys(entries))
        handover = self.successes(group) if self.successes is not None else None
        try:
            queues = self.queues.current(busy=handover is not None)
        except BaseException:
            if handover is not None:
                handover.failed()  # taken, never sent: the completer must have them back
            raise
        if not queues and handover is not None:
            handover.failed()  # nothing to claim from: the completer writes them
            return claimed
        start = self._cursor
        for offset in range(len(queues)):
            queue = queues[(start + offset) % len(queues)]
            try:
                rows = self._write_and_claim(handover, wanting, queue)
            except Exception as error:
                if isinstance(error, ClaimCutShort):
                    claimed.extend(error.claimed)
                if not claimed:
                    raise
                _cut_short(error, claimed)
                break
            except BaseException:
                if claimed:
                    self.release(claimed)  # the process stops: they would not run
                raise
            handover = None  # the first statement wrote them (or gave them back)
            if rows:
                # The next fetch starts after the last queue that gave jobs.
                self._cursor = (start + offset + 1) % len(queues)
                claimed.extend(rows)
                wanting = unclaimed(wanting, rows)
                if not wanting:
                    break
        return claimed

    def _write_and_claim(
        self, handover: Handover | None, wanting: Sequence[str], queue: str
    ) -> list[JobRow]:
        """One statement: the handover's successes, if any, and the claims of ``wanting``.
        The handover learns what was committed, or gets its successes back if the
        statement failed."""
        try:
            fetched = services.claim_jobs(
                worker_ids=wanting,
                queue=queue,
                completions=() if handover is None else handover.completions,
                lease_seconds=self.lease_seconds,
                lean=self.lean,
                synchronous_commit=self.synchronous_commit,
            )
        except ClaimCutShort as cut:
            if handover is not None:
                handover.committed(cut.completed)  # the first transaction wrote them
            raise
        except BaseException:
            if handover is not None:
                handover.failed()
            raise
        if handover is not None:
            handover.committed(fetched.completed)
        return fetched.claimed

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


def _cut_short(error: Exception, claimed: Sequence[JobRow]) -> None:
    """A statement of a fetch failed after others committed claims: those jobs are running
    under their threads' worker ids, and dropped they would sit unrun and unrenewed for a
    lease, then be retried with an attempt spent. So the fetch ends with them; the error
    is told, the connection dropped, and a next fetch meets the error if it lasts."""
    if isinstance(error, DatabaseError | InterfaceError):
        announce_database_error("thread", error)
    logger.warning("action=fetch_cut_short claimed=%d error=%s", len(claimed), error_message(error))
    drop_connection()


def _taking_turns(wants: Sequence[tuple[str, int]]) -> list[str]:
    """The entries of a claim for threads wanting so many jobs each: one for each thread,
    then a second for each that wants more, and so on, so that a claim finding fewer jobs
    than asked gives every thread one before any thread a second."""
    most = max((wanted for _, wanted in wants), default=0)
    return [worker_id for turn in range(most) for worker_id, wanted in wants if wanted > turn]


def _average(previous: float, sample: float) -> float:
    """An exponentially weighted moving average: the last dozen samples or so weigh most."""
    return sample if previous == 0 else previous + (sample - previous) / 8
