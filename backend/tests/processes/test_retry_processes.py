"""The retry policy end to end: ``manage.py run_job_workers`` as a child process, with the
handlers and tasks of ``tests.retry_handlers``, on PostgreSQL. The in-process versions are
in integration/worker/test_retry_policy.py."""

from __future__ import annotations

import pytest

from harness import wait_until
from jobs.models import Job, JobEvent
from tests import retry_handlers
from tests.factories import fresh, queued_job, queued_jobs, timeline
from tests.helpers import WorkerProcess, stop_all

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

Status = Job.Status
Event = JobEvent.Type


def finished(*jobs: Job) -> bool:
    return all(fresh(job).status in (Status.SUCCEEDED, Status.FAILED) for job in jobs)


def test_a_snoozing_handler_and_a_per_exception_give_up_run_on_a_worker_process(tmp_path):
    # max_attempts=1: two snoozes that spent attempts would leave none for the success.
    snoozer = queued_job("retry.snooze", payload={"seconds": 1, "times": 2}, max_attempts=1)
    given_up = queued_job("retry.not_permanent", payload={"raise": "permanent"}, max_attempts=5)
    task_job = Job.objects.get(pk=retry_handlers.per_exception_task.enqueue("permanent").id)
    worker = WorkerProcess(
        tmp_path / "worker.log",
        "--threads",
        "2",
        JOB_HANDLER_MODULES="tests.retry_handlers",
        JOB_WORKER_POLL_INTERVAL_MS="50",
    )
    try:
        wait_until(lambda: finished(snoozer, given_up, task_job), 30, "the jobs to finish")
        assert stop_all([worker]) == [0]
    finally:
        worker.proc.kill()

    snoozer = fresh(snoozer)
    assert (snoozer.status, snoozer.attempts, snoozer.result) == (
        Status.SUCCEEDED,
        1,
        {"attempt": 1},
    )
    assert timeline(snoozer) == [
        Event.CREATED,
        *[Event.CLAIMED, Event.SNOOZED] * 2,
        Event.CLAIMED,
        Event.SUCCEEDED,
    ]
    events = list(JobEvent.objects.filter(job_id=snoozer.pk).order_by("id"))
    for snoozed, claimed in zip(events[2::2], events[3::2], strict=False):
        assert (snoozed.type, claimed.type) == (Event.SNOOZED, Event.CLAIMED)
        assert (claimed.created_at - snoozed.created_at).total_seconds() >= 1

    for job in (given_up, task_job):
        job = fresh(job)
        assert (job.status, job.attempts, timeline(job)[-1]) == (Status.FAILED, 1, Event.FAILED)


def test_a_burst_of_failures_spreads_its_retries_and_a_backoff_answer_sets_its_wait(tmp_path):
    window = 30  # the default ladder's first rung: no retry comes due within the test
    burst = queued_jobs(100, "retry.only_transient", payload={"raise": "transient"})
    answered = queued_job("retry.backoff", payload={"answer": 7})
    ids = [job.id for job in burst]

    def first_retries() -> list[float]:
        return list(
            JobEvent.objects.filter(
                job_id__in=ids, type=Event.RETRY_SCHEDULED, attempt=1
            ).values_list("data__delay_seconds", flat=True)
        )

    worker = WorkerProcess(
        tmp_path / "worker.log",
        "--threads",
        "4",
        JOB_HANDLER_MODULES="tests.retry_handlers",
        JOB_WORKER_BACKOFF_BASE_SECONDS=str(window),
        JOB_WORKER_POLL_INTERVAL_MS="50",
    )
    try:
        wait_until(
            lambda: len(first_retries()) == 100 and fresh(answered).attempts == 1,
            30,
            "a retry scheduled for every job of the burst",
        )
        assert stop_all([worker]) == [0]
    finally:
        worker.proc.kill()

    delays = first_retries()
    assert all(0 <= delay <= window for delay in delays)
    # Spread over the window: not one instant, every fifth of it reached.
    assert len(set(delays)) > 90
    assert {min(int(delay / window * 5), 4) for delay in delays} == {0, 1, 2, 3, 4}
    retry = JobEvent.objects.get(job_id=answered.pk, type=Event.RETRY_SCHEDULED)
    assert retry.data["delay_seconds"] == 7
