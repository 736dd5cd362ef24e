"""What every peer's app shares: the command line and the drain window it reports.

The files in this folder run inside each peer's own virtualenv (``bench/peers.py``
creates them from ``requirements/<peer>.txt``); they import nothing of this project.
Each app is a module run as ``python -m <app> prepare|work``:

- ``prepare --jobs N``: the peer's schema (installed once), its queue emptied, then N no-op
  jobs enqueued the peer's own way, before any worker runs.
- ``work --jobs N --config NAME --result PATH``: a worker with the configuration's
  settings drains the backlog and exits; PATH gets ``{"first": t0, "last": t1, "jobs": n}``
  in seconds since the epoch, the drain's window (from the first handler's start to the
  last completion the peer records, or the last handler's return where it records none).

The connection settings come from the environment: ``BENCH_PEER_DSN`` (a PostgreSQL URL)
or ``BENCH_PEER_REDIS`` (a Redis URL).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path


class Recorder:
    """Counts handler calls from any thread: the first start and the last return."""

    def __init__(self, expected: int = 0) -> None:
        self.expected = expected
        self.first = 0.0
        self.last = 0.0
        self.count = 0
        self.done = threading.Event()
        self._lock = threading.Lock()

    def started(self) -> None:
        if not self.first:
            with self._lock:
                if not self.first:
                    self.first = time.time()

    def finished(self) -> None:
        with self._lock:
            self.count += 1
            self.last = time.time()
            if self.expected and self.count >= self.expected:
                self.done.set()

    def hit(self) -> None:
        """A no-op handler's whole work: its start and its return."""
        self.started()
        self.finished()


RECORDER = Recorder(int(os.environ.get("BENCH_PEER_JOBS", "0")))


def write_result(path: str, first: float, last: float, jobs: int, **extra: object) -> None:
    Path(path).write_text(json.dumps({"first": first, "last": last, "jobs": jobs, **extra}))


def dsn() -> str:
    return os.environ["BENCH_PEER_DSN"]


def redis_url() -> str:
    return os.environ["BENCH_PEER_REDIS"]


def main(prepare: Callable[[int], None], work: Callable[[int, str, str], None]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["prepare", "work"])
    parser.add_argument("--jobs", type=int, required=True)
    parser.add_argument("--config", default="default")
    parser.add_argument("--result", default="")
    args = parser.parse_args()
    RECORDER.expected = args.jobs
    if args.command == "prepare":
        prepare(args.jobs)
    else:
        work(args.jobs, args.config, args.result)
