"""Batched fetch: a process's idle threads claim together, one statement for up
to ``JOB_WORKER_CLAIM_BATCH_SIZE`` jobs, never more than the threads waiting; lease,
cancellation, timeouts and a graceful stop still hold per job."""

import threading
import time

import pytest
from django.db import OperationalError

from jobs import services
from jobs.drivers import get_driver
from jobs.models import ConcurrencyKeyLimit, Job, JobEvent
from jobs.signals import attempt_finished, attempt_started
from jobs.worker import fetcher
from jobs.worker.attempts import Attempt, InFlight, Outcome
from jobs.worker.completer import InlineCompleter
from jobs.worker.maintenance.heartbeat import Heartbeat
from jobs.worker.queues import QueueSet
from tests.factories import WORKER, fresh, queued_job, queued_jobs, running_job, timeline
from tests.helpers import run_workers_in_burst, worker_runner

pytestmark = pytest.mark.django_db(transaction=True)

Status = Job.Status
Event = JobEvent.Type


def test_batched_fetch_runs_every_job_once(register_handler):
    register_handler("test.echo", lambda context: {"n": context.payload["n"]})
    jobs = [queued_job("test.echo", payload={"n": n}) for n in range(40)]
    runner = run_workers_in_burst(threads=4, claim_batch_size=4, complete_batch_size=10)
    for job in jobs:
        job.refresh_from_db()
        assert (job.status, job.attempts) == (Status.SUCCEEDED, 1)
        assert job.result == {"n": job.payload["n"]}
        assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.SUCCEEDED]
    assert runner.fetcher is not None
    assert runner.fetcher.claimed == len(jobs)


def test_a_fetch_claims_for_the_waiting_threads_only(register_handler, monkeypatch):
    register_handler("test.noop", lambda context: time.sleep(0.01))
    queued_jobs(60, "test.noop")
    asked: list[list[str]] = []
    claim = services.claim_jobs

    def recording(*, worker_ids, **kwargs):
        asked.append(list(worker_ids))
        return claim(worker_ids=worker_ids, **kwargs)

    monkeypatch.setattr(fetcher.services, "claim_jobs", recording)
    runner = run_workers_in_burst(threads=3, claim_batch_size=8)
    assert Job.objects.filter(status=Status.SUCCEEDED).count() == 60
    threads = {thread.worker_id for thread in runner.threads}
    for ids in asked:
        # Never more than the process's threads, each asking once: no job is held for a
        # thread that is busy.
        assert len(ids) == len(set(ids)) <= len(threads)
        assert set(ids) <= threads


def test_a_stop_releases_jobs_claimed_but_not_started(register_handler, monkeypatch):
    ran: list[str] = []
    register_handler("test.noop", lambda context: ran.append(str(context.job_id)))
    jobs = queued_jobs(4, "test.noop")
    runner = worker_runner(4, claim_batch_size=4)
    claim = services.claim_jobs
    claimed: list[object] = []

    def claim_then_stop(**kwargs):
        fetched = claim(**kwargs)
        claimed.extend(row.id for row in fetched.claimed)
        runner.stop()  # SIGTERM arrives while the batch is on its way to the threads
        return fetched

    monkeypatch.setattr(fetcher.services, "claim_jobs", claim_then_stop)
    started = time.monotonic()
    runner.start()
    runner.wait()
    assert time.monotonic() - started < 10  # no lease to wait for
    assert ran == []
    assert claimed
    for job in jobs:
        row = Job.objects.get(pk=job.id)
        assert (row.status, row.attempts, row.locked_by) == (Status.QUEUED, 0, None)
        if job.id in claimed:
            # Released at once; a fetch already under way may claim and release it again.
            events = timeline(row)
            assert events[0] == Event.CREATED and len(events) >= 3
            assert events[1:] == [Event.CLAIMED, Event.RELEASED] * ((len(events) - 1) // 2)
        else:
            assert timeline(row) == [Event.CREATED]
    # Due at once, and each runs exactly once.
    monkeypatch.setattr(fetcher.services, "claim_jobs", claim)
    run_workers_in_burst(threads=2, claim_batch_size=4)
    assert sorted(ran) == sorted(str(job.id) for job in jobs)
    for job in jobs:
        row = Job.objects.get(pk=job.id)
        assert (row.status, row.attempts) == (Status.SUCCEEDED, 1)
        assert timeline(row)[-2:] == [Event.CLAIMED, Event.SUCCEEDED]


def test_a_job_cancelled_before_its_handler_starts_never_starts(register_handler):
    ran: list[str] = []
    register_handler("test.noop", lambda context: ran.append("ran"))
    job = queued_job("test.noop")
    runner = worker_runner(1, claim_batch_size=4, burst=True)
    heartbeat = Heartbeat(runner.in_flight, lease_seconds=30)

    def cancel_then_beat(sender, job, **kwargs):
        # Between the claim and the handler: the cancel request, then the heartbeat that
        # tells the process about it.
        services.cancel_job(job_id=job.id)
        heartbeat.run_once()

    attempt_started.connect(cancel_then_beat, weak=False, dispatch_uid="cancel-before-start")
    try:
        runner.run()
    finally:
        attempt_started.disconnect(dispatch_uid="cancel-before-start")
    assert ran == []
    job.refresh_from_db()
    assert job.status == Status.CANCELLED
    assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.CANCEL_REQUESTED, Event.CANCELLED]


def test_a_timeout_counts_from_the_handler_start_not_from_the_claim(register_handler, monkeypatch):
    register_handler("test.quick", lambda context: time.sleep(0.2))
    job = queued_job("test.quick", timeout_seconds=1)
    claim = services.claim_jobs

    def slow_handoff(**kwargs):
        fetched = claim(**kwargs)
        time.sleep(1.5)  # claimed, not started, for longer than the job's timeout
        return fetched

    monkeypatch.setattr(fetcher.services, "claim_jobs", slow_handoff)
    run_workers_in_burst(threads=1, claim_batch_size=4)
    job.refresh_from_db()
    assert (job.status, job.attempts) == (Status.SUCCEEDED, 1)
    succeeded = job.events.get(type=Event.SUCCEEDED)
    assert succeeded.run_ms is not None and succeeded.run_ms >= 1500  # measured from the claim


def test_a_limited_queue_is_claimed_in_batches_within_its_limit(register_handler):
    running: list[int] = []
    most = [0]
    lock = threading.Lock()

    def tracked(context):
        with lock:
            running.append(1)
            most[0] = max(most[0], len(running))
        time.sleep(0.05)
        with lock:
            running.pop()

    register_handler("test.tracked", tracked)
    queued_jobs(8, "test.tracked", queue="emails")
    services.set_queue_limits(queue="emails", concurrency_limit=2)
    run_workers_in_burst(threads=4, claim_batch_size=4, queues=("emails",))
    assert Job.objects.filter(status=Status.SUCCEEDED).count() == 8
    assert most[0] <= 2


def queue_fetcher(*queues: str, batch_size: int = 2, **options) -> fetcher.Fetcher:
    """A fetcher of ``queues`` (taken in turn) for threads asking here directly."""
    return fetcher.Fetcher(
        batch_size=batch_size,
        lease_seconds=30,
        queues=QueueSet(queues, refresh_seconds=1),
        stopping=threading.Event(),
        **options,
    )


def test_jobs_a_fetch_claimed_are_handed_over_when_a_later_queue_s_claim_fails(monkeypatch):
    job = queued_job("demo.success", queue="a", max_attempts=1)
    claim = services.claim_jobs

    def lost_after_a(*, queue, **kwargs):
        if queue != "a":
            raise OperationalError("server closed the connection unexpectedly")
        return claim(queue=queue, **kwargs)

    monkeypatch.setattr(services, "claim_jobs", lost_after_a)
    # A thread holding jobs asks for two; queue a has one, the next queue's claim fails.
    (got,) = queue_fetcher("a", "b", "c").next_jobs(WORKER, wanted=2)
    # Committed by a's statement, so the thread runs it (not left unrun for a lease, then
    # retried with its attempt spent, or failed on its last one without having run).
    assert (got.id, got.locked_by) == (job.id, WORKER)
    assert (fresh(job).status, fresh(job).attempts) == (Status.RUNNING, 1)


def test_a_fetch_takes_the_queues_in_turn_from_the_one_after_the_last_that_gave_jobs():
    jobs = {queue: queued_job("demo.success", queue=queue) for queue in ("a", "b", "c")}
    fetching = queue_fetcher("a", "b", "c", batch_size=3)
    first = fetching.next_jobs(WORKER, wanted=2)  # a's only job, then b's
    second = fetching.next_jobs(WORKER, wanted=1)
    assert [row.queue for row in first + second] == ["a", "b", "c"]
    assert {row.id for row in first + second} == {job.id for job in jobs.values()}


@pytest.mark.postgres
def test_jobs_a_fetch_claimed_are_handed_over_when_its_keyed_claim_then_fails(monkeypatch):
    done = running_job("demo.success")
    in_flight = InFlight()
    completer = InlineCompleter(in_flight=in_flight, lease_seconds=30)
    attempt = Attempt(job=done, worker_id=WORKER, started=0.0)
    in_flight.add(attempt)
    completer.record(Outcome.succeeded(attempt, '{"ok": 1}'))  # waits for the next fetch
    plain = queued_job("demo.success", priority=50)
    queued_job("demo.success", priority=40, concurrency_key="k")
    ConcurrencyKeyLimit.objects.create(pattern="k", limit=1)

    def lost(params):
        raise OperationalError("server closed the connection unexpectedly")

    # The statement writes the success and claims the plain job, then leaves the keyed
    # one to a transaction of its own, which fails.
    monkeypatch.setattr(get_driver(), "_claim_keyed", lost)
    outcomes: list[str] = []
    attempt_finished.connect(
        lambda sender, outcome, **kwargs: outcomes.append(outcome),
        weak=False,
        dispatch_uid="keyed-test",
    )
    try:
        fetching = queue_fetcher("default", successes=completer.take)
        got = fetching.next_jobs(WORKER, wanted=2)  # a thread holding jobs
        monkeypatch.undo()
        completer.flush_now()  # nothing was given back to write again
    finally:
        attempt_finished.disconnect(dispatch_uid="keyed-test")
    assert [(row.id, row.locked_by) for row in got] == [(plain.id, WORKER)]
    assert outcomes == ["succeeded"]
    assert fresh(done).status == Status.SUCCEEDED
