"""The listener: wakes an idle worker thread when a job of its queues is created."""

from __future__ import annotations

import logging
import threading
from selectors import EVENT_READ, DefaultSelector

from ..drivers import ListenerUnusable, get_driver
from .queues import QueueSet, Waker
from .recovery import DB_RETRY_MAX_SECONDS, announce_database_error, error_message

logger = logging.getLogger("jobs.worker")

# How the listener's connection names itself to PostgreSQL (pg_stat_activity).
LISTENER_APPLICATION_NAME = "job-queue-listener"


class Listener(threading.Thread):
    """LISTENs on a connection of its own for the notifications ``create_jobs`` sends and
    wakes an idle thread for each queue this process serves.

    Only a shortcut: the threads poll anyway, so a lost notification (a dropped
    connection) costs at most one poll interval. It reconnects with capped backoff.

    Through a pooler (PgBouncer in transaction mode hands LISTEN's server connection to
    other clients, and notifications arriving on it are dropped without an error) it would
    wait for nothing: it says so at ERROR (``action=listener_unusable``) and stops, and the
    process polls. Point POSTGRES_LISTEN_HOST/PORT at PostgreSQL itself instead.
    """

    def __init__(self, *, stopping: threading.Event, queues: QueueSet, waker: Waker) -> None:
        super().__init__(name="job-listener", daemon=True)
        self.stopping = stopping
        self.queues = queues
        self.waker = waker
        self.listening = threading.Event()  # set while LISTEN is in place

    def run(self) -> None:
        failures = 0
        while not self.stopping.is_set():
            try:
                self._listen()
                failures = 0
            except ListenerUnusable as exc:
                # A configuration mistake, not an outage: retrying would not help.
                logger.error(
                    "action=listener_unusable host=%s port=%s detail=%s; polling only. "
                    "Point POSTGRES_LISTEN_HOST/PORT (JOB_WORKER_LISTEN_OPTIONS) at "
                    "PostgreSQL itself, or set JOB_WORKER_LISTEN=false",
                    exc.host,
                    exc.port,
                    exc,
                )
                return
            except Exception as exc:  # any connection failure: retry, polling covers meanwhile
                announce_database_error("listener", exc)
                self.listening.clear()
                failures += 1
                delay = min(0.5 * 2 ** (failures - 1), DB_RETRY_MAX_SECONDS)
                logger.warning(
                    "action=listener_error retry_in=%.1fs error=%s", delay, error_message(exc)
                )
                self.stopping.wait(delay)

    def _listen(self) -> None:
        with get_driver().listen(application_name=LISTENER_APPLICATION_NAME) as listening:
            self.listening.set()
            logger.info("action=listening channel=%s", listening.channel)
            # Sleep in the kernel until the socket has data (or a second passes, to see a
            # stop): psycopg's notifies(timeout=...) wakes every 0.1 s to check for signals,
            # which made an idle listener cost more CPU than the polling it spares.
            with DefaultSelector() as waiting:
                waiting.register(listening.fileno(), EVENT_READ)
                while not self.stopping.is_set():
                    if not waiting.select(timeout=1.0):
                        continue
                    for queue in listening.received():
                        if self.queues.serves(queue):
                            self.waker.wake_one()
