"""The heartbeat alone (jobs/worker/maintenance/heartbeat.py): one statement renews every
lease the process holds, and the answer marks the attempts lost or asked to cancel."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import services
from jobs.worker.attempts import Attempt, InFlight
from jobs.worker.maintenance import Heartbeat
from jobs.worker.maintenance.heartbeat import HeartbeatPass
from tests.factories import WORKER, fresh, running_job, timeline

pytestmark = pytest.mark.django_db

OTHER_WORKER = "tests:1:thread-2:0000cafe"


def in_flight(*attempts: Attempt, held: tuple[Attempt, ...] = ()) -> InFlight:
    """The attempts running (their handlers started), and ``held`` ones claimed ahead."""
    running = InFlight()
    for attempt in (*attempts, *held):
        running.add(attempt)
    for attempt in attempts:
        if attempt.started is None:
            running.start(attempt)
    return running


def attempt_of(job, **kwargs) -> Attempt:
    return Attempt(job=job, worker_id=WORKER, timeout_seconds=None, **kwargs)


def test_one_beat_renews_every_lease_without_an_event():
    soon = timezone.now() - timedelta(seconds=25)
    jobs = [running_job(now=soon, lease_seconds=30) for _ in range(3)]
    beat = Heartbeat(in_flight(*map(attempt_of, jobs)), lease_seconds=30)
    assert beat.run_once() == HeartbeatPass(renewed=3, lost=0, cancel_requested=0)
    for job in jobs:
        assert fresh(job).locked_until > timezone.now() + timedelta(seconds=25)
        assert timeline(job) == ["created", "claimed"]


@pytest.mark.postgres
def test_a_beat_is_one_statement_however_many_attempts(django_assert_num_queries):
    jobs = [running_job() for _ in range(3)]
    beat = Heartbeat(in_flight(*map(attempt_of, jobs)), lease_seconds=30)
    with django_assert_num_queries(1):
        assert beat.run_once().renewed == 3


def test_nothing_running_costs_no_statement(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert Heartbeat(InFlight(), lease_seconds=30).run_once() == HeartbeatPass(0, 0, 0)


def test_an_attempt_another_process_took_back_is_marked_lost():
    job = running_job(lease_seconds=1)
    services.cleanup_expired_jobs(now=timezone.now() + timedelta(seconds=5), worker_id="other")
    attempt = attempt_of(job)
    assert Heartbeat(in_flight(attempt), lease_seconds=30).run_once().lost == 1
    assert attempt.state.lost and fresh(job).status == "queued"


def test_a_cancel_request_is_seen_at_the_next_beat_and_counted_once():
    job = running_job()
    services.cancel_job(job_id=job.pk)
    attempt = attempt_of(job)
    beat = Heartbeat(in_flight(attempt), lease_seconds=30)
    assert beat.run_once() == HeartbeatPass(renewed=1, lost=0, cancel_requested=1)
    assert attempt.state.cancel_requested
    assert beat.run_once() == HeartbeatPass(renewed=1, lost=0, cancel_requested=0)


def test_an_attempt_past_its_deadline_or_timed_out_is_not_renewed():
    overdue, timed_out = running_job(), running_job()
    late = Attempt(job=overdue, worker_id=WORKER, timeout_seconds=1, started=time.monotonic() - 10)
    ended = attempt_of(timed_out)
    ended.state.timed_out = True
    locked = [fresh(overdue).locked_until, fresh(timed_out).locked_until]
    assert Heartbeat(in_flight(late, ended), lease_seconds=300).run_once().renewed == 0
    assert [fresh(overdue).locked_until, fresh(timed_out).locked_until] == locked


# --- a job's later attempt beside the one that lost it, in one process ------------------------


@pytest.fixture
def lost_and_retaken():
    """Attempt 1 (``WORKER``) lost its job to cleanup and another thread of the same
    process claimed attempt 2; attempt 1's handler is still running. Both are in flight."""
    job = running_job(lease_seconds=1, max_attempts=3)
    first = attempt_of(fresh(job))
    later = timezone.now() + timedelta(minutes=1)
    services.cleanup_expired_jobs(now=later, worker_id="other")
    claimed = services.claim_next_job(worker_id=OTHER_WORKER, now=later + timedelta(minutes=1))
    assert claimed is not None and claimed.attempts == 2
    second = Attempt(job=claimed, worker_id=OTHER_WORKER, timeout_seconds=None)
    return first, second


def test_an_attempt_whose_job_a_later_attempt_of_this_process_holds_is_marked_lost(
    lost_and_retaken,
):
    first, second = lost_and_retaken
    beat = Heartbeat(in_flight(first, second), lease_seconds=30).run_once()
    assert beat == HeartbeatPass(renewed=1, lost=1, cancel_requested=0)
    assert (first.state.lost, second.state.lost) == (True, False)


def test_a_cancel_request_for_the_later_attempt_is_not_taken_for_the_lost_ones(
    lost_and_retaken,
):
    first, second = lost_and_retaken
    services.cancel_job(job_id=second.job.id)
    Heartbeat(in_flight(first, second), lease_seconds=30).run_once()
    assert (first.state.cancel_requested, second.state.cancel_requested) == (False, True)


# --- handlers that opted out of the heartbeat (heartbeat=False) --------------------------------


def test_an_attempt_without_heartbeat_keeps_the_lease_it_has():
    job = running_job(lease_seconds=3)
    attempt = attempt_of(job, heartbeat=False)
    assert Heartbeat(in_flight(attempt), lease_seconds=30).run_once() == HeartbeatPass(0, 0, 0)
    assert fresh(job).locked_until == job.locked_until


def test_a_held_attempt_is_renewed_although_its_handler_opted_out():
    # The opt-out covers the time the handler runs; until then the worker holds the job.
    job = running_job(lease_seconds=3)
    held = attempt_of(job, heartbeat=False)
    assert Heartbeat(in_flight(held=(held,)), lease_seconds=30).run_once().renewed == 1
    assert fresh(job).locked_until > timezone.now() + timedelta(seconds=25)


def test_an_attempt_without_heartbeat_still_sees_its_cancel_request():
    job = running_job()
    services.cancel_job(job_id=job.pk)
    attempt = attempt_of(job, heartbeat=False)
    beat = Heartbeat(in_flight(attempt), lease_seconds=30).run_once()
    assert beat == HeartbeatPass(renewed=0, lost=0, cancel_requested=1)
    assert attempt.state.cancel_requested


def test_an_attempt_without_heartbeat_whose_lease_cleanup_took_back_is_marked_lost():
    job = running_job(lease_seconds=1)
    services.cleanup_expired_jobs(now=timezone.now() + timedelta(seconds=5), worker_id="other")
    attempt = attempt_of(job, heartbeat=False)
    assert Heartbeat(in_flight(attempt), lease_seconds=30).run_once().lost == 1
    assert attempt.state.lost


@pytest.mark.postgres
def test_attempts_with_and_without_heartbeat_share_one_statement(django_assert_num_queries):
    renewing, watched = running_job(), running_job()
    running = in_flight(attempt_of(renewing), attempt_of(watched, heartbeat=False))
    with django_assert_num_queries(1):
        assert Heartbeat(running, lease_seconds=30).run_once() == HeartbeatPass(1, 0, 0)
