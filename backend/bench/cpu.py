"""CPU per job of a drain: the worker processes' and the store's, sampled from ``/proc``.

A ``CpuSampler`` thread reads, every ``interval`` seconds, the CPU time (user + system)
used so far by three groups of processes on this machine:

- the workers: the given root processes and every descendant (threads included, children
  such as Dramatiq's or db_worker's processes too);
- PostgreSQL: the backends connected to the given database (``pg_stat_activity``, read
  from the ``postgres`` database so the sampler adds no commits to the measured one);
- Redis: one ``redis-server`` process, for the peers that keep their queue there.

A process that has exited keeps the last figure read for it. Afterwards ``cpu_between``
interpolates each group's total at the drain window's first and last instants (seconds
since the epoch, as the drains report them), so start-up, idling and shutdown fall outside.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds the process has used (its threads included); ``None``
    once it has gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS


def live_cpu_seconds(pid: int) -> float:
    """``cpu_seconds`` of a process that must still run."""
    seconds = cpu_seconds(pid)
    if seconds is None:
        raise RuntimeError(f"process {pid} has exited")
    return seconds


def descendants(pid: int) -> list[int]:
    """``pid`` and every live process below it."""
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        try:
            tasks = list(Path(f"/proc/{current}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                stack.extend(int(child) for child in (task / "children").read_text().split())
            except OSError:
                continue
    return found


@dataclass(frozen=True)
class Sample:
    at: float  # seconds since the epoch
    worker: float
    postgres: float
    redis: float


def interpolate(samples: Sequence[Sample], at: float, group: str) -> float:
    """The group's CPU total at ``at``, linear between the samples around it (the first or
    last sample outside their range)."""
    times = [sample.at for sample in samples]
    index = bisect.bisect_left(times, at)
    if index <= 0:
        return float(getattr(samples[0], group))
    if index >= len(samples):
        return float(getattr(samples[-1], group))
    before, after = samples[index - 1], samples[index]
    low, high = getattr(before, group), getattr(after, group)
    span = after.at - before.at
    share = (at - before.at) / span if span > 0 else 1.0
    return float(low + (high - low) * share)


def cpu_between(samples: Sequence[Sample], first: float, last: float) -> dict[str, float]:
    """CPU seconds each group used between the two instants."""
    if not samples:
        return {"worker": float("nan"), "postgres": float("nan"), "redis": float("nan")}
    return {
        group: interpolate(samples, last, group) - interpolate(samples, first, group)
        for group in ("worker", "postgres", "redis")
    }


class CpuSampler(threading.Thread):
    """Samples the three groups until ``stop()``; use as a context manager."""

    def __init__(
        self,
        *,
        roots: Callable[[], list[int]],
        conninfo: dict[str, Any] | None = None,
        redis_pid: int | None = None,
        interval: float = 0.1,
    ) -> None:
        super().__init__(daemon=True)
        self.roots = roots
        self.conninfo = conninfo
        self.redis_pid = redis_pid
        self.interval = interval
        self.samples: list[Sample] = []
        self._stop_event = threading.Event()
        self._seen: dict[str, dict[int, float]] = {"worker": {}, "postgres": {}}

    def _total(self, group: str, pids: list[int]) -> float:
        seen = self._seen[group]
        for pid in pids:
            value = cpu_seconds(pid)
            if value is not None:
                seen[pid] = value
        return sum(seen.values())

    def sample(self, backends: Callable[[], list[int]]) -> None:
        worker_pids = [pid for root in self.roots() for pid in descendants(root)]
        redis = cpu_seconds(self.redis_pid) if self.redis_pid else 0.0
        self.samples.append(
            Sample(
                at=time.time(),
                worker=self._total("worker", worker_pids),
                postgres=self._total("postgres", backends()),
                redis=redis or 0.0,
            )
        )

    def run(self) -> None:
        conn = None
        if self.conninfo is not None:
            import psycopg

            # From the maintenance database, so its queries add no commits to the measured one.
            database = self.conninfo["dbname"]
            conn = psycopg.connect(**{**self.conninfo, "dbname": "postgres"}, autocommit=True)

        def backends() -> list[int]:
            if conn is None:
                return []
            rows = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s", [database]
            ).fetchall()
            return [row[0] for row in rows]

        try:
            while not self._stop_event.is_set():
                self.sample(backends)
                self._stop_event.wait(self.interval)
            self.sample(backends)
        finally:
            if conn is not None:
                conn.close()

    def stop(self) -> list[Sample]:
        self._stop_event.set()
        self.join(timeout=10)
        return self.samples

    def __enter__(self) -> CpuSampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def ms_per_job(seconds: float, jobs: int) -> float | None:
    if jobs <= 0 or seconds != seconds:  # nan
        return None
    return round(seconds * 1000 / jobs, 3)
