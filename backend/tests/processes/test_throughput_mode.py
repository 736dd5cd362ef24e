"""Throughput mode in real worker processes on PostgreSQL: a prefetch, a lean timeline and
successes committed asynchronously together. Every job still runs once; held jobs go back
at once on SIGTERM without spending an attempt, and are recovered by their leases after a
kill -9."""

from __future__ import annotations

import signal
import time

import pytest

from harness import wait_until
from jobs import services
from jobs.models import Job, JobEvent
from tests.factories import fresh, queued_job, queued_jobs
from tests.helpers import WorkerProcess, drain_on, figures, pid_of, stop_all

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

Status = Job.Status
Event = JobEvent.Type
HANDLERS = "tests.fault_handlers"
THROUGHPUT_MODE = {
    "JOB_HANDLER_MODULES": HANDLERS,
    "JOB_WORKER_PREFETCH": "8",
    "JOB_WORKER_LEAN_TIMELINE": "true",
    "JOB_WORKER_COMPLETE_SYNCHRONOUS_COMMIT": "false",
}


def _one_running_one_held(tmp_path, **env: str) -> WorkerProcess:
    """A worker of one thread that runs one job and holds the next; a lease of 2 s,
    swept every second (by itself)."""
    return WorkerProcess(
        tmp_path / "worker.log",
        "--threads",
        "1",
        JOB_HANDLER_MODULES=HANDLERS,
        JOB_WORKER_PREFETCH="1",
        JOB_WORKER_LEASE_SECONDS="2",
        JOB_WORKER_CLEANUP_INTERVAL_SECONDS="1",
        **env,
    )


def _processed(worker: WorkerProcess) -> int:
    (line,) = [line for line in worker.log().splitlines() if "action=worker_stopped" in line]
    return int(line.rsplit("jobs_processed=", 1)[1].split()[0])


def test_three_processes_in_throughput_mode_run_3000_jobs_each_once(tmp_path):
    total = 3000
    workers = [
        WorkerProcess(tmp_path / f"worker-{n}.log", "--threads", "4", **THROUGHPUT_MODE)
        for n in range(3)
    ]
    drained_in = drain_on(workers, total, "fault.noop")
    # One claim each (a second would count a second attempt), one run each.
    assert Job.objects.filter(status=Status.SUCCEEDED, attempts=1).count() == total
    assert sum(_processed(worker) for worker in workers) == total
    # The lean timeline: the row says who ran the job; the events only that it was created.
    assert set(JobEvent.objects.values_list("type", flat=True)) == {Event.CREATED}
    by_process = {
        pid_of(worker_id)
        for worker_id in Job.objects.values_list("claimed_by", flat=True).distinct()
    }
    assert by_process == {str(worker.proc.pid) for worker in workers}
    figures(
        "throughput mode, 3 processes x 4 threads, prefetch 8",
        jobs=total,
        seconds=round(drained_in, 2),
        jobs_per_second=round(total / drained_in),
    )


def test_sigterm_gives_held_jobs_back_at_once_without_spending_an_attempt(tmp_path):
    running = queued_job("fault.sleep", payload={"seconds": 5}, priority=100)
    held = queued_jobs(3, "fault.noop", priority=0)
    worker = WorkerProcess(
        tmp_path / "worker.log",
        "--threads",
        "1",
        JOB_HANDLER_MODULES=HANDLERS,
        JOB_WORKER_PREFETCH="3",
    )
    try:
        wait_until(
            lambda: all(fresh(job).status == Status.RUNNING for job in [running, *held]),
            30,
            "the worker to run one job and hold three",
        )
        worker.proc.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        wait_until(
            lambda: all(fresh(job).status == Status.QUEUED for job in held),
            3,
            "the held jobs to go back before the running one ends",
        )
        given_back_in = time.monotonic() - stopped
        assert fresh(running).status == Status.RUNNING
        assert worker.wait(timeout=30) == 0
    finally:
        worker.kill()
    assert fresh(running).status == Status.SUCCEEDED
    for job in held:
        row = fresh(job)
        assert (row.attempts, row.locked_by) == (0, None)
        assert [event.type for event in row.events.order_by("id")] == [
            Event.CREATED,
            Event.CLAIMED,
            Event.RELEASED,
        ]
    figures("SIGTERM with 3 held jobs", seconds_to_give_back=round(given_back_in, 2))


def test_held_jobs_at_kill_9_are_recovered_by_their_leases_and_run_once_more(tmp_path):
    lease, cleanup = 2, 1
    common = {
        "JOB_HANDLER_MODULES": HANDLERS,
        "JOB_WORKER_LEASE_SECONDS": str(lease),
        "JOB_WORKER_CLEANUP_INTERVAL_SECONDS": str(cleanup),
        "JOB_WORKER_BACKOFF_BASE_SECONDS": "0",
    }
    running = queued_job("fault.sleep", payload={"seconds": 60}, priority=100, max_attempts=1)
    held = queued_jobs(3, "fault.noop", priority=0)
    victim = WorkerProcess(
        tmp_path / "victim.log", "--threads", "1", JOB_WORKER_PREFETCH="3", **common
    )
    rescuer = None
    try:
        wait_until(
            lambda: all(fresh(job).status == Status.RUNNING for job in [running, *held]),
            30,
            "the victim to run one job and hold three",
        )
        victim.proc.send_signal(signal.SIGKILL)
        assert victim.wait(timeout=10) == -signal.SIGKILL
        rescuer = WorkerProcess(tmp_path / "rescuer.log", "--threads", "2", **common)
        wait_until(
            lambda: (
                all(fresh(job).status == Status.SUCCEEDED for job in held)
                and fresh(running).status == Status.FAILED
            ),
            lease + cleanup + 30,
            "the rescuer to run the held jobs and fail the running one",
        )
        assert stop_all([rescuer]) == [0]
    finally:
        for process in (victim, rescuer):
            if process is not None:
                process.kill()
    for job in held:
        row = fresh(job)
        # Claimed by the victim (an attempt), recovered by its lease, run by the rescuer.
        assert row.attempts == 2
        assert row.events.filter(type=Event.TIMEOUT_REQUEUED).count() == 1
        (success,) = row.events.filter(type=Event.SUCCEEDED)
        assert pid_of(success.worker_id) == str(rescuer.proc.pid)
    figures("kill -9 with 3 held jobs", lease_seconds=lease, recovered=3)


def test_a_held_job_is_heartbeated_past_its_lease_and_runs_once(tmp_path):
    first = queued_job("fault.sleep", payload={"seconds": 5}, priority=100)
    held = queued_job("fault.noop", priority=0)
    worker = _one_running_one_held(tmp_path)
    try:
        wait_until(lambda: fresh(held).status == Status.SUCCEEDED, 30, "the held job to run")
        assert stop_all([worker]) == [0]
    finally:
        worker.kill()
    assert fresh(first).status == Status.SUCCEEDED
    row = fresh(held)
    # Held 5 s under a 2 s lease swept every second: renewed, never recovered.
    assert row.attempts == 1
    assert [event.type for event in row.events.order_by("id")] == [
        Event.CREATED,
        Event.CLAIMED,
        Event.SUCCEEDED,
    ]


def test_a_held_job_cancelled_before_its_turn_never_starts(tmp_path):
    first = queued_job("fault.sleep", payload={"seconds": 3}, priority=100)
    # Had its handler started, the cancel could not stop it: it would end succeeded.
    held = queued_job("fault.sleep", payload={"seconds": 1}, priority=0)
    worker = _one_running_one_held(tmp_path)
    try:
        wait_until(
            lambda: fresh(first).status == Status.RUNNING and fresh(held).status == Status.RUNNING,
            30,
            "the worker to run one job and hold the other",
        )
        services.cancel_job(job_id=held.pk)
        wait_until(lambda: fresh(held).status == Status.CANCELLED, 30, "the cancel")
        assert stop_all([worker]) == [0]
    finally:
        worker.kill()
    assert fresh(first).status == Status.SUCCEEDED
    row = fresh(held)
    assert row.result is None
    assert [event.type for event in row.events.order_by("id")] == [
        Event.CREATED,
        Event.CLAIMED,
        Event.CANCEL_REQUESTED,
        Event.CANCELLED,
    ]


def test_a_held_jobs_timeout_counts_from_its_handlers_start(tmp_path):
    queued_job("fault.sleep", payload={"seconds": 3}, priority=100)
    held = queued_job("fault.sleep", payload={"seconds": 0.5}, priority=0, timeout_seconds=1)
    worker = _one_running_one_held(tmp_path)
    try:
        wait_until(lambda: fresh(held).status == Status.SUCCEEDED, 30, "the held job to run")
        assert stop_all([worker]) == [0]
    finally:
        worker.kill()
    # Held 3 s with a 1 s timeout, then ran for 0.5 s: one attempt, no timeout.
    row = fresh(held)
    assert row.attempts == 1
    assert [event.type for event in row.events.order_by("id")] == [
        Event.CREATED,
        Event.CLAIMED,
        Event.SUCCEEDED,
    ]
