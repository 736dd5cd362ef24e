"""A deadline on every PostgreSQL statement, kept by the client.

A server that stops answering without closing its sockets (a paused VM, a stopped
postmaster, a partition behind a proxy that still acknowledges) leaves a client waiting
for a reply forever: ``statement_timeout`` cannot fire on a frozen server, and TCP
keepalives and ``tcp_user_timeout`` see a peer whose kernel acknowledges everything. So a
watcher thread per process looks at every connection the app opened, once a second: one
with a statement in flight (libpq's ``PQTRANS_ACTIVE``) whose socket has neither sent nor
received anything for longer than the deadline is abandoned: its socket is shut down,
which wakes the thread waiting on it with a lost-connection error, and the worker's usual
recovery reconnects (to whichever host now accepts writes) and retries. Every other
connection of the process to that server is dropped with it (``check_once`` says why). Nothing is
cancelled on the server; a statement it finishes later, the lease's ownership guard makes
harmless, as it does a late write of a worker that lost its lease.

The deadline is ``JOB_DB_STATEMENT_DEADLINE_SECONDS``, by default a worker's heartbeat
interval (a third of the lease): a heartbeat stuck on a dead server is abandoned, the
connection reopened and the leases renewed before they lapse. Other processes (the API)
default to 25 s: a bulk action on a large table may take its time, and a request waiting
on a frozen server still answers 503 before gunicorn's 30 s timeout kills its worker.
Nothing is sent to the server and no startup parameter is set, so it works through
PgBouncer, which refuses startup ``options``. VACUUM and ANALYZE of the jobs table run
``unbounded``: a large table takes its time, and the server finishes them whatever the
client does. Linux only (``TCP_INFO``); connections over a Unix socket, whose server
cannot be partitioned away, are not watched.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..conf import app_settings

logger = logging.getLogger("jobs.worker")

# libpq's PQTRANS_ACTIVE: a command is in progress on the connection.
ACTIVE = 1
# struct tcp_info (linux/tcp.h): tcpi_last_data_sent and tcpi_last_data_recv, in ms.
_LAST_DATA_SENT = 44
_LAST_DATA_RECV = 52
_TCP_INFO_SIZE = 104

_lock = threading.Lock()
_watched: dict[int, weakref.ref[Any]] = {}
# Connections running a statement allowed to take its time (VACUUM of a large table):
# their own silence does not count, though they leave with their server.
_unbounded: set[int] = set()
_watcher: threading.Thread | None = None


# Outside a worker process (the API under gunicorn, a management command): long enough for
# a bulk action on a large table, and shorter than gunicorn's default 30 s worker timeout,
# so a request waiting on a frozen server still gets its JSON 503 rather than a killed
# worker.
OTHER_PROCESSES_SECONDS = 25.0
_worker_process = False


def hold_to_heartbeat() -> None:
    """This process runs the worker (``run_job_workers``): its statements get the
    heartbeat interval, unless ``JOB_DB_STATEMENT_DEADLINE_SECONDS`` says otherwise."""
    global _worker_process
    _worker_process = True


def deadline_seconds() -> float:
    """How long a statement may wait on a silent server before its connection is
    abandoned: ``JOB_DB_STATEMENT_DEADLINE_SECONDS``; unset, the heartbeat interval in a
    worker process and ``OTHER_PROCESSES_SECONDS`` elsewhere."""
    configured = app_settings.JOB_DB_STATEMENT_DEADLINE_SECONDS
    if configured:
        return float(configured)
    if not _worker_process:
        return OTHER_PROCESSES_SECONDS
    heartbeat = app_settings.JOB_WORKER_HEARTBEAT_SECONDS
    return max(1.0, float(heartbeat or app_settings.JOB_WORKER_LEASE_SECONDS / 3))


def watch(conn: Any) -> None:
    """Keep ``conn`` (a psycopg connection) under the deadline for as long as it lives."""
    global _watcher
    with _lock:
        _watched[id(conn)] = weakref.ref(conn)
        if _watcher is None or not _watcher.is_alive():
            _watcher = threading.Thread(target=_watch_forever, name="job-db-deadline", daemon=True)
            _watcher.start()


@contextmanager
def unbounded(conn: Any) -> Iterator[None]:
    """Inside the block, ``conn``'s own silence is not held against it."""
    with _lock:
        _unbounded.add(id(conn))
    try:
        yield
    finally:
        with _lock:
            _unbounded.discard(id(conn))


def watch_connection(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Django's ``connection_created`` receiver: every PostgreSQL connection is watched."""
    if connection.vendor == "postgresql":
        watch(connection.connection)


def silent_seconds(conn: Any) -> float | None:
    """Seconds ``conn`` has waited on its server with a statement in flight and nothing
    sent or received since; ``None`` when no statement is in flight or it cannot tell."""
    try:
        pgconn = conn.pgconn
        if conn.closed or pgconn.transaction_status != ACTIVE:
            return None
        with socket.socket(fileno=os.dup(pgconn.socket)) as sock:
            info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_SIZE)
    except Exception:
        return None  # closed meanwhile, a Unix socket, or not Linux
    sent: int = struct.unpack_from("I", info, _LAST_DATA_SENT)[0]
    received: int = struct.unpack_from("I", info, _LAST_DATA_RECV)[0]
    return min(sent, received) / 1000


def abandon(conn: Any) -> None:
    """Shut ``conn``'s socket down: the thread waiting on it gets a lost connection."""
    try:
        with socket.socket(fileno=os.dup(conn.pgconn.socket)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except Exception:  # closed meanwhile: nothing is waiting on it any more
        logger.debug("action=abandon_failed", exc_info=True)


def _server(conn: Any) -> tuple[str, int] | None:
    try:
        return (conn.info.host, conn.info.port)
    except Exception:  # closed meanwhile
        return None


def check_once(limit: float) -> int:
    """Abandon every watched connection silent for longer than ``limit``, and every other
    one to the same server; returns how many were abandoned.

    The other connections too, idle ones included: a server that froze may come back as
    it was (a resumed VM, SIGCONT) after its standby was promoted, still taking writes.
    A connection idle through the freeze would then carry this process's next statement
    to the old primary, where a claim or a completion finds the state from before the
    failover. So the whole server is left at once, as a crash would have left it.
    """
    with _lock:
        refs = list(_watched.items())
        exempt = set(_unbounded)
    live = []
    for key, ref in refs:
        conn = ref()
        if conn is None or conn.closed:
            with _lock:
                _watched.pop(key, None)
        else:
            live.append(conn)
    silent_servers: dict[tuple[str, int], float] = {}
    for conn in live:
        if id(conn) in exempt:
            continue
        silent = silent_seconds(conn)
        server = _server(conn)
        if silent is not None and silent > limit and server is not None:
            silent_servers[server] = max(silent, silent_servers.get(server, 0.0))
    abandoned = 0
    for server, silent in silent_servers.items():
        leaving = [conn for conn in live if _server(conn) == server]
        logger.warning(
            "action=server_abandoned host=%s port=%s silent_s=%.1f deadline_s=%.1f "
            "connections=%d detail=a statement got no answer; every connection to this "
            "server is dropped and made again",
            *server,
            silent,
            limit,
            len(leaving),
        )
        for conn in leaving:
            abandon(conn)
            abandoned += 1
    return abandoned


def _watch_forever() -> None:
    while True:
        limit = deadline_seconds()
        time.sleep(min(1.0, limit / 4))
        try:
            check_once(limit)
        except Exception:  # never let the watcher die: it guards every connection
            logger.exception("action=deadline_watch_error")
