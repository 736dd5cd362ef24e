"""What every scenario shares: paths, timing helpers, the benchmark database and its data.

The benchmark talks to PostgreSQL through its own psycopg connection (``Database``) for
setup, data generation and measurement, and through the project's code (Django, the
worker processes, gunicorn) for what it measures.
"""

from __future__ import annotations

import math
import os
import random
import secrets
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

import psycopg
from psycopg import sql as pgsql

from harness import REPO_DIR

RESULTS_DIR = REPO_DIR / "bench-results"
JOB_TYPE = "bench.noop"
# Jobs that stay in flight (``bench.handlers``), for what costs only while attempts run.
SLEEP_JOB_TYPE = "bench.sleep"
SLEEP_SECONDS = 0.2
# Issue 25: the realistic mix (goal 5), each job sleeping 1-10 ms by its payload's n, and a
# handler returning its wall clock (goal 4's completion latency).
MIX_JOB_TYPE = "bench.mix"
MIX_SECONDS = (0.001, 0.010)
# Batch sizes 1: one claim and one completion per statement, the worker before issue 25
# (the defaults choose batches on PostgreSQL with prepared statements).
SINGLE_ENV = {"JOB_WORKER_CLAIM_BATCH_SIZE": "1", "JOB_WORKER_COMPLETE_BATCH_SIZE": "1"}
CLOCK_JOB_TYPE = "bench.clock"
# The drivers a scenario can run the services on, and what the results call each: "cte" is
# the PostgreSQL driver (one data-modifying CTE per transition), "orm" the ORM driver.
PATHS = {"postgres": "cte", "orm": "orm"}


def mix_seconds(n: int) -> float:
    """``bench.mix``'s sleep for the job whose payload has ``n``: the same every run."""
    return random.Random(n).uniform(*MIX_SECONDS)


# --- Timing helpers ---------------------------------------------------------------------


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile; ``nan`` for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(math.ceil(pct / 100 * len(ordered)), 1)
    return ordered[rank - 1]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def p50_p99_ms(seconds: Sequence[float]) -> tuple[float, float]:
    return ms(percentile(seconds, 50)), ms(percentile(seconds, 99))


def ratio(value: float, base: float) -> float | None:
    if not base or math.isnan(base) or math.isnan(value):
        return None
    return round(value / base, 2)


def timed_calls(fn: Callable[[], object], count: int) -> list[float]:
    """Seconds taken by each of ``count`` calls of ``fn``, after one untimed warm-up call."""
    fn()
    latencies = []
    for _ in range(count):
        start = time.perf_counter()
        fn()
        latencies.append(time.perf_counter() - start)
    return latencies


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def log(message: str) -> None:
    print(f"[bench {datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


# --- Environment and processes ----------------------------------------------------------


def bench_environment(database: str) -> dict[str, str]:
    """Environment for this process's Django and for the workers and gunicorn it starts."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"GUNICORN_CMD_ARGS", "DJANGO_SETTINGS_MODULE"}
    }
    env.update(
        DATABASE_ENGINE="postgres",
        POSTGRES_DB=database,
        POSTGRES_HOST=os.environ.get("POSTGRES_HOST", "127.0.0.1"),
        POSTGRES_PORT=os.environ.get("POSTGRES_PORT", "5432"),
        POSTGRES_USER=os.environ.get("POSTGRES_USER", "postgres"),
        POSTGRES_PASSWORD=os.environ.get("POSTGRES_PASSWORD", "postgres"),
        POSTGRES_CONN_MAX_AGE="0",
        # Production-like request handling: no browsable API, no debug toolbar, token auth.
        DEBUG="false",
        DJANGO_SECRET_KEY="bench-" + secrets.token_hex(24),
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        # Plain HTTP on the loopback, as behind a proxy that terminates TLS.
        DJANGO_SECURE_SSL_REDIRECT="false",
        # The bench measures throughput; production's per-user job-creation rate would cap it.
        DJANGO_THROTTLE_JOB_CREATE="off",
        JOB_HANDLER_MODULES="bench.handlers",
        JOB_WORKER_LOG_LEVEL="INFO",
        # Only the idle poll (nothing claimable): lets every thread notice the bulk insert
        # within 20 ms instead of 500 ms. A busy worker never sleeps.
        JOB_WORKER_POLL_INTERVAL_MS="20",
        BENCH_DRIVER="",
        PYTHONUNBUFFERED="1",
    )
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    return env


# --- Database plumbing ------------------------------------------------------------------


def conninfo_from(env: dict[str, str]) -> dict[str, Any]:
    return {
        "host": env["POSTGRES_HOST"],
        "port": env["POSTGRES_PORT"],
        "user": env["POSTGRES_USER"],
        "password": env["POSTGRES_PASSWORD"],
        "dbname": env["POSTGRES_DB"],
        "connect_timeout": 5,
    }


class Database:
    """A plain psycopg connection (no Django) for setup, data generation and measurement."""

    def __init__(self, conninfo: dict[str, Any]) -> None:
        self.conninfo = conninfo
        # ClientCursor inlines parameters, as Django's cursor does, so EXPLAIN sees the
        # same literals as the services' statements.
        self.conn = psycopg.connect(
            **conninfo, autocommit=True, cursor_factory=psycopg.ClientCursor
        )

    def reconnect(self) -> None:
        """A fresh session; the old backend reports its pending statistics as it exits."""
        self.conn.close()
        self.conn = psycopg.connect(
            **self.conninfo, autocommit=True, cursor_factory=psycopg.ClientCursor
        )

    def execute(self, sql: str, params: Any = None) -> None:
        with self.conn.cursor() as cur:
            cur.execute(sql, params)

    def rows(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def scalar(self, sql: str, params: Any = None) -> Any:
        return self.rows(sql, params)[0][0]

    def explain(self, sql: str, params: Any = None, *, rollback: bool = False) -> list[str]:
        """``EXPLAIN (ANALYZE, BUFFERS)`` lines; data-modifying statements are rolled back."""
        with self.conn.transaction(force_rollback=rollback), self.conn.cursor() as cur:
            cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            return [row[0] for row in cur.fetchall()]

    def close(self) -> None:
        self.conn.close()


def _drop(conn: psycopg.Connection[Any], name: str) -> None:
    ident = pgsql.Identifier(name)
    conn.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))


def recreate_database(conninfo: dict[str, Any], name: str) -> None:
    with psycopg.connect(**{**conninfo, "dbname": "postgres"}, autocommit=True) as conn:
        _drop(conn, name)
        conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))


def drop_database(conninfo: dict[str, Any], name: str) -> None:
    with psycopg.connect(**{**conninfo, "dbname": "postgres"}, autocommit=True) as conn:
        _drop(conn, name)


def reset_tables(db: Database) -> None:
    db.execute("TRUNCATE jobs_jobevent, jobs_job RESTART IDENTITY")


# Whether a job is queued or running, read through the two partial indexes (job_claim_idx,
# job_timeout_idx), in their own order (the claim index holds available_at AT TIME ZONE
# 'UTC'). The bench asks ten times a second while workers drain; a plain ``EXISTS (...
# status IN ('queued', 'running'))`` is planned as a scan of jobs_job that walks the
# finished rows first, so its cost grew with history and took CPU from the worker on two
# cores: the decay phase measured the bench's own poll (and did again when the claim
# index's order changed and this poll, ordered by the bare column, sorted every queued row).
LIVE_JOB_EXISTS = """
SELECT (SELECT 1 FROM jobs_job WHERE status = 'queued'
        ORDER BY queue, priority DESC, available_at AT TIME ZONE 'UTC', created_at, id
        LIMIT 1) IS NOT NULL
    OR (SELECT 1 FROM jobs_job WHERE status = 'running' ORDER BY locked_until LIMIT 1)
        IS NOT NULL
"""

# Whether a job is running or queued and due (a scenario may hold jobs scheduled for
# later: bench.scale puts 200,000 of a higher priority in front). A loose index scan over
# job_claim_idx: one probe per (queue, priority) level, and in each the first row in
# available_at order is due if any is, so neither the history nor the future jobs are read.
# Scalar sub-selects, not EXISTS: PostgreSQL drops an EXISTS's ORDER BY and LIMIT, and then
# may scan the table for a running row.
DUE_OR_RUNNING_JOB_EXISTS = """
WITH RECURSIVE level AS (
    (SELECT queue, priority FROM jobs_job WHERE status = 'queued'
        ORDER BY queue, priority DESC LIMIT 1)
    UNION ALL
    SELECT later.queue, later.priority FROM level CROSS JOIN LATERAL (
        SELECT * FROM (
            (SELECT queue, priority FROM jobs_job
                WHERE status = 'queued' AND queue = level.queue AND priority < level.priority
                ORDER BY queue, priority DESC LIMIT 1)
            UNION ALL
            (SELECT queue, priority FROM jobs_job
                WHERE status = 'queued' AND queue > level.queue
                ORDER BY queue, priority DESC LIMIT 1)
        ) AS next_level LIMIT 1
    ) AS later
)
SELECT (SELECT 1 FROM jobs_job WHERE status = 'running' ORDER BY locked_until LIMIT 1)
        IS NOT NULL
    OR (SELECT 1 FROM level CROSS JOIN LATERAL (
            SELECT 1 FROM jobs_job
            WHERE status = 'queued' AND queue = level.queue AND priority = level.priority
                AND available_at AT TIME ZONE 'UTC' <= now() AT TIME ZONE 'UTC'
            ORDER BY available_at AT TIME ZONE 'UTC' LIMIT 1
        ) AS due LIMIT 1) IS NOT NULL
"""


def live_jobs_exist(db: Database) -> bool:
    return bool(db.scalar(LIVE_JOB_EXISTS))


def due_or_running_jobs_exist(db: Database) -> bool:
    return bool(db.scalar(DUE_OR_RUNNING_JOB_EXISTS))


def queued_count(db: Database) -> int:
    return db.scalar("SELECT count(*) FROM jobs_job WHERE status = 'queued'")


# Jobs and their ``created`` events in one statement, so a backlog of any size appears at
# once; ``available_at``, ``priority`` and ``created_at`` are SQL expressions of the series
# number ``g``. This generates data; the services' own insert is what enqueue measures.
_ENQUEUE_SQL = """
WITH ins AS (
    INSERT INTO jobs_job (id, type, payload, status, priority, available_at, attempts,
        max_attempts, last_error, created_at, updated_at)
    SELECT gen_random_uuid(), %(type)s, jsonb_build_object('n', g), 'queued', {priority},
           {available_at}, 0, 3, '', {created_at}, {created_at}
    FROM generate_series(1, %(count)s) AS g
    RETURNING id, created_at
)
INSERT INTO jobs_jobevent (job_id, type, attempt, message, data, created_at)
SELECT id, 'created', 0, 'Job created', jsonb_build_object('type', %(type)s::text), created_at
FROM ins
"""


def enqueue_bulk(
    db: Database,
    count: int,
    *,
    priority: str = "50",
    available_at: str = "now()",
    created_at: str = "now()",
    job_type: str = JOB_TYPE,
) -> None:
    sql = _ENQUEUE_SQL.format(priority=priority, available_at=available_at, created_at=created_at)
    db.execute(sql, {"type": job_type, "count": count})


def stale_backlog(jobs: int, *, analyze: bool) -> Callable[[Database], None]:
    """A ``run_workers`` setup: a backlog of ``jobs`` queued jobs written and deleted again,
    analyzed in between with ``analyze`` (so the planner's statistics say every row is
    queued, what autovacuum sees as a backlog arrives). Both ways the run starts with the
    same dead rows; only the statistics differ (issue 25, goal 1; ``make bench-plans``)."""

    def setup(db: Database) -> None:
        enqueue_bulk(db, jobs)
        if analyze:
            db.execute("ANALYZE jobs_job")
            db.execute("ANALYZE jobs_jobevent")
        db.execute("DELETE FROM jobs_jobevent")
        db.execute("DELETE FROM jobs_job")

    return setup


# Finished jobs (5 % failed after 3 attempts) with created, claimed and succeeded/failed
# events, dated in the past so they never mix with the live measurements.
_FINISHED_SQL = """
WITH ins AS (
    INSERT INTO jobs_job (id, type, payload, status, priority, available_at, attempts,
        max_attempts, last_error, result, created_at, updated_at, finished_at)
    SELECT gen_random_uuid(), %(type)s, jsonb_build_object('n', g),
           CASE WHEN g %% 20 = 0 THEN 'failed' ELSE 'succeeded' END, 50, t,
           CASE WHEN g %% 20 = 0 THEN 3 ELSE 1 END, 3,
           CASE WHEN g %% 20 = 0 THEN 'Intentional failure' ELSE '' END,
           CASE WHEN g %% 20 = 0 THEN NULL ELSE '{"ok": true}'::jsonb END,
           t, t + interval '1 second', t + interval '1 second'
    FROM generate_series(%(first)s, %(last)s) AS g,
         LATERAL (SELECT now() - interval '60 days' + g * interval '1 second' AS t) AS ts
    RETURNING id, status, attempts, created_at
)
INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at)
SELECT ins.id, e.type, CASE WHEN e.type = 'created' THEN 0 ELSE ins.attempts END,
       CASE WHEN e.type = 'created' THEN NULL ELSE 'bench-seed' END, e.message, e.data,
       ins.created_at + e.delay
FROM ins CROSS JOIN LATERAL (VALUES
    ('created', 'Job created', jsonb_build_object('type', %(type)s::text), interval '0'),
    ('claimed', 'Job claimed', '{"lease_seconds": 30}'::jsonb, interval '100 ms'),
    (ins.status, CASE WHEN ins.status = 'failed' THEN 'Intentional failure'
                      ELSE 'Job succeeded' END, '{}'::jsonb, interval '1 second')
) AS e(type, message, data, delay)
"""


def add_finished_jobs(db: Database, first: int, last: int, batch: int = 100_000) -> None:
    for start in range(first, last + 1, batch):
        end = min(start + batch - 1, last)
        db.execute(_FINISHED_SQL, {"type": JOB_TYPE, "first": start, "last": end})


def vacuum_analyze(db: Database) -> None:
    # This server may run with autovacuum off; do what autovacuum would do after a load,
    # so the planner has statistics and index-only scans a visibility map.
    db.execute("VACUUM (ANALYZE) jobs_job")
    db.execute("ANALYZE jobs_jobevent")


def server_info(db: Database) -> dict[str, str]:
    names = [
        "server_version",
        "shared_buffers",
        "synchronous_commit",
        "fsync",
        "autovacuum",
        "max_connections",
        "jit",
    ]
    rows = db.rows("SELECT name, setting, unit FROM pg_settings WHERE name = ANY(%s)", [names])
    return {
        name: f"{int(setting) * 8 // 1024}MB" if unit == "8kB" else setting
        for name, setting, unit in rows
    }


# --- Table sizes ------------------------------------------------------------------------


@dataclass(kw_only=True)
class TableSize:
    table: str
    rows: int
    n_live_tup: int
    n_dead_tup: int
    heap_bytes: int
    indexes_bytes: int
    total_bytes: int


@dataclass(kw_only=True)
class IndexSize:
    table: str
    total_bytes: int


def table_sizes(db: Database) -> list[TableSize | IndexSize]:
    """Rows, dead tuples and sizes of both tables, and the size of the claim's index."""
    rows = db.rows(
        """
        SELECT s.relname, s.n_live_tup, s.n_dead_tup, pg_relation_size(s.relid),
               pg_indexes_size(s.relid), pg_total_relation_size(s.relid)
        FROM pg_stat_user_tables AS s
        WHERE s.relname IN ('jobs_job', 'jobs_jobevent') ORDER BY s.relname
        """
    )
    sizes: list[TableSize | IndexSize] = [
        TableSize(
            table=name,
            rows=db.scalar(f"SELECT count(*) FROM {name}"),
            n_live_tup=live,
            n_dead_tup=dead,
            heap_bytes=heap,
            indexes_bytes=indexes,
            total_bytes=total,
        )
        for name, live, dead, heap, indexes, total in rows
    ]
    sizes.append(
        IndexSize(
            table="job_claim_idx", total_bytes=db.scalar("SELECT pg_relation_size('job_claim_idx')")
        )
    )
    return sizes


# --- Drain runs (workers and pgbench) ---------------------------------------------------


@dataclass(kw_only=True)
class EventWindow:
    """A drained backlog, timed from its events: first ``claimed`` to last ``succeeded``."""

    span_seconds: float
    claimed_events: int
    succeeded_events: int
    jobs_succeeded: int
    jobs_per_second: float


def event_window(db: Database) -> EventWindow:
    first, last, claimed, succeeded, distinct = db.rows(
        """
        SELECT min(created_at) FILTER (WHERE type = 'claimed'),
               max(created_at) FILTER (WHERE type = 'succeeded'),
               count(*) FILTER (WHERE type = 'claimed'),
               count(*) FILTER (WHERE type = 'succeeded'),
               count(DISTINCT job_id) FILTER (WHERE type = 'succeeded')
        FROM jobs_jobevent
        """
    )[0]
    span = (last - first).total_seconds() if first and last else math.nan
    return EventWindow(
        span_seconds=round(span, 3),
        claimed_events=claimed,
        succeeded_events=succeeded,
        jobs_succeeded=distinct,
        jobs_per_second=round(succeeded / span, 1) if span and span > 0 else math.nan,
    )


def row_window(db: Database) -> EventWindow:
    """The same window read from the jobs' rows: first ``claimed_at`` to last ``finished_at``
    of the succeeded jobs. A claim stamps ``claimed_at`` with the time its ``claimed`` event
    would carry, a completion ``finished_at`` with its ``succeeded`` event's, so the span is
    the event window's; it is what a lean timeline (``JOB_WORKER_LEAN_TIMELINE``), which
    writes neither event, leaves to time. ``claimed_events`` and ``succeeded_events`` count
    the claims (``attempts``) and successes the rows record."""
    first, last, claims, succeeded = db.rows(
        """
        SELECT min(claimed_at), max(finished_at), coalesce(sum(attempts), 0), count(*)
        FROM jobs_job
        WHERE status = 'succeeded'
        """
    )[0]
    span = (last - first).total_seconds() if first and last else math.nan
    return EventWindow(
        span_seconds=round(span, 3),
        claimed_events=int(claims),
        succeeded_events=succeeded,
        jobs_succeeded=succeeded,
        jobs_per_second=round(succeeded / span, 1) if span and span > 0 else math.nan,
    )


class DrainRun(Protocol):
    jobs_per_second: float
    samples_jobs_per_second: list[float]


def best_of[Run: DrainRun](samples: list[Run]) -> Run:
    """The fastest of repeated runs (background load only ever slows a run down)."""
    best = max(samples, key=lambda item: item.jobs_per_second)
    return replace(best, samples_jobs_per_second=[item.jobs_per_second for item in samples])
