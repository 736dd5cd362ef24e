"""A worker killed (kill -9) with a batch of successes not yet written, or with a batch of
claims in hand: every
one of those jobs is recovered by its lease and runs again; none is lost. Real worker
processes on PostgreSQL, leases of 2 s (see test_worker_processes.py for the set-up)."""

from __future__ import annotations

import signal

import pytest

from harness import wait_until
from jobs.models import Job, JobEvent
from tests.factories import fresh, queued_job
from tests.helpers import WorkerProcess, figures, pid_of, stop_all

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

Status = Job.Status
Event = JobEvent.Type
HANDLERS = "tests.fault_handlers"


def short_leases(lease: int, cleanup: int) -> dict[str, str]:
    """Worker settings of both tests: the fault handlers, a short lease swept often, and
    retries due at once."""
    return {
        "JOB_HANDLER_MODULES": HANDLERS,
        "JOB_WORKER_LEASE_SECONDS": str(lease),
        "JOB_WORKER_CLEANUP_INTERVAL_SECONDS": str(cleanup),
        "JOB_WORKER_BACKOFF_BASE_SECONDS": "0",
    }


def test_a_batch_in_hand_at_kill_9_is_recovered_by_the_lease_and_none_is_lost(tmp_path):
    lease, cleanup = 2, 1
    quick = [queued_job("fault.noop", priority=100) for _ in range(8)]
    # One per thread, claimed after the quick ones (same queue, lower priority): every
    # thread stays busy, so no idle thread flushes the batch, and the flush interval is a
    # minute. A single attempt each: when the victim's lease lapses they fail for good.
    slow = [
        queued_job("fault.sleep", payload={"seconds": 60}, priority=0, max_attempts=1)
        for _ in range(4)
    ]
    common = short_leases(lease, cleanup)
    victim = WorkerProcess(
        tmp_path / "victim.log",
        "--threads",
        "4",
        # Claims one by one: a batched fetch would carry the waiting successes with it.
        JOB_WORKER_CLAIM_BATCH_SIZE="1",
        JOB_WORKER_COMPLETE_BATCH_SIZE="100",
        JOB_WORKER_COMPLETE_FLUSH_MS="60000",
        **common,
    )
    rescuer = None
    try:
        wait_until(
            lambda: all(fresh(job).status == Status.RUNNING for job in slow),
            30,
            "the victim to hold every slow job",
        )
        # The quick jobs' handlers returned, their successes wait in the victim's batch.
        assert all(fresh(job).status == Status.RUNNING for job in quick)
        assert not JobEvent.objects.filter(type=Event.SUCCEEDED).exists()
        victim.proc.send_signal(signal.SIGKILL)
        assert victim.wait(timeout=10) == -signal.SIGKILL
        rescuer = WorkerProcess(tmp_path / "rescuer.log", "--threads", "2", **common)
        # The quick jobs' leases lapse first (their handlers returned, so nothing renews
        # them) and the slow ones' up to a heartbeat later: wait for both, or the rescuer
        # can stop between the two sweeps.
        wait_until(
            lambda: (
                all(fresh(job).status == Status.SUCCEEDED for job in quick)
                and all(fresh(job).status == Status.FAILED for job in slow)
            ),
            lease + cleanup + 30,
            "the rescuer to run the quick jobs again and fail the slow ones",
        )
        assert stop_all([rescuer]) == [0]
    finally:
        for process in (victim, rescuer):
            if process is not None:
                process.kill()
    assert all(fresh(job).status == Status.FAILED for job in slow)
    for job in quick:
        row = fresh(job)
        assert row.attempts == 2
        # Recovered by the lease, then run once more: one success, written by the rescuer.
        assert JobEvent.objects.filter(job=row, type=Event.TIMEOUT_REQUEUED).count() == 1
        (success,) = JobEvent.objects.filter(job=row, type=Event.SUCCEEDED)
        assert success.attempt == 2
        assert pid_of(success.worker_id) == str(rescuer.proc.pid)
    figures("kill -9 with a batch of 8 successes in hand", lease_seconds=lease, recovered=8)


def test_a_batch_of_claims_in_hand_at_kill_9_is_recovered_by_the_lease(tmp_path):
    lease, cleanup = 2, 1
    jobs = [queued_job("fault.sleep", payload={"seconds": 60}, max_attempts=2) for _ in range(4)]
    common = short_leases(lease, cleanup)
    victim = WorkerProcess(
        tmp_path / "victim.log",
        "--threads",
        "4",
        JOB_WORKER_CLAIM_BATCH_SIZE="4",
        JOB_WORKER_COMPLETE_BATCH_SIZE="10",
        **common,
    )
    rescuer = None
    try:
        wait_until(
            lambda: all(fresh(job).status == Status.RUNNING for job in jobs),
            30,
            "the victim to hold every job",
        )
        victim.proc.send_signal(signal.SIGKILL)
        assert victim.wait(timeout=10) == -signal.SIGKILL
        claims = JobEvent.objects.filter(type=Event.CLAIMED)
        assert claims.count() == 4
        rescuer = WorkerProcess(tmp_path / "rescuer.log", "--threads", "4", **common)
        wait_until(
            lambda: (
                JobEvent.objects.filter(type=Event.TIMEOUT_REQUEUED).count() == 4
                and all(fresh(job).status == Status.RUNNING for job in jobs)
            ),
            lease + cleanup + 30,
            "the rescuer to recover every job and run it again",
        )
        for job in jobs:
            row = fresh(job)
            assert row.attempts == 2
            assert pid_of(row.locked_by) == str(rescuer.proc.pid)
    finally:
        for process in (victim, rescuer):
            if process is not None:
                process.kill()
    figures("kill -9 with a batch of 4 claims in hand", lease_seconds=lease, recovered=4)
