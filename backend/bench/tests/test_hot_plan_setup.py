"""What the hot statements' plans rest on, and what the bench's drain poll counts, each on
rows of its own (the plan tests in test_hot_plans share states built once)."""

import threading

import psycopg
import pytest
from django.db import connection

from .plan_states import QUEUED, RUNNING, SUCCEEDED, insert

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def test_hot_tables_carry_their_autovacuum_settings():
    from importlib import import_module

    expected = import_module("jobs.migrations.0009_hot_tables").AUTOVACUUM
    with connection.cursor() as cursor:
        for table, options in expected.items():
            cursor.execute("SELECT reloptions FROM pg_class WHERE oid = %s::regclass", [table])
            (reloptions,) = cursor.fetchone()
            assert sorted(reloptions) == sorted(f"{k}={v}" for k, v in options.items())


def _plan_cache_mode_in_a_new_thread(*, in_transaction: bool = False) -> list[str]:
    """``plan_cache_mode`` of a fresh connection after a driver call (inside a transaction
    with ``in_transaction``), and after another one once that transaction ended."""
    from django.db import transaction

    from jobs import selectors

    modes: list[str] = []

    def show() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SHOW plan_cache_mode")
            modes.append(cursor.fetchone()[0])

    def run() -> None:
        try:
            if in_transaction:
                with transaction.atomic():
                    selectors.active_queues()
                    show()
            selectors.active_queues()
            show()
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    return modes


@pytest.mark.django_db(transaction=True)
def test_a_worker_process_plans_its_prepared_statements_generically(monkeypatch):
    from jobs.drivers import get_driver, postgres

    monkeypatch.setattr(postgres, "_generic_plans", False)  # restored after the test
    assert _plan_cache_mode_in_a_new_thread() == ["auto"]
    get_driver().plan_generically()  # what WorkerRunner does
    assert _plan_cache_mode_in_a_new_thread() == ["force_generic_plan"]
    # Set inside a transaction, the setting would go with a rollback: it waits for the next
    # call outside one.
    assert _plan_cache_mode_in_a_new_thread(in_transaction=True) == [
        "auto",
        "force_generic_plan",
    ]


def test_the_benchs_drain_poll_sees_due_and_running_jobs_but_not_future_ones():
    from bench import drain

    connection.ensure_connection()
    with psycopg.ClientCursor(connection.connection) as cursor:

        def due_or_running() -> bool:
            cursor.execute(drain.DUE_OR_RUNNING_JOB_EXISTS)
            return cursor.fetchone()[0]

        insert(cursor, SUCCEEDED, [])
        assert not due_or_running()
        insert(cursor, QUEUED, [], due="now() + interval '1 day'")
        cursor.execute("UPDATE jobs_job SET priority = 100 WHERE status = 'queued'")
        assert not due_or_running()
        insert(cursor, QUEUED, [], due="now() - interval '1 hour'")  # behind, at 50
        assert due_or_running()
        cursor.execute("DELETE FROM jobs_job WHERE status = 'queued' AND priority = 50")
        cursor.execute("UPDATE jobs_job SET queue = 'other' WHERE status = 'queued'")
        insert(cursor, RUNNING, [])
        assert due_or_running()
