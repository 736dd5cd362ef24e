"""Scale: what the table's size does to the claim and to the dashboard's reads.

Three points, measured the same way (the API under gunicorn with ``CONN_MAX_AGE=60``):

* ``small``: 10 k finished jobs (three events each, 5 % failed) and about 1 k queued;
* ``large``: ``--scale-max`` finished jobs, the same queue;
* ``backlog``: the large table plus a backlog of ``--backlog`` queued jobs over three
  priorities, every tenth delayed an hour, so the claim must pass over delayed rows.

At each: claim latency in-process (``services.claim_next_job``, timed, then an untimed
``complete_job``), the claim statement's server-side execution time and plan (EXPLAIN
ANALYZE, rolled back), ``GET /api/jobs/stats/`` and ``GET /api/jobs/?limit=25`` latency,
``selectors.job_stats()`` in-process, and the plans of the stats and list-count queries.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import (
    Database,
    add_finished_jobs,
    enqueue_bulk,
    load_average,
    log,
    p50_p99_ms,
    queued_count,
    reset_tables,
    timed_calls,
    vacuum_analyze,
)
from .server import EndpointLatency, ServerShape, api_server, api_token, endpoint_latency

SMALL = 10_000
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
class ScaleResult:
    small_setup_seconds: float
    small: ScalePoint
    large_insert_seconds: float
    large_vacuum_seconds: float
    large: ScalePoint
    backlog: BacklogPoint
    seconds: float


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

    from jobs.models import JobEventType
    from jobs.services import MESSAGES

    now = timezone.now()
    return {
        "now": now,
        "worker_id": "bench-explain",
        "locked_until": now,
        "message": MESSAGES[JobEventType.CLAIMED],
        "data": "{}",
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
                "EXPLAIN (ANALYZE, FORMAT JSON) " + QUERIES["claim_job"].sql, _claim_params()
            )
            (plan,) = cur.fetchall()[0]
        times.append(plan[0]["Execution Time"] / 1000)
    p50, p99 = p50_p99_ms(times)
    return ClaimSqlLatency(runs=count, p50_ms=p50, p99_ms=p99)


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

    lines = db.explain(QUERIES["claim_job"].sql, _claim_params(), rollback=True)
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
    """The one query ``selectors.job_stats()`` runs, as Django sends it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from jobs import selectors

    with CaptureQueriesContext(connection) as queries:
        selectors.job_stats()
    if len(queries.captured_queries) != 1:
        raise RuntimeError(f"job_stats ran {len(queries.captured_queries)} queries")
    return queries.captured_queries[0]["sql"]


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

    with api_server(env, shape, conn_max_age=60, log_dir=log_dir) as port:
        started_at = time.monotonic()
        add_finished_jobs(db, 1, SMALL)
        top_up_queue()
        vacuum_analyze(db)
        small_setup_seconds = round(time.monotonic() - started_at, 1)
        small = point(SMALL)

        log(f"scale: generating {scale_max - SMALL:,} more finished jobs")
        started_at = time.monotonic()
        add_finished_jobs(db, SMALL + 1, scale_max)
        large_insert_seconds = round(time.monotonic() - started_at, 1)
        started_at = time.monotonic()
        vacuum_analyze(db)
        large_vacuum_seconds = round(time.monotonic() - started_at, 1)
        top_up_queue()
        large = point(scale_max)

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
    return ScaleResult(
        small_setup_seconds=small_setup_seconds,
        small=small,
        large_insert_seconds=large_insert_seconds,
        large_vacuum_seconds=large_vacuum_seconds,
        large=large,
        backlog=deep,
        seconds=round(time.monotonic() - began, 1),
    )
