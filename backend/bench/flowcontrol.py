"""What flow control costs the worker when it does not bind: the same no-op backlog
drained from a queue without any control, from the same queue with a concurrency limit
far above what the worker reaches, and with a rate limit far above it whose window is
already half full.

* ``unlimited``: no settings row for the queue, no key limits: the claim statement's
  gate probe finds nothing and claims in one statement;
* ``limited``: the queue has a ``concurrency_limit`` of 10,000: every batch is claimed by
  the gated claim, which locks the queue's row and counts its running jobs;
* ``rated``: the queue has a rate limit of 100,000 per hour with 50,000 claims already in
  its window: every batch is claimed by the gated claim, which reads and rewrites the
  window (its cost does not grow with the claims it holds).

Each run enqueues ``jobs`` jobs in one statement, then one ``run_job_workers`` process of
``threads`` threads, with the default (batched) settings, drains them; jobs/s counts from
the first ``claimed`` to the last ``succeeded`` event. The modes take turns over
``rounds`` (the first one changing each round); each controlled mode's ratio is the median
of the rounds' ratios to the same round's ``unlimited``. The goal (``>= 0.9``) is printed
as PASS or MISS; nothing asserts it.
"""

from __future__ import annotations

import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness import BACKEND_DIR, started, wait_until

from .database import Database, reset_tables
from .drain import EventWindow, event_window, live_jobs_exist
from .figures import load_average, log
from .goals import Goal
from .seed import enqueue_bulk

MODES = ("unlimited", "limited", "rated")
CONTROLLED = ("limited", "rated")
GOAL = 0.9
# Far above what one process of four threads keeps running.
LIMIT = 10_000
# Far above what one process of four threads claims in an hour's run, and half used.
RATE = 100_000
RATE_PERIOD_SECONDS = 3600
RATE_WINDOW_CLAIMS = 50_000


@dataclass(kw_only=True)
class FlowRun(EventWindow):
    mode: str
    jobs: int
    threads: int
    load_average: list[float]


@dataclass(kw_only=True)
class FlowControlResult:
    runs: dict[str, list[FlowRun]]

    def ratio(self, mode: str) -> float:
        return statistics.median(
            run.jobs_per_second / unlimited.jobs_per_second
            for run, unlimited in zip(self.runs[mode], self.runs["unlimited"], strict=True)
        )

    def verdict(self, mode: str) -> str:
        return "PASS" if self.ratio(mode) >= GOAL else "MISS"


def _configure(db: Database, mode: str) -> None:
    """The queue's limits through the service, as PATCH /api/queues/default/ sets them;
    ``rated`` with its window half full."""
    from jobs import services
    from jobs.flowcontrol import rate_room
    from jobs.models import QueueSettings

    db.execute("DELETE FROM jobs_queuesettings")
    db.execute("DELETE FROM jobs_concurrencykeylimit")
    if mode == "limited":
        services.set_queue_limits(queue="default", concurrency_limit=LIMIT)
    if mode == "rated":
        services.set_queue_limits(
            queue="default", rate_limit=RATE, rate_period_seconds=RATE_PERIOD_SECONDS
        )
        now = time.time()
        window = rate_room(None, limit=RATE, period_seconds=RATE_PERIOD_SECONDS, now=now)
        QueueSettings.objects.filter(name="default").update(
            rate_window=window.stored(RATE_WINDOW_CLAIMS)
        )


def _drain(db: Database, env: dict[str, str], *, threads: int, log_path: Path) -> None:
    procs: list[subprocess.Popen[bytes]] = []
    with started(procs), log_path.open("w") as out:
        procs.append(
            subprocess.Popen(
                [sys.executable, "manage.py", "run_job_workers", "--threads", str(threads)],
                cwd=BACKEND_DIR,
                env=env,
                stdout=out,
                stderr=out,
            )
        )
        worker = procs[0]

        def drained() -> bool:
            if worker.poll() is not None:
                raise RuntimeError(f"the worker exited early; see {log_path}")
            return not live_jobs_exist(db)

        wait_until(drained, 300, interval=0.1, what="the jobs to drain")
        worker.send_signal(signal.SIGTERM)
        if worker.wait(timeout=60):
            raise RuntimeError(f"the worker exited with {worker.returncode}; see {log_path}")


def run_mode(
    db: Database, env: dict[str, str], *, mode: str, jobs: int, threads: int, log_dir: Path
) -> FlowRun:
    reset_tables(db)
    _configure(db, mode)
    log(f"flow control: {jobs} jobs drained by 1 x {threads}, {mode}")
    enqueue_bulk(db, jobs)
    _drain(db, env, threads=threads, log_path=log_dir / f"worker-flow-{mode}.log")
    window = event_window(db)
    if window.jobs_succeeded != jobs or window.claimed_events != jobs:
        raise RuntimeError(f"expected {jobs} jobs claimed and succeeded once: {window}")
    return FlowRun(
        **vars(window), mode=mode, jobs=jobs, threads=threads, load_average=load_average()
    )


def run_flow_control(
    db: Database, env: dict[str, str], *, jobs: int, threads: int, rounds: int, log_dir: Path
) -> FlowControlResult:
    runs: dict[str, list[FlowRun]] = {mode: [] for mode in MODES}
    try:
        for number in range(rounds):
            # Each mode goes first in turn: a round's first run meets a cold cache.
            order = MODES[number % len(MODES) :] + MODES[: number % len(MODES)]
            for mode in order:
                runs[mode].append(
                    run_mode(db, env, mode=mode, jobs=jobs, threads=threads, log_dir=log_dir)
                )
    finally:
        _configure(db, "unlimited")
    return FlowControlResult(runs=runs)


LABELS = {
    "limited": f"a concurrency limit of {LIMIT:,}",
    "rated": f"a rate of {RATE:,}/hour with {RATE_WINDOW_CLAIMS:,} claims in its window",
}


def render(result: FlowControlResult) -> list[str]:
    from .report import fmt

    first = result.runs["unlimited"][0]
    out = [
        "",
        f"11. Flow control not binding: {first.jobs:,} no-op jobs drained by 1 proc x "
        f"{first.threads} thr (batched, the defaults) from a queue without controls, with "
        f"{LABELS['limited']} and with {LABELS['rated']}; {len(result.runs['unlimited'])} "
        "rounds",
        f"   {'round':<7}{'mode':<11}{'jobs/s':>9}{'vs unlimited':>14}{'load':>7}",
    ]
    for number, unlimited in enumerate(result.runs["unlimited"]):
        for mode in MODES:
            run = result.runs[mode][number]
            out.append(
                f"   {number + 1:<7}{mode:<11}{fmt(run.jobs_per_second):>9}"
                f"{run.jobs_per_second / unlimited.jobs_per_second * 100:>13.1f}%"
                f"{run.load_average[0]:>7}"
            )
    for mode in CONTROLLED:
        out.append(
            f"   median {mode}/unlimited: {result.ratio(mode):.3f} (goal >= {GOAL}): "
            f"{result.verdict(mode)}"
        )
    return out


def flow_control_goals(result: FlowControlResult | None) -> list[Goal]:
    """One line per controlled mode: its throughput against the same rounds' unlimited."""
    goals = []
    for mode in CONTROLLED:
        goal_id = f"flow-control-{mode}-not-binding"
        name = f"flow control not binding: {LABELS[mode]}, 1 x 4 batched"
        target = f">= {GOAL} of the same queue without controls"
        if result is None:
            goals.append(Goal.not_run(goal_id, name, target, "flowcontrol phase not run"))
            continue
        median = statistics.median(run.jobs_per_second for run in result.runs[mode])
        reference = statistics.median(run.jobs_per_second for run in result.runs["unlimited"])
        goals.append(
            Goal(
                id=goal_id,
                name=name,
                measured=f"{median:,.0f} jobs/s",
                reference=f"unlimited {reference:,.0f} jobs/s, same rounds",
                ratio=result.ratio(mode),
                target=target,
                status=result.verdict(mode),
            )
        )
    return goals
