"""Real worker processes on PostgreSQL: the heartbeat, kill -9, timeouts, cancellation over
HTTP, bulk cancel racing claims, hostile handlers, dying threads and lost connections.

Every worker is ``manage.py run_job_workers`` as a child process (``WorkerProcess``) with
the handlers of ``tests.fault_handlers``; the API is gunicorn (``serve_api``) on the
same test database. Leases are 2-3 s and idle polls 50 ms, so each bound asserted here is
a few seconds; each test prints its figures (run with ``-s``). The in-process versions of
these behaviours are in integration/worker/test_attempts.py.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from harness import serve_api, wait_until
from jobs.models import Job, JobEvent
from jobs.worker.runner import MAX_THREAD_DEATHS_PER_MINUTE
from tests.factories import fresh, queued_job, queued_jobs, timeline
from tests.helpers import WorkerProcess, child_env, figures, pid_of, stop_all

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

Status = Job.Status
Event = JobEvent.Type
HANDLERS = "tests.fault_handlers"
# Scheduling delays on a loaded shared machine, added to every bound.
SLACK = 1.0


@pytest.fixture
def start_worker(tmp_path):
    """Start a worker process: ``start_worker(name, threads=, lease=, cleanup=, **env)``;
    every one started is killed when the test ends."""
    started: list[WorkerProcess] = []

    def start(
        name: str = "worker",
        *args: str,
        threads: int = 1,
        lease: int = 2,
        cleanup: int = 1,
        **env: str,
    ) -> WorkerProcess:
        process = WorkerProcess(
            tmp_path / f"{name}.log",
            "--threads",
            str(threads),
            *args,
            JOB_HANDLER_MODULES=HANDLERS,
            JOB_WORKER_LEASE_SECONDS=str(lease),
            JOB_WORKER_CLEANUP_INTERVAL_SECONDS=str(cleanup),
            **env,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()


@pytest.fixture(scope="module")
def api(django_db_setup, django_db_blocker, tmp_path_factory):
    """gunicorn serving the API (DEBUG=true: no credentials) on this run's test database."""
    with django_db_blocker.unblock():
        env = child_env()
    with serve_api(tmp_path_factory.mktemp("api") / "gunicorn.log", env) as server:
        yield server


def status_of(job) -> str:
    return fresh(job).status


def event(job, type: str) -> JobEvent:
    return JobEvent.objects.get(job_id=job.pk, type=type)


def seconds_between(earlier: JobEvent, later: JobEvent) -> float:
    return (later.created_at - earlier.created_at).total_seconds()


# --- The heartbeat ----------------------------------------------------------------------


def test_a_handler_sleeping_three_leases_without_renewing_runs_once_and_succeeds(start_worker):
    lease = 2
    job = queued_job("fault.sleep", payload={"seconds": 3 * lease})
    # A second, idle thread and a cleanup pass every second: a lapsed lease would be
    # requeued and the job claimed again at once.
    worker = start_worker(threads=2, lease=lease, cleanup=1)
    samples = []  # (when, locked_until) while it runs

    def finished() -> bool:
        row = fresh(job)
        if row.status == Status.RUNNING:
            samples.append((timezone.now(), row.locked_until))
        return row.status not in (Status.QUEUED, Status.RUNNING)

    wait_until(finished, 3 * lease + 20, "the job to finish")
    assert stop_all([worker]) == [0]
    job = fresh(job)
    assert (job.status, job.attempts, job.result) == (Status.SUCCEEDED, 1, {"slept": 6.0})
    # One claim; the heartbeats wrote no event.
    assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.SUCCEEDED]
    # The heartbeat moved the lease forward again and again, and it never lapsed.
    leases = sorted({until for _, until in samples})
    assert len(leases) >= 4, leases
    assert all(until > seen for seen, until in samples)
    figures(
        "sleep 3 leases without renewing",
        lease_seconds=lease,
        slept_seconds=3 * lease,
        claims=timeline(job).count(Event.CLAIMED),
        leases_seen=len(leases),
    )


def test_a_killed_worker_s_job_is_swept_by_a_busy_survivor_and_rerun_within_lease_and_cleanup(
    start_worker,
):
    lease, cleanup = 2, 1
    # The survivor's only thread is busy with a long job for the whole test.
    long = queued_job("fault.sleep", payload={"seconds": 60}, queue="long")
    job = queued_job("fault.sleep", payload={"seconds": 60})
    # The sweeper's backoff applies to the requeue: none, so the rescue can follow at once.
    fast_retry = {"JOB_WORKER_BACKOFF_BASE_SECONDS": "0"}
    survivor = start_worker(
        "survivor", "--queues", "long", lease=lease, cleanup=cleanup, **fast_retry
    )
    victim = start_worker(
        "victim", "--queues", "default", lease=lease, cleanup=cleanup, **fast_retry
    )
    wait_until(lambda: status_of(long) == status_of(job) == Status.RUNNING, 30, "both claims")
    claimed_until = fresh(job).locked_until
    wait_until(lambda: fresh(job).locked_until > claimed_until, 10, "a heartbeat of the victim")
    # The rescuer sweeps only once, at start-up: the sweep below is the survivor's.
    rescuer = start_worker("rescuer", lease=lease, cleanup=3600, **fast_retry)
    rescuer.wait_for_threads(1)
    victim_id = fresh(job).locked_by

    victim.proc.send_signal(signal.SIGKILL)
    killed_at = timezone.now()
    assert victim.wait(timeout=10) == -signal.SIGKILL
    wait_until(
        lambda: JobEvent.objects.filter(job=job, type=Event.CLAIMED).count() == 2,
        lease + cleanup + 20,
        "another worker to claim the job again",
    )
    sweep = event(job, Event.TIMEOUT_REQUEUED)
    rescue = JobEvent.objects.get(job=job, type=Event.CLAIMED, attempt=2)
    swept_after = (sweep.created_at - killed_at).total_seconds()
    rescued_after = (rescue.created_at - killed_at).total_seconds()
    long = fresh(long)

    assert swept_after <= lease + cleanup + SLACK
    assert rescued_after <= lease + cleanup + SLACK
    # Swept by the survivor's maintenance thread while its only worker thread was busy.
    assert pid_of(sweep.worker_id) == str(survivor.proc.pid)
    assert (sweep.attempt, sweep.data["expired_worker_id"]) == (1, victim_id)
    assert (long.status, long.attempts) == (Status.RUNNING, 1)
    assert pid_of(long.locked_by) == str(survivor.proc.pid)
    assert pid_of(rescue.worker_id) == str(rescuer.proc.pid)
    figures(
        "kill -9 of a heartbeating worker",
        lease_seconds=lease,
        cleanup_interval_seconds=cleanup,
        swept_after_s=round(swept_after, 2),
        claimed_again_after_s=round(rescued_after, 2),
    )


# --- Without the heartbeat: the spec's demo.timeout -------------------------------------


def test_demo_timeout_loses_each_lease_to_cleanup_and_its_late_completions_change_nothing(
    start_worker,
):
    # The job on a worker with JOB_WORKER_LEASE_SECONDS=3: each attempt sleeps 7 s
    # without renewing, the worker's own cleanup pass (every second) takes the job back.
    lease = 3
    job = queued_job("demo.timeout", payload={"sleep_seconds": 7}, max_attempts=2)
    worker = start_worker(threads=2, lease=lease, cleanup=1)
    wait_until(lambda: status_of(job) == Status.FAILED, 2 * (7 + 5) + 20, "the job to fail")
    failed = fresh(job)
    # Attempt 2's handler is still asleep: its completion arrives after the failure. The
    # heartbeat told each attempt it lost the job, so its worker writes nothing of it.
    late = "WARNING jobs.worker action=lease_lost "
    wait_until(lambda: worker.log().count(late) == 2, 20, "both late completions")
    assert stop_all([worker]) == [0]

    job = fresh(job)
    assert timeline(job) == [
        Event.CREATED,
        Event.CLAIMED,
        Event.PROGRESS,
        Event.TIMEOUT_REQUEUED,
        Event.CLAIMED,
        Event.PROGRESS,
        Event.FAILED,
    ]
    # Each lease ran out where the claim put it: no heartbeat moved it, no renewal event.
    first, second = JobEvent.objects.filter(job_id=job.pk, type=Event.CLAIMED).order_by("id")
    requeued, ended = event(job, Event.TIMEOUT_REQUEUED), event(job, Event.FAILED)
    assert lease <= seconds_between(first, requeued) <= lease + 1 + SLACK
    assert lease <= seconds_between(second, ended) <= lease + 1 + SLACK
    assert requeued.data["expired_worker_id"] == first.worker_id
    assert ended.data["expired_worker_id"] == second.worker_id
    # The late completions changed nothing: attempt 1's came while the job waited for its
    # retry (it was claimed again, not succeeded), attempt 2's after the job had failed.
    assert (job.status, job.attempts, job.result, job.last_error) == (
        Status.FAILED,
        2,
        None,
        "Lease expired before the job finished",
    )
    assert (job.finished_at, job.updated_at) == (failed.finished_at, failed.updated_at)
    discarded = [line for line in worker.log().splitlines() if late in line]
    assert [line.split(late)[1] for line in discarded] == [
        f"job_id={job.pk} attempt={claim.attempt} worker_id={claim.worker_id}"
        for claim in (first, second)
    ]
    figures(
        "demo.timeout, sleep 7 s, lease 3 s, max_attempts 2",
        requeued_after_s=round(seconds_between(first, requeued), 2),
        failed_after_s=round(seconds_between(second, ended), 2),
        late_completions_discarded=len(discarded),
    )


# --- Timeouts ---------------------------------------------------------------------------


def test_a_job_past_its_timeout_is_retried_at_2_s_and_a_replacement_keeps_full_capacity(
    start_worker,
):
    hung = queued_job("fault.sleep", payload={"seconds": 60}, timeout_seconds=2, max_attempts=2)
    worker = start_worker(threads=2, lease=3, JOB_WORKER_BACKOFF_BASE_SECONDS="60")
    wait_until(lambda: hung.events.filter(type=Event.RETRY_SCHEDULED).exists(), 20, "a timeout")
    # Two jobs that each wait for the other: both succeed only if two threads serve at once
    # while the timed-out handler still sleeps in a third.
    pair = queued_jobs(2, "fault.rendezvous", payload={"size": 2})
    wait_until(lambda: all(status_of(job) == Status.SUCCEEDED for job in pair), 30, "the pair")
    stopping = time.monotonic()
    assert stop_all([worker]) == [0]
    stopped_in = time.monotonic() - stopping

    hung = fresh(hung)
    retry = event(hung, Event.RETRY_SCHEDULED)
    timed_out_after = seconds_between(event(hung, Event.CLAIMED), retry)
    assert 2 <= timed_out_after <= 2 + SLACK
    assert (hung.status, hung.attempts, hung.last_error) == (
        Status.QUEUED,
        1,
        "Timed out after 2 s",
    )
    assert (retry.data["reason"], retry.data["delay_seconds"]) == ("timeout", 60)
    assert [fresh(job).result for job in pair] == [{"met": True}, {"met": True}]
    # The stuck thread was replaced, and the pair ran on the threads serving, not on it.
    stuck = retry.worker_id
    replaced = [line for line in worker.log().splitlines() if "action=thread_replaced" in line]
    assert len(replaced) == 1 and f"worker_id={stuck} " in replaced[0]
    replacement = replaced[0].split("replacement=")[1].split()[0]
    pair_threads = {event(job, Event.CLAIMED).worker_id for job in pair}
    assert len(pair_threads) == 2 and stuck not in pair_threads
    assert replacement in pair_threads
    # The handler still asleep does not hold the process up.
    assert stopped_in < 5
    figures(
        "timeout_seconds=2 on a 60 s sleep",
        timed_out_after_s=round(timed_out_after, 2),
        threads=2,
        rendezvous_met=True,
        stopped_in_s=round(stopped_in, 2),
    )


# --- Cancellation over HTTP -------------------------------------------------------------


def test_cancel_over_http_of_a_queued_job_cancels_it_before_any_worker_claims_it(api, start_worker):
    worker = start_worker()
    worker.wait_for_threads(1)
    due = timezone.now() + timedelta(seconds=2)
    job = queued_job("fault.noop", available_at=due)
    control = queued_job("fault.noop", available_at=due)
    status, body = api.json("POST", f"/api/jobs/{job.pk}/cancel/", https=False)
    assert (status, body["status"]) == (200, Status.CANCELLED)
    assert event(job, Event.CANCELLED).created_at < due
    # The control job, due at the same moment, shows the worker was claiming by then.
    wait_until(lambda: status_of(control) == Status.SUCCEEDED, 20, "the control job")
    assert stop_all([worker]) == [0]
    job = fresh(job)
    assert (job.status, job.attempts) == (Status.CANCELLED, 0)
    assert timeline(job) == [Event.CREATED, Event.CANCELLED]


def test_cancel_over_http_of_a_running_cooperative_job_ends_it_within_one_heartbeat(
    api, start_worker
):
    lease = 3  # a heartbeat every second
    job = queued_job("fault.cooperative", payload={"seconds": 30}, max_attempts=3)
    worker = start_worker(lease=lease)
    wait_until(lambda: status_of(job) == Status.RUNNING, 30, "the claim")
    status, body = api.json("POST", f"/api/jobs/{job.pk}/cancel/", https=False)
    assert (status, body["status"]) == (202, Status.RUNNING)
    assert body["cancel_requested_at"] is not None
    wait_until(lambda: status_of(job) == Status.CANCELLED, 10, "the cancel")
    assert stop_all([worker]) == [0]

    job = fresh(job)
    ended_after = seconds_between(event(job, Event.CANCEL_REQUESTED), event(job, Event.CANCELLED))
    assert ended_after <= lease / 3 + SLACK
    assert job.attempts == 1  # not retried, though attempts remain
    assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.CANCEL_REQUESTED, Event.CANCELLED]
    assert event(job, Event.CANCELLED).data["reason"] == "cancelled"
    figures("cancel a cooperative job", heartbeat_s=lease / 3, ended_after_s=round(ended_after, 2))


def test_cancel_over_http_of_a_running_job_that_ignores_it_ends_it_at_its_timeout(
    api, start_worker
):
    job = queued_job("fault.sleep", payload={"seconds": 30}, timeout_seconds=2, max_attempts=3)
    worker = start_worker(lease=3)
    wait_until(lambda: status_of(job) == Status.RUNNING, 30, "the claim")
    status, body = api.json("POST", f"/api/jobs/{job.pk}/cancel/", https=False)
    assert (status, body["status"]) == (202, Status.RUNNING)
    wait_until(lambda: status_of(job) == Status.CANCELLED, 10, "the timeout")
    assert stop_all([worker]) == [0]

    job = fresh(job)
    ended_after = seconds_between(event(job, Event.CLAIMED), event(job, Event.CANCELLED))
    assert 2 <= ended_after <= 2 + SLACK
    assert (job.attempts, job.last_error) == (1, "Timed out after 2 s")
    assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.CANCEL_REQUESTED, Event.CANCELLED]
    figures("cancel a job that ignores it", timeout_s=2, ended_after_s=round(ended_after, 2))


def test_cancel_over_http_of_a_finished_job_is_409_with_its_status(api, start_worker):
    job = queued_job("fault.noop")
    worker = start_worker()
    wait_until(lambda: status_of(job) == Status.SUCCEEDED, 30, "the job to run")
    assert stop_all([worker]) == [0]
    status, body = api.json("POST", f"/api/jobs/{job.pk}/cancel/", https=False)
    assert (status, body) == (
        409,
        {
            "detail": "Only queued or running jobs can be cancelled; job is succeeded.",
            "status": Status.SUCCEEDED,
        },
    )
    assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.SUCCEEDED]


# --- Bulk cancel racing claims ----------------------------------------------------------


@pytest.mark.parametrize("selected_by", ["filter", "ids"])
def test_bulk_cancel_over_http_racing_worker_claims_changes_each_job_once(
    api, start_worker, selected_by
):
    worker = start_worker(threads=4, lease=3)
    worker.wait_for_threads(4)
    # Short jobs: each thread claims every 50 ms or so, so claims overlap the statement.
    jobs = queued_jobs(400, "fault.sleep", payload={"seconds": 0.05})
    claims = JobEvent.objects.filter(type=Event.CLAIMED)
    wait_until(lambda: claims.count() >= 12, 30, "the workers to be claiming")
    body = {"type": "fault.sl"} if selected_by == "filter" else {"ids": [str(j.pk) for j in jobs]}
    status, outcome = api.json("POST", "/api/jobs/cancel/", body=body, https=False)
    assert status == 200
    unfinished = Job.objects.filter(status__in=[Status.QUEUED, Status.RUNNING])
    wait_until(lambda: not unfinished.exists(), 30, "every job to finish")
    assert stop_all([worker]) == [0]

    shapes = Counter(tuple(timeline(job)) for job in jobs)
    cancelled_at_once = (Event.CREATED, Event.CANCELLED)
    # The handler ignores the request and finishes within its lease: the job succeeds.
    asked_while_running = (Event.CREATED, Event.CLAIMED, Event.CANCEL_REQUESTED, Event.SUCCEEDED)
    done_before = (Event.CREATED, Event.CLAIMED, Event.SUCCEEDED)
    assert set(shapes) <= {cancelled_at_once, asked_while_running, done_before}, shapes
    assert outcome == {
        "cancelled": shapes[cancelled_at_once],
        "cancel_requested": shapes[asked_while_running],
    }
    # The race really happened: some jobs were done, some running, some still queued.
    assert all(shapes[shape] for shape in (cancelled_at_once, asked_while_running, done_before))
    assert Job.objects.filter(status=Status.CANCELLED, attempts=0).count() == outcome["cancelled"]
    cancelled_at = JobEvent.objects.filter(type__in=[Event.CANCELLED, Event.CANCEL_REQUESTED])
    cancelled_at = cancelled_at.order_by("created_at").first().created_at
    figures(
        f"bulk cancel by {selected_by} racing 4 threads",
        **outcome,
        done_before=shapes[done_before],
        claims_in_the_100_ms_before=claims.filter(
            created_at__gte=cancelled_at - timedelta(milliseconds=100)
        ).count(),
    )


# --- Hostile handlers and a broken worker -----------------------------------------------


def test_a_handler_calling_sys_exit_fails_its_attempt_at_once_and_the_thread_carries_on(
    start_worker,
):
    hostile = queued_job("fault.exit", priority=100, max_attempts=1)
    after = queued_job("fault.noop")
    worker = start_worker(threads=1, lease=30)
    wait_until(lambda: status_of(after) == Status.SUCCEEDED, 30, "the next job")
    assert worker.proc.poll() is None
    assert stop_all([worker]) == [0]

    hostile = fresh(hostile)
    failed = event(hostile, Event.FAILED)
    assert (hostile.status, hostile.last_error) == (Status.FAILED, "SystemExit")
    assert failed.data["exception_class"] == "builtins.SystemExit"
    # Ended by the worker right away, not by lease expiry 30 s later.
    assert seconds_between(event(hostile, Event.CLAIMED), failed) < SLACK
    # The same thread ran the next job: it never died.
    assert event(after, Event.CLAIMED).worker_id == failed.worker_id
    assert "action=thread_crashed" not in worker.log()


def test_a_worker_whose_threads_keep_dying_fails_each_job_at_once_and_exits_non_zero(
    start_worker,
):
    doomed = queued_jobs(MAX_THREAD_DEATHS_PER_MINUTE + 1, "fault.worker_bug", max_attempts=3)
    worker = start_worker(threads=2, lease=30)
    assert worker.wait(timeout=60) == 1
    log = worker.log()
    assert log.count("action=thread_crashed") == len(doomed)
    assert "action=worker_gave_up" in log
    for job in doomed:
        job = fresh(job)
        # Failed by the dying thread itself, on its first attempt, not left to its lease.
        assert (job.status, job.attempts) == (Status.QUEUED, 1)
        assert job.last_error == f"Worker thread died: injected worker bug on job {job.pk}"


def test_a_burst_worker_whose_threads_all_die_exits_non_zero(start_worker):
    queued_jobs(2, "fault.worker_bug", max_attempts=1)
    worker = start_worker("worker", "--burst", threads=2, lease=30)
    assert worker.wait(timeout=60) == 1
    assert worker.log().count("action=thread_crashed") == 2
    assert "exit_code=1" in worker.log()
    assert Job.objects.filter(status=Status.FAILED).count() == 2


# --- A lost connection inside the handler's writes --------------------------------------


def terminate_backends(application_name: str) -> int:
    """Terminate every PostgreSQL backend of ``application_name``; wait until they are gone."""
    query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = %s",
            [application_name],
        )
        (terminated,) = cursor.fetchone()

        def gone() -> bool:
            cursor.execute(query, [application_name])
            return cursor.fetchone()[0] == 0

        wait_until(gone, 10, "the backends to exit")
    return terminated


def test_connection_loss_before_a_progress_or_renew_call_is_retried_and_the_job_succeeds(
    start_worker, tmp_path
):
    marker = tmp_path / "resume"
    job = queued_job("fault.pause_between_writes", payload={"marker": str(marker)})
    name = f"worker-{job.pk}"  # libpq names the worker's connections after this
    worker = start_worker(lease=3, PGAPPNAME=name)
    progress = JobEvent.objects.filter(job=job, type=Event.PROGRESS)
    wait_until(lambda: progress.filter(message="paused").exists(), 30, "the pause")
    terminated = [terminate_backends(name)]
    Path(f"{marker}.1").touch()  # the handler's next write: progress
    wait_until(lambda: progress.filter(message="resumed").exists(), 20, "the progress call")
    terminated.append(terminate_backends(name))
    Path(f"{marker}.2").touch()  # then: renew
    wait_until(lambda: status_of(job) == Status.SUCCEEDED, 20, "the job to succeed")
    assert worker.proc.poll() is None
    assert stop_all([worker]) == [0]

    # Connections were cut both times, and the handler's own writes met a cut one twice
    # (write_retry) and went on: nothing failed, nothing was claimed again.
    assert all(count >= 1 for count in terminated)
    assert fresh(job).attempts == 1
    assert timeline(job) == [
        Event.CREATED,
        Event.CLAIMED,
        Event.PROGRESS,
        Event.PROGRESS,
        Event.LEASE_RENEWED,
        Event.SUCCEEDED,
    ]
    assert worker.log().count("action=write_retry") >= 2
    figures("connection cut before progress and renew", backends_terminated=terminated)
