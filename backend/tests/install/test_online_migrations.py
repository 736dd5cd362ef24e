"""Upgrading a live install: a migration that scans the jobs table does it without a lock
that stops the queue (on PostgreSQL an index is built ``CONCURRENTLY`` and a check is added
``NOT VALID``, then validated on its own), and ends with the index and the check valid."""

from __future__ import annotations

import psycopg
import pytest

from tests.helpers import run_manage

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

JOBS = 5000


def manage(database: dict[str, str], *args: str) -> str:
    """``manage.py <args>`` on ``database`` (this run's server); its output."""
    done = run_manage(*args, POSTGRES_DB=database["dbname"])
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_migrations_that_scan_the_jobs_table_build_indexes_and_checks_online(fresh_database):
    database = fresh_database("online_migration")
    manage(database, "migrate", "jobs", "0017", "--noinput")
    with psycopg.connect(**database, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO jobs_job (id, type, payload, status, priority, available_at, attempts,"
            " max_attempts, last_error, created_at, updated_at)"
            " SELECT gen_random_uuid(), 'demo.success', '{}', 'queued', 50, now(), 0, 3, '',"
            " now(), now() FROM generate_series(1, %s)",
            (JOBS,),
        )

    plan = manage(database, "sqlmigrate", "jobs", "0018")
    assert 'CREATE INDEX CONCURRENTLY "job_waiting_idx"' in plan
    assert "NOT VALID" in plan
    assert 'VALIDATE CONSTRAINT "job_status_valid_shape"' in plan
    assert "BEGIN;" not in plan  # each statement commits on its own

    manage(database, "migrate", "jobs", "0018", "--noinput")
    with psycopg.connect(**database, autocommit=True) as conn:
        index_valid = conn.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = 'job_waiting_idx'::regclass"
        ).fetchone()
        check_valid = conn.execute(
            "SELECT convalidated FROM pg_constraint WHERE conname = 'job_status_valid_shape'"
        ).fetchone()
        assert (index_valid, check_valid) == ((True,), (True,))
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE jobs_job SET status = 'waiting', locked_by = 'w' WHERE true")
        assert conn.execute("SELECT count(*) FROM jobs_job").fetchone() == (JOBS,)

    assert 'CREATE INDEX CONCURRENTLY "job_workflow_idx"' in manage(
        database, "sqlmigrate", "jobs", "0020"
    )
    rebuilt = manage(database, "sqlmigrate", "jobs", "0021")
    assert 'DROP INDEX CONCURRENTLY IF EXISTS "job_waiting_idx"' in rebuilt
    assert 'CREATE INDEX CONCURRENTLY "job_waiting_idx"' in rebuilt
    manage(database, "migrate", "--noinput")
    with psycopg.connect(**database, autocommit=True) as conn:
        indexes = conn.execute(
            "SELECT indexrelid::regclass::text, indisvalid, pg_get_indexdef(indexrelid)"
            " FROM pg_index WHERE indexrelid IN"
            " ('job_workflow_idx'::regclass, 'job_waiting_idx'::regclass) ORDER BY 1"
        ).fetchall()
    assert [(name, valid) for name, valid, _ in indexes] == [
        ("job_waiting_idx", True),
        ("job_workflow_idx", True),
    ]
    assert "(created_at, id)" in indexes[0][2]
