"""Wake-up latency (issue 13, goal 5): how long a job created on an idle queue waits.

One ``manage.py run_job_workers`` process (4 threads, the production poll interval of
500 ms) idles; ``jobs`` jobs are created one at a time in this process through
``services.create_job``, at random gaps, so each meets idle workers. Latency is the
``claimed`` event's time minus the job's ``created_at`` (both from this machine's clock).
Twice: with LISTEN/NOTIFY (``JOB_NOTIFY``/``JOB_WORKER_LISTEN`` on, the default) and with
polling only (both off), the reference.

Idle cost, for both modes, over ``idle_seconds`` with nothing to do (two windows of half
each, in the order listen, polling, polling, listen; see ``run_wakeup``): the worker process's
CPU (its threads' run time from ``/proc/<pid>/task/*/schedstat``, not tick-counted
``utime + stime``) and the bench database's commits per second
(``pg_stat_database.xact_commit``; each poll is one autocommit statement; backends
report at most once a second, so the figure is good to about one second's worth).
"""

from __future__ import annotations

import math
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness import BACKEND_DIR, started, wait_until

from .common import JOB_TYPE, Database, load_average, log, p50_p99_ms, reset_tables

POLL_INTERVAL_MS = 500  # JOB_WORKER_POLL_INTERVAL_MS's default
THREADS = 4


@dataclass(kw_only=True)
class WakeupRun:
    mode: str  # "listen" or "polling"
    jobs: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    idle_seconds: float
    idle_cpu_seconds_per_minute: float
    idle_commits_per_second: float
    load_average: list[float]
    # CPU s/min of each idle window, in the order run (the first before the latency jobs).
    idle_cpu_windows: list[float] = field(default_factory=list)


@dataclass(kw_only=True)
class WakeupResult:
    poll_interval_ms: int
    threads: int
    listen: WakeupRun
    polling: WakeupRun


def _cpu_seconds(pid: int) -> float:
    """The CPU time the process's threads have run, to the nanosecond: the first field of
    each ``/proc/<pid>/task/<tid>/schedstat``. An idle worker runs about 0.13 s a minute
    in wake-ups of a tenth of a millisecond, while ``utime + stime`` counts whole 10 ms
    ticks charged to whatever runs when one fires: the same idle worker read 0.12 to
    0.24 s a minute by ticks from one run to the next. The idle window starts after
    start-up, so no thread exits inside it."""
    return (
        sum(
            int((task / "schedstat").read_text().split()[0])
            for task in Path(f"/proc/{pid}/task").iterdir()
        )
        / 1e9
    )


def _commits(db: Database) -> int:
    return db.scalar("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")


def run_mode(
    db: Database,
    env: dict[str, str],
    *,
    listen: bool,
    jobs: int,
    idle_seconds: float,
    log_dir: Path,
) -> WakeupRun:
    from django.test import override_settings

    from jobs import services

    mode = "listen" if listen else "polling"
    log(f"wake-up: {idle_seconds:.0f} s idle, then {jobs} jobs, {mode}")
    reset_tables(db)
    flag = "true" if listen else "false"
    worker_env = dict(
        env,
        BENCH_DRIVER="postgres",
        JOB_WORKER_POLL_INTERVAL_MS=str(POLL_INTERVAL_MS),
        JOB_NOTIFY=flag,
        JOB_WORKER_LISTEN=flag,
    )
    log_path = log_dir / f"worker-wakeup-{mode}.log"
    command = [sys.executable, "manage.py", "run_job_workers", "--threads", str(THREADS)]
    procs: list[subprocess.Popen[bytes]] = []
    with log_path.open("w") as out, started(procs):
        procs.append(
            subprocess.Popen(
                command, cwd=BACKEND_DIR, env=worker_env, stdout=out, stderr=subprocess.STDOUT
            )
        )
        proc = procs[0]

        def ready() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"the worker exited early; see {log_path}")
            text = log_path.read_text()
            return text.count("action=thread_started") >= THREADS and (
                not listen or "action=listening" in text
            )

        wait_until(ready, 90, interval=0.1, what="worker threads to start")
        time.sleep(2)  # past start-up work (first polls, cleanup)

        cpu_before, commits_before = _cpu_seconds(proc.pid), _commits(db)
        idle_began = time.monotonic()
        time.sleep(idle_seconds)
        idle = time.monotonic() - idle_began
        cpu_after, commits_after = _cpu_seconds(proc.pid), _commits(db)

        rng = random.Random(13)
        with override_settings(JOB_NOTIFY=listen):
            for index in range(jobs):
                time.sleep(rng.uniform(0.05, 0.25))
                services.create_job(type=JOB_TYPE, payload={"n": index})
        wait_until(  # at once when jobs is 0: an idle window only
            lambda: (
                not db.scalar(
                    "SELECT EXISTS (SELECT 1 FROM jobs_job WHERE status IN ('queued', 'running'))"
                )
            ),
            timeout=60,
            interval=0.1,
            what="the worker to run every job",
        )
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    waits = [
        row[0].total_seconds()
        for row in db.rows(
            "SELECT e.created_at - j.created_at FROM jobs_job AS j"
            " JOIN jobs_jobevent AS e ON e.job_id = j.id AND e.type = 'claimed'"
        )
    ]
    if len(waits) != jobs:
        raise RuntimeError(f"expected {jobs} claimed events, found {len(waits)}")
    p50, p99 = p50_p99_ms(waits) if waits else (math.nan, math.nan)
    return WakeupRun(
        mode=mode,
        jobs=jobs,
        p50_ms=p50,
        p99_ms=p99,
        max_ms=round(max(waits) * 1000, 2) if waits else math.nan,
        idle_seconds=round(idle, 1),
        idle_cpu_seconds_per_minute=round((cpu_after - cpu_before) / idle * 60, 3),
        # One of the commits is this process's own read of the counter.
        idle_commits_per_second=round((commits_after - commits_before - 1) / idle, 1),
        load_average=load_average(),
    )


def run_wakeup(
    db: Database, env: dict[str, str], *, jobs: int, idle_seconds: float, log_dir: Path
) -> WakeupResult:
    """Both modes' latency, and their idle cost over two windows each in the order listen,
    polling, polling, listen: an idle worker's CPU time rises with whatever else the
    machine runs (the full bench's listen window, first after the 10 M-row phase, read
    0.205 CPU s/min against polling's 0.149 a minute later; side by side, 0.133 and
    0.125), so neither mode may always go first."""
    window = idle_seconds / 2

    def run(listen: bool, latency_jobs: int) -> WakeupRun:
        return run_mode(
            db, env, listen=listen, jobs=latency_jobs, idle_seconds=window, log_dir=log_dir
        )

    listen_first, polling_first = run(True, jobs), run(False, jobs)
    polling_second, listen_second = run(False, 0), run(True, 0)
    return WakeupResult(
        poll_interval_ms=POLL_INTERVAL_MS,
        threads=THREADS,
        listen=_with_idle_of(listen_first, listen_second),
        polling=_with_idle_of(polling_first, polling_second),
    )


def _with_idle_of(run: WakeupRun, later: WakeupRun) -> WakeupRun:
    """``run``'s latency; the idle cost of both runs' windows together."""
    idle = run.idle_seconds + later.idle_seconds

    def mean(a: float, b: float, digits: int) -> float:
        return round((a * run.idle_seconds + b * later.idle_seconds) / idle, digits)

    return replace(
        run,
        idle_seconds=round(idle, 1),
        idle_cpu_seconds_per_minute=mean(
            run.idle_cpu_seconds_per_minute, later.idle_cpu_seconds_per_minute, 3
        ),
        idle_commits_per_second=mean(run.idle_commits_per_second, later.idle_commits_per_second, 1),
        idle_cpu_windows=[run.idle_cpu_seconds_per_minute, later.idle_cpu_seconds_per_minute],
    )
