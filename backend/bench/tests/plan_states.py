"""The states a queue passes through that mislead the planner, each built by one
``INSERT … SELECT`` of ``ROWS`` jobs per shape (the plan tests read plans, not transitions)."""

from typing import Any

import psycopg

ROWS = 3_000

# How each state's rows look: their status, their lock and whether they finished.
QUEUED = "'queued', 0, NULL, NULL, NULL"
RUNNING = "'running', 1, 'tests:9:thread-1:0000dead', now() + interval '1 hour', NULL"
SUCCEEDED = "'succeeded', 1, NULL, NULL, now()"


def insert(cursor: psycopg.Cursor[Any], shape: str, events: list[str], *, due: str = "") -> None:
    """ROWS jobs of ``shape``, each with one event of every type in ``events``; all due
    and created at once, or with ``due`` (an SQL time) one second apart from then on."""
    at = f"{due} + n * interval '1 second'" if due else "now()"
    cursor.execute(
        f"""
        INSERT INTO jobs_job (id, type, payload, status, attempts, locked_by, locked_until,
            finished_at, priority, max_attempts, available_at, last_error, created_at,
            updated_at, queue)
        SELECT gen_random_uuid(), 'demo.success', '{{}}', {shape}, 50, 3, {at}, '', {at},
            now(), 'default'
        FROM generate_series(1, {ROWS}) AS n
        """
    )
    cursor.execute(
        """
        INSERT INTO jobs_jobevent (job_id, type, attempt, message, data, created_at, job_type)
        SELECT job.id, event.type, 1, '', '{}', now(), job.type
        FROM jobs_job AS job CROSS JOIN unnest(%s::text[]) AS event(type)
        """,
        [events],
    )


def analyze(cursor: psycopg.Cursor[Any]) -> None:
    cursor.execute("ANALYZE jobs_job")
    cursor.execute("ANALYZE jobs_jobevent")


def all_queued(cursor: psycopg.Cursor[Any]) -> None:
    """A backlog arrived and autovacuum analyzed it: every job is queued, every event is a
    created event."""
    insert(cursor, QUEUED, ["created"])
    analyze(cursor)


def all_finished(cursor: psycopg.Cursor[Any]) -> None:
    """The backlog drained and was analyzed: every job has succeeded."""
    insert(cursor, SUCCEEDED, ["created", "claimed", "succeeded"])
    analyze(cursor)


def dead_running(cursor: psycopg.Cursor[Any]) -> None:
    """Analyzed while every job ran, and every one of them finished since: the statistics
    say ``running`` and jobs_job_status_idx held a ``running`` entry per row."""
    insert(cursor, RUNNING, ["created", "claimed"])
    analyze(cursor)
    cursor.execute(
        "UPDATE jobs_job SET status = 'succeeded', locked_by = NULL, locked_until = NULL,"
        " finished_at = now()"
    )


def backlog_over_history(cursor: psycopg.Cursor[Any]) -> None:
    """A backlog arrived over a history of finished jobs, and autovacuum analyzed the table
    half-way through draining it: finished, running and queued rows side by side."""
    insert(cursor, SUCCEEDED, ["created", "claimed", "succeeded"])
    insert(cursor, SUCCEEDED, ["created", "claimed", "succeeded"])
    insert(cursor, RUNNING, ["created", "claimed"])
    insert(cursor, QUEUED, ["created"])
    analyze(cursor)


def backlog_after_a_history_in_time_order(cursor: psycopg.Cursor[Any]) -> None:
    """A backlog after a long history, each job due a little after the one before (as jobs
    arrive): jobs_job_available_at_idx follows the table's order, so reading it over the
    whole history looks cheaper than a partial index's random reads, though it walks
    every finished job."""
    for shape, hours in ((SUCCEEDED, 3), (SUCCEEDED, 2), (SUCCEEDED, 1), (QUEUED, 0)):
        insert(cursor, shape, [], due=f"now() - interval '{hours} hours'")
    analyze(cursor)


def backlog_after_an_empty_analyze(cursor: psycopg.Cursor[Any]) -> None:
    """The table was analyzed once drained (its pages there, no live row), and a backlog
    arrived before the next ANALYZE: the planner scales zero rows per page, so every
    read of jobs_job looks like a read of one row."""
    insert(cursor, SUCCEEDED, ["created", "claimed", "succeeded"])
    cursor.execute("DELETE FROM jobs_jobevent")
    cursor.execute("DELETE FROM jobs_job")
    analyze(cursor)
    insert(cursor, QUEUED, ["created"], due="now() - interval '1 hour'")


STATES = [
    all_queued,
    all_finished,
    dead_running,
    backlog_over_history,
    backlog_after_a_history_in_time_order,
    backlog_after_an_empty_analyze,
]
