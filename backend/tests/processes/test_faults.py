"""Faults injected for real: worker processes killed and stopped mid-job, PostgreSQL
restarted under running workers, and 3,000 jobs drained by three processes at once.

Each test prints its figures (jobs, attempts, seconds to recover); run with ``-s`` to
see them. Workers are ``manage.py run_job_workers`` child processes (``WorkerProcess``).
"""

from __future__ import annotations

import itertools
import signal
import time
from collections import Counter

import pytest
from django.db.models import Count

from harness import serve_api, wait_until
from jobs.models import Job, JobEvent
from tests.factories import queued_job
from tests.helpers import (
    HealthPoller,
    WorkerProcess,
    child_env,
    drain_on,
    figures,
    handlers_begun,
    pid_of,
    stop_all,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

Status = Job.Status
Event = JobEvent.Type
NOOP_MODULE = "tests.fault_handlers"


# --- Three processes, twelve threads, 3,000 jobs ----------------------------------------


@pytest.mark.postgres
def test_three_worker_processes_drain_3000_jobs_each_claimed_and_run_once(tmp_path):
    total = 3000
    workers = [
        WorkerProcess(
            tmp_path / f"worker-{n}.log",
            "--threads",
            "4",
            JOB_HANDLER_MODULES=NOOP_MODULE,
            JOB_WORKER_LOG_LEVEL="INFO",
        )
        for n in range(3)
    ]
    # All 3,000 become visible at once, to twelve threads already polling.
    drained_in = drain_on(workers, total, "fault.noop")

    # Every job succeeded (the drain waited for that) on its first and only attempt.
    assert Job.objects.filter(status=Status.SUCCEEDED, attempts=1).count() == total
    # No attempt was claimed twice: one claimed event per (job, attempt), one per job.
    claims = JobEvent.objects.filter(type=Event.CLAIMED)
    assert claims.count() == total
    duplicated = claims.values("job_id", "attempt").annotate(n=Count("id")).filter(n__gt=1)
    assert not duplicated.exists()
    assert JobEvent.objects.filter(type=Event.SUCCEEDED).count() == total
    assert not JobEvent.objects.filter(type__in=[Event.RETRY_SCHEDULED, Event.FAILED]).exists()
    # The work really was shared.
    per_worker = Counter(claims.values_list("worker_id", flat=True))
    per_process = Counter()
    for worker_id, count in per_worker.items():
        per_process[pid_of(worker_id)] += count
    assert len(per_worker) >= 6
    assert set(per_process) == {str(w.proc.pid) for w in workers}
    # Each process's own count agrees with the database.
    processed = [
        int(line.rsplit("jobs_processed=", 1)[1].split()[0])
        for worker in workers
        for line in worker.log().splitlines()
        if "action=worker_stopped" in line
    ]
    assert sum(processed) == total
    figures(
        "3 processes x 4 threads",
        jobs=total,
        attempts=claims.count(),
        seconds=round(drained_in, 2),
        jobs_per_second=round(total / drained_in),
        worker_ids=len(per_worker),
        per_process=sorted(per_process.values()),
    )


# --- kill -9 in the middle of a job -----------------------------------------------------


def test_kill_9_mid_job_lease_expires_and_another_worker_finishes_it_as_attempt_2(tmp_path):
    lease = 2
    job = queued_job("demo.slow", payload={"sleep_seconds": 2})
    victim = WorkerProcess(
        tmp_path / "victim.log", "--threads", "1", JOB_WORKER_LEASE_SECONDS=str(lease)
    )
    rescuer = None
    try:
        # Mid-job: the handler has renewed its lease at least once.
        wait_until(
            lambda: JobEvent.objects.filter(job=job, type=Event.LEASE_RENEWED).exists(),
            30,
            "the victim to be mid-job",
        )
        victim.proc.send_signal(signal.SIGKILL)
        assert victim.wait(timeout=10) == -signal.SIGKILL
        killed_at = time.monotonic()
        job.refresh_from_db()
        assert job.status == Status.RUNNING and job.attempts == 1
        victim_id = job.locked_by
        assert pid_of(victim_id) == str(victim.proc.pid)

        rescuer = WorkerProcess(
            tmp_path / "rescuer.log",
            "--threads",
            "2",
            JOB_WORKER_LEASE_SECONDS=str(lease),
            JOB_WORKER_CLEANUP_INTERVAL_SECONDS="1",
            JOB_WORKER_BACKOFF_BASE_SECONDS="1",
        )
        wait_until(
            lambda: JobEvent.objects.filter(job=job, type=Event.TIMEOUT_REQUEUED).exists(),
            30,
            "cleanup to requeue the job",
        )
        requeued_after = time.monotonic() - killed_at
        wait_until(lambda: Job.objects.get(pk=job.pk).status == Status.SUCCEEDED, 30, "rescue")
        finished_after = time.monotonic() - killed_at
        assert stop_all([rescuer]) == [0]
    finally:
        victim.kill()
        if rescuer is not None:
            rescuer.kill()

    job.refresh_from_db()
    assert job.attempts == 2
    assert job.result == {"ok": True, "slept_seconds": 2.0}
    events = list(job.events.order_by("id"))
    requeue = next(e for e in events if e.type == Event.TIMEOUT_REQUEUED)
    assert requeue.attempt == 1
    assert requeue.data["expired_worker_id"] == victim_id
    assert pid_of(requeue.worker_id) == str(rescuer.proc.pid)
    claims = [e for e in events if e.type == Event.CLAIMED]
    assert [(c.attempt, pid_of(c.worker_id)) for c in claims] == [
        (1, str(victim.proc.pid)),
        (2, str(rescuer.proc.pid)),
    ]
    # Nothing from the dead worker after the requeue; the success is attempt 2's.
    assert all(e.worker_id != victim_id for e in events if e.id > requeue.id)
    success = events[-1]
    assert (success.type, success.attempt) == (Event.SUCCEEDED, 2)
    assert pid_of(success.worker_id) == str(rescuer.proc.pid)
    figures(
        "kill -9 mid demo.slow",
        jobs=1,
        attempts=job.attempts,
        lease_seconds=lease,
        requeued_after_s=round(requeued_after, 2),
        succeeded_after_s=round(finished_after, 2),
    )


# --- SIGTERM with every thread busy -----------------------------------------------------


def test_sigterm_with_busy_threads_exits_zero_within_lease_and_restart_drains_the_rest(tmp_path):
    lease = 10
    busy = [queued_job("demo.slow", payload={"sleep_seconds": 1.5}, priority=100) for _ in range(4)]
    rest = [queued_job("demo.success", payload={"sleep_seconds": 0}) for _ in range(20)]
    worker = WorkerProcess(
        tmp_path / "worker.log",
        "--threads",
        "4",
        JOB_WORKER_LEASE_SECONDS=str(lease),
        JOB_WORKER_LOG_LEVEL="DEBUG",
    )
    try:
        wait_until(lambda: handlers_begun(worker, "demo.slow") == 4, 30, "4 busy threads")
        worker.signal(signal.SIGTERM)
        signalled = time.monotonic()
        # Waits past the lease, so a late exit fails the bound below, not the wait.
        code = worker.wait(timeout=3 * lease)
        exited_after = time.monotonic() - signalled
    finally:
        worker.kill()
    assert code == 0
    assert exited_after < lease
    # The in-flight jobs finished on their first attempt; nothing new was claimed.
    for job in busy:
        job.refresh_from_db()
        assert (job.status, job.attempts) == (Status.SUCCEEDED, 1)
    rest_ids = [job.pk for job in rest]
    assert Job.objects.filter(pk__in=rest_ids, status=Status.QUEUED, attempts=0).count() == 20

    restarted = WorkerProcess(tmp_path / "restarted.log", "--threads", "4", "--burst")
    try:
        assert restarted.wait(timeout=60) == 0
    finally:
        restarted.kill()
    assert Job.objects.filter(status=Status.SUCCEEDED, attempts=1).count() == len(busy + rest)
    assert JobEvent.objects.filter(type=Event.CLAIMED).count() == len(busy + rest)
    figures(
        "SIGTERM with 4 busy threads",
        jobs=len(busy + rest),
        in_flight=len(busy),
        attempts=len(busy + rest),
        exited_after_s=round(exited_after, 2),
        lease_seconds=lease,
    )


# --- PostgreSQL restarted under running workers -----------------------------------------


@pytest.mark.postgres
def test_postgres_restart_under_running_workers_and_api(private_postgres, tmp_path):
    """Two real restarts of a private PostgreSQL while a 4-thread worker runs 300 jobs:
    ``pg_ctl restart -m fast``, then a stop held for a few seconds (health must report it)
    and a start. The worker process stays up, its threads reconnect, every job succeeds."""
    pg = private_postgres
    total = 300
    env = pg.env()
    pg.migrate(child_env())
    worker = None
    with serve_api(tmp_path / "api.log", child_env(**env), server="runserver") as api:
        poller = HealthPoller(api)
        try:
            for n in range(total):
                job = {"type": "demo.success", "payload": {"sleep_seconds": 0.1}, "max_attempts": 5}
                job["idempotency_key"] = f"restart-{n}"
                assert api.json("POST", "/api/jobs/", body=job)[0] == 201

            def succeeded() -> int:
                return pg.query("SELECT count(*) FROM jobs_job WHERE status = 'succeeded'")[0][0]

            worker = WorkerProcess(
                tmp_path / "worker.log",
                "--threads",
                "4",
                JOB_WORKER_LEASE_SECONDS="5",
                JOB_WORKER_CLEANUP_INTERVAL_SECONDS="1",
                JOB_WORKER_BACKOFF_BASE_SECONDS="1",
                JOB_WORKER_LOG_LEVEL="INFO",
                **env,
            )
            started = time.monotonic()
            poller.start()

            # Restart 1: pg_ctl restart -m fast (terminates every backend, stops, starts).
            wait_until(lambda: succeeded() >= 40, 60, "40 jobs done")
            ids_before = {
                row[0] for row in pg.query("SELECT DISTINCT worker_id FROM jobs_jobevent")
            } - {None}
            assert len(ids_before) == 4
            pg.pg_ctl("-m", "fast", "-w", "restart")
            restart1_done = time.monotonic()
            mark1 = succeeded()
            wait_until(lambda: succeeded() > mark1 + 10, 60, "jobs after restart 1")
            recovered1 = time.monotonic() - restart1_done
            assert worker.proc.poll() is None

            # Restart 2: stop, hold the outage for 3 s while health is polled, start.
            wait_until(lambda: succeeded() >= 130, 60, "130 jobs done")
            last_event_before_stop = pg.query("SELECT max(id) FROM jobs_jobevent")[0][0]
            pg.pg_ctl("-m", "fast", "-w", "stop")
            stopped = time.monotonic()
            time.sleep(3)
            assert worker.proc.poll() is None
            start_begin = time.monotonic()
            pg.start()
            back = time.monotonic()
            mark2 = succeeded()
            wait_until(lambda: api.json("GET", "/api/health/")[0] == 200, 30, "health to recover")
            wait_until(lambda: succeeded() > mark2, 60, "a job after restart 2")
            recovered2 = time.monotonic() - back
            wait_until(lambda: succeeded() == total, 120, "every job")
            drained_in = time.monotonic() - started
            assert worker.proc.poll() is None
            poller.stop_event.set()
            poller.join(timeout=15)
            worker.signal(signal.SIGTERM)
            assert worker.wait(timeout=30) == 0
        finally:
            poller.stop_event.set()
            if worker is not None:
                worker.kill()

    # Health: down for the whole held outage, with the documented body; up again after.
    # A request that began in the outage but was answered after the restart (the machine
    # busy) is not a sample of the outage: each must end, when the next begins, before it.
    during = [
        (status, body)
        for (t, status, body), (answered, *_) in itertools.pairwise(poller.samples)
        if stopped < t and answered < start_begin
    ]
    assert during, "no health sample during the outage"
    assert all(status == 503 for status, _ in during), during
    assert all(body["ok"] is False and body["database"] == "error" for _, body in during)
    assert all(body["detail"] for _, body in during)
    health_up_after = next(t for t, status, _ in poller.samples if t > back and status == 200)
    assert not [s for t, s, _ in poller.samples if t > health_up_after and s != 200]

    # Jobs: all 300 succeeded (waited for above); the same four threads (no replacement)
    # worked after the restarts.
    claimers_after = pg.query(
        "SELECT DISTINCT worker_id FROM jobs_jobevent "
        f"WHERE type = 'claimed' AND id > {last_event_before_stop}"
    )
    assert {row[0] for row in claimers_after} == ids_before
    all_ids = {row[0] for row in pg.query("SELECT DISTINCT worker_id FROM jobs_jobevent")}
    assert all_ids - {None} == ids_before
    duplicated = pg.query(
        "SELECT job_id, attempt FROM jobs_jobevent WHERE type = 'claimed' "
        "GROUP BY 1, 2 HAVING count(*) > 1"
    )
    assert duplicated == []
    log = worker.log()
    # The outage was seen and logged: by a thread's loop, by the maintenance thread
    # (heartbeat, cleanup) or while recording an outcome.
    assert any(
        action in log
        for action in (
            "action=database_error",
            "action=maintenance_database_error",
            "action=write_retry",
        )
    )
    assert "action=thread_died" not in log
    attempts = dict(pg.query("SELECT attempts, count(*) FROM jobs_job GROUP BY 1 ORDER BY 1"))
    # Why attempts were repeated: handler errors during the outage, or expired leases.
    reasons = Counter(
        f"{kind}: {message[:70]}"
        for kind, message in pg.query(
            "SELECT type, message FROM jobs_jobevent "
            "WHERE type IN ('retry_scheduled', 'timeout_requeued')"
        )
    )
    figures(
        "PostgreSQL restarts",
        jobs=total,
        attempts_histogram=attempts,
        claims=sum(a * c for a, c in attempts.items()),
        restart1_first_10_jobs_after_s=round(recovered1, 2),
        outage_held_s=round(start_begin - stopped, 2),
        health_503_samples=len(during),
        health_200_after_start_s=round(health_up_after - back, 2),
        first_job_after_start_s=round(recovered2, 2),
        drained_in_s=round(drained_in, 2),
        database_errors_logged=log.count("action=database_error"),
        finish_retries_logged=log.count("action=finish_retry"),
        repeat_reasons=dict(reasons),
    )
