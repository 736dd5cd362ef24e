"""The hot table's vacuum (jobs/worker/maintenance/vacuum.py): jobs_job is
vacuumed as soon as its dead row versions pass both the threshold autovacuum itself would
act on and JOB_WORKER_VACUUM_DEAD_ROWS, by the maintenance pass of a worker process, and
never otherwise. Real PostgreSQL statistics; committed rows (VACUUM refuses a
transaction)."""

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from django.db import connection

from harness import wait_until
from jobs import services
from jobs.models import Job
from jobs.worker.attempts import InFlight
from jobs.worker.maintenance import HotTableVacuum, Maintenance
from tests.factories import inserted_jobs, queued_jobs
from tests.helpers import worker_config

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

# Migration 0009's autovacuum_vacuum_threshold for jobs_job; its scale factor (0.02) adds
# nothing on a table of a few thousand rows. The tests' floor lies below it, then above.
THRESHOLD = 1_000


def _stat(column: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")  # this backend's counts, now
        cursor.execute(
            f"SELECT {column} FROM pg_stat_user_tables WHERE relid = 'jobs_job'::regclass"
        )
        return int(cursor.fetchone()[0])


def _dead_rows(count: int) -> None:
    """``count`` dead row versions in jobs_job, as every claim leaves one, after a vacuum
    that cleared whatever earlier tests left."""
    with connection.cursor() as cursor:
        cursor.execute("VACUUM jobs_job")
    jobs = queued_jobs(count)
    Job.objects.filter(pk__in=[job.id for job in jobs]).update(priority=1)
    assert _stat("n_dead_tup") >= count


def test_jobs_job_is_vacuumed_once_its_dead_rows_pass_autovacuums_threshold():
    _dead_rows(THRESHOLD + 500)
    vacuums = _stat("vacuum_count")
    vacuumed = services.vacuum_jobs_table(min_dead_rows=100)
    assert vacuumed.dead_rows >= THRESHOLD + 500
    assert vacuumed.remaining == 0
    assert _stat("vacuum_count") == vacuums + 1
    assert _stat("n_dead_tup") == 0


def test_a_table_below_autovacuums_threshold_is_left_alone():
    _dead_rows(THRESHOLD // 2)
    vacuums = _stat("vacuum_count")
    assert services.vacuum_jobs_table(min_dead_rows=100) is None
    assert _stat("vacuum_count") == vacuums


def test_a_table_below_the_floor_is_left_alone():
    _dead_rows(THRESHOLD + 500)
    vacuums = _stat("vacuum_count")
    assert services.vacuum_jobs_table(min_dead_rows=THRESHOLD * 10) is None
    assert _stat("vacuum_count") == vacuums


@contextmanager
def _autovacuum_enabled(value: str) -> Iterator[None]:
    """jobs_job's ``autovacuum_enabled`` storage parameter at ``value`` inside the block."""
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE jobs_job SET (autovacuum_enabled = {value})")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE jobs_job RESET (autovacuum_enabled)")


@pytest.mark.parametrize("spelling", ["false", "off"])
def test_a_table_whose_autovacuum_is_disabled_is_left_alone(spelling):
    _dead_rows(THRESHOLD + 500)
    vacuums = _stat("vacuum_count")
    with _autovacuum_enabled(spelling):
        assert services.vacuum_jobs_table(min_dead_rows=100) is None
    assert _stat("vacuum_count") == vacuums


def _one_maintenance_pass(dead_rows: int) -> None:
    """A worker process's maintenance thread with ``JOB_WORKER_VACUUM_DEAD_ROWS`` at
    ``dead_rows``, stopped after its first pass."""
    maintenance = Maintenance(
        worker_config(vacuum_dead_rows=dead_rows),
        InFlight(),
        stopping=threading.Event(),
        abandon=lambda worker_id: None,
        record=lambda outcome: None,
    )
    maintenance.start()
    try:
        assert maintenance.first_pass.wait(30)
    finally:
        maintenance.finished.set()
        maintenance.join(timeout=10)


def _the_maintenance_pass_counts_one_unless_off(dead_rows: int, column: str) -> None:
    """One maintenance pass with ``JOB_WORKER_VACUUM_DEAD_ROWS`` at ``dead_rows`` adds one
    to ``column`` of the table's statistics (``vacuum_count``, ``analyze_count``), or
    nothing when the setting is 0."""
    before = _stat(column)
    _one_maintenance_pass(dead_rows)
    if dead_rows:
        wait_until(lambda: _stat(column) == before + 1, 5, f"the maintenance pass's {column}")
    else:
        assert _stat(column) == before


@pytest.mark.parametrize("dead_rows", [100, 0], ids=["floor", "off"])
def test_the_maintenance_pass_vacuums_unless_the_setting_is_off(dead_rows):
    _dead_rows(THRESHOLD + 500)
    _the_maintenance_pass_counts_one_unless_off(dead_rows, "vacuum_count")


def test_dead_rows_an_older_transaction_still_sees_wait_for_as_many_again():
    # A vacuum cannot remove what an open transaction may still read: the maintenance pass
    # then waits for another floor's worth before it rereads every index.
    other = connection.get_new_connection(connection.get_connection_params())
    try:
        other.autocommit = False
        other.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        other.execute("SELECT count(*) FROM jobs_job")  # its snapshot holds the horizon
        _dead_rows(THRESHOLD + 500)
        vacuum = HotTableVacuum(min_dead_rows=100)
        first = vacuum.run_once()
        assert first is not None and first.remaining >= THRESHOLD + 500
        vacuums = _stat("vacuum_count")
        assert vacuum.run_once() is None
        assert _stat("vacuum_count") == vacuums
    finally:
        other.close()


def _stale_estimate(live_rows: int) -> None:
    """A vacuum of the drained table (the planner then believes in 0 rows over the pages it
    kept), then ``live_rows`` queued jobs that no ANALYZE has seen."""
    Job.objects.all().delete()
    queued_jobs(live_rows)
    Job.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (TRUNCATE false) jobs_job")
    queued_jobs(live_rows)
    _stat("n_live_tup")  # flushes this backend's counts


def _reltuples() -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = 'jobs_job'::regclass")
        return float(cursor.fetchone()[0])


def test_a_backlog_the_planner_believes_empty_is_analyzed():
    _stale_estimate(1_500)
    assert _reltuples() == 0
    analyzes = _stat("analyze_count")
    analyzed = services.analyze_jobs_table(min_rows=1_000)
    assert analyzed is not None
    # The collector's count (1,500) or, while it lags, the direct count up to the first row
    # that makes the estimate stale (1,001): which one is a matter of timing.
    assert analyzed.estimated_rows == 0 and analyzed.live_rows in {1_001, 1_500}
    assert _stat("analyze_count") == analyzes + 1
    assert _reltuples() == 1_500
    # Now the planner's count is current: nothing more to do.
    assert services.analyze_jobs_table(min_rows=1_000) is None
    assert _stat("analyze_count") == analyzes + 1


def test_a_backlog_the_planner_believes_empty_is_analyzed_before_the_statistics_count_it():
    # The cumulative statistics reach other backends up to a second after a commit: a
    # backlog that just arrived is counted where the planner believes in (almost) nothing.
    _stale_estimate(1_500)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_reset_single_table_counters('jobs_job'::regclass)")
    assert _stat("n_live_tup") == 0
    analyzed = services.analyze_jobs_table(min_rows=1_000)
    assert analyzed is not None
    assert analyzed.estimated_rows == 0
    assert analyzed.live_rows == 1_001  # counted up to the first row that makes it stale
    assert _reltuples() == 1_500


def test_a_row_estimate_within_the_floor_is_left_alone():
    _stale_estimate(500)
    analyzes = _stat("analyze_count")
    assert services.analyze_jobs_table(min_rows=1_000) is None
    assert _stat("analyze_count") == analyzes


def test_a_table_whose_autovacuum_is_disabled_is_not_analyzed_either():
    _stale_estimate(1_500)
    analyzes = _stat("analyze_count")
    with _autovacuum_enabled("false"):
        assert services.analyze_jobs_table(min_rows=1_000) is None
    assert _stat("analyze_count") == analyzes


@pytest.mark.parametrize("dead_rows", [100, 0], ids=["floor", "off"])
def test_the_maintenance_pass_analyzes_a_stale_estimate_unless_the_setting_is_off(dead_rows):
    _stale_estimate(services.STALE_ESTIMATE_MIN_ROWS + 500)
    _the_maintenance_pass_counts_one_unless_off(dead_rows, "analyze_count")


@contextmanager
def _maintenance_checking(monkeypatch, in_flight: InFlight, *, cleanup_interval_seconds: int):
    """A maintenance thread whose stale-estimate checks are only counted: yields the
    monotonic time of each, and stops the thread on leaving."""
    from jobs.worker import maintenance as maintenance_module

    calls: list[float] = []
    monkeypatch.setattr(
        maintenance_module.vacuum.services,
        "analyze_jobs_table",
        lambda: calls.append(time.monotonic()),
    )
    maintenance = Maintenance(
        worker_config(vacuum_dead_rows=100, cleanup_interval_seconds=cleanup_interval_seconds),
        in_flight,
        stopping=threading.Event(),
        abandon=lambda worker_id: None,
        record=lambda outcome: None,
    )
    maintenance.start()
    try:
        yield calls
    finally:
        maintenance.stop()
        maintenance.join(timeout=10)
        assert not maintenance.is_alive()


def _an_attempt():
    from types import SimpleNamespace

    from jobs.worker.attempts import Attempt

    job = SimpleNamespace(id="a-job", attempts=1)
    return Attempt(job, SimpleNamespace(worker_id="w"), None)  # type: ignore[arg-type]


@pytest.mark.parametrize("running", [False, True], ids=["idle", "busy"])
def test_a_stale_estimate_is_looked_for_every_second_only_while_attempts_run(monkeypatch, running):
    # An idle worker's cost stays what it was: the check waits for the cleanup interval.
    in_flight = InFlight()
    if running:
        in_flight.add(_an_attempt())
    with _maintenance_checking(monkeypatch, in_flight, cleanup_interval_seconds=5) as calls:
        time.sleep(2.5)
    if running:
        assert len(calls) >= 2  # the first pass, then a second later
    else:
        assert len(calls) == 1  # the next one is a cleanup interval (5 s) away


def test_a_backlog_arriving_at_an_idle_worker_is_looked_at_within_a_second(monkeypatch):
    # Idle, the next check is a cleanup interval away; the first attempt claimed must not
    # wait for it: the claims of the backlog run under the statistics the check corrects.
    in_flight = InFlight()
    with _maintenance_checking(monkeypatch, in_flight, cleanup_interval_seconds=30) as calls:
        wait_until(lambda: len(calls) == 1, 10, "the first pass's check")
        time.sleep(1.5)
        assert len(calls) == 1  # idle: the next check is 30 s away
        arrived = time.monotonic()
        in_flight.add(_an_attempt())
        wait_until(lambda: len(calls) == 2, 5, "the check after the first claim")
        assert calls[1] - arrived < 0.5  # the last check was over a second ago: at once
        wait_until(lambda: len(calls) == 3, 5, "the busy cadence")
        assert 0.8 < calls[2] - calls[1] < 2.0


def test_a_backlog_beside_many_analyzed_waiting_jobs_is_analyzed():
    # The row count stays within bounds (1,500 queued beside 20,000 waiting the planner
    # knows of), while every plan still believes in no queued row.
    inserted_jobs(20_000, status="waiting")
    queued_jobs(1_500)
    analyzes = _stat("analyze_count")
    analyzed = services.analyze_jobs_table(min_rows=1_000)
    assert analyzed is not None
    assert _stat("analyze_count") == analyzes + 1
    # The planner now knows the queued rows: nothing more to do.
    assert services.analyze_jobs_table(min_rows=1_000) is None
