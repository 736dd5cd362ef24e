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

A healthy server is silent too while a statement waits on a lock (a heartbeat behind an
operator's long bulk cancel), so before leaving a server the watcher asks it, from a fresh
connection (``PROBE_SECONDS`` to connect and answer), which sessions of this database and
user wait on a lock (``pg_stat_activity``): a silent connection whose backend (its pid) is
one of them is waiting, not lost, and is left alone; the server is left only if it does not
answer, or if a silent connection is not accounted for. Behind a pooler
(``JOB_DB_TRANSACTION_POOLING``) the pid a client knows is the pooler's key, not its
backend's, so there a silent connection is accounted for by any such session that has
waited at least as long: the pooler is not bypassed, and a lock wait through it no longer
drops every connection of the process.

The deadline is ``JOB_DB_STATEMENT_DEADLINE_SECONDS``, by default a worker's heartbeat
interval (a third of the lease): a heartbeat stuck on a dead server is abandoned, the
connection reopened and the leases renewed before they lapse. Other processes (the API)
default to 25 s: a bulk action on a large table may take its time, and a request waiting
on a frozen server still answers 503 before gunicorn's 30 s timeout kills its worker.
Nothing is sent on the watched connections and no startup parameter is set (a
``lock_timeout`` below the deadline would need one, or a ``SET`` that a transaction pooler
would leave on whichever server connection ran it), so it works through PgBouncer, which
refuses startup ``options``; the probe is an ordinary connection to the same address.
VACUUM and ANALYZE of the jobs table run ``unbounded``: a large table takes its time, and
the server finishes them whatever the client does. Linux only (``TCP_INFO``); connections
over a Unix socket, whose server cannot be partitioned away, are not watched.
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

# How long the probe of a silent server may take, connecting and answering: libpq's
# shortest connect_timeout. A frozen server is left that much later.
PROBE_SECONDS = 2
# Server and client clocks, and when a statement began against when its socket went quiet.
_PROBE_SLACK_SECONDS = 1.0
_LOCK_WAITS = """
    SELECT pid, EXTRACT(EPOCH FROM clock_timestamp() - query_start)
    FROM pg_stat_activity
    WHERE wait_event_type = 'Lock' AND state = 'active'
        AND datname = current_database() AND usename = current_user
"""

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


def lock_waits(conn: Any) -> dict[int, float] | None:
    """The sessions of ``conn``'s database and user that wait on a lock, by backend pid,
    with the seconds their statement has run, as the server answers a fresh connection to
    the same address within ``PROBE_SECONDS``; ``None`` if it does not answer."""
    try:
        params = {
            **conn.info.get_parameters(),
            "host": conn.info.host,
            "port": conn.info.port,
            "password": conn.info.password,
            "connect_timeout": PROBE_SECONDS,
            "autocommit": True,
        }
    except Exception:  # closed meanwhile
        return None
    # The address it is on now, whatever else the settings list; a standby answers too.
    params.pop("hostaddr", None)
    params.pop("target_session_attrs", None)
    answer: dict[str, dict[int, float]] = {}
    opened: list[Any] = []

    def probe() -> None:
        # A connection of the watched one's class (psycopg's), not watched itself.
        connect = type(conn).connect
        try:
            with connect(**params) as probing:
                opened.append(probing)
                rows = probing.execute(_LOCK_WAITS).fetchall()
        except Exception as error:  # no answer: the server is left
            logger.debug("action=deadline_probe_failed error=%s", str(error).strip())
            return
        answer["waits"] = {int(pid): float(seconds or 0) for pid, seconds in rows}

    # In a thread of its own: a server that accepts, then freezes, must not hold the
    # watcher, which guards every connection of the process.
    asking = threading.Thread(target=probe, name="job-db-deadline-probe", daemon=True)
    asking.start()
    asking.join(PROBE_SECONDS)
    if asking.is_alive():
        for probing in opened:
            abandon(probing)  # connected, then no answer: it is not waited for
    return answer.get("waits")


def _waiting_on_locks(silent: list[tuple[Any, float]]) -> bool:
    """Whether the server of these silent connections answers and says each is waiting
    on a lock (``lock_waits``)."""
    waits = lock_waits(silent[0][0])
    if waits is None:
        return False
    pooled = app_settings.JOB_DB_TRANSACTION_POOLING
    longest = max(waits.values(), default=-1.0)
    for conn, seconds in silent:
        if pooled:
            if longest < seconds - _PROBE_SLACK_SECONDS:
                return False
        elif _backend_pid(conn) not in waits:
            return False
    return True


def _backend_pid(conn: Any) -> int | None:
    try:
        return int(conn.info.backend_pid)
    except Exception:  # closed meanwhile
        return None


def check_once(limit: float) -> int:
    """Abandon every watched connection silent for longer than ``limit``, and every other
    one to the same server; returns how many were abandoned. A server that answers a
    fresh connection and says each of them waits on a lock (``lock_waits``) is healthy
    and kept.

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
    silent_servers: dict[tuple[str, int], list[tuple[Any, float]]] = {}
    for conn in live:
        if id(conn) in exempt:
            continue
        silent = silent_seconds(conn)
        server = _server(conn)
        if silent is not None and silent > limit and server is not None:
            silent_servers.setdefault(server, []).append((conn, silent))
    abandoned = 0
    for server, quiet in silent_servers.items():
        if _waiting_on_locks(quiet):
            continue
        silent = max(seconds for _, seconds in quiet)
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
