"""Completion: a process's successes written together by its completer
(``JOB_WORKER_COMPLETE_BATCH_SIZE`` > 1), each under its own ownership guard, or each with
its thread's next claim (a batch size of 1)."""

import threading

import pytest
from django.db import DatabaseError, OperationalError

from jobs import services, signals
from jobs.drivers import get_driver
from jobs.models import Job, JobEvent
from jobs.worker.attempts import Attempt, InFlight, Outcome
from jobs.worker.completer import InlineCompleter
from jobs.worker.fetcher import Fetcher
from jobs.worker.queues import QueueSet
from tests.factories import WORKER, fresh, queued_job, running_job, timeline
from tests.helpers import run_workers_in_burst

pytestmark = pytest.mark.django_db(transaction=True)

Status = Job.Status
Event = JobEvent.Type


def test_batched_successes_complete_every_job_once_with_its_result(register_handler):
    register_handler("test.echo", lambda context: {"n": context.payload["n"]})
    jobs = [queued_job("test.echo", payload={"n": n}) for n in range(40)]
    outcomes: list[str] = []

    def record(sender, outcome, **kwargs):
        outcomes.append(outcome)

    signals.attempt_finished.connect(record, weak=False, dispatch_uid="batched-test")
    try:
        runner = run_workers_in_burst(threads=4, complete_batch_size=10)
    finally:
        signals.attempt_finished.disconnect(dispatch_uid="batched-test")
    assert outcomes == ["succeeded"] * len(jobs)
    for job in jobs:
        job.refresh_from_db()
        assert job.status == Status.SUCCEEDED
        assert job.result == {"n": job.payload["n"]}
        assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.SUCCEEDED]
    assert runner.completer is not None
    assert 1 <= runner.completer.batches < len(jobs)


def test_an_idle_worker_writes_a_lone_success_without_waiting_for_the_interval(
    register_handler,
):
    register_handler("test.noop", lambda context: None)
    job = queued_job("test.noop")
    # A flush interval of a minute: only the idle thread's flush can write it sooner.
    runner = run_workers_in_burst(threads=2, complete_batch_size=10, complete_flush_seconds=60)
    job.refresh_from_db()
    assert job.status == Status.SUCCEEDED
    assert runner.completer is not None
    assert max(runner.completer.latencies) < 30


def test_an_unstorable_result_still_fails_its_job_when_batching(register_handler):
    register_handler("test.nan", lambda context: {"value": float("nan")})
    register_handler("test.noop", lambda context: None)
    bad = queued_job("test.nan", max_attempts=1)
    good = queued_job("test.noop")
    run_workers_in_burst(threads=2, complete_batch_size=10)
    bad.refresh_from_db()
    good.refresh_from_db()
    assert bad.status == Status.FAILED
    assert "Handler returned a result that cannot be stored" in bad.last_error
    assert good.status == Status.SUCCEEDED


def test_a_batch_size_of_one_completes_each_success_with_its_threads_next_claim(
    register_handler,
):
    register_handler("test.noop", lambda context: None)
    jobs = [queued_job("test.noop") for _ in range(6)]
    runner = run_workers_in_burst(threads=1)
    assert isinstance(runner.completer, InlineCompleter)
    assert [fresh(job).status for job in jobs] == [Status.SUCCEEDED] * 6
    # Each success but the last was written by the claim of the next job; the last, alone,
    # once the thread found nothing more to claim.
    assert runner.fetcher.fetches == 7
    assert runner.completer.batches == 6


@pytest.mark.postgres
def test_batched_completions_may_commit_without_waiting_for_the_disk(register_handler):
    register_handler("test.noop", lambda context: None)
    jobs = [queued_job("test.noop") for _ in range(12)]
    run_workers_in_burst(threads=2, complete_batch_size=5, complete_synchronous_commit=False)
    assert Job.objects.filter(status=Status.SUCCEEDED).count() == len(jobs)


@pytest.mark.postgres
def test_a_success_a_fetch_committed_is_announced_once_though_its_gated_claim_then_fails(
    monkeypatch,
):
    done = running_job("demo.success")
    in_flight = InFlight()
    completer = InlineCompleter(in_flight=in_flight, lease_seconds=30)
    attempt = Attempt(job=done, worker_id=WORKER, started=0.0)
    in_flight.add(attempt)
    completer.record(Outcome.succeeded(attempt, '{"ok": 1}'))  # waits for the next fetch
    # A limited queue: its claim is made again in a transaction of its own, after the
    # statement that wrote the success committed; that transaction fails.
    services.set_queue_limits(queue="default", concurrency_limit=5)
    queued_job("demo.success")

    def lost(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(get_driver(), "_batch", lost)
    outcomes: list[str] = []
    signals.attempt_finished.connect(
        lambda sender, outcome, **kwargs: outcomes.append(outcome),
        weak=False,
        dispatch_uid="gated-test",
    )
    try:
        fetching = Fetcher(
            batch_size=1,
            lease_seconds=30,
            queues=QueueSet(("default",), refresh_seconds=1),
            stopping=threading.Event(),
            successes=completer.take,
        )
        with pytest.raises(DatabaseError):  # nothing claimed: the thread's loop retries
            fetching.next_jobs(WORKER)
        monkeypatch.undo()
        completer.flush_now()  # nothing was given back to write again
    finally:
        signals.attempt_finished.disconnect(dispatch_uid="gated-test")
    # Announced as what it is (not found stale by a second write), and no longer in flight.
    assert outcomes == ["succeeded"]
    assert fresh(done).status == Status.SUCCEEDED
    assert in_flight.snapshot() == []
