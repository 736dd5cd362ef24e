"""The worker: real threads running jobs through the services."""

import re
import signal
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from harness import wait_until
from jobs import drivers, services, signals
from jobs.models import Job, JobEvent
from jobs.worker import WorkerConfig, make_worker_id
from tests.factories import queued_job, running_job, timeline
from tests.helpers import (
    run_workers_in_burst,
    worker_config,
    worker_runner,
)

pytestmark = pytest.mark.django_db(transaction=True)

Status = Job.Status
Event = JobEvent.Type


@pytest.mark.django_db
def test_worker_id_has_hostname_pid_thread_number_and_random_suffix():
    first, second = make_worker_id(3), make_worker_id(3)
    assert re.fullmatch(r"[^:]+:\d+:thread-3:[0-9a-f]{8}", first)
    assert first != second


@pytest.mark.django_db
@pytest.mark.parametrize(("setting", "interval"), [(0, 10.0), (4, 4)])
def test_the_heartbeat_runs_every_setting_seconds_or_a_third_of_the_lease(
    settings, setting, interval
):
    settings.JOB_WORKER_LEASE_SECONDS = 30
    settings.JOB_WORKER_HEARTBEAT_SECONDS = setting
    assert WorkerConfig.from_settings().heartbeat_interval_seconds == interval


def _batch_sizes(
    settings, driver: str, *, prepared: bool, threads: int, claim=0, complete=0, prefetch=0
):
    """The batch sizes ``WorkerConfig.from_settings`` chooses on ``driver``."""
    settings.JOB_DB_PREPARED_STATEMENTS = prepared
    settings.JOB_WORKER_CLAIM_BATCH_SIZE = claim
    settings.JOB_WORKER_COMPLETE_BATCH_SIZE = complete
    settings.JOB_WORKER_PREFETCH = prefetch
    (chosen,) = [d for d in drivers.available_drivers() if d.name == driver]
    with drivers.use_driver(chosen):
        config = WorkerConfig.from_settings(threads=threads)
    return config.claim_batch_size, config.complete_batch_size


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize(("threads", "sizes"), [(4, (4, 10)), (8, (8, 10)), (1, (1, 1))])
def test_batch_sizes_left_at_0_batch_every_thread_where_statements_are_prepared(
    settings, threads, sizes
):
    assert _batch_sizes(settings, "postgres", prepared=True, threads=threads) == sizes


@pytest.mark.django_db
def test_batch_sizes_left_at_0_stay_1_on_the_orm_driver(settings):
    assert _batch_sizes(settings, "orm", prepared=True, threads=4) == (1, 1)


@pytest.mark.postgres
@pytest.mark.django_db
def test_batch_sizes_left_at_0_stay_1_without_prepared_statements(settings):
    # Behind a transaction pooler the batched statements would be planned on every call.
    assert _batch_sizes(settings, "postgres", prepared=False, threads=4) == (1, 1)


@pytest.mark.django_db
@pytest.mark.parametrize(("prefetch", "complete"), [(2, 10), (8, 12), (36, 40)])
def test_completions_left_at_0_are_batched_by_the_jobs_in_hand_where_threads_hold_jobs(
    settings, prefetch, complete
):
    # A thread running the jobs it holds fetches only once they are done: its successes
    # would otherwise wait for that fetch. By the jobs in hand (ten at least), a batch is
    # rarely full before a fetch carries it.
    sizes = _batch_sizes(settings, "orm", prepared=False, threads=4, prefetch=prefetch)
    assert sizes == (1, complete)


@pytest.mark.parametrize(
    ("prefetch", "threads", "shares"),
    [(0, 4, [0, 0, 0, 0]), (8, 4, [2, 2, 2, 2]), (5, 2, [3, 2]), (3, 4, [1, 1, 1, 0])],
)
def test_the_prefetch_is_shared_among_the_threads(prefetch, threads, shares):
    config = worker_config(threads, prefetch=prefetch)
    assert [config.prefetch_of(number) for number in range(1, threads + 1)] == shares


@pytest.mark.django_db(transaction=True)
def test_a_replacement_thread_holds_the_share_of_the_thread_it_replaced():
    runner = worker_runner(2, prefetch=5)
    runner.start()
    try:
        # Thread 3 replaces thread 2: it holds thread 2's share, not thread 1's, so the
        # process never holds more than its prefetch.
        runner.abandon(runner.threads[1].worker_id)
        assert [thread.hold for thread in runner.threads] == [3, 2, 2]
    finally:
        runner.stop()
        runner.wait()


@pytest.mark.django_db
@pytest.mark.parametrize(("claim", "complete"), [(1, 1), (6, 3)])
def test_batch_sizes_set_are_kept(settings, claim, complete):
    sizes = _batch_sizes(settings, "orm", prepared=False, threads=4, claim=claim, complete=complete)
    assert sizes == (claim, complete)


def test_demo_success_runs_to_succeeded_with_progress_and_renewal():
    job = queued_job("demo.success", payload={"sleep_seconds": 0.1})
    runner = run_workers_in_burst()
    job.refresh_from_db()
    assert job.status == Status.SUCCEEDED
    assert job.result == {"ok": True, "slept_seconds": 0.1}
    assert timeline(job) == [
        Event.CREATED,
        Event.CLAIMED,
        Event.PROGRESS,
        Event.LEASE_RENEWED,
        Event.PROGRESS,
        Event.SUCCEEDED,
    ]
    worker_ids = set(JobEvent.objects.exclude(worker_id=None).values_list("worker_id", flat=True))
    assert worker_ids == {runner.threads[0].worker_id}


def test_demo_fail_is_retried_then_fails_with_its_error_message(settings):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 0
    job = queued_job("demo.fail", payload={"error": "Intentional demo failure"}, max_attempts=2)
    run_workers_in_burst()
    job.refresh_from_db()
    assert job.status == Status.FAILED
    assert job.attempts == 2
    assert job.last_error == "Intentional demo failure"
    types = timeline(job)
    assert types.count(Event.CLAIMED) == 2
    assert types.count(Event.RETRY_SCHEDULED) == 1
    assert types[-1] == Event.FAILED


def test_demo_fail_schedules_retry_within_the_jittered_backoff():
    job = queued_job("demo.fail", max_attempts=3)
    before = timezone.now()
    run_workers_in_burst()
    after = timezone.now()
    job.refresh_from_db()
    assert job.status == Status.QUEUED
    assert job.attempts == 1
    # Full jitter: anywhere from the failure to the ladder's 5 s after it.
    assert before <= job.available_at <= after + timedelta(seconds=5)


def test_demo_flaky_fails_until_configured_attempt_then_succeeds(settings):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 0
    job = queued_job("demo.flaky", payload={"fail_until_attempt": 3}, max_attempts=3)
    run_workers_in_burst()
    job.refresh_from_db()
    assert job.status == Status.SUCCEEDED
    assert job.attempts == 3
    assert job.result == {"ok": True, "succeeded_on_attempt": 3}
    assert timeline(job).count(Event.RETRY_SCHEDULED) == 2


def test_demo_slow_renews_its_lease_while_working():
    job = queued_job("demo.slow", payload={"sleep_seconds": 1.0})
    run_workers_in_burst(lease_seconds=1)
    job.refresh_from_db()
    assert job.status == Status.SUCCEEDED
    renewals = timeline(job).count(Event.LEASE_RENEWED)
    assert renewals >= 2


def test_demo_timeout_outlives_its_lease_and_cleanup_requeues_it(settings):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 60  # keep the requeued job out of reach
    job = queued_job("demo.timeout", payload={"sleep_seconds": 2})
    run_workers_in_burst(lease_seconds=1, cleanup_interval_seconds=0.2)
    job.refresh_from_db()
    assert (job.status, job.attempts, job.result) == (Status.QUEUED, 1, None)
    assert job.last_error == "Lease expired before the job finished"
    assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.PROGRESS, Event.TIMEOUT_REQUEUED]


def test_demo_hang_is_timed_out_retried_and_its_late_result_rejected(settings):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 60  # keep the requeued job out of reach
    job = queued_job("demo.hang", payload={"sleep_seconds": 2}, timeout_seconds=1)
    runner = run_workers_in_burst()
    stuck = runner.threads[0]
    assert stuck.abandoned and stuck.is_alive()  # still asleep in the handler
    stuck.join(timeout=10)  # the handler returns late: its result must change nothing
    job.refresh_from_db()
    assert job.status == Status.QUEUED
    assert job.last_error == "Timed out after 1 s"
    assert job.result is None
    assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.PROGRESS, Event.RETRY_SCHEDULED]
    assert JobEvent.objects.get(job=job, type=Event.RETRY_SCHEDULED).data["reason"] == "timeout"
    assert [t.abandoned for t in runner.threads] == [True, False]  # it was replaced


def test_handler_exception_message_becomes_last_error(register_handler):
    def explode(context):
        raise ValueError("payload is missing the thing")

    register_handler("test.explode", explode)
    job = queued_job("test.explode", max_attempts=1)
    run_workers_in_burst()
    job.refresh_from_db()
    assert job.status == Status.FAILED
    assert job.last_error == "payload is missing the thing"


def test_result_that_is_not_json_fails_the_job_with_a_clear_message(register_handler):
    register_handler("test.not_json", lambda context: {"when": object()})
    register_handler("test.nan", lambda context: {"value": float("nan")})
    not_json = queued_job("test.not_json", max_attempts=1)
    nan = queued_job("test.nan", max_attempts=1)
    run_workers_in_burst()
    for job in (not_json, nan):
        job.refresh_from_db()
        assert job.status == Status.FAILED
        assert "Handler returned a result that cannot be stored" in job.last_error


def test_job_type_without_handler_fails_with_message():
    job = queued_job("nobody.handles.this", max_attempts=1)
    run_workers_in_burst()
    job.refresh_from_db()
    assert job.status == Status.FAILED
    assert "No handler or task is registered for job type 'nobody.handles.this'" in job.last_error


def test_handler_that_lost_its_lease_stops_without_writing(register_handler):
    def lose_lease(context):
        # As after a long pause: the lease expires, cleanup requeues, another worker claims.
        later = timezone.now() + timedelta(hours=1)
        services.cleanup_expired_jobs(now=later, worker_id="cleaner")
        services.claim_next_job(worker_id="someone-else", now=later + timedelta(hours=1))
        context.renew()
        return {"should": "never be stored"}

    register_handler("test.lose_lease", lose_lease)
    job = queued_job("test.lose_lease")
    run_workers_in_burst()
    job.refresh_from_db()
    assert job.status == Status.RUNNING
    assert job.locked_by == "someone-else"
    assert job.result is None
    assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.TIMEOUT_REQUEUED, Event.CLAIMED]


def test_the_maintenance_thread_runs_expired_lease_cleanup():
    past = timezone.now() - timedelta(seconds=5)
    job = running_job("demo.success", worker_id="dead-worker", now=past, lease_seconds=1)
    runner = run_workers_in_burst()
    # Requeued with a backoff, so the burst does not claim it again.
    assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.TIMEOUT_REQUEUED]
    requeue = JobEvent.objects.get(job=job, type=Event.TIMEOUT_REQUEUED)
    assert requeue.worker_id == runner.maintenance.worker_id


def test_several_threads_drain_the_queue_each_job_once(register_handler):
    register_handler("test.noop", lambda context: {"attempt": context.attempt})
    jobs = [queued_job("test.noop") for _ in range(60)]
    runner = run_workers_in_burst(threads=4)
    assert Job.objects.filter(status=Status.SUCCEEDED).count() == len(jobs)
    assert JobEvent.objects.filter(type=Event.CLAIMED).count() == len(jobs)
    assert sum(t.jobs_processed for t in runner.threads) == len(jobs)


def test_first_signal_stops_claiming_and_lets_in_flight_job_finish():
    job = queued_job("demo.success", payload={"sleep_seconds": 0.5})
    runner = worker_runner(threads=2)
    runner.start()
    # Waits for the handler to begin: a job claimed but not yet handed over at the stop is released.
    wait_until(lambda: any(t.current is not None for t in runner.threads), 10, "the handler")
    runner._on_signal(signal.SIGTERM, None)
    late = queued_job("demo.success")
    runner.wait()
    job.refresh_from_db()
    late.refresh_from_db()
    assert job.status == Status.SUCCEEDED
    assert late.status == Status.QUEUED


@pytest.mark.postgres
def test_worker_thread_reconnects_after_its_database_connection_is_killed(register_handler):
    processed = []

    def record(context):
        processed.append(context.job_id)
        return None

    register_handler("test.record", record)
    errors = []

    def on_database_error(sender, component, error, **kwargs):
        errors.append(component)

    signals.database_error.connect(on_database_error)
    runner = worker_runner(threads=1)
    runner.start()
    try:
        first = queued_job("test.record")
        wait_until(lambda: first.pk in processed, 10, "first job")
        wait_until(
            lambda: Job.objects.get(pk=first.pk).status == Status.SUCCEEDED, 10, "first done"
        )
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            assert cursor.fetchone()[0] >= 1
        second = queued_job("test.record")
        wait_until(
            lambda: Job.objects.get(pk=second.pk).status == Status.SUCCEEDED, 20, "second done"
        )
        assert runner.threads[0].is_alive()
        # The metrics hear of it: the thread's next claim met the dead connection.
        assert "thread" in errors
    finally:
        signals.database_error.disconnect(on_database_error)
        runner.stop()
        runner.wait()
