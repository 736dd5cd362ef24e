"""Timeout enforcement (jobs/worker/maintenance/timeouts.py) with the completer that records
it: an attempt past its deadline is recorded as timed out, announced, and its thread handed
over to be replaced."""

import time

import pytest

from jobs import services, signals
from jobs.worker.attempts import Attempt, InFlight
from jobs.worker.completer import InlineCompleter
from jobs.worker.maintenance import TimeoutEnforcer
from tests.factories import WORKER, fresh, running_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def abandoned():
    return []


@pytest.fixture
def finished():
    seen = []

    def receiver(sender, outcome, row, **kwargs):
        seen.append((sender, outcome, row.status))

    signals.attempt_finished.connect(receiver)
    yield seen
    signals.attempt_finished.disconnect(receiver)


def started_ago(job, seconds: float, timeout: int | None) -> Attempt:
    return Attempt(
        job=job, worker_id=WORKER, timeout_seconds=timeout, started=time.monotonic() - seconds
    )


def enforcer(*attempts: Attempt, abandoned: list) -> TimeoutEnforcer:
    running = InFlight()
    for attempt in attempts:
        running.add(attempt)
    completer = InlineCompleter(in_flight=running, lease_seconds=30)
    return TimeoutEnforcer(running, record=completer.record, abandon=abandoned.append)


def test_an_attempt_past_its_deadline_is_failed_as_timed_out_and_its_thread_abandoned(
    abandoned, finished
):
    job = running_job(max_attempts=2)
    attempt = started_ago(job, 10, timeout=5)
    assert enforcer(attempt, abandoned=abandoned).run_once(time.monotonic()) == 1
    job = fresh(job)
    assert (job.status, job.last_error) == ("queued", "Timed out after 5 s")  # retried
    assert attempt.state.timed_out
    assert abandoned == [WORKER]
    assert finished == [(InlineCompleter, "timeout", "queued")]


def test_an_attempt_before_its_deadline_or_without_one_is_left_alone(abandoned, finished):
    soon, never = running_job(), running_job()
    timeouts = enforcer(started_ago(soon, 1, 5), started_ago(never, 99, None), abandoned=abandoned)
    assert timeouts.run_once(time.monotonic()) == 0
    assert [fresh(soon).status, fresh(never).status] == ["running", "running"]
    assert (abandoned, finished) == ([], [])


def test_an_attempt_that_finished_meanwhile_is_not_ended_again(abandoned, finished):
    job = running_job()
    attempt = started_ago(job, 10, timeout=5)
    services.complete_job(job_id=job.pk, worker_id=WORKER, attempt=job.attempts, result=1)
    assert enforcer(attempt, abandoned=abandoned).run_once(time.monotonic()) == 0
    assert fresh(job).status == "succeeded" and not attempt.state.timed_out
    assert (abandoned, finished) == ([], [])


def test_the_deadlines_to_wake_for_are_those_still_to_come(abandoned):
    pending, done, none = running_job(), running_job(), running_job()
    waiting = started_ago(pending, 0, 30)
    ended = started_ago(done, 0, 30)
    ended.state.timed_out = True
    timeouts = enforcer(waiting, ended, started_ago(none, 0, None), abandoned=abandoned)
    assert timeouts.deadlines() == [waiting.deadline]
