"""The client-side statement deadline (jobs.drivers.deadline): a statement whose server
sends nothing for longer than the deadline loses its connection instead of waiting for
ever; a statement that answers in time, however long the connection idled, is left alone."""

import time

import psycopg
import pytest
from django.db import connection

from jobs.drivers import deadline

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


@pytest.fixture
def watched(settings):
    """A psycopg connection of its own to the test database, watched, deadline 1 s."""
    settings.JOB_DB_STATEMENT_DEADLINE_SECONDS = 1
    params = connection.get_connection_params()
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    with psycopg.connect(**params, autocommit=True) as conn:
        deadline.watch(conn)
        yield conn


def test_a_statement_the_server_leaves_unanswered_past_the_deadline_loses_its_connection(
    watched,
):
    started = time.monotonic()
    with pytest.raises(psycopg.OperationalError):
        watched.execute("SELECT pg_sleep(5)")
    # The watcher looks every quarter of the deadline: within it of the deadline.
    assert 1 < time.monotonic() - started < 2.5
    assert watched.closed or watched.broken


def test_a_statement_answered_in_time_after_a_long_idle_keeps_its_connection(watched):
    time.sleep(2.5)  # idle, nothing in flight: not the server's silence
    assert watched.execute("SELECT pg_sleep(0.5), 1").fetchone() == ("", 1)
    assert not watched.broken


def test_every_connection_django_opens_is_watched():
    connection.ensure_connection()
    assert id(connection.connection) in deadline._watched
