"""Flow control with real worker processes on PostgreSQL: schedules served by three
processes, unique keys under parallel creates, concurrency limits per queue and per key, a
rate limit and a pause, each across processes that race for the same rows; and what an
adversary tries: limits changed on a busy queue, a schedule that fails at run time, a
year of missed ticks, beside a job whose lease is four seconds long.

Every worker is ``manage.py run_job_workers`` (``WorkerProcess``) with the handlers of
``tests.fault_handlers``; idle polls are 50 ms. Each test prints its figures (``-s``).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from harness import wait_until
from jobs import services
from jobs.models import Job, JobEvent, ScheduleState
from tests.helpers import WorkerProcess, figures, stop_all

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

HANDLERS = "tests.fault_handlers"


@pytest.fixture
def start_workers(tmp_path):
    """``start_workers(count, threads=, **env)``: worker processes, killed at the end."""
    started: list[WorkerProcess] = []

    def start(count: int, *, threads: int = 1, tag: str = "w", **env: str) -> list[WorkerProcess]:
        workers = [
            WorkerProcess(
                tmp_path / f"{tag}{len(started) + n}.log",
                "--threads",
                str(threads),
                JOB_HANDLER_MODULES=HANDLERS,
                **env,
            )
            for n in range(count)
        ]
        started.extend(workers)
        for worker in workers:
            worker.wait_for_threads(threads)
        return workers

    yield start
    for worker in started:
        worker.kill()


def sleepers(count: int, seconds: float, **kwargs) -> None:
    services.create_jobs(
        [
            services.NewJobSpec(type="fault.sleep", payload={"seconds": seconds}, **kwargs)
            for _ in range(count)
        ]
    )


def ticks_of(name: str) -> list[datetime]:
    return sorted(
        datetime.fromisoformat(tick)
        for tick in Job.objects.filter(metadata__schedule=name).values_list(
            "metadata__schedule_tick", flat=True
        )
    )


def lateness(name: str, *, after: datetime) -> list[float]:
    """Seconds from each of ``name``'s ticks after ``after`` to its job's creation."""
    return [
        (created - datetime.fromisoformat(tick)).total_seconds()
        for tick, created in Job.objects.filter(metadata__schedule=name).values_list(
            "metadata__schedule_tick", "created_at"
        )
        if datetime.fromisoformat(tick) > after
    ]


def contiguous(ticks: list[datetime]) -> bool:
    return all(b - a == timedelta(seconds=1) for a, b in itertools.pairwise(ticks))


SCHEDULES = {
    "every-second-latest": {"type": "fault.noop", "interval": 1, "missed": "latest"},
    "every-second-skip": {"type": "fault.noop", "interval": 1, "missed": "skip"},
}


def test_three_processes_enqueue_one_job_per_tick_and_the_missed_policy_holds(start_workers):
    env = {"JOB_SCHEDULES_JSON": json.dumps(SCHEDULES), "JOB_SCHEDULE_GRACE_SECONDS": "1"}
    workers = start_workers(3, **env)
    time.sleep(12)
    assert stop_all(workers) == [0, 0, 0]
    before = {name: ticks_of(name) for name in SCHEDULES}
    time.sleep(5)
    workers = start_workers(3, **env)
    time.sleep(4)
    assert stop_all(workers) == [0, 0, 0]
    after = {name: ticks_of(name) for name in SCHEDULES}
    for name in SCHEDULES:
        ticks = after[name]
        assert max(Counter(ticks).values()) == 1, name  # none doubled
        assert len(before[name]) >= 10 and contiguous(before[name]), (name, before[name])
        resumed = [tick for tick in ticks if tick > before[name][-1]]
        assert len(resumed) >= 3 and contiguous(resumed), (name, resumed)
    gap = {
        name: (
            next(tick for tick in after[name] if tick > before[name][-1]) - before[name][-1]
        ).total_seconds()
        - 1
        for name in SCHEDULES
    }
    late = {name: lateness(name, after=before[name][-1]) for name in SCHEDULES}
    figures(
        "schedule",
        ticks_before=len(before["every-second-skip"]),
        missed_ticks=gap,
        latest_job_seconds_late={name: round(max(values), 2) for name, values in late.items()},
    )
    # Both missed the ticks of the stop; "latest" ran the newest of them once (a job made
    # past the tick's 1 s grace), "skip" none (every job made within it). Lateness, not the
    # gaps, tells them apart: each schedule is handled at its own moment, so on a loaded
    # machine their gaps may differ by a tick either way.
    assert gap["every-second-skip"] >= 3
    assert gap["every-second-latest"] >= 2
    assert max(late["every-second-latest"]) > 1.0, late
    assert max(late["every-second-skip"]) < 1.5, late


def test_fifty_parallel_creates_with_one_unique_key_make_one_job_then_a_new_one(start_workers):
    def create(_: int) -> str:
        try:
            job, _created = services.create_job(type="fault.noop", unique_key="rebuild-index")
            return str(job.id)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=25) as pool:
        ids = set(pool.map(create, range(50)))
    assert len(ids) == 1
    (first,) = ids
    start_workers(1)
    wait_until(
        lambda: Job.objects.get(pk=first).status == Job.Status.SUCCEEDED, 20, "the unique job"
    )
    job, created = services.create_job(type="fault.noop", unique_key="rebuild-index")
    assert created and str(job.id) != first
    assert Job.objects.filter(unique_key="rebuild-index").count() == 2


def test_concurrency_limits_per_queue_and_per_key_hold_across_processes(start_workers):
    services.set_queue_limits(queue="limited", concurrency_limit=2)
    sleepers(30, 0.15, queue="limited")
    sleepers(30, 0.15, queue="keyed", concurrency_key="customer:1")
    samples: list[tuple[int, int]] = []
    done = threading.Event()

    def sample() -> None:
        try:
            while not done.is_set():
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT count(*) FILTER (WHERE queue = 'limited'), "
                        "count(*) FILTER (WHERE concurrency_key = 'customer:1') "
                        "FROM jobs_job WHERE status = 'running'"
                    )
                    samples.append(cursor.fetchone())
                time.sleep(0.05)
        finally:
            connection.close()

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        start_workers(3, threads=4, JOB_CONCURRENCY_KEY_LIMITS_JSON='{"customer:*": 2}')
        wait_until(
            lambda: Job.objects.filter(status=Job.Status.SUCCEEDED).count() == 60,
            60,
            "all 60 jobs",
        )
    finally:
        done.set()
        sampler.join()
    by_queue = max(queue for queue, _ in samples)
    by_key = max(key for _, key in samples)
    figures("limits", samples=len(samples), max_running_queue=by_queue, max_running_key=by_key)
    assert by_queue <= 2 and by_key <= 2
    assert by_queue == 2 and by_key == 2  # the limits were reached, not merely unused


def test_a_rate_limit_over_three_processes_never_claims_more_than_n_in_a_second(start_workers):
    services.set_queue_limits(queue="rated", rate_limit=10, rate_period_seconds=1)
    services.create_jobs([services.NewJobSpec(type="fault.noop", queue="rated")] * 35)
    start_workers(3, threads=2)
    wait_until(lambda: Job.objects.filter(status=Job.Status.SUCCEEDED).count() == 35, 30, "35 jobs")
    claims = sorted(
        JobEvent.objects.filter(type="claimed", job__queue="rated").values_list(
            "created_at", flat=True
        )
    )
    # The limit holds at admission, on the database's clock at the gate; a claimed event
    # carries its fetch's time, taken before the gate's lock was waited for. Counting
    # events in windows a quarter second shorter counts admissions within a second as
    # long as no fetch waited longer than that (CI once counted 11 in a full second).
    busiest = max(
        sum(1 for other in claims[i:] if other - start <= timedelta(seconds=0.75))
        for i, start in enumerate(claims)
    )
    figures("rate", claims=len(claims), busiest_second=busiest)
    assert len(claims) == 35
    assert busiest <= 10
    assert busiest >= 8  # the limit was all but reached


def test_a_paused_queue_gets_no_claim_after_the_pause_and_drains_on_resume(start_workers):
    start_workers(3, threads=2)
    sleepers(40, 0.2, queue="pausable")
    wait_until(
        lambda: JobEvent.objects.filter(type="claimed", job__queue="pausable").count() >= 3,
        20,
        "first claims",
    )
    services.pause_queue(queue="pausable")
    paused_at = timezone.now()
    time.sleep(1.5)
    late = JobEvent.objects.filter(
        type="claimed", job__queue="pausable", created_at__gt=paused_at
    ).count()
    waiting = Job.objects.filter(queue="pausable", status=Job.Status.QUEUED).count()
    services.resume_queue(queue="pausable")
    resumed_at = time.monotonic()
    wait_until(
        lambda: Job.objects.filter(queue="pausable", status=Job.Status.SUCCEEDED).count() == 40,
        30,
        "the backlog drained",
    )
    figures(
        "pause",
        claims_after_pause=late,
        waiting_while_paused=waiting,
        drained_in_s=round(time.monotonic() - resumed_at, 2),
    )
    assert late == 0
    assert waiting > 0


# --- Flow control tried as an adversary would -------------------------------------------


def claims_of(job_id) -> int:
    return JobEvent.objects.filter(job_id=job_id, type="claimed").count()


def test_a_limit_set_removed_and_set_again_on_a_busy_queue_never_stalls_it(start_workers):
    # Limit changes race the completions of a busy queue: nothing the queue held for a
    # running job can outlive the job, so the queue drains under the last limit.
    services.create_jobs([services.NewJobSpec(type="fault.noop", queue="busy")] * 3_000)
    start_workers(2, threads=4)
    for limit in (3, None, 3):
        wait_until(
            lambda: Job.objects.filter(queue="busy", status=Job.Status.RUNNING).exists(),
            30,
            "claims under way",
        )
        services.set_queue_limits(queue="busy", concurrency_limit=limit)
        time.sleep(0.3)
    started = time.monotonic()
    wait_until(
        lambda: Job.objects.filter(queue="busy", status=Job.Status.SUCCEEDED).count() == 3_000,
        120,
        "the queue drained under its limit",
    )
    figures("limit changes", drained_in_s=round(time.monotonic() - started, 1))
    assert Job.objects.filter(queue="busy", attempts=1).count() == 3_000


REFUSED_QUEUE = "refused"


@pytest.fixture
def jobs_refused_in_one_queue():
    """The database refuses new jobs of the queue ``refused`` (a trigger, as a constraint
    or a failing extension would): a schedule of that queue fails at run time, past every
    check the worker makes at its start."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION jobs_test_refuse() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'jobs of this queue are refused'; END $$"
        )
        cursor.execute(
            "CREATE TRIGGER jobs_test_refuse BEFORE INSERT ON jobs_job FOR EACH ROW "
            f"WHEN (NEW.queue = '{REFUSED_QUEUE}') EXECUTE FUNCTION jobs_test_refuse()"
        )
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER jobs_test_refuse ON jobs_job")
            cursor.execute("DROP FUNCTION jobs_test_refuse()")


# Two and a half leases: a heartbeat held up by a schedule would lose the job twice over.
LONG_JOB_SECONDS = 10
SHORT_LEASE = {"JOB_WORKER_LEASE_SECONDS": "4", "JOB_WORKER_CLEANUP_INTERVAL_SECONDS": "1"}


def test_a_failing_schedule_neither_stops_the_others_nor_delays_a_heartbeat(
    start_workers, jobs_refused_in_one_queue
):
    schedules = {
        "a-refused": {"type": "fault.noop", "interval": 1, "queue": REFUSED_QUEUE},
        "b-healthy": {"type": "fault.noop", "interval": 1},
    }
    ((long_job, _),) = services.create_jobs(
        [services.NewJobSpec(type="fault.sleep", payload={"seconds": LONG_JOB_SECONDS})]
    )
    workers = start_workers(2, threads=2, JOB_SCHEDULES_JSON=json.dumps(schedules), **SHORT_LEASE)
    wait_until(
        lambda: Job.objects.filter(pk=long_job.id, status=Job.Status.SUCCEEDED).exists(),
        LONG_JOB_SECONDS + 20,
        "the long job",
    )
    healthy = ticks_of("b-healthy")
    state = ScheduleState.objects.get(name="a-refused")
    errors = sum(worker.log().count("action=schedule_failed") for worker in workers)
    figures("failing schedule", healthy_ticks=len(healthy), failure_lines=errors)
    assert claims_of(long_job.id) == 1  # never taken back while it ran: it ran once
    assert not JobEvent.objects.filter(type="timeout_requeued").exists()
    assert len(healthy) >= LONG_JOB_SECONDS - 4 and contiguous(healthy)
    assert "refused" in state.error and not ticks_of("a-refused")
    assert errors == 1  # one line for one error, whichever process met it first


def test_catching_up_a_year_of_missed_ticks_is_quick_and_delays_no_heartbeat(start_workers):
    schedules = {"per-minute": {"type": "fault.noop", "cron": "* * * * *", "missed": "latest"}}
    a_year_ago = timezone.now() - timedelta(days=365)
    ScheduleState.objects.create(name="per-minute", last_tick_at=a_year_ago)
    ((long_job, _),) = services.create_jobs(
        [services.NewJobSpec(type="fault.sleep", payload={"seconds": LONG_JOB_SECONDS})]
    )
    started = timezone.now()
    start_workers(3, threads=2, JOB_SCHEDULES_JSON=json.dumps(schedules), **SHORT_LEASE)
    wait_until(lambda: ticks_of("per-minute"), 20, "the missed tick's job")
    first = Job.objects.filter(metadata__schedule="per-minute").order_by("created_at").first()
    assert first is not None
    caught_up = first.created_at - started
    wait_until(
        lambda: Job.objects.filter(pk=long_job.id, status=Job.Status.SUCCEEDED).exists(),
        LONG_JOB_SECONDS + 20,
        "the long job",
    )
    figures("catch-up of a year", seconds_after_start=round(caught_up.total_seconds(), 2))
    assert len(ticks_of("per-minute")) in (1, 2)  # the newest missed, and perhaps one on time
    assert ScheduleState.objects.get(name="per-minute").last_tick_at > started - timedelta(
        minutes=2
    )
    assert claims_of(long_job.id) == 1
    assert not JobEvent.objects.filter(type="timeout_requeued").exists()
