"""The retry policy: a type's ``backoff`` callable, ``retry_on``/``give_up_on``, the
default backoff's full jitter, and ``snooze``; through handlers registered with
``jobs.handlers.register`` (jobs created over REST) and through ``@task`` tasks, run by
real worker threads in this process."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from jobs import services
from jobs.drivers import Owner
from jobs.limits import RETRY_DELAY_MAX_SECONDS
from jobs.models import Job, JobEvent
from tests import retry_handlers
from tests.factories import WORKER, fresh, queued_jobs, running_job, timeline
from tests.helpers import run_workers_in_burst

pytestmark = pytest.mark.django_db(transaction=True)

Status = Job.Status
Event = JobEvent.Type


def created_over_rest(client, type: str, payload: dict[str, Any], max_attempts: int = 3) -> Job:
    body = {"type": type, "payload": payload, "max_attempts": max_attempts}
    response = client.post("/api/jobs/", body, content_type="application/json")
    assert response.status_code == 201, response.content
    return Job.objects.get(pk=response.json()["id"])


def ran(job: Job) -> Job:
    run_workers_in_burst()
    return fresh(job)


def last_event(job: Job, type: str) -> JobEvent:
    return JobEvent.objects.filter(job_id=job.pk, type=type).latest("id")


def retry_delay(job: Job) -> float:
    return last_event(job, Event.RETRY_SCHEDULED).data["delay_seconds"]


def enqueued(task: Any, *args: Any) -> Job:
    return Job.objects.get(pk=task.enqueue(*args).id)


# --- backoff= on a registered handler -------------------------------------------------------


def test_a_backoff_answer_in_seconds_schedules_the_retry_that_far_ahead(client):
    job = ran(created_over_rest(client, "retry.backoff", {"answer": 42}))
    event = last_event(job, Event.RETRY_SCHEDULED)
    assert (job.status, job.attempts, event.data["delay_seconds"]) == (Status.QUEUED, 1, 42)
    assert job.available_at == event.created_at + timedelta(seconds=42)


def test_a_backoff_answer_of_none_fails_the_job_though_attempts_remain(client):
    job = ran(created_over_rest(client, "retry.backoff", {"answer": None}))
    assert (job.status, job.attempts, job.max_attempts) == (Status.FAILED, 1, 3)
    assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.FAILED]


def test_a_negative_backoff_answer_is_clamped_to_no_wait(client):
    job = ran(created_over_rest(client, "retry.backoff", {"answer": -30}, max_attempts=2))
    # Due at once, so the burst ran the second attempt too.
    assert (job.status, job.attempts) == (Status.FAILED, 2)
    assert retry_delay(job) == 0


@pytest.mark.parametrize("answer", [10**12, "inf"])
def test_a_huge_backoff_answer_is_clamped_to_the_cap(client, answer):
    job = ran(created_over_rest(client, "retry.backoff", {"answer": answer}))
    assert (job.status, retry_delay(job)) == (Status.QUEUED, RETRY_DELAY_MAX_SECONDS)


@pytest.mark.parametrize("answer", ["nan", "soon", True])
def test_a_backoff_answer_that_is_no_number_gets_the_default_backoff(client, settings, answer):
    job = ran(created_over_rest(client, "retry.backoff", {"answer": answer}))
    assert job.status == Status.QUEUED
    assert 0 <= retry_delay(job) <= settings.JOB_WORKER_BACKOFF_BASE_SECONDS


# --- backoff= on a task ---------------------------------------------------------------------


def test_a_task_s_backoff_answer_in_seconds_schedules_its_retry():
    job = ran(enqueued(retry_handlers.backoff_task, 42))
    assert (job.status, job.attempts, retry_delay(job)) == (Status.QUEUED, 1, 42)


def test_a_task_s_backoff_answer_of_none_fails_it_though_attempts_remain():
    job = ran(enqueued(retry_handlers.backoff_task, None))
    assert (job.status, job.attempts, job.max_attempts) == (Status.FAILED, 1, 3)


# --- retry_on / give_up_on -------------------------------------------------------------------


def test_retry_on_retries_the_exceptions_it_names(client):
    job = ran(created_over_rest(client, "retry.only_transient", {"raise": "transient"}))
    assert (job.status, timeline(job)[-1]) == (Status.QUEUED, Event.RETRY_SCHEDULED)


def test_retry_on_fails_any_other_exception_at_once(client):
    job = ran(created_over_rest(client, "retry.only_transient", {"raise": "other"}))
    assert (job.status, job.attempts, timeline(job)[-1]) == (Status.FAILED, 1, Event.FAILED)


def test_give_up_on_fails_its_exceptions_at_once(client):
    job = ran(created_over_rest(client, "retry.not_permanent", {"raise": "permanent"}))
    assert (job.status, job.attempts, timeline(job)[-1]) == (Status.FAILED, 1, Event.FAILED)
    assert last_event(job, Event.FAILED).data["exception_class"] == "tests.retry_handlers.Permanent"


def test_give_up_on_retries_the_other_exceptions(client):
    job = ran(created_over_rest(client, "retry.not_permanent", {"raise": "other"}))
    assert (job.status, timeline(job)[-1]) == (Status.QUEUED, Event.RETRY_SCHEDULED)


def test_a_task_s_give_up_on_wins_over_its_retry_on():
    job = ran(enqueued(retry_handlers.per_exception_task, "permanent"))
    assert (job.status, job.attempts) == (Status.FAILED, 1)


def test_a_task_s_retry_on_retries_the_exceptions_it_names():
    job = ran(enqueued(retry_handlers.per_exception_task, "transient"))
    assert (job.status, job.attempts) == (Status.QUEUED, 1)


def test_a_task_s_retry_on_fails_any_other_exception_at_once():
    job = ran(enqueued(retry_handlers.per_exception_task, "other"))
    assert (job.status, job.attempts) == (Status.FAILED, 1)


def test_the_policy_still_ends_the_job_at_max_attempts(client):
    job = ran(created_over_rest(client, "retry.backoff", {"answer": 0}, max_attempts=2))
    assert (job.status, job.attempts) == (Status.FAILED, 2)


# --- The default backoff's full jitter -------------------------------------------------------


@pytest.mark.parametrize("attempt", [1, 2, 3, 7, 100])
def test_the_default_backoff_is_within_zero_and_the_ladder(attempt):
    ceiling = services.backoff_delay_seconds(attempt)
    delays = [services.jittered_backoff_seconds(attempt) for _ in range(200)]
    assert all(0 <= delay <= ceiling for delay in delays)


def test_the_default_backoff_is_uniform_over_the_ladder_for_a_seeded_random():
    random.seed(7)
    expected = round(random.Random(7).uniform(0, services.backoff_delay_seconds(3)), 3)
    assert services.jittered_backoff_seconds(3) == expected


def test_a_hundred_failures_at_once_spread_their_retries_over_the_window(settings):
    window = settings.JOB_WORKER_BACKOFF_BASE_SECONDS
    jobs = queued_jobs(100, "retry.only_transient", payload={"raise": "transient"})
    run_workers_in_burst(threads=4)
    # The first failure of each (a retry due within the burst may have failed again).
    delays = sorted(
        JobEvent.objects.filter(
            job_id__in=[job.id for job in jobs], type=Event.RETRY_SCHEDULED, attempt=1
        ).values_list("data__delay_seconds", flat=True)
    )
    assert len(delays) == 100
    assert all(0 <= delay <= window for delay in delays)
    # Spread over the window: not one instant, every fifth of it reached.
    assert len(set(delays)) > 90
    fifths = {min(int(delay / window * 5), 4) for delay in delays}
    assert fifths == {0, 1, 2, 3, 4}


# --- snooze ----------------------------------------------------------------------------------


def test_a_snoozed_handler_s_job_is_queued_with_its_attempt_not_spent(client):
    job = ran(created_over_rest(client, "retry.snooze", {"seconds": 60}, max_attempts=1))
    assert (job.status, job.attempts, job.locked_by) == (Status.QUEUED, 0, None)
    assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.SNOOZED]


def test_a_snoozed_event_says_for_how_long_and_its_attempt(client):
    job = ran(created_over_rest(client, "retry.snooze", {"seconds": 60}))
    event = last_event(job, Event.SNOOZED)
    assert (event.data["seconds"], event.attempt) == (60, 1)
    assert job.available_at == event.created_at + timedelta(seconds=60)


def test_a_snoozed_job_is_claimable_again_after_its_time_and_not_before(client):
    job = ran(created_over_rest(client, "retry.snooze", {"seconds": 60}))
    soon = timezone.now() + timedelta(seconds=59)
    assert services.claim_next_job(worker_id=WORKER, now=soon) is None
    later = job.available_at + timedelta(seconds=1)
    claimed = services.claim_next_job(worker_id=WORKER, now=later)
    assert claimed is not None and (claimed.id, claimed.attempts) == (job.id, 1)


def test_a_snoozed_run_is_not_listed_among_the_job_s_attempts(client):
    job = ran(created_over_rest(client, "retry.snooze", {"seconds": 60}))
    services.claim_next_job(worker_id=WORKER, now=job.available_at + timedelta(seconds=1))
    attempts = client.get(f"/api/jobs/{job.pk}/attempts/").json()
    assert [(each["attempt"], each["outcome"]) for each in attempts] == [(1, "running")]


def test_a_snooze_of_no_valid_wait_fails_the_attempt(client):
    job = ran(created_over_rest(client, "retry.snooze", {"seconds": -1}))
    assert (job.status, job.attempts) == (Status.QUEUED, 1)
    assert last_event(job, Event.RETRY_SCHEDULED).data["exception_class"] == "builtins.ValueError"


def test_a_snoozed_task_is_queued_with_its_attempt_not_spent():
    job = ran(enqueued(retry_handlers.snoozing_task, 60))
    assert (job.status, job.attempts, job.max_attempts) == (Status.QUEUED, 0, 1)
    assert timeline(job)[-1] == Event.SNOOZED


# --- The services' part ----------------------------------------------------------------------


def test_snooze_by_a_worker_that_no_longer_owns_the_attempt_writes_nothing():
    job = running_job()
    assert services.snooze_job(job_id=job.pk, worker_id="other", attempt=1, seconds=5) is None
    assert (fresh(job).status, timeline(job)[-1]) == (Status.RUNNING, Event.CLAIMED)


def test_snooze_of_a_job_whose_cancel_was_requested_cancels_it():
    job = running_job()
    services.cancel_job(job_id=job.pk)
    row = services.snooze_job(job_id=job.pk, worker_id=WORKER, attempt=1, seconds=5)
    assert row is not None and row.status == Status.CANCELLED


@pytest.mark.parametrize("seconds", [-1, float("nan"), RETRY_DELAY_MAX_SECONDS + 1, "5"])
def test_snooze_refuses_a_wait_out_of_bounds_before_any_write(seconds):
    job = running_job()
    with pytest.raises(ValueError, match="snooze seconds"):
        services.snooze_job(job_id=job.pk, worker_id=WORKER, attempt=1, seconds=seconds)
    assert fresh(job).status == Status.RUNNING


def test_a_failure_given_up_fails_the_job_though_attempts_remain():
    job = running_job(max_attempts=3)
    failure = services.AttemptFailure(Owner(job.pk, WORKER, 1), "boom", give_up=True)
    (row,) = services.fail_jobs(failures=[failure])
    assert (row.status, row.attempts, timeline(job)[-1]) == (Status.FAILED, 1, Event.FAILED)


def test_a_failure_with_a_delay_is_retried_that_far_ahead():
    now = timezone.now()
    job = running_job(max_attempts=3, now=now)
    failure = services.AttemptFailure(Owner(job.pk, WORKER, 1), "boom", delay_seconds=1.5)
    (row,) = services.fail_jobs(failures=[failure], now=now)
    assert (row.status, row.available_at) == (Status.QUEUED, now + timedelta(seconds=1.5))
