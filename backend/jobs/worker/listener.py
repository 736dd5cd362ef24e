"""The listener: wakes an idle worker thread when a job of its queues is created."""

from __future__ import annotations

import logging
import threading
import time
from itertools import count
from selectors import EVENT_READ, DefaultSelector

from ..conf import app_settings
from ..drivers import ListenerUnusable, Listening, get_driver
from .queues import QueueSet, Waker
from .recovery import Incident, announce_database_error, drop_connection

logger = logging.getLogger("jobs.worker")

# How the listener's connection names itself to PostgreSQL (pg_stat_activity).
LISTENER_APPLICATION_NAME = "job-queue-listener"


class Listener(threading.Thread):
    """LISTENs on a connection of its own for the notifications ``create_jobs`` sends and
    wakes an idle thread for each queue this process serves.

    Only a shortcut: the threads poll anyway, so a lost notification (a dropped
    connection) costs at most one poll interval. It reconnects with capped backoff.

    It proves it still hears, end to end: every half ``JOB_WORKER_LISTEN_PROBE_SECONDS`` it
    notifies a channel of its connection's own from this thread's ordinary connection (the
    way a job's creation notifies, to the server that accepts writes), and when that probe
    has not come back within the other half it reconnects. A listening connection whose
    server froze, whose backend vanished, or that a proxy left half-open, and one left on a
    demoted primary after a failover, is so replaced within the probe period; it never
    LISTENs on a server in recovery (``ServerInRecovery``), and polling covers the gap.

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
        self.probe_seconds = float(app_settings.JOB_WORKER_LISTEN_PROBE_SECONDS)
        self.probes_answered = 0
        self._tokens = count(1)

    def run(self) -> None:
        incident = Incident("listener_error", what="listener")
        while not self.stopping.is_set():
            try:
                self._listen(incident)
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
                self.stopping.wait(incident.failed(exc))
            finally:
                self.listening.clear()
                drop_connection()  # the probes' connection

    def _listen(self, incident: Incident) -> None:
        with get_driver().listen(application_name=LISTENER_APPLICATION_NAME) as listening:
            self.listening.set()
            logger.info("action=listening channel=%s", listening.channel)
            half = self.probe_seconds / 2
            next_probe = time.monotonic() + half
            awaited: str | None = None  # the probe sent and not yet back
            # Sleep in the kernel until the socket has data (or a second passes, to see a
            # stop): psycopg's notifies(timeout=...) wakes every 0.1 s to check for signals,
            # which made an idle listener cost more CPU than the polling it spares.
            with DefaultSelector() as waiting:
                waiting.register(listening.fileno(), EVENT_READ)
                while not self.stopping.is_set():
                    wait = min(1.0, max(0.0, next_probe - time.monotonic()))
                    if waiting.select(timeout=wait):
                        for queue in listening.received():
                            if self.queues.serves(queue):
                                self.waker.wake_one()
                    if awaited is not None and listening.last_probe == awaited:
                        awaited = None
                        self.probes_answered += 1
                        incident.ended()  # it hears again, end to end
                    if time.monotonic() < next_probe:
                        continue
                    if awaited is not None:
                        raise ListenerDeaf(
                            f"its probe did not come back within {half:.1f}s; reconnecting"
                        )
                    awaited = self._probe(listening)
                    next_probe = time.monotonic() + half

    def _probe(self, listening: Listening) -> str:
        """Send the next probe to ``listening``'s own channel; returns its token."""
        token = str(next(self._tokens))
        try:
            get_driver().probe(listening.probe_channel, token)
        finally:
            # No standing connection for a statement every few seconds (through a pooler
            # it is cheap to open again; direct, it would be one more backend per process).
            drop_connection()
        return token


class ListenerDeaf(Exception):
    """The listening connection did not receive its own probe: its server froze, its
    backend vanished, a proxy left it half-open, or it is on a demoted primary."""
