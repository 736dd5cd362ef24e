"""Throughput mode's prefetch: a process holds up to ``JOB_WORKER_PREFETCH`` jobs beyond
those its threads run, each claimed for the thread that will run it. A held job keeps
every guarantee of a running one: heartbeated, cancellable, timed from its handler's
start, given back at once by a graceful stop."""

import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import services
from jobs.models import Job, JobEvent
from jobs.worker import fetcher
from tests.factories import queued_job, queued_jobs, timeline
from tests.helpers import run_workers_in_burst, worker_runner

pytestmark = pytest.mark.django_db(transaction=True)

Status = Job.Status
Event = JobEvent.Type

# A lease the held job outlives unless the heartbeat renews it, a rescuer that would
# notice at once.
SHORT_LEASE = {"lease_seconds": 2, "heartbeat_seconds": 0.3, "cleanup_interval_seconds": 0.2}


def _recording_claims(monkeypatch) -> list[list[str]]:
    asked: list[list[str]] = []
    claim = services.claim_jobs

    def recording(*, worker_ids, **kwargs):
        asked.append(list(worker_ids))
        return claim(worker_ids=worker_ids, **kwargs)

    monkeypatch.setattr(fetcher.services, "claim_jobs", recording)
    return asked


def test_prefetch_runs_every_job_once_each_thread_claiming_its_share_ahead(
    register_handler, monkeypatch
):
    register_handler("test.echo", lambda context: {"n": context.payload["n"]})
    jobs = [queued_job("test.echo", payload={"n": n}) for n in range(40)]
    asked = _recording_claims(monkeypatch)
    runner = run_workers_in_burst(threads=2, claim_batch_size=2, prefetch=4)
    for job in jobs:
        job.refresh_from_db()
        assert (job.status, job.attempts) == (Status.SUCCEEDED, 1)
        assert job.result == {"n": job.payload["n"]}
        assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.SUCCEEDED]
    # A thread asks for the job it runs and its share of the prefetch (4 / 2 threads),
    # under its own worker id; threads waiting together share the statement.
    threads = {thread.worker_id for thread in runner.threads}
    assert all(set(ids) <= threads for ids in asked)
    assert max(ids.count(worker_id) for ids in asked for worker_id in ids) == 1 + 2
    assert len(asked) < len(jobs) / 2


def test_a_held_job_keeps_its_lease_although_its_handler_opted_out_of_the_heartbeat(
    register_handler,
):
    ran: list[str] = []
    register_handler("test.long", lambda context: time.sleep(3))
    register_handler("test.quiet", lambda context: ran.append("ran"), heartbeat=False)
    long = queued_job("test.long", priority=90)
    held = queued_job("test.quiet", priority=10)
    run_workers_in_burst(threads=1, prefetch=1, **SHORT_LEASE)
    long.refresh_from_db()
    held.refresh_from_db()
    assert long.status == Status.SUCCEEDED
    # Held for 3 s under a 2 s lease: renewed, so neither rescued nor claimed twice.
    assert (held.status, held.attempts, ran) == (Status.SUCCEEDED, 1, ["ran"])
    assert timeline(held) == [Event.CREATED, Event.CLAIMED, Event.SUCCEEDED]


def test_a_held_job_cancelled_before_its_turn_never_starts(register_handler):
    ran: list[str] = []
    held = queued_job("test.quick", priority=10)

    def cancel_the_held_job(context):
        services.cancel_job(job_id=held.id)
        time.sleep(1)  # a heartbeat or three tell the process

    register_handler("test.first", cancel_the_held_job)
    register_handler("test.quick", lambda context: ran.append("ran"))
    first = queued_job("test.first", priority=90)
    run_workers_in_burst(threads=1, prefetch=1, **SHORT_LEASE)
    first.refresh_from_db()
    held.refresh_from_db()
    assert first.status == Status.SUCCEEDED
    assert (held.status, ran) == (Status.CANCELLED, [])
    assert timeline(held) == [
        Event.CREATED,
        Event.CLAIMED,
        Event.CANCEL_REQUESTED,
        Event.CANCELLED,
    ]


def test_a_held_job_whose_lease_was_taken_back_is_not_run_by_the_thread_that_held_it(
    register_handler, settings
):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 0  # the lost attempt's retry is due at once
    runs: list[int] = []
    held = queued_job("test.quick", priority=10)

    def take_back_the_held_job(context):
        # As a rescuer would after a lapse: the held job is queued again, for anyone.
        Job.objects.filter(pk=held.id).update(locked_until=timezone.now() - timedelta(seconds=1))
        services.cleanup_expired_jobs(now=timezone.now(), worker_id="tests:1:thread-9:0000cafe")
        time.sleep(1)  # a heartbeat or three tell the process

    register_handler("test.first", take_back_the_held_job)
    register_handler("test.quick", lambda context: runs.append(context.attempt))
    queued_job("test.first", priority=90)
    run_workers_in_burst(threads=1, prefetch=1, **SHORT_LEASE)
    held.refresh_from_db()
    # Attempt 1 was lost while held and never started; attempt 2 ran, once.
    assert runs == [2]
    assert (held.status, held.attempts) == (Status.SUCCEEDED, 2)


def test_a_held_jobs_timeout_counts_from_its_handlers_start(register_handler):
    register_handler("test.long", lambda context: time.sleep(1.5))
    register_handler("test.quick", lambda context: time.sleep(0.1))
    queued_job("test.long", priority=90)
    held = queued_job("test.quick", priority=10, timeout_seconds=1)
    run_workers_in_burst(threads=1, prefetch=1)
    held.refresh_from_db()
    # Held for 1.5 s with a 1 s timeout: the timeout is the handler's, not the wait's.
    assert (held.status, held.attempts) == (Status.SUCCEEDED, 1)


def test_a_graceful_stop_gives_held_jobs_back_at_once_without_spending_an_attempt(
    register_handler,
):
    runner = worker_runner(1, prefetch=3)
    running = threading.Event()

    def stop_while_running(context):
        running.set()
        runner.stop()  # SIGTERM while it runs: the held jobs must not wait for it
        time.sleep(1.5)

    register_handler("test.first", stop_while_running)
    register_handler("test.quick", lambda context: None)
    first = queued_job("test.first", priority=90)
    held = queued_jobs(3, "test.quick", priority=10)
    runner.start()
    runner.wait()
    assert running.is_set()
    first.refresh_from_db()
    assert first.status == Status.SUCCEEDED
    assert first.finished_at is not None
    for job in held:
        row = Job.objects.get(pk=job.id)
        assert (row.status, row.attempts, row.locked_by) == (Status.QUEUED, 0, None)
        assert timeline(row) == [Event.CREATED, Event.CLAIMED, Event.RELEASED]
        released = row.events.get(type=Event.RELEASED)
        assert released.created_at < first.finished_at
