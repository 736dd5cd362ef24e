"""The job types and workers reads at scale: the ``activity`` phase of ``make bench``, or
alone: ``python -m bench.activity [--events N]``.

Run from ``backend/`` on a quiet machine (the figures are latencies). Alone it creates a
database of its own (default ``job_queue_bench_activity``, dropped afterwards). It fills the
last ``--minutes`` with ``--events`` events spread evenly (per job: created, claimed, and
succeeded or, 5 %, retry_scheduled; ten types, four processes of four threads), vacuums and
analyzes as autovacuum would, and prints, in-process:

* ``type_health`` and ``worker_activity`` cold (empty cache: every minute aggregated) once;
* the same warm, p50/p95 over ``--calls`` calls, as a dashboard polls them: settled minutes
  come from the cache, the unsettled tail (about two minutes of events) and the per-type
  samples from the database. The target is p95 < 100 ms at 1 M events in the window.

Benchmarks print figures; nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from .database import Database, reset_tables
from .environment import bench_database
from .figures import load_average, log, ms, percentile

# Jobs and their three events, dated evenly over the window ending now. Types t.0..t.9,
# worker ids of four processes of four threads, runs of 10..1000 ms, waits of 0..500 ms.
_FILL_SQL = """
WITH ins AS (
    INSERT INTO jobs_job (id, type, payload, status, priority, available_at, attempts,
        max_attempts, last_error, created_at, updated_at, finished_at)
    SELECT gen_random_uuid(), 'bench.t' || (g %% 10), '{}'::jsonb,
        CASE WHEN g %% 20 = 0 THEN 'queued' ELSE 'succeeded' END, 50, t, 1, 3, '',
        t, t, CASE WHEN g %% 20 = 0 THEN NULL ELSE t END
    FROM generate_series(%(first)s, %(last)s) AS g,
        LATERAL (SELECT now() - %(span)s * interval '1 second'
            + g * (%(span)s::float8 / %(jobs)s) * interval '1 second' AS t) AS ts
    RETURNING id, type, status, created_at,
        ('x' || substr(id::text, 1, 8))::bit(32)::int AS r
)
INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
    job_type, wait_ms, run_ms)
SELECT ins.id, e.type, e.attempt,
    CASE WHEN e.type = 'created' THEN NULL
        ELSE 'bench-' || (abs(ins.r) %% 4) || ':' || (1000 + abs(ins.r) %% 4)
            || ':thread-' || (1 + abs(ins.r / 4) %% 4) || ':00aa' END,
    e.message, '{}'::jsonb, ins.created_at + e.delay, ins.type,
    CASE WHEN e.type = 'created' THEN NULL ELSE abs(ins.r) %% 500 END,
    CASE WHEN e.type IN ('created', 'claimed') THEN NULL ELSE 10 + abs(ins.r) %% 990 END
FROM ins CROSS JOIN LATERAL (VALUES
    ('created', 0, 'Job created', interval '0'),
    ('claimed', 1, 'Job claimed', interval '1 ms'),
    (CASE WHEN ins.status = 'queued' THEN 'retry_scheduled' ELSE 'succeeded' END, 1,
        CASE WHEN ins.status = 'queued' THEN 'Intentional failure' ELSE 'Job succeeded' END,
        interval '2 ms')
) AS e(type, attempt, message, delay)
"""


def fill(db: Database, *, events: int, minutes: int, batch: int = 100_000) -> int:
    jobs = events // 3
    for first in range(1, jobs + 1, batch):
        last = min(first + batch - 1, jobs)
        db.execute(
            _FILL_SQL, {"first": first, "last": last, "jobs": jobs, "span": minutes * 60 - 5}
        )
    db.execute("VACUUM (ANALYZE) jobs_jobevent")
    db.execute("VACUUM (ANALYZE) jobs_job")
    return jobs


@dataclass(kw_only=True)
class ReadLatency:
    """One read in-process: once with an empty cache, then ``calls`` times warm."""

    cold_ms: float
    calls: int
    p50_ms: float
    p95_ms: float


@dataclass(kw_only=True)
class ActivityResult:
    events: int
    minutes: int
    fill_seconds: float
    type_health: ReadLatency
    worker_activity: ReadLatency
    load_average: list[float]


def _latency(read: Callable[[], object], calls: int) -> ReadLatency:
    from django.core.cache import cache

    cache.clear()
    start = time.perf_counter()
    read()
    cold = time.perf_counter() - start
    warm = []
    for _ in range(calls):
        start = time.perf_counter()
        read()
        warm.append(time.perf_counter() - start)
    return ReadLatency(
        cold_ms=ms(cold),
        calls=calls,
        p50_ms=ms(percentile(warm, 50)),
        p95_ms=ms(percentile(warm, 95)),
    )


def run_activity(db: Database, *, events: int, minutes: int, calls: int) -> ActivityResult:
    """Fill the window (the tables are emptied first) and time both reads."""
    from jobs import selectors

    reset_tables(db)
    log(f"activity: filling the last {minutes} minutes with {events:,} events")
    began = time.monotonic()
    fill(db, events=events, minutes=minutes)
    fill_seconds = round(time.monotonic() - began, 1)
    log(f"activity: timing the job types and workers reads ({calls} warm calls each)")
    return ActivityResult(
        events=db.scalar("SELECT count(*) FROM jobs_jobevent"),
        minutes=minutes,
        fill_seconds=fill_seconds,
        type_health=_latency(lambda: selectors.type_health(minutes=minutes), calls),
        worker_activity=_latency(lambda: selectors.live_workers(minutes=minutes), calls),
        load_average=load_average(),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.activity", description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the window")
    parser.add_argument("--minutes", type=int, default=60, help="the window (default 60)")
    parser.add_argument("--calls", type=int, default=40, help="warm calls per read (40)")
    parser.add_argument("--db", default="job_queue_bench_activity", help="database to use")
    parser.add_argument("--keep-db", action="store_true", help="leave the database in place")
    args = parser.parse_args(argv)

    with bench_database(args.db, keep=args.keep_db) as (_, db):
        result = run_activity(db, events=args.events, minutes=args.minutes, calls=args.calls)
    print("\n".join(render(result)))
    print(asdict(result))
    return 0


def render(result: ActivityResult) -> list[str]:
    lines = [
        "",
        f"Job types and workers reads, {result.events:,} events in the last "
        f"{result.minutes} minutes (in-process; load {result.load_average})",
    ]
    for name, read in (
        ("type_health", result.type_health),
        ("worker_activity", result.worker_activity),
    ):
        lines.append(
            f"   {name:16} cold {read.cold_ms:8.1f} ms   warm p50 {read.p50_ms:6.1f} ms"
            f"   p95 {read.p95_ms:6.1f} ms   ({read.calls} calls)"
        )
    return lines


if __name__ == "__main__":
    sys.exit(main())
