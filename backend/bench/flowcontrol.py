"""What flow control costs the worker when it does not bind (issue 24): the same no-op
backlog drained from a queue without any control, and from the same queue with a
concurrency limit configured far above what the
worker reaches. (A rate limit is not measured here: it takes the gated claim, which
serialises the queue's claimers on its row lock to stay exact; see the README.)

* ``unlimited``: no settings row for the queue, no key limits: the claim statement's
  gate probe finds nothing and claims in one statement, as before issue 24;
* ``limited``: the queue has a ``concurrency_limit`` of 10,000, so every claim takes one
  of its slots and every completion frees it, without ever being refused.

Each run enqueues ``jobs`` jobs in one statement, then one ``run_job_workers`` process of
``threads`` threads drains them; jobs/s counts from the first ``claimed`` to the last
``succeeded`` event. The modes alternate over ``rounds``; the ratio is the median of the
rounds' limited/unlimited ratios. The goal (``>= 0.9``) is printed as PASS or MISS;
nothing asserts it.
"""

from __future__ import annotations

import signal
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness import BACKEND_DIR, started, wait_until

from .common import (
    Database,
    EventWindow,
    enqueue_bulk,
    event_window,
    live_jobs_exist,
    load_average,
    log,
    reset_tables,
)

MODES = ("unlimited", "limited")
GOAL = 0.9
# Far above what one process of four threads keeps running.
LIMIT = 10_000


@dataclass(kw_only=True)
class FlowRun(EventWindow):
    mode: str
    jobs: int
    threads: int
    load_average: list[float]


@dataclass(kw_only=True)
class FlowControlResult:
    unlimited: list[FlowRun]
    limited: list[FlowRun]

    @property
    def ratio(self) -> float:
        return statistics.median(
            limited.jobs_per_second / unlimited.jobs_per_second
            for limited, unlimited in zip(self.limited, self.unlimited, strict=True)
        )

    @property
    def verdict(self) -> str:
        return "PASS" if self.ratio >= GOAL else "MISS"


def _configure(db: Database, mode: str) -> None:
    """``limited``: through the service, as PATCH /api/queues/default/ (its slots made)."""
    from jobs import services

    db.execute("DELETE FROM jobs_queuesettings")
    db.execute("DELETE FROM jobs_queueslot")
    db.execute("DELETE FROM jobs_concurrencykeylimit")
    if mode == "limited":
        services.set_queue_limits(queue="default", concurrency_limit=LIMIT)


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
    samples: dict[str, list[FlowRun]] = {mode: [] for mode in MODES}
    try:
        for number in range(rounds):
            order = MODES if number % 2 == 0 else MODES[::-1]
            for mode in order:
                samples[mode].append(
                    run_mode(db, env, mode=mode, jobs=jobs, threads=threads, log_dir=log_dir)
                )
    finally:
        _configure(db, "unlimited")
    return FlowControlResult(unlimited=samples["unlimited"], limited=samples["limited"])


def render(result: FlowControlResult) -> list[str]:
    from .report import fmt

    first = result.unlimited[0]
    out = [
        "",
        f"11. Flow control not binding: {first.jobs:,} no-op jobs drained by 1 proc x "
        f"{first.threads} thr from a queue without controls and from one with a concurrency "
        f"limit of {LIMIT:,}, far above reach; {len(result.unlimited)} rounds",
        f"   {'round':<7}{'mode':<11}{'jobs/s':>9}{'vs unlimited':>14}{'load':>7}",
    ]
    for number, (unlimited, limited) in enumerate(
        zip(result.unlimited, result.limited, strict=True), start=1
    ):
        for run in (unlimited, limited):
            out.append(
                f"   {number:<7}{run.mode:<11}{fmt(run.jobs_per_second):>9}"
                f"{run.jobs_per_second / unlimited.jobs_per_second * 100:>13.1f}%"
                f"{run.load_average[0]:>7}"
            )
    out.append(
        f"   median limited/unlimited: {result.ratio:.3f} (goal >= {GOAL}): {result.verdict}"
    )
    return out
