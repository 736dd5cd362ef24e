"""Scale: what the table's size does to the claim and to the dashboard's reads.

Three points, measured the same way (the API under gunicorn with ``CONN_MAX_AGE=60``):

* ``small``: 10 k finished jobs (three events each, 5 % failed) and about 1 k queued;
* ``large``: ``--scale-max`` finished jobs, the same queue (with 10 M, 1 M is measured
  on the way: every power of ten from 1 M below it);
* ``backlog``: the large table plus a backlog of ``--backlog`` queued jobs over three
  priorities, every tenth delayed an hour, so the claim must pass over delayed rows.

At each: claim latency in-process (``services.claim_next_job``, timed, then an untimed
``complete_job``), the claim statement's server-side execution time and plan (EXPLAIN
ANALYZE, rolled back), ``GET /api/jobs/stats/`` and ``GET /api/jobs/?limit=25`` latency,
``selectors.job_stats()`` in-process, and the plans of the stats and list-count queries.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .database import Database, reset_tables
from .drain import queued_count
from .figures import best_of, load_average, log, p50_p99_ms, ratio, timed_calls
from .seed import add_finished_jobs, enqueue_bulk, vacuum_analyze
from .server import Client, EndpointLatency, ServerShape, api_server, api_token, endpoint_latency
from .workers import WorkerRun, run_workers

SMALL = 10_000
# Due jobs of the future-jobs case.
FUTURE_DUE = 2_000
# The first claims after a bulk load meet cold caches; they are not timed.
CLAIM_WARMUP = 50


@dataclass(kw_only=True)
class ClaimLatency:
    claims: int
    p50_ms: float
    p99_ms: float


@dataclass(kw_only=True)
class ClaimSqlLatency:
    runs: int
    p50_ms: float
    p99_ms: float


@dataclass(kw_only=True)
class ClaimPlan:
    uses_job_claim_idx: bool
    sorts: bool
    key_lines: list[str]
    plan: list[str]


@dataclass(kw_only=True)
class CallLatency:
    calls: int
    p50_ms: float
    p99_ms: float


@dataclass(kw_only=True)
class ScalePoint:
    finished_jobs: int
    queued_jobs: int
    claim: ClaimLatency
    claim_sql: ClaimSqlLatency
    claim_plan: ClaimPlan
    stats_endpoint: EndpointLatency
    list_endpoint: EndpointLatency
    stats_service: CallLatency
    stats_plan: list[str]
    count_plan: list[str]
    load_average: list[float]


@dataclass(kw_only=True)
class BacklogPoint:
    queued_jobs: int
    delayed_jobs: int
    claim: ClaimLatency
    claim_sql: ClaimSqlLatency
    claim_plan: ClaimPlan
    stats_endpoint: EndpointLatency
    load_average: list[float]


@dataclass(kw_only=True)
class EmptyClaim:
    """The claim statement on a queue with no due job (server side, rolled back)."""

    runs: int
    p50_ms: float
    p99_ms: float
    shared_buffers: int  # hit + read, whole statement, one run


@dataclass(kw_only=True)
class FutureJobsSide:
    future_jobs: int
    empty_claim: EmptyClaim
    drain: WorkerRun


@dataclass(kw_only=True)
class FutureJobsCase:
    """Not-yet-due jobs of a higher priority in front of the due ones: the drain and an
    empty-due claim must not walk them."""

    due_jobs: int
    without: FutureJobsSide
    with_future: FutureJobsSide
    drain_ratio: float | None  # with / without jobs/s
    claim_p99_ratio: float | None  # with / without


@dataclass(kw_only=True)
class StatsExactness:
    """The stats response at the large point against count(*)."""

    estimated: bool  # the response says its finished counts are estimates
    queued: int
    running: int
    queued_actual: int
    running_actual: int
    live_exact: bool


@dataclass(kw_only=True)
class DashboardsCost:
    """``dashboards`` clients polling stats every ``poll_seconds`` for ``seconds`` against
    a server with the default cache; stats queries counted from jobs_job's scan counters."""

    dashboards: int
    poll_seconds: float
    seconds: float
    requests: int
    cache_seconds: int
    server_processes: int
    scans_per_stats_query: float
    stats_queries: float
    # At most one query per interval per gunicorn process (the cache is per process).
    expected_max: int


@dataclass(kw_only=True)
class ScaleResult:
    small_setup_seconds: float
    small: ScalePoint
    large_insert_seconds: float
    large_vacuum_seconds: float
    large: ScalePoint
    backlog: BacklogPoint
    exactness: StatsExactness
    dashboards: DashboardsCost
    future: FutureJobsCase | None
    seconds: float
    # Points between small and large: each power of ten from 1 M below ``--scale-max``.
    middle: list[ScalePoint] = field(default_factory=list)


def claim_latency(count: int) -> ClaimLatency:
    """Claim (timed) then complete (untimed) ``count`` jobs, one at a time, in-process."""
    from jobs import services

    latencies = []
    worker = "bench-claim-latency"
    for index in range(CLAIM_WARMUP + count):
        start = time.perf_counter()
        job = services.claim_next_job(worker_id=worker)
        if index >= CLAIM_WARMUP:
            latencies.append(time.perf_counter() - start)
        if job is None:
            raise RuntimeError("the backlog ran dry during the claim-latency measurement")
        services.complete_job(job_id=job.id, worker_id=worker, attempt=job.attempts)
    p50, p99 = p50_p99_ms(latencies)
    return ClaimLatency(claims=count, p50_ms=p50, p99_ms=p99)


def _claim_params() -> dict[str, Any]:
    from django.utils import timezone

    from jobs.models import DEFAULT_QUEUE, JobEventType
    from jobs.services import MESSAGES

    now = timezone.now()
    # complete_and_claim with nothing to complete (a NULL id): the worker's plain claim.
    return {
        "id": None,
        "attempts": None,
        "result_json": None,
        "completed_message": None,
        "completed_data": None,
        "now": now,
        "worker_id": "bench-explain",
        "queue": DEFAULT_QUEUE,
        "locked_until": now,
        "claimed_message": MESSAGES[JobEventType.CLAIMED],
        "claimed_data": "{}",
        # What the worker sends without JOB_CONCURRENCY_KEY_LIMITS.
        "keys_limited": False,
        "lean": False,
    }


def claim_sql_latency(db: Database, count: int) -> ClaimSqlLatency:
    """Server-side execution time of the claim statement (EXPLAIN ANALYZE, rolled back).

    Leaves out the commit's WAL flush, the network and Python, which on a shared machine
    carry most of the noise, so it shows what the table's size does to the claim itself.
    """
    from jobs.drivers.postgres import QUERIES

    times = []
    for _ in range(count):
        with db.conn.transaction(force_rollback=True), db.conn.cursor() as cur:
            cur.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) " + QUERIES["complete_and_claim"].sql,
                _claim_params(),
            )
            (plan,) = cur.fetchall()[0]
        times.append(plan[0]["Execution Time"] / 1000)
    p50, p99 = p50_p99_ms(times)
    return ClaimSqlLatency(runs=count, p50_ms=p50, p99_ms=p99)


def empty_claim(db: Database, count: int) -> EmptyClaim:
    """``count`` EXPLAIN ANALYZE runs of the claim on a queue with nothing due."""
    from jobs.drivers.postgres import QUERIES

    times = []
    buffers = 0
    for _ in range(CLAIM_WARMUP + count):
        with db.conn.transaction(force_rollback=True), db.conn.cursor() as cur:
            cur.execute(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + QUERIES["complete_and_claim"].sql,
                _claim_params(),
            )
            (plan,) = cur.fetchall()[0]
        top = plan[0]["Plan"]
        buffers = top.get("Shared Hit Blocks", 0) + top.get("Shared Read Blocks", 0)
        times.append(plan[0]["Execution Time"] / 1000)
    if db.scalar("SELECT count(*) FROM jobs_job WHERE status = 'running'"):
        raise RuntimeError("the empty-claim probe claimed a job")
    p50, p99 = p50_p99_ms(times[CLAIM_WARMUP:])
    return EmptyClaim(runs=count, p50_ms=p50, p99_ms=p99, shared_buffers=buffers)


def run_future_jobs(
    db: Database, env: dict[str, str], *, future: int, due: int, claims: int, log_dir: Path
) -> FutureJobsCase:
    """Claims with ``future`` priority-100 jobs due tomorrow in front of ``due`` priority-50
    jobs due now, against the same without them: a claim on the empty due set (time and
    buffers) and a 1 x 4 worker drain of the due jobs."""

    def setup_for(count: int) -> Callable[[Database], None]:
        def setup(db: Database) -> None:
            if count:
                enqueue_bulk(
                    db,
                    count,
                    priority="100",
                    available_at="now() + interval '1 day'",
                    created_at="now() - interval '1 minute'",
                )
            # What autovacuum (off on this server) would do after a bulk load.
            vacuum_analyze(db)

        return setup

    probes = {}
    for count in (0, future):
        reset_tables(db)
        setup_for(count)(db)
        probes[count] = empty_claim(db, claims)
    # Drains in the order without, with, with, without: drift in the machine's load
    # favours neither side; the best of each pair is kept.
    drains: dict[int, list[WorkerRun]] = {0: [], future: []}
    for round_number, count in enumerate((0, future, future, 0)):
        log(f"scale: draining {due:,} due jobs behind {count:,} future jobs")
        drains[count].append(
            run_workers(
                db,
                env,
                processes=1,
                threads=4,
                jobs=due,
                driver="postgres",
                log_dir=log_dir,
                label=f"future-{count}-{round_number}",
                setup=setup_for(count),
            )
        )
    without, with_future = (
        FutureJobsSide(future_jobs=count, empty_claim=probes[count], drain=best_of(drains[count]))
        for count in (0, future)
    )
    return FutureJobsCase(
        due_jobs=due,
        without=without,
        with_future=with_future,
        drain_ratio=ratio(with_future.drain.jobs_per_second, without.drain.jobs_per_second),
        claim_p99_ratio=ratio(with_future.empty_claim.p99_ms, without.empty_claim.p99_ms),
    )


def stats_exactness(port: int, token: str, db: Database) -> StatsExactness:
    client = Client(port, token)
    try:
        code, body = client.request("GET", "/api/jobs/stats/")
    finally:
        client.close()
    if code != 200:
        raise RuntimeError(f"GET /api/jobs/stats/ answered {code}")
    stats = json.loads(body)
    queued, running = stats["by_status"]["queued"], stats["by_status"]["running"]
    actual = dict(db.rows("SELECT status, count(*) FROM jobs_job GROUP BY status"))
    queued_actual, running_actual = actual.get("queued", 0), actual.get("running", 0)
    return StatsExactness(
        estimated=bool(stats.get("estimated")),
        queued=queued,
        running=running,
        queued_actual=queued_actual,
        running_actual=running_actual,
        live_exact=(queued, running) == (queued_actual, running_actual),
    )


def _job_scans(db: Database) -> int:
    return int(
        db.scalar(
            "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables"
            " WHERE relname = 'jobs_job'"
        )
    )


def dashboards_cost(
    db: Database,
    env: dict[str, str],
    shape: ServerShape,
    token: str,
    *,
    log_dir: Path,
    dashboards: int = 8,
    poll_seconds: float = 0.25,
    seconds: float = 6.0,
) -> DashboardsCost:
    """N dashboards polling cost the database one stats query per cache interval.

    Nothing else touches jobs_job meanwhile, so its scan counters count stats queries,
    calibrated by ``calibration`` GETs on a server without the cache. Backends report
    their counters when they go idle (at most once a second) or exit: each server is
    stopped, and the counters settle, before they are read.
    """
    from django.conf import settings
    from django.db import connection

    # This process's sessions scanned jobs_job just before; a backend holds such counts
    # for up to 10 s while idle, so end both sessions (their backends report on exit).
    connection.close()
    db.reconnect()

    def settled_scans() -> int:
        time.sleep(1.5)
        return _job_scans(db)

    calibration = 20
    before = settled_scans()
    uncached = dict(env, JOB_STATS_CACHE_SECONDS="0")
    with api_server(uncached, shape, conn_max_age=60, log_dir=log_dir) as port:
        client = Client(port, token)
        try:
            for _ in range(calibration):
                client.request("GET", "/api/jobs/stats/")
        finally:
            client.close()
    per_query = (settled_scans() - before) / calibration
    requests = 0
    lock = threading.Lock()
    before = settled_scans()
    with api_server(env, shape, conn_max_age=60, log_dir=log_dir) as port:
        deadline = time.monotonic() + seconds

        def poll() -> None:
            nonlocal requests
            client = Client(port, token)
            count = 0
            try:
                while time.monotonic() < deadline:
                    code, _ = client.request("GET", "/api/jobs/stats/")
                    if code != 200:
                        raise RuntimeError(f"GET /api/jobs/stats/ answered {code}")
                    count += 1
                    time.sleep(poll_seconds)
            finally:
                client.close()
                with lock:
                    requests += count

        threads = [threading.Thread(target=poll) for _ in range(dashboards)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    queries = (settled_scans() - before) / per_query if per_query else math.nan
    ttl = settings.JOB_STATS_CACHE_SECONDS
    return DashboardsCost(
        dashboards=dashboards,
        poll_seconds=poll_seconds,
        seconds=seconds,
        requests=requests,
        cache_seconds=ttl,
        server_processes=shape.workers,
        scans_per_stats_query=per_query,
        stats_queries=round(queries, 1),
        expected_max=(math.ceil(seconds / ttl) + 1) * shape.workers if ttl else requests,
    )


def _cte_lines(lines: list[str], cte: str) -> list[str]:
    """The plan lines of one CTE (from ``CTE name`` to the next sibling CTE or node)."""
    out: list[str] = []
    inside = False
    indent = 0
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith(f"CTE {cte}"):
            inside, indent = True, len(line) - len(stripped)
            continue
        if inside:
            if stripped and len(line) - len(stripped) <= indent:
                break
            out.append(line)
    return out


def claim_plan(db: Database) -> ClaimPlan:
    """Whether the claim's candidate walks ``job_claim_idx`` in order, without a sort."""
    from jobs.drivers.postgres import QUERIES

    lines = db.explain(QUERIES["complete_and_claim"].sql, _claim_params(), rollback=True)
    candidate = _cte_lines(lines, "candidate")
    words = ("Limit", "LockRows", "Index", "Sort", "Filter", "Rows Removed", "Buffers")
    key = [line.rstrip() for line in candidate if any(word in line for word in words)]
    execution = next((line.strip() for line in lines if "Execution Time" in line), "")
    return ClaimPlan(
        uses_job_claim_idx=any("job_claim_idx" in line for line in candidate),
        sorts=any(line.strip().startswith("-> Sort") or "Sort Key" in line for line in candidate),
        key_lines=[*key, execution],
        plan=lines,
    )


def _stats_sql() -> str:
    """The counting query ``selectors.job_stats()`` runs, as Django sends it (the last of
    its queries; the one before reads the planner's row estimate)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from jobs import selectors

    with CaptureQueriesContext(connection) as queries:
        selectors.job_stats()
    if not queries.captured_queries:
        raise RuntimeError("job_stats ran no query")
    return queries.captured_queries[-1]["sql"]


def _plan_summary(lines: list[str]) -> list[str]:
    keep = ("Scan", "Aggregate", "Execution Time", "Workers", "Heap Fetches")
    return [line.rstrip() for line in lines if any(word in line for word in keep)][:12]


def scale_point(
    db: Database, port: int, token: str, *, finished: int, claims: int, requests: int
) -> ScalePoint:
    from jobs import selectors

    log(f"scale: measuring with {finished:,} finished jobs")
    queued = queued_count(db)
    claim = claim_latency(claims)
    claim_sql = claim_sql_latency(db, claims)
    plan = claim_plan(db)
    stats_endpoint = endpoint_latency(port, token, "/api/jobs/stats/", count=requests)
    list_endpoint = endpoint_latency(port, token, "/api/jobs/?limit=25", count=requests)
    p50, p99 = p50_p99_ms(timed_calls(selectors.job_stats, requests))
    return ScalePoint(
        finished_jobs=finished,
        queued_jobs=queued,
        claim=claim,
        claim_sql=claim_sql,
        claim_plan=plan,
        stats_endpoint=stats_endpoint,
        list_endpoint=list_endpoint,
        stats_service=CallLatency(calls=requests, p50_ms=p50, p99_ms=p99),
        stats_plan=_plan_summary(db.explain(_stats_sql())),
        count_plan=_plan_summary(db.explain("SELECT COUNT(*) FROM jobs_job")),
        load_average=load_average(),
    )


def middle_points(scale_max: int) -> list[int]:
    """The powers of ten from 1 M up to, not including, ``scale_max``."""
    points, size = [], 1_000_000
    while size < scale_max:
        points.append(size)
        size *= 10
    return points


def run_scale(
    db: Database,
    env: dict[str, str],
    *,
    shape: ServerShape,
    scale_max: int,
    backlog: int,
    claims: int,
    requests: int,
    log_dir: Path,
    future: int = 200_000,
) -> ScaleResult:
    began = time.monotonic()
    reset_tables(db)
    token = api_token()
    # About 1 k queued jobs left once a claim-latency sample has taken its claims.
    queued_target = 1_000 + claims + CLAIM_WARMUP

    def top_up_queue() -> None:
        queued = queued_count(db)
        if queued < queued_target:
            enqueue_bulk(db, queued_target - queued, created_at="now() - interval '1 minute'")

    def point(finished: int) -> ScalePoint:
        return scale_point(db, port, token, finished=finished, claims=claims, requests=requests)

    # Uncached stats (JOB_STATS_CACHE_SECONDS=0): each GET below computes them, so its
    # latency is the query's; the cache's effect is measured by dashboards_cost.
    uncached = dict(env, JOB_STATS_CACHE_SECONDS="0")
    with api_server(uncached, shape, conn_max_age=60, log_dir=log_dir) as port:
        started_at = time.monotonic()
        add_finished_jobs(db, 1, SMALL)
        top_up_queue()
        vacuum_analyze(db)
        small_setup_seconds = round(time.monotonic() - started_at, 1)
        small = point(SMALL)

        middle: list[ScalePoint] = []
        insert_seconds = vacuum_seconds = 0.0
        generated = SMALL
        for size in [*middle_points(scale_max), scale_max]:
            log(f"scale: generating {size - generated:,} more finished jobs")
            started_at = time.monotonic()
            add_finished_jobs(db, generated + 1, size)
            generated = size
            insert_seconds += time.monotonic() - started_at
            started_at = time.monotonic()
            vacuum_analyze(db)
            vacuum_seconds += time.monotonic() - started_at
            top_up_queue()
            middle.append(point(size))
        *middle, large = middle
        large_insert_seconds = round(insert_seconds, 1)
        large_vacuum_seconds = round(vacuum_seconds, 1)
        exactness = stats_exactness(port, token, db)

        log(f"scale: adding a backlog of {backlog:,} queued jobs (10 % delayed)")
        # Three priority levels; every tenth job is delayed an hour (it stays queued but is
        # not yet claimable), so the claim must pass over delayed rows as well.
        enqueue_bulk(
            db,
            backlog - queued_count(db),
            priority="(ARRAY[10, 50, 90])[1 + g %% 3]",
            available_at=(
                "CASE WHEN g %% 10 = 0 THEN now() + interval '1 hour'"
                " ELSE now() - g * interval '1 millisecond' END"
            ),
            created_at="now() - g * interval '1 millisecond'",
        )
        db.execute("ANALYZE jobs_job")
        deep = BacklogPoint(
            queued_jobs=queued_count(db),
            delayed_jobs=db.scalar(
                "SELECT count(*) FROM jobs_job WHERE status = 'queued' AND available_at > now()"
            ),
            claim=claim_latency(claims),
            claim_sql=claim_sql_latency(db, claims),
            claim_plan=claim_plan(db),
            stats_endpoint=endpoint_latency(port, token, "/api/jobs/stats/", count=requests),
            load_average=load_average(),
        )
    log("scale: 8 dashboards polling stats through the cache")
    dashboards = dashboards_cost(db, env, shape, token, log_dir=log_dir)
    future_case = None
    if future:
        log(f"scale: {future:,} future jobs in front of {FUTURE_DUE:,} due ones")
        future_case = run_future_jobs(
            db, env, future=future, due=FUTURE_DUE, claims=claims, log_dir=log_dir
        )
    return ScaleResult(
        small_setup_seconds=small_setup_seconds,
        small=small,
        large_insert_seconds=large_insert_seconds,
        large_vacuum_seconds=large_vacuum_seconds,
        large=large,
        backlog=deep,
        exactness=exactness,
        dashboards=dashboards,
        future=future_case,
        seconds=round(time.monotonic() - began, 1),
        middle=middle,
    )
