"""The client-side statement deadline (jobs.drivers.deadline): a statement whose server
sends nothing for longer than the deadline loses its connection instead of waiting for
ever, and so does every other connection to that server, idle ones included; a statement
that answers in time, however long its connection idled, is left alone.

On a server of the module's own: leaving a server drops every connection to it, which on
the run's shared server would include the test database's."""

import threading
import time

import psycopg
import pytest
from django.db import connection

from harness import PrivatePgBouncer, pgbouncer_binary
from jobs.drivers import deadline
from tests.conftest import IN_CI, private_postgres_server


@pytest.fixture(scope="module")
def server():
    with private_postgres_server() as server:
        yield server


@pytest.fixture(scope="module")
def pgbouncer(server):
    """A pgbouncer in transaction mode in front of the module's server."""
    binary = pgbouncer_binary()
    if binary is None:
        if IN_CI:
            pytest.fail("pgbouncer is required in CI (apt-get install pgbouncer)")
        pytest.skip("pgbouncer not installed (apt-get install pgbouncer)")
    with PrivatePgBouncer(binary, server_port=server.port) as bouncer:
        yield bouncer


@pytest.fixture
def connect(server, settings):
    """Watched psycopg connections to the module's server (or to ``port``: a pooler in
    front of it), deadline 1 s."""
    settings.JOB_DB_STATEMENT_DEADLINE_SECONDS = 1
    opened = []

    def open_one(port: int | None = None) -> psycopg.Connection:
        conn = psycopg.connect(
            host="127.0.0.1",
            port=port or server.port,
            dbname=server.database,
            user="postgres",
            autocommit=True,
            connect_timeout=5,  # as the settings' connections have one
        )
        deadline.watch(conn)
        opened.append(conn)
        return conn

    yield open_one
    for conn in opened:
        conn.close()


@pytest.mark.engine_independent
def test_a_statement_the_server_leaves_unanswered_past_the_deadline_loses_its_connection(
    connect,
):
    stuck = connect()
    started = time.monotonic()
    with pytest.raises(psycopg.OperationalError):
        stuck.execute("SELECT pg_sleep(5)")
    # The watcher looks every quarter of the deadline: within it of the deadline.
    assert 1 < time.monotonic() - started < 2.5
    assert stuck.closed or stuck.broken


@pytest.mark.engine_independent
def test_a_pipelined_transaction_the_server_leaves_unanswered_loses_its_connection(connect):
    # BEGIN, the statements and COMMIT in one pipeline, as the driver's locked claim sends
    # them: in flight until the last result, so under the deadline like one statement.
    stuck = connect()
    begin, sleep = stuck.cursor(), stuck.cursor()
    started = time.monotonic()
    with pytest.raises(psycopg.OperationalError), stuck.pipeline():
        begin.execute("BEGIN")
        sleep.execute("SELECT pg_sleep(5)")
        begin.execute("COMMIT")
    assert 1 < time.monotonic() - started < 2.5
    assert stuck.closed or stuck.broken


@pytest.mark.engine_independent
def test_a_statement_on_a_frozen_server_loses_its_connection_once_a_probe_goes_unanswered(
    connect, server
):
    stuck = connect()
    frozen = server.freeze()  # SIGSTOP: its sockets open, its kernel acknowledging
    try:
        started = time.monotonic()
        with pytest.raises(psycopg.OperationalError):
            stuck.execute("SELECT 1")
        left_after = time.monotonic() - started
    finally:
        server.thaw(frozen)
    # The deadline, then the probe's wait for an answer that never comes.
    assert 1 < left_after < 1.5 + deadline.PROBE_SECONDS + 1


@pytest.mark.engine_independent
def test_an_idle_connection_to_a_server_that_went_silent_is_dropped_with_it(connect):
    idle, stuck = connect(), connect()
    with pytest.raises(psycopg.OperationalError):
        stuck.execute("SELECT pg_sleep(5)")
    # Its next statement fails at once instead of reaching a server that may come back
    # as the old primary; the one after reconnects, as the worker's recovery does.
    with pytest.raises(psycopg.OperationalError):
        idle.execute("SELECT 1")


@pytest.mark.engine_independent
@pytest.mark.parametrize("through", ["directly", "pgbouncer"])
def test_a_statement_waiting_on_a_lock_of_a_server_that_answers_keeps_its_connection(
    connect, request, settings, through, monkeypatch
):
    # An operator's long bulk cancel holds the rows a heartbeat waits for: the server is
    # healthy, just busy, and dropping every connection of the process would not help.
    # What is tested is telling a lock wait from silence, not how quickly a loaded machine
    # answers the probe: it gets room (in CI the probe once took longer than its 2 s).
    monkeypatch.setattr(deadline, "PROBE_SECONDS", 10)
    monkeypatch.setattr(deadline, "_PROBE_SLACK_SECONDS", 3.0)
    port = None
    if through == "pgbouncer":
        port = request.getfixturevalue("pgbouncer").port
        settings.JOB_DB_TRANSACTION_POOLING = True
    holder, waiter, idle = connect(port), connect(port), connect(port)
    holder.execute("BEGIN")
    holder.execute("SELECT pg_advisory_xact_lock(42)")
    answered = []
    waiting = threading.Thread(
        target=lambda: answered.append(
            waiter.execute("SELECT pg_advisory_xact_lock(42), 1").fetchone()
        )
    )
    waiting.start()
    time.sleep(3)  # three deadlines, the watcher looking every quarter of one
    holder.execute("COMMIT")
    waiting.join(5)
    assert answered == [("", 1)]
    assert not any(conn.broken for conn in (holder, waiter, idle))
    assert idle.execute("SELECT 1").fetchone() == (1,)


@pytest.mark.engine_independent
def test_a_statement_answered_in_time_after_a_long_idle_keeps_its_connection(connect):
    conn = connect()
    time.sleep(2.5)  # idle, nothing in flight: not the server's silence
    assert conn.execute("SELECT pg_sleep(0.5), 1").fetchone() == ("", 1)
    assert not conn.broken


@pytest.mark.engine_independent
def test_an_unbounded_statement_may_outlast_the_deadline(connect):
    conn = connect()
    with deadline.unbounded(conn):
        assert conn.execute("SELECT pg_sleep(1.8), 1").fetchone() == ("", 1)


@pytest.mark.postgres
@pytest.mark.django_db
def test_every_connection_django_opens_is_watched():
    connection.ensure_connection()
    assert id(connection.connection) in deadline._watched


@pytest.mark.engine_independent
def test_the_deadline_is_the_heartbeat_interval_in_a_worker_and_25_s_elsewhere(
    settings, monkeypatch
):
    settings.JOB_DB_STATEMENT_DEADLINE_SECONDS = 0
    settings.JOB_WORKER_LEASE_SECONDS = 30
    settings.JOB_WORKER_HEARTBEAT_SECONDS = 0
    monkeypatch.setattr(deadline, "_worker_process", False)
    assert deadline.deadline_seconds() == 25
    deadline.hold_to_heartbeat()
    assert deadline.deadline_seconds() == 10
    settings.JOB_DB_STATEMENT_DEADLINE_SECONDS = 4
    assert deadline.deadline_seconds() == 4
