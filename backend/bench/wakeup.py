"""Wake-up latency (the wake-up and idle cost goals): how long a job created on an idle
queue waits.

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

Completion latency (the completion latency goals; ``run_completion``): an idle worker (listen mode,
the same shape) runs lone ``bench.clock`` jobs, created one at a time at random gaps; the
handler returns ``time.time()`` and this process polls the job's row every
``POLL_SECONDS`` until it reads ``succeeded``: the latency is when it first sees the
committed row minus the handler's return, an upper bound by at most one poll (about a
millisecond, plus what the polling itself takes from the worker on a small machine). The
row's ``finished_at`` (the ``:now`` the completing statement was sent with) minus the
handler's return is printed too, a lower bound: it leaves out that statement and its
commit. Once with the default settings (on PostgreSQL batched: the completer must write a
lone success at once when the worker is idle) and once with batch sizes 1 (each thread
completes its own job, the worker before it batched).
"""

from __future__ import annotations

import math
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness import BACKEND_DIR, started, wait_until

from .database import Database, reset_tables
from .drain import live_jobs_exist
from .environment import SINGLE_ENV
from .figures import load_average, log, p50_p99_ms, ratio
from .goals import Goal
from .jobtypes import CLOCK_JOB_TYPE, JOB_TYPE

POLL_INTERVAL_MS = 500  # JOB_WORKER_POLL_INTERVAL_MS's default
THREADS = 4
# How often the completion-latency probe reads the job's row.
POLL_SECONDS = 0.001
# The completion-latency runs: their label and the worker settings each adds.
COMPLETION_MODES = {
    "default settings": {},
    "batch sizes 1": SINGLE_ENV,
}


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
class CompletionRun:
    """Handler return -> its ``succeeded`` row seen committed, for lone jobs."""

    mode: str  # a key of COMPLETION_MODES
    settings: dict[str, str]
    jobs: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    # finished_at - handler return: the wait before the completing statement was sent.
    stamped_p50_ms: float = math.nan
    stamped_p99_ms: float = math.nan


@dataclass(kw_only=True)
class WakeupResult:
    poll_interval_ms: int
    threads: int
    listen: WakeupRun
    polling: WakeupRun
    completion: list[CompletionRun] = field(default_factory=list)


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
    return int(
        db.scalar("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
    )


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
    with _worker(worker_env, log_path, listening=listen) as proc:
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
            lambda: not live_jobs_exist(db),
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


@contextmanager
def _worker(
    worker_env: dict[str, str], log_path: Path, *, listening: bool
) -> Iterator[subprocess.Popen[bytes]]:
    """One ``run_job_workers`` process of THREADS threads, handed over once every thread has
    started (and listens, with ``listening``) and its start-up work is past."""
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
                not listening or "action=listening" in text
            )

        wait_until(ready, 90, interval=0.1, what="worker threads to start")
        time.sleep(2)  # past start-up work (first polls, cleanup)
        yield proc


def run_completion(
    db: Database, env: dict[str, str], *, mode: str, jobs: int, log_dir: Path
) -> CompletionRun:
    from django.test import override_settings

    from jobs import services

    log(f"completion latency: {jobs} lone jobs, {mode}")
    reset_tables(db)
    settings = COMPLETION_MODES[mode]
    worker_env = dict(
        env,
        BENCH_DRIVER="postgres",
        JOB_WORKER_POLL_INTERVAL_MS=str(POLL_INTERVAL_MS),
        JOB_NOTIFY="true",
        JOB_WORKER_LISTEN="true",
        **settings,
    )
    log_path = log_dir / f"worker-completion-{mode.replace(' ', '_')}.log"
    latencies: list[float] = []
    stamped: list[float] = []
    with _worker(worker_env, log_path, listening=True) as proc:
        rng = random.Random(25)
        with override_settings(JOB_NOTIFY=True):
            for index in range(jobs):
                time.sleep(rng.uniform(0.05, 0.25))
                job, _ = services.create_job(type=CLOCK_JOB_TYPE, payload={"n": index})
                deadline = time.monotonic() + 30
                while True:
                    row = db.rows(
                        "SELECT result, extract(epoch FROM finished_at) FROM jobs_job"
                        " WHERE id = %s AND status = 'succeeded'",
                        [job.id],
                    )
                    if row:
                        seen, (returned, finished) = time.time(), row[0]
                        latencies.append(seen - float(returned))
                        stamped.append(float(finished) - float(returned))
                        break
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"job {job.id} did not succeed in 30 s; {log_path}")
                    time.sleep(POLL_SECONDS)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    p50, p99 = p50_p99_ms(latencies)
    stamped_p50, stamped_p99 = p50_p99_ms(stamped)
    return CompletionRun(
        mode=mode,
        settings=settings,
        jobs=jobs,
        p50_ms=p50,
        p99_ms=p99,
        max_ms=round(max(latencies) * 1000, 2),
        stamped_p50_ms=stamped_p50,
        stamped_p99_ms=stamped_p99,
    )


def run_wakeup(
    db: Database,
    env: dict[str, str],
    *,
    jobs: int,
    idle_seconds: float,
    log_dir: Path,
    completion_jobs: int = 0,
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
    completion = [
        run_completion(db, env, mode=mode, jobs=completion_jobs, log_dir=log_dir)
        for mode in COMPLETION_MODES
        if completion_jobs
    ]
    return WakeupResult(
        poll_interval_ms=POLL_INTERVAL_MS,
        threads=THREADS,
        listen=_with_idle_of(listen_first, listen_second),
        polling=_with_idle_of(polling_first, polling_second),
        completion=completion,
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


CLAIM_P50_MS = 10  # enqueue -> claimed on an idle worker, with NOTIFY
COMPLETION_P99_MS = 50  # handler return -> committed, for a lone job
CLAIM_GOAL_ID = "claim-latency-listen"


def goals(result: WakeupResult | None) -> list[Goal]:
    """The latency goals: the wake-up's p50 with LISTEN (the figure of the
    ``wakeup-latency-listen`` row, a tighter target) and each completion-latency run's p99."""
    claim_target = f"p50 < {CLAIM_P50_MS} ms"
    completion_target = f"p99 < {COMPLETION_P99_MS} ms (p50 printed)"
    if result is None:
        why = "wakeup phase not run"
        return [
            Goal.not_run(
                CLAIM_GOAL_ID, "enqueue -> claimed, idle worker, LISTEN/NOTIFY", claim_target, why
            ),
            *(
                Goal.not_run(
                    _completion_goal_id(mode),
                    f"lone job: handler return -> committed, {mode}",
                    completion_target,
                    why,
                )
                for mode in COMPLETION_MODES
            ),
        ]
    listen = result.listen
    rows = [
        Goal(
            id=CLAIM_GOAL_ID,
            name=f"enqueue -> claimed, idle 1 x {result.threads} worker, LISTEN/NOTIFY",
            measured=f"p50 {listen.p50_ms} ms, p99 {listen.p99_ms} ms ({listen.jobs} jobs)",
            reference=f"polling only ({result.poll_interval_ms} ms): p50 "
            f"{result.polling.p50_ms} ms",
            ratio=ratio(listen.p50_ms, result.polling.p50_ms),
            target=claim_target,
            status=Goal.verdict(listen.p50_ms < CLAIM_P50_MS),
        )
    ]
    done = {run.mode: run for run in result.completion}
    reference = done.get("default settings")
    for mode in COMPLETION_MODES:
        name = f"lone job: handler return -> committed, {mode}"
        run = done.get(mode)
        if run is None:
            rows.append(
                Goal.not_run(
                    _completion_goal_id(mode),
                    name,
                    completion_target,
                    "no completion jobs (--completion-jobs 0)",
                )
            )
            continue
        rows.append(
            Goal(
                id=_completion_goal_id(mode),
                name=f"{name}, idle 1 x {result.threads} worker",
                measured=f"p50 {run.p50_ms} ms, p99 {run.p99_ms} ms, max {run.max_ms} ms "
                f"({run.jobs} jobs), seen committed by polling the row every "
                f"{POLL_SECONDS * 1000:g} ms",
                reference=f"finished_at - return (statement and commit left out): p50 "
                f"{run.stamped_p50_ms} ms, p99 {run.stamped_p99_ms} ms"
                + (
                    f"; default settings p99 {reference.p99_ms} ms"
                    if reference is not None and run is not reference
                    else ""
                ),
                ratio=ratio(run.p99_ms, reference.p99_ms) if reference else None,
                target=completion_target,
                status=Goal.verdict(run.p99_ms < COMPLETION_P99_MS),
            )
        )
    return rows


def _completion_goal_id(mode: str) -> str:
    return "completion-latency-" + mode.replace(" ", "-")
