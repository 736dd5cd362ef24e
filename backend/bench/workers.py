"""Worker throughput: how fast the real worker processes drain a backlog of no-op jobs.

``manage.py run_job_workers`` subprocesses (``processes`` x ``threads``) are started on an
empty queue and left idling; then ``jobs`` ``bench.noop`` jobs appear in one statement, and
the workers are stopped with SIGTERM once none is queued or running. jobs/s is counted from
the first ``claimed`` to the last ``succeeded`` event, so process start-up and shutdown are
left out. With ``driver="orm"`` the workers run ``jobs.drivers.OrmDriver`` (what SQLite runs)
instead of the PostgreSQL driver's one statement per transition (``bench/handlers.py``).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .common import (
    BACKEND_DIR,
    PATHS,
    Database,
    EventWindow,
    enqueue_bulk,
    event_window,
    load_average,
    reset_tables,
    started,
    wait_for,
)

# (processes, threads per process), in the order they run.
CONFIGS = [(1, 4), (2, 4), (1, 1)]


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


def _queue_empty(db: Database) -> bool:
    return not db.scalar(
        "SELECT EXISTS (SELECT 1 FROM jobs_job WHERE status IN ('queued', 'running'))"
    )


def _commits(db: Database) -> int:
    return db.scalar("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")


def run_workers(
    db: Database,
    env: dict[str, str],
    *,
    processes: int,
    threads: int,
    jobs: int,
    driver: str,
    log_dir: Path,
) -> WorkerRun:
    reset_tables(db)
    path = PATHS[driver]
    label = f"{processes}x{threads}-{path}"
    worker_env = dict(env, BENCH_DRIVER=driver)
    log_paths = [log_dir / f"worker-{label}-{index}.log" for index in range(processes)]
    command = [sys.executable, "manage.py", "run_job_workers", "--threads", str(threads)]
    procs: list[subprocess.Popen[bytes]] = []
    with started(procs):
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

        wait_for(ready, timeout=90, interval=0.1, what="worker threads to start")
        time.sleep(0.5)  # every thread has run its first (empty) claim and now idles
        before = _commits(db)
        enqueued_at = time.monotonic()
        enqueue_bulk(db, jobs)
        wait_for(
            lambda: _queue_empty(db),
            timeout=max(120, jobs / 20),
            interval=0.1,
            what="the workers to drain the queue",
        )
        drained = time.monotonic() - enqueued_at
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        codes = [proc.wait(timeout=60) for proc in procs]
    if any(codes):
        raise RuntimeError(f"worker exit codes {codes}; see {log_dir}")
    window = event_window(db)
    time.sleep(0.6)  # pg_stat_database is updated when the backends report
    after = _commits(db)
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
    )
    if result.jobs_succeeded != jobs or result.claimed_events != jobs:
        raise RuntimeError(f"expected {jobs} jobs claimed and succeeded once: {result}")
    return result
