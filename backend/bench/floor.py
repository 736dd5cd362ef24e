"""The Python floor: the worker's fetch statement driven from bare Python loops.

The in-hand limit (``bench/backlog.py``) is pgbench running the worker's batched statement
with no more jobs in hand than the worker has threads: no Python at all. A worker must at
least call ``services.claim_jobs`` once per batch and read the rows it answers, and while
it holds no more jobs than idle threads it cannot send the next batch's statement before
this one's jobs are done. The floor measures that much and nothing else: ``clients``
processes, each one loop that calls ``services.claim_jobs`` for ``batch`` worker ids,
carrying the previous call's claims as successes (no threads, no handlers, no events
beyond the statement's), timed like the workers (first ``claimed`` to last ``succeeded``
event). What separates a worker from the in-hand limit splits into this floor's share
(Python and the client library between statements) and the worker's own (threads,
handlers, bookkeeping).

Alone (one loop): ``python -m bench.floor --batch 4`` from ``backend/`` with the bench's
environment; the backlog phase runs it as ``clients`` processes on its backlog.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from harness import BACKEND_DIR

from .database import Database, reset_tables
from .drain import event_window
from .seed import enqueue_bulk


def drain(batch: int, *, client: int) -> int:
    """Claim and complete until the queue is empty; returns the jobs this loop ran."""
    import django

    django.setup()
    from jobs import services
    from jobs.drivers.base import Completion, Owner

    worker_ids = [f"floor:{client}:thread-{n}:0000" for n in range(1, batch + 1)]
    completions: list[Completion] = []
    ran = 0
    while True:
        fetched = services.claim_jobs(worker_ids=worker_ids, completions=completions)
        completions = [
            Completion(Owner(row.id, row.locked_by or "", row.attempts), None)
            for row in fetched.claimed
        ]
        ran += len(completions)
        if not completions:
            return ran


def run_floor(
    db: Database, env: dict[str, str], *, clients: int, batch: int, jobs: int, log_dir: Path
) -> float:
    """``clients`` loops of ``batch`` ids each on a fresh backlog of ``jobs``: jobs/s."""
    reset_tables(db)
    enqueue_bulk(db, jobs)
    db.execute("ANALYZE jobs_job")
    procs = []
    command = [sys.executable, "-m", "bench.floor", "--batch", str(batch)]
    for client in range(1, clients + 1):
        with (log_dir / f"floor-c{client}-b{batch}.log").open("w") as out:
            procs.append(
                subprocess.Popen(
                    [*command, "--client", str(client)],
                    cwd=BACKEND_DIR,
                    env=dict(env, BENCH_DRIVER="postgres"),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
    codes = [proc.wait(timeout=max(300, jobs / 20)) for proc in procs]
    if any(codes):
        raise RuntimeError(f"floor loops exited {codes}; see {log_dir}")
    window = event_window(db)
    if window.jobs_succeeded != jobs:
        raise RuntimeError(f"the floor loops did not run every job once: {window}")
    return window.jobs_per_second


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor", description=__doc__)
    parser.add_argument("--batch", type=int, default=4, help="worker ids per statement (4)")
    parser.add_argument("--client", type=int, default=1, help="this loop's number (1)")
    args = parser.parse_args(argv)
    print(f"floor loop {args.client}: ran {drain(args.batch, client=args.client)} jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
