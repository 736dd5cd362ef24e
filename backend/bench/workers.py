"""Worker throughput: how fast the real worker processes drain a backlog of no-op jobs.

``manage.py run_job_workers`` subprocesses (``processes`` x ``threads``) are started on an
empty queue and left idling; then ``jobs`` ``bench.noop`` jobs appear in one statement, and
the workers are stopped with SIGTERM once none is queued or running. jobs/s is counted from
the first ``claimed`` to the last ``succeeded`` event, so process start-up and shutdown are
left out. With ``driver="orm"`` the workers run ``jobs.drivers.OrmDriver`` (what SQLite runs)
instead of the PostgreSQL driver's one statement per transition (``bench/handlers.py``).

Heartbeat cost (``run_heartbeat_cost``): the heartbeat renews the leases of a process's
running attempts, so it costs only while attempts are in flight. One process with 8
threads drains ``bench.sleep`` jobs (0.2 s each: all 8 threads always busy) twice, with
the same lease: once with ``JOB_WORKER_HEARTBEAT_SECONDS`` longer than the drain (no
heartbeat happens) and once with a heartbeat every second, the shortest the setting allows
and ten times the default rate (a third of the 30 s default lease): an upper bound on what
the default cadence costs.
"""

from __future__ import annotations

import math
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness import BACKEND_DIR, started, wait_until

from .cpu import CpuSampler, cpu_between, live_cpu_seconds, ms_per_job
from .database import Database, reset_tables
from .drain import (
    EventWindow,
    due_or_running_jobs_exist,
    event_window,
    live_jobs_exist,
    row_window,
)
from .environment import PATHS
from .figures import best_of, load_average
from .jobtypes import JOB_TYPE, SLEEP_JOB_TYPE, SLEEP_SECONDS
from .seed import enqueue_bulk

# (processes, threads per process), in the order they run.
CONFIGS = [(1, 4), (2, 4), (1, 1)]
# The heartbeat scenario: threads of its one process, the lease of both runs, and the
# heartbeat interval of the run with heartbeats.
HEARTBEAT_THREADS = 8
HEARTBEAT_LEASE_SECONDS = 600
HEARTBEAT_SECONDS = 1


@dataclass(kw_only=True)
class WorkerRun(EventWindow):
    processes: int
    threads: int
    path: str
    jobs: int
    drain_wall_seconds: float
    commits_per_job: float
    load_average: list[float]
    samples_jobs_per_second: list[float] = field(default_factory=list)
    # With ``measure_cpu``: the worker processes' and their PostgreSQL backends' CPU over
    # the first-claimed to last-succeeded window (``bench/cpu.py``).
    worker_cpu_ms_per_job: float | None = None
    postgres_cpu_ms_per_job: float | None = None


def _window_epochs(db: Database, *, lean: bool) -> tuple[float, float]:
    """The first ``claimed`` and last ``succeeded`` events, in seconds since the epoch (in a
    lean timeline, the rows' ``claimed_at`` and ``finished_at``: the same instants)."""
    query = (
        "SELECT extract(epoch FROM min(claimed_at)), extract(epoch FROM max(finished_at))"
        " FROM jobs_job WHERE status = 'succeeded'"
        if lean
        else "SELECT extract(epoch FROM min(created_at) FILTER (WHERE type = 'claimed')),"
        " extract(epoch FROM max(created_at) FILTER (WHERE type = 'succeeded'))"
        " FROM jobs_jobevent"
    )
    first, last = db.rows(query)[0]
    return float(first), float(last)


def lean_timeline(env: Mapping[str, str]) -> bool:
    """Whether the workers run with ``JOB_WORKER_LEAN_TIMELINE`` on (``env_bool``'s words):
    they then write no ``claimed`` or ``succeeded`` event, and the drain is timed from the
    jobs' rows instead."""
    return env.get("JOB_WORKER_LEAN_TIMELINE", "").strip().lower() in {"1", "true", "yes", "on"}


def _commits(db: Database) -> int:
    return int(
        db.scalar("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
    )


def run_workers(
    db: Database,
    env: dict[str, str],
    *,
    processes: int,
    threads: int,
    jobs: int,
    driver: str,
    log_dir: Path,
    job_type: str = JOB_TYPE,
    extra_env: dict[str, str] | None = None,
    label: str = "",
    setup: Callable[[Database], None] | None = None,
    enqueue_first: bool = False,
    after_enqueue: Callable[[Database], None] | None = None,
    measure_cpu: bool = False,
    enqueue: Callable[[Database], None] | None = None,
    finished: Callable[[Database], bool] | None = None,
) -> WorkerRun:
    """``extra_env``: settings of the worker processes on top of ``env`` (throughput mode's
    levers, say); with ``JOB_WORKER_LEAN_TIMELINE`` on, the drain is timed from the jobs'
    rows (``row_window``). ``enqueue_first``: the backlog is inserted before the workers
    start (how the peers are measured, ``bench/peers.py``) instead of while they idle, then
    ``after_enqueue`` runs (an ``ANALYZE``, say); ``measure_cpu``: the workers' and their
    backends' CPU per job over the drain window. ``enqueue`` writes the jobs instead of
    ``jobs`` plain ones (a workflow's graph, say: ``jobs`` then counts every job of it), and
    ``finished`` says when the run is over instead of "nothing due or running" (a graph
    whose waiting jobs are not yet released)."""
    write = enqueue or (lambda db: enqueue_bulk(db, jobs, job_type=job_type))
    over = finished or (lambda db: not due_or_running_jobs_exist(db))
    reset_tables(db)
    if setup is not None:
        setup(db)
    if enqueue_first:
        write(db)
        if after_enqueue is not None:
            after_enqueue(db)
    before = _commits(db)
    sampler = (
        CpuSampler(roots=lambda: [proc.pid for proc in procs], conninfo=db.conninfo)
        if measure_cpu
        else None
    )
    path = PATHS[driver]
    label = label or f"{processes}x{threads}-{path}"
    worker_env = dict(env, BENCH_DRIVER=driver, **(extra_env or {}))
    log_paths = [log_dir / f"worker-{label}-{index}.log" for index in range(processes)]
    command = [sys.executable, "manage.py", "run_job_workers", "--threads", str(threads)]
    procs: list[subprocess.Popen[bytes]] = []
    enqueued_at = time.monotonic()
    with started(procs):
        if sampler is not None:
            sampler.start()
        for log_path in log_paths:
            with log_path.open("w") as out:
                procs.append(
                    subprocess.Popen(
                        command,
                        cwd=BACKEND_DIR,
                        env=worker_env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                )

        def ready() -> bool:
            if any(proc.poll() is not None for proc in procs):
                raise RuntimeError(f"a worker exited early; see {log_dir}")
            started_threads = sum(p.read_text().count("action=thread_started") for p in log_paths)
            return started_threads >= processes * threads

        wait_until(ready, 90, interval=0.1, what="worker threads to start")
        if not enqueue_first:
            time.sleep(0.5)  # every thread has run its first (empty) claim and now idles
            before = _commits(db)
            enqueued_at = time.monotonic()
            write(db)
        wait_until(
            lambda: over(db),
            timeout=max(120, jobs / 20),
            interval=0.1,
            what="the workers to drain the queue",
        )
        drained = time.monotonic() - enqueued_at
        samples = sampler.stop() if sampler is not None else []
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        codes = [proc.wait(timeout=60) for proc in procs]
    if any(codes):
        raise RuntimeError(f"worker exit codes {codes}; see {log_dir}")
    lean = lean_timeline(worker_env)
    window = row_window(db) if lean else event_window(db)
    time.sleep(0.6)  # pg_stat_database is updated when the backends report
    after = _commits(db)
    cpu: dict[str, float] = {}
    if sampler is not None:
        cpu = cpu_between(samples, *_window_epochs(db, lean=lean))
    result = WorkerRun(
        **vars(window),
        processes=processes,
        threads=threads,
        path=path,
        jobs=jobs,
        drain_wall_seconds=round(drained, 2),
        # Includes the idle polls before the insert and after the drain; a rough figure.
        commits_per_job=round((after - before) / jobs, 2),
        load_average=load_average(),
        worker_cpu_ms_per_job=ms_per_job(cpu["worker"], jobs) if cpu else None,
        postgres_cpu_ms_per_job=ms_per_job(cpu["postgres"], jobs) if cpu else None,
    )
    if result.jobs_succeeded != jobs or result.claimed_events != jobs:
        raise RuntimeError(f"expected {jobs} jobs claimed and succeeded once: {result}")
    return result


def drain_cpu_ms_per_job(
    db: Database, env: dict[str, str], command: list[str], *, threads: int, log_path: Path
) -> float:
    """Run one worker process (``command``, ``threads`` threads) until the queue is empty,
    then stop it with SIGTERM; returns its CPU milliseconds per job, counted from the moment
    its threads are up (start-up left out)."""
    procs: list[subprocess.Popen[bytes]] = []
    with started(procs), log_path.open("w") as out:
        procs.append(subprocess.Popen(command, cwd=BACKEND_DIR, env=env, stdout=out, stderr=out))
        worker = procs[0]

        def alive() -> None:
            if worker.poll() is not None:
                raise RuntimeError(f"the worker exited early; see {log_path}")

        def up() -> bool:
            alive()
            return log_path.read_text().count("action=thread_started") >= threads

        def drained() -> bool:
            alive()
            return not live_jobs_exist(db)

        wait_until(up, 60, interval=0.02, what="the worker threads to start")
        cpu_before, done_before = live_cpu_seconds(worker.pid), _succeeded(db)
        wait_until(drained, 300, interval=0.1, what=f"the jobs to drain ({log_path.name})")
        used = live_cpu_seconds(worker.pid) - cpu_before
        jobs = _succeeded(db) - done_before
        worker.send_signal(signal.SIGTERM)
        if worker.wait(timeout=60):
            raise RuntimeError(f"the worker exited with {worker.returncode}; see {log_path}")
    return round(used * 1000 / max(jobs, 1), 3)


def _succeeded(db: Database) -> int:
    return int(db.scalar("SELECT count(*) FROM jobs_job WHERE status = 'succeeded'"))


@dataclass(kw_only=True)
class HeartbeatCost:
    """The same drain of in-flight jobs without and with heartbeats."""

    threads: int
    jobs: int
    job_seconds: float
    lease_seconds: int
    heartbeat_seconds: int
    ceiling_jobs_per_second: float  # threads / job_seconds: no queue cost at all
    without: WorkerRun  # heartbeat interval longer than the drain: none happens
    with_heartbeat: WorkerRun
    cost_percent: float | None  # throughput lost to the heartbeat


def run_heartbeat_cost(
    db: Database, env: dict[str, str], *, jobs: int, repeat: int, log_dir: Path
) -> HeartbeatCost:
    """Drain ``jobs`` ``bench.sleep`` jobs without and with a heartbeat, ``repeat`` rounds
    (alternating which goes first, so drift in the machine's load favours neither); the
    best round of each is kept."""
    intervals = {"without": HEARTBEAT_LEASE_SECONDS - 1, "with": HEARTBEAT_SECONDS}
    samples: dict[str, list[WorkerRun]] = {mode: [] for mode in intervals}
    for round_number in range(repeat):
        order = list(intervals) if round_number % 2 == 0 else list(reversed(intervals))
        for mode in order:
            samples[mode].append(
                run_workers(
                    db,
                    env,
                    processes=1,
                    threads=HEARTBEAT_THREADS,
                    jobs=jobs,
                    driver="postgres",
                    log_dir=log_dir,
                    job_type=SLEEP_JOB_TYPE,
                    extra_env={
                        "JOB_WORKER_LEASE_SECONDS": str(HEARTBEAT_LEASE_SECONDS),
                        "JOB_WORKER_HEARTBEAT_SECONDS": str(intervals[mode]),
                    },
                    label=f"heartbeat-{mode}-{round_number + 1}",
                )
            )
    without, with_heartbeat = best_of(samples["without"]), best_of(samples["with"])
    base = without.jobs_per_second
    lost = (1 - with_heartbeat.jobs_per_second / base) * 100 if base > 0 else math.nan
    return HeartbeatCost(
        threads=HEARTBEAT_THREADS,
        jobs=jobs,
        job_seconds=SLEEP_SECONDS,
        lease_seconds=HEARTBEAT_LEASE_SECONDS,
        heartbeat_seconds=HEARTBEAT_SECONDS,
        ceiling_jobs_per_second=HEARTBEAT_THREADS / SLEEP_SECONDS,
        without=without,
        with_heartbeat=with_heartbeat,
        cost_percent=None if math.isnan(lost) else round(lost, 1),
    )
