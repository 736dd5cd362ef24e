"""The django.tasks path against the @register path: the same no-op job, enqueued and run.

For each path, ``jobs`` jobs are enqueued in this process one call at a time (the
``@register`` path through ``services.create_job``, the tasks path through
``Task.enqueue()``, which validates the task and its arguments, builds a TaskResult and
registers ``task_enqueued`` for the commit), then one ``manage.py run_job_workers`` process
with ``threads`` threads is started and drains them (the tasks path also reads each job's
attempt history to build the TaskResult of ``task_started``/``task_finished`` and calls the
task through the registry). jobs/s counts from the first ``claimed`` to the last
``succeeded`` event, so process start-up is left out. The paths alternate over ``rounds``
and the best round of each is kept, so both see the same background load.
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
    JOB_TYPE,
    Database,
    EventWindow,
    event_window,
    load_average,
    log,
    reset_tables,
    started,
    wait_for,
)

PATHS = ("register", "tasks")


@dataclass(kw_only=True)
class PathRun(EventWindow):
    path: str
    jobs: int
    threads: int
    enqueue_per_second: float
    load_average: list[float]
    samples_jobs_per_second: list[float] = field(default_factory=list)
    samples_enqueue_per_second: list[float] = field(default_factory=list)


@dataclass(kw_only=True)
class TasksResult:
    register: PathRun
    tasks: PathRun

    @property
    def worker_ratio(self) -> float:
        return round(self.tasks.jobs_per_second / self.register.jobs_per_second, 3)

    @property
    def enqueue_ratio(self) -> float:
        return round(self.tasks.enqueue_per_second / self.register.enqueue_per_second, 3)


def _enqueue(path: str, count: int) -> float:
    """Enqueue ``count`` no-op jobs the path's way; returns calls per second."""
    from jobs import services

    from .handlers import noop_task

    def one() -> object:
        return noop_task.enqueue() if path == "tasks" else services.create_job(type=JOB_TYPE)

    begin = time.perf_counter()
    for _ in range(count):
        one()
    return round(count / (time.perf_counter() - begin), 1)


def _drain(db: Database, env: dict[str, str], *, path: str, threads: int, log_dir: Path) -> None:
    log_path = log_dir / f"worker-tasks-{path}.log"
    command = [sys.executable, "manage.py", "run_job_workers", "--threads", str(threads)]
    procs: list[subprocess.Popen[bytes]] = []
    with started(procs), log_path.open("w") as out:
        procs.append(subprocess.Popen(command, cwd=BACKEND_DIR, env=env, stdout=out, stderr=out))

        def drained() -> bool:
            if procs[0].poll() is not None:
                raise RuntimeError(f"the worker exited early; see {log_path}")
            return not db.scalar(
                "SELECT EXISTS (SELECT 1 FROM jobs_job WHERE status IN ('queued', 'running'))"
            )

        wait_for(drained, timeout=300, interval=0.1, what=f"the {path} jobs to drain")
        procs[0].send_signal(signal.SIGTERM)
        if procs[0].wait(timeout=60):
            raise RuntimeError(f"the worker exited with {procs[0].returncode}; see {log_path}")


def run_path(
    db: Database, env: dict[str, str], *, path: str, jobs: int, threads: int, log_dir: Path
) -> PathRun:
    reset_tables(db)
    log(f"tasks: enqueue {jobs} jobs through the {path} path, then drain with 1 x {threads}")
    enqueue_rate = _enqueue(path, jobs)
    _drain(db, env, path=path, threads=threads, log_dir=log_dir)
    window = event_window(db)
    if window.jobs_succeeded != jobs or window.claimed_events != jobs:
        raise RuntimeError(f"expected {jobs} jobs claimed and succeeded once: {window}")
    return PathRun(
        **vars(window),
        path=path,
        jobs=jobs,
        threads=threads,
        enqueue_per_second=enqueue_rate,
        load_average=load_average(),
    )


def _best(samples: list[PathRun]) -> PathRun:
    best = max(samples, key=lambda run: run.jobs_per_second)
    best.samples_jobs_per_second = [run.jobs_per_second for run in samples]
    best.samples_enqueue_per_second = [run.enqueue_per_second for run in samples]
    best.enqueue_per_second = max(best.samples_enqueue_per_second)
    return best


def run_tasks(
    db: Database, env: dict[str, str], *, jobs: int, threads: int, rounds: int, log_dir: Path
) -> TasksResult:
    samples: dict[str, list[PathRun]] = {path: [] for path in PATHS}
    for _ in range(rounds):
        for path in PATHS:
            samples[path].append(
                run_path(db, env, path=path, jobs=jobs, threads=threads, log_dir=log_dir)
            )
    return TasksResult(register=_best(samples["register"]), tasks=_best(samples["tasks"]))
