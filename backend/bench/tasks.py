"""The django.tasks path against the @register path: the same no-op job, enqueued and run.

For each path, ``jobs`` jobs are enqueued in this process one call at a time (the
``@register`` path through ``services.create_job``, the tasks path through
``Task.enqueue()``, which validates the task and its arguments, builds a TaskResult and
registers ``task_enqueued`` for the commit), then one ``manage.py run_job_workers`` process
with ``threads`` threads is started and drains them (the tasks path also reads each job's
attempt history to build the TaskResult of ``task_started``/``task_finished`` and calls the
task through the registry). jobs/s counts from the first ``claimed`` to the last
``succeeded`` event, so process start-up is left out. The paths alternate over ``rounds``
(each round starting with the other one); the ratio is the median of the rounds' ratios,
since the two runs of a round see about the same background load.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .database import Database, reset_tables
from .drain import EventWindow, event_window
from .figures import load_average, log
from .jobtypes import JOB_TYPE
from .workers import drain_cpu_ms_per_job

PATHS = ("register", "tasks")


@dataclass(kw_only=True)
class PathRun(EventWindow):
    path: str
    jobs: int
    threads: int
    enqueue_per_second: float
    # The worker process's CPU per job: its cost, which load on the machine changes less
    # than it changes throughput.
    worker_cpu_ms_per_job: float
    load_average: list[float]


@dataclass(kw_only=True)
class TasksResult:
    """Both paths' runs, in round order; each round ran both paths back to back."""

    register: list[PathRun]
    tasks: list[PathRun]

    def _ratios(self, measure: str) -> list[float]:
        return [
            round(getattr(task, measure) / getattr(register, measure), 3)
            for register, task in zip(self.register, self.tasks, strict=True)
        ]

    @property
    def worker_ratios(self) -> list[float]:
        return self._ratios("jobs_per_second")

    @property
    def worker_ratio(self) -> float:
        """The median of the rounds' ratios: on a shared machine a round's two runs see
        about the same load, while the load moves a lot from one round to the next."""
        return statistics.median(self.worker_ratios)

    @property
    def cpu_ratio(self) -> float:
        """Median of the rounds' worker CPU per job, django.tasks over @register."""
        return statistics.median(self._ratios("worker_cpu_ms_per_job"))

    @property
    def enqueue_ratio(self) -> float:
        return statistics.median(self._ratios("enqueue_per_second"))


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


def run_path(
    db: Database, env: dict[str, str], *, path: str, jobs: int, threads: int, log_dir: Path
) -> PathRun:
    reset_tables(db)
    log(f"tasks: enqueue {jobs} jobs through the {path} path, then drain with 1 x {threads}")
    enqueue_rate = _enqueue(path, jobs)
    command = [sys.executable, "manage.py", "run_job_workers", "--threads", str(threads)]
    cpu_ms_per_job = drain_cpu_ms_per_job(
        db, env, command, threads=threads, log_path=log_dir / f"worker-tasks-{path}.log"
    )
    window = event_window(db)
    if window.jobs_succeeded != jobs or window.claimed_events != jobs:
        raise RuntimeError(f"expected {jobs} jobs claimed and succeeded once: {window}")
    return PathRun(
        **vars(window),
        path=path,
        jobs=jobs,
        threads=threads,
        enqueue_per_second=enqueue_rate,
        worker_cpu_ms_per_job=cpu_ms_per_job,
        load_average=load_average(),
    )


def run_tasks(
    db: Database, env: dict[str, str], *, jobs: int, threads: int, rounds: int, log_dir: Path
) -> TasksResult:
    samples: dict[str, list[PathRun]] = {path: [] for path in PATHS}
    for round_number in range(rounds):
        # Every other round starts with the other path, so neither always goes first.
        for path in PATHS if round_number % 2 == 0 else PATHS[::-1]:
            samples[path].append(
                run_path(db, env, path=path, jobs=jobs, threads=threads, log_dir=log_dir)
            )
    return TasksResult(register=samples["register"], tasks=samples["tasks"])
