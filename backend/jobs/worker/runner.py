"""The worker process: its threads, their replacements, signals and a graceful stop."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from types import FrameType
from typing import Any

from django.db import connection
from django.utils import timezone

from ..conf import app_settings
from ..drivers import get_driver
from .attempts import InFlight
from .completer import BatchCompleter, Completer, InlineCompleter
from .config import WorkerConfig
from .executor import Executor
from .fetcher import Fetcher
from .listener import Listener
from .maintenance import Maintenance
from .queues import QueueSet, Waker
from .threads import WorkerThread

logger = logging.getLogger("jobs.worker")

# Thread deaths (a bug in the worker, never a handler's doing) tolerated per minute before
# the process gives up and exits non-zero, so a supervisor restarts it.
MAX_THREAD_DEATHS_PER_MINUTE = 10


class WorkerRunner:
    """Starts the threads, handles signals, replaces threads that die or get stuck, and
    waits for a graceful stop."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.stop_event = threading.Event()
        self.threads: list[WorkerThread] = []
        self.in_flight = InFlight()
        self.queues = QueueSet(config.queues, refresh_seconds=config.poll_interval_seconds)
        self.completer: Completer = (
            BatchCompleter(
                batch_size=config.complete_batch_size,
                flush_seconds=config.complete_flush_seconds,
                in_flight=self.in_flight,
                lease_seconds=config.lease_seconds,
                lean=config.lean_timeline,
                synchronous_commit=config.complete_synchronous_commit,
            )
            if config.complete_batch_size > 1
            else InlineCompleter(
                in_flight=self.in_flight,
                lease_seconds=config.lease_seconds,
                lean=config.lean_timeline,
            )
        )
        self.maintenance = Maintenance(
            config,
            self.in_flight,
            stopping=self.stop_event,
            abandon=self.abandon,
            record=self.completer.record,
            threads=lambda: [thread.worker_id for thread in self.serving()],
            abandoned=self.abandoned_threads,
        )
        self.completer.workflow_member_finished = self.maintenance.settler.soon
        self.waker = Waker()
        self.fetcher = Fetcher(
            batch_size=config.claim_batch_size,
            lease_seconds=config.lease_seconds,
            queues=self.queues,
            stopping=self.stop_event,
            # A thread's own success rides its next claim (batch sizes of 1), or waiting
            # successes ride batched fetches; batched successes beside one-by-one claims
            # are the completer's alone to write, in its batches.
            successes=(
                None
                if config.claim_batch_size == 1 and config.complete_batch_size > 1
                else self.completer.take
            ),
            # Fetches in flight at once: a commit waits for the disk (a few ms); one at a
            # time would leave the process's other idle threads waiting on it. A batch of
            # one is each thread's own.
            parallel=config.threads
            if config.claim_batch_size == 1
            else max(1, config.threads // 2),
            lean=config.lean_timeline,
            synchronous_commit=config.complete_synchronous_commit,
        )
        self.executor = Executor(config, self.in_flight, self.completer)
        # Statements run per job: planned once, whatever the statistics say meanwhile.
        get_driver().plan_generically()
        self.listener: Listener | None = None
        if get_driver().supports_listen and app_settings.JOB_WORKER_LISTEN:
            self.listener = Listener(stopping=self.stop_event, queues=self.queues, waker=self.waker)
        # Guards the set of threads: a replacement starts, and its predecessor stops
        # counting as serving, in one step, so ``wait`` never sees the gap between them and
        # ends the run with the replacement about to claim.
        self._lock = threading.RLock()
        self._closed = False
        self._signals_received = 0
        self._deaths: list[float] = []
        self._replaced: set[str] = set()
        self.gave_up = False

    # Threads -----------------------------------------------------------------------------

    def _start_thread(self, replacing: WorkerThread | None = None) -> WorkerThread:
        with self._lock:
            thread = WorkerThread(
                len(self.threads) + 1,
                hold=None if replacing is None else replacing.hold,
                config=self.config,
                stopping=self.stop_event,
                waker=self.waker,
                fetcher=self.fetcher,
                executor=self.executor,
                completer=self.completer,
                in_flight=self.in_flight,
            )
            self.threads.append(thread)
        thread.start()
        return thread

    def serving(self) -> list[WorkerThread]:
        """The threads that claim jobs: alive and not abandoned."""
        return [t for t in self.threads if t.is_alive() and not t.abandoned]

    def abandoned_threads(self) -> list[dict[str, Any]]:
        """The abandoned threads still in their handler, each with the job it still runs
        (its attempt timed out: the job itself has moved on), for the presence row."""
        entries = []
        for thread in self.threads:
            attempt = thread.current
            if not thread.abandoned or not thread.is_alive():
                continue
            entries.append(
                {
                    "worker_id": thread.worker_id,
                    "job_id": None if attempt is None else str(attempt.job.id),
                    "type": None if attempt is None else attempt.job.type,
                    "attempt": None if attempt is None else attempt.job.attempts,
                    "abandoned_at": None
                    if thread.abandoned_at is None
                    else thread.abandoned_at.isoformat(),
                }
            )
        return entries

    def abandon(self, worker_id: str) -> None:
        """The thread of ``worker_id`` is stuck in a timed-out handler: let a new thread take
        its place.

        At most ``threads`` abandoned threads at a time, so a handler that hangs on every
        job cannot grow the process without bound; past that, capacity shrinks (logged).
        """
        with self._lock:
            thread = next((t for t in self.threads if t.worker_id == worker_id), None)
            if thread is None:
                return
            stuck = sum(1 for t in self.threads if (t.abandoned or t is thread) and t.is_alive())
            replacement = None
            if not (self.stop_event.is_set() or self._closed or stuck > self.config.threads):
                replacement = self._start_thread(replacing=thread)
            thread.abandoned = True
            thread.abandoned_at = timezone.now()
        thread.release_held()  # they would wait for a handler that may never return
        if replacement is not None:
            logger.warning(
                "action=thread_replaced worker_id=%s replacement=%s stuck_threads=%d",
                thread.worker_id,
                replacement.worker_id,
                stuck,
            )
        elif stuck > self.config.threads:
            logger.error(
                "action=thread_not_replaced worker_id=%s stuck_threads=%d detail=too many "
                "stuck handlers; capacity is reduced until they return",
                thread.worker_id,
                stuck,
            )

    def _replace_dead(self) -> bool:
        """Start a replacement for each thread that died; ``True`` if any was started."""
        replaced = False
        for thread in list(self.threads):
            if thread.died is None or thread.worker_id in self._replaced:
                continue
            self._replaced.add(thread.worker_id)
            now = time.monotonic()
            self._deaths = [t for t in self._deaths if now - t < 60] + [now]
            if len(self._deaths) > MAX_THREAD_DEATHS_PER_MINUTE:
                logger.error("action=worker_gave_up detail=worker threads keep dying")
                self.gave_up = True
                self.stop()
                return False
            if not self.stop_event.is_set() and not self.config.burst:
                replaced = True
                replacement = self._start_thread(replacing=thread)
                logger.error(
                    "action=thread_died worker_id=%s replacement=%s",
                    thread.worker_id,
                    replacement.worker_id,
                )
        return replaced

    # Lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        # The maintenance thread first sweeps expired leases once, before any claim: in
        # burst mode the threads may otherwise drain and stop before the first sweep.
        self.maintenance.start()
        self.maintenance.first_pass.wait(timeout=self.config.lease_seconds)
        self.completer.start()
        for _ in range(self.config.threads):
            self._start_thread()
        if self.listener is not None and not self.config.burst:
            self.listener.start()

    def stop(self) -> None:
        self.stop_event.set()
        self.waker.wake_all()

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._signals_received += 1
        name = signal.Signals(signum).name
        if self._signals_received == 1:
            logger.info(
                "action=shutdown_requested signal=%s detail=no new claims; "
                "waiting for in-flight jobs in_flight=%d",
                name,
                len(self.in_flight.snapshot()),
            )
            self.stop()
        else:
            logger.warning("action=forced_exit signal=%s detail=leases will expire", name)
            os._exit(1)

    def wait(self) -> None:
        """Block until every serving thread has stopped, replacing any that died; once
        stopping, give back at once the jobs the threads hold and have not started."""
        released = False
        while True:
            if self.stop_event.is_set() and not released:
                released = True
                for thread in list(self.threads):
                    thread.release_held()
            replaced = self._replace_dead()
            with self._lock:
                serving = self.serving()
                if not serving and not replaced:
                    self._closed = True  # no replacement may start from here on
                    break
            if serving:
                serving[0].join(timeout=0.1 if self.config.prefetch else 0.5)
        # The threads record no more: every success waiting is written before the
        # heartbeat stops.
        self.completer.stop()
        self.completer.join(timeout=self.config.lease_seconds)
        logger.info(
            "action=fetcher_stopped fetches=%d claimed=%d gathers=%d",
            self.fetcher.fetches,
            self.fetcher.claimed,
            self.fetcher.gathers,
        )
        # Abandoned threads may never return; they are daemons and die with the process.
        self.maintenance.stop()
        self.maintenance.join(timeout=self.config.lease_seconds)
        if self.listener is not None and self.listener.is_alive():
            self.stop_event.set()  # in burst mode nothing else stops it
            self.listener.join(timeout=5)

    def run(self) -> int:
        """Run until stopped (or drained in burst mode). Returns the exit code."""
        logger.info(
            "action=worker_started threads=%d queues=%s lease_seconds=%d "
            "heartbeat_seconds=%.1f poll_interval_ms=%d cleanup_interval_seconds=%s "
            "timeout_seconds=%s database=%s burst=%s claim_batch_size=%d complete_batch_size=%d "
            "prefetch=%d lean_timeline=%s synchronous_commit=%s",
            self.config.threads,
            ",".join(self.config.queues),
            self.config.lease_seconds,
            self.config.heartbeat_interval_seconds,
            self.config.poll_interval_seconds * 1000,
            self.config.cleanup_interval_seconds,
            self.config.timeout_seconds or "none",
            connection.vendor,
            self.config.burst,
            self.config.claim_batch_size,
            self.config.complete_batch_size,
            self.config.prefetch,
            self.config.lean_timeline,
            self.config.complete_synchronous_commit,
        )
        self.start()
        self.wait()
        processed = sum(t.jobs_processed for t in self.threads)
        died = sum(1 for t in self.threads if t.died is not None)
        code = 1 if self.gave_up or (died and self.config.burst) else 0
        logger.info(
            "action=worker_stopped jobs_processed=%d threads_died=%d exit_code=%d",
            processed,
            died,
            code,
        )
        return code
