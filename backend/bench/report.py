"""The report: one ``Results`` value, the targets checked against it, the printed table,
and ``bench-results/latest.json`` (every figure, from the dataclasses) and ``latest.txt``.

A target is a goal the project set for itself, reported as met, missed or not measured;
a missed target is a finding, not a failure (nothing here asserts a timing).
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from harness import REPO_DIR

from .activity import ActivityResult
from .activity import render as render_activity
from .backlog import BacklogResult, in_hand_limits
from .backlog import goals as backlog_goals
from .bulk import BulkEnqueue
from .database import IndexSize, TableSize
from .decay import DecayResult
from .decay import goals as decay_goals
from .enqueue import PRODUCTION_LABEL, EnqueueResult
from .figures import load_average, ratio
from .flowcontrol import FlowControlResult, flow_control_goals
from .flowcontrol import render as render_flow_control
from .goals import Goal
from .jobtypes import JOB_TYPE
from .mix import MixResult
from .mix import goals as mix_goals
from .peers import PeersResult, peer_goals
from .pgbouncer import PgBouncerResult
from .pgbouncer import render as render_pgbouncer
from .raw_sql import RawSqlRun
from .scale import FutureJobsCase, ScaleResult
from .tasks import TasksResult
from .tracing import TracingResult
from .tracing import render as render_tracing
from .wakeup import WakeupResult
from .wakeup import goals as latency_goals
from .workers import HeartbeatCost, WorkerRun
from .workflows import WorkflowsResult
from .workflows import goals as workflow_goals


@dataclass(kw_only=True)
class Meta:
    started_at: str
    command: str
    commit: str
    cpus: int | None
    cpu_model: str
    memory_gib: str
    os: str
    python: str
    postgres_host: str
    database: str
    load_start: list[float]
    postgres: dict[str, str] = field(default_factory=dict)
    load_end: list[float] = field(default_factory=list)
    duration_seconds: float = math.nan


@dataclass(kw_only=True)
class Target:
    target: str
    measured: str
    met: bool | None


@dataclass(kw_only=True)
class Results:
    """Everything one run measured; a scenario that did not run is ``None``."""

    meta: Meta
    sizes: dict[str, list[TableSize | IndexSize]] = field(default_factory=dict)
    raw_sql: list[RawSqlRun] | None = None
    workers: list[WorkerRun] | None = None
    enqueue: EnqueueResult | None = None
    scale: ScaleResult | None = None
    tasks: TasksResult | None = None
    heartbeat: HeartbeatCost | None = None
    activity: ActivityResult | None = None
    bulk: BulkEnqueue | None = None
    wakeup: WakeupResult | None = None
    pgbouncer: PgBouncerResult | None = None
    tracing: TracingResult | None = None
    flowcontrol: FlowControlResult | None = None
    decay: DecayResult | None = None
    peers: PeersResult | None = None
    backlog: BacklogResult | None = None
    mix: MixResult | None = None
    workflows: WorkflowsResult | None = None
    targets: list[Target] = field(default_factory=list)
    goals: list[Goal] = field(default_factory=list)


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=REPO_DIR, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def machine_meta(database: str, postgres_host: str) -> Meta:
    cpu_model = "unknown"
    memory_gib = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory_gib = f"{int(line.split()[1]) / 1024 / 1024:.0f}"
                break
    except OSError:
        pass
    try:
        commit = _git("rev-parse", "--short", "HEAD")
        if _git("status", "--porcelain", "--untracked-files=no"):
            commit += " (with uncommitted changes)"
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return Meta(
        started_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        command="python -m bench.run " + " ".join(sys.argv[1:]),
        commit=commit,
        cpus=os.cpu_count(),
        cpu_model=cpu_model,
        memory_gib=memory_gib,
        os=platform.platform(terse=True),
        python=platform.python_version(),
        postgres_host=postgres_host,
        database=database,
        load_start=load_average(),
    )


# --- Targets ----------------------------------------------------------------------------


def _raw_by_clients(results: Results, script: str) -> dict[int, float]:
    return {
        item.clients: item.jobs_per_second
        for item in results.raw_sql or []
        if item.script == script
    }


def evaluate_targets(results: Results) -> list[Target]:
    """The targets that are not goal rows (those are in ``evaluate_goals``)."""
    targets: list[Target] = []
    if results.heartbeat and results.heartbeat.cost_percent is not None:
        cost = results.heartbeat.cost_percent
        targets.append(
            Target(
                target=f"heartbeat every {results.heartbeat.heartbeat_seconds} s costs <= 5 % "
                "of worker throughput",
                measured=f"{cost:.1f} %",
                met=cost <= 5,
            )
        )
    if results.scale:
        small, large, backlog = results.scale.small, results.scale.large, results.scale.backlog
        checks = [
            ("claim p99 at large within 1.3x of 10 k", large.claim.p99_ms, small.claim.p99_ms, 1.3),
            (
                "stats p50 at large within 1.3x of 10 k",
                large.stats_endpoint.p50_ms,
                small.stats_endpoint.p50_ms,
                1.3,
            ),
            (
                "claim p99 with deep backlog within 2x of 1 k queued",
                backlog.claim.p99_ms,
                large.claim.p99_ms,
                2.0,
            ),
        ]
        for label, value, base, limit in checks:
            r = ratio(value, base)
            targets.append(
                Target(
                    target=label,
                    measured=f"{fmt(r, '.2f')}x",
                    met=None if r is None else r <= limit,
                )
            )
    if results.tasks:
        value = results.tasks.worker_ratio
        targets.append(
            Target(
                target="django.tasks worker throughput within 15 % of @register (median ratio)",
                measured=pct(value),
                met=value >= 0.85,
            )
        )
    if results.activity:
        for name, read in (
            ("job types", results.activity.type_health),
            ("workers", results.activity.worker_activity),
        ):
            targets.append(
                Target(
                    target=f"{name} read p95 < 100 ms at {results.activity.events:,} events "
                    "in the window (warm)",
                    measured=f"{read.p95_ms} ms (cold {read.cold_ms} ms)",
                    met=read.p95_ms < 100,
                )
            )
    targets += _pgbouncer_targets(results.pgbouncer)
    return targets


def _pgbouncer_targets(result: PgBouncerResult | None) -> list[Target]:
    if result is None:
        return []
    clean = result.double_claims == 0 and not result.errors
    return [
        Target(
            target=f"{result.processes} proc x {result.threads} thr through PgBouncer "
            f"(<= {result.pool_size} server connections) within 15 % of direct connections, "
            "no errors, no double claims",
            measured=f"{pct(result.ratio)} of direct, {result.server_connections} server "
            f"connections, {len(result.errors)} errors, {result.double_claims} double claims",
            met=None
            if result.ratio is None
            else result.ratio >= result.goal_ratio
            and clean
            and result.server_connections <= result.pool_size,
        )
    ]


# --- Goals -------------------------------------------------------------------------------

WORKER_GOALS = {(1, 4): 0.6, (2, 4): 0.7}
BULK_TARGET = 10_000  # jobs/s through POST /api/jobs/bulk/
CREATE_TARGET = 400  # req/s through POST /api/jobs/
CREATE_P99_MS = 50
STATS_P50_MS = 30
WAKE_P50_MS, WAKE_P99_MS = 50, 200
FUTURE_DRAIN_RATIO = 0.8  # within noise of the drain without future jobs
FUTURE_CLAIM_BUFFERS = 100  # a walk over the future jobs reads thousands


def _worker_goals(results: Results) -> list[Goal]:
    fused = _raw_by_clients(results, "fused")
    two = _raw_by_clients(results, "two-statement")
    goals = []
    for (processes, threads), goal in WORKER_GOALS.items():
        name = f"worker {processes} x {threads} vs the fused statement's pgbench limit"
        target = f">= {goal} of the fused limit at {processes * threads} clients"
        run = next(
            (
                item
                for item in results.workers or []
                if item.path == "cte" and (item.processes, item.threads) == (processes, threads)
            ),
            None,
        )
        clients = processes * threads
        goal_id = f"worker-{processes}x{threads}-vs-fused-limit"
        if run is None or clients not in fused:
            goals.append(Goal.not_run(goal_id, name, target, "workers or raw phase not run"))
            continue
        value = ratio(run.jobs_per_second, fused[clients])
        versus_two = ratio(run.jobs_per_second, two.get(clients, math.nan))
        goals.append(
            Goal(
                id=goal_id,
                name=name,
                measured=f"{fmt(run.jobs_per_second)} jobs/s",
                reference=f"fused {fmt(fused[clients])} jobs/s; two-statement "
                f"{fmt(two.get(clients))} jobs/s (ratio {fmt(versus_two, '.2f')})",
                ratio=value,
                target=target,
                status=Goal.verdict(None if value is None else value >= goal),
            )
        )
    return goals


def _bulk_goals(results: Results) -> list[Goal]:
    name = "bulk enqueue, POST /api/jobs/bulk/ batches of 500"
    target = f">= {BULK_TARGET:,} jobs/s"
    bulk = results.bulk
    if bulk is None:
        return [
            Goal.not_run("bulk-enqueue-http", name, target, "bulk phase not run"),
            Goal.not_run(
                "bulk-enqueue-tasks-backend",
                "bulk enqueue, django.tasks backend enqueue_many",
                target,
                "bulk phase not run",
            ),
        ]
    return [
        Goal(
            id="bulk-enqueue-http",
            name=f"bulk enqueue, POST /api/jobs/bulk/ batches of {bulk.batch}",
            measured=f"{fmt(bulk.http_jobs_per_second)} jobs/s (p99 {bulk.http_p99_ms} ms "
            f"per batch, {bulk.concurrency} clients)",
            reference=f"one INSERT ... SELECT {fmt(bulk.insert_select_jobs_per_second)} jobs/s; "
            f"services.create_jobs in-process {fmt(bulk.service_jobs_per_second)} jobs/s",
            ratio=ratio(bulk.http_jobs_per_second, bulk.insert_select_jobs_per_second),
            target=target,
            status=Goal.verdict(bulk.http_jobs_per_second >= BULK_TARGET),
        ),
        Goal(
            id="bulk-enqueue-tasks-backend",
            name=f"bulk enqueue, django.tasks backend enqueue_many, batches of {bulk.batch}",
            measured=f"{fmt(bulk.tasks_jobs_per_second)} jobs/s (in-process)",
            reference=f"services.create_jobs in-process {fmt(bulk.service_jobs_per_second)} jobs/s",
            ratio=ratio(bulk.tasks_jobs_per_second, bulk.service_jobs_per_second),
            target=target,
            status=Goal.verdict(bulk.tasks_jobs_per_second >= BULK_TARGET),
        ),
    ]


def _create_goal(results: Results) -> Goal:
    name = "single create, POST /api/jobs/ at concurrency 8"
    target = f">= {CREATE_TARGET} req/s and p99 < {CREATE_P99_MS} ms"
    enqueue = results.enqueue
    load = (
        next((item for item in enqueue.http if item.label.startswith(PRODUCTION_LABEL)), None)
        if enqueue
        else None
    )
    if enqueue is None or load is None:
        return Goal.not_run("single-create-http", name, target, "enqueue phase not run")
    pgbench = enqueue.pgbench
    reference = (
        f"pgbench single-row enqueue (job + event) {fmt(pgbench.rows_per_second)} rows/s "
        f"at {pgbench.clients} clients"
        if pgbench
        else "no pgbench"
    )
    return Goal(
        id="single-create-http",
        name=f"single create, POST /api/jobs/ at concurrency {load.concurrency}, "
        "compose settings (CONN_MAX_AGE=60, health checks)",
        measured=f"{fmt(load.requests_per_second)} req/s, p50 {load.p50_ms} ms, "
        f"p99 {load.p99_ms} ms",
        reference=reference,
        ratio=ratio(load.requests_per_second, pgbench.rows_per_second) if pgbench else None,
        target=target,
        status=Goal.verdict(
            load.requests_per_second >= CREATE_TARGET and load.p99_ms < CREATE_P99_MS
        ),
    )


def _stats_goals(results: Results) -> list[Goal]:
    scale = results.scale
    target = f"p50 < {STATS_P50_MS} ms, queued/running exact"
    if scale is None:
        return [
            Goal.not_run(
                "stats-uncached-at-scale", "stats at scale", target, "scale phase not run"
            ),
            Goal.not_run(
                "stats-cached-for-dashboards",
                "stats, N dashboards",
                "one query per interval",
                "scale phase not run",
            ),
        ]
    small, exact = scale.small, scale.exactness
    dash = scale.dashboards
    # Exactness is checked at the largest point; a middle point's row shows latency only.
    return [
        *(
            Goal(
                id=f"stats-uncached-at-{point.finished_jobs}-jobs",
                name=f"GET /api/jobs/stats/ at {point.finished_jobs:,} jobs (uncached)",
                measured=f"p50 {point.stats_endpoint.p50_ms} ms, p99 "
                f"{point.stats_endpoint.p99_ms} ms"
                + (
                    f"; queued/running {'exact' if exact.live_exact else 'NOT exact'}, "
                    f"finished {'estimated (labelled)' if exact.estimated else 'exact'}"
                    if point is scale.large
                    else ""
                ),
                reference=f"p50 {small.stats_endpoint.p50_ms} ms at {small.finished_jobs:,} jobs",
                ratio=ratio(point.stats_endpoint.p50_ms, small.stats_endpoint.p50_ms),
                target=target,
                status=Goal.verdict(
                    point.stats_endpoint.p50_ms < STATS_P50_MS
                    and (exact.live_exact or point is not scale.large)
                ),
            )
            for point in [*scale.middle, scale.large]
        ),
        Goal(
            id="stats-cached-for-dashboards",
            name=f"{dash.dashboards} dashboards polling stats every {dash.poll_seconds} s for "
            f"{dash.seconds:.0f} s",
            measured=f"{fmt(dash.stats_queries, '.1f')} stats queries for {dash.requests} GETs",
            reference=f"uncached: {dash.requests} queries; cache {dash.cache_seconds} s per "
            f"process x {dash.server_processes} processes allows {dash.expected_max}",
            ratio=ratio(dash.stats_queries, dash.requests),
            target="one query per cache interval per server process",
            status=Goal.verdict(dash.stats_queries <= dash.expected_max),
        ),
    ]


def _wakeup_goals(results: Results) -> list[Goal]:
    wake = results.wakeup
    latency_target = f"p50 < {WAKE_P50_MS} ms and p99 < {WAKE_P99_MS} ms"
    idle_target = "idle CPU and commits/s not above polling's (within 25 %)"
    if wake is None:
        return [
            Goal.not_run(
                "wakeup-latency-listen", "wake-up latency", latency_target, "wakeup phase not run"
            ),
            Goal.not_run(
                "idle-cost-listen", "idle cost of LISTEN", idle_target, "wakeup phase not run"
            ),
        ]
    listen, polling = wake.listen, wake.polling
    cpu_ok = listen.idle_cpu_seconds_per_minute <= max(
        polling.idle_cpu_seconds_per_minute * 1.25, polling.idle_cpu_seconds_per_minute + 0.05
    )
    commits_ok = listen.idle_commits_per_second <= max(
        polling.idle_commits_per_second * 1.25, polling.idle_commits_per_second + 0.5
    )
    return [
        Goal(
            id="wakeup-latency-listen",
            name=f"wake-up latency, enqueue -> claimed, idle 1 x {wake.threads} worker, LISTEN",
            measured=f"p50 {listen.p50_ms} ms, p99 {listen.p99_ms} ms ({listen.jobs} jobs)",
            reference=f"polling only ({wake.poll_interval_ms} ms): p50 {polling.p50_ms} ms, "
            f"p99 {polling.p99_ms} ms",
            ratio=ratio(listen.p50_ms, polling.p50_ms),
            target=latency_target,
            status=Goal.verdict(listen.p50_ms < WAKE_P50_MS and listen.p99_ms < WAKE_P99_MS),
        ),
        Goal(
            id="idle-cost-listen",
            name="idle cost with LISTEN",
            measured=f"{listen.idle_cpu_seconds_per_minute} CPU s/min, "
            f"{listen.idle_commits_per_second} commits/s",
            reference=f"polling only: {polling.idle_cpu_seconds_per_minute} CPU s/min, "
            f"{polling.idle_commits_per_second} commits/s",
            ratio=ratio(listen.idle_commits_per_second, polling.idle_commits_per_second),
            target=idle_target,
            status=Goal.verdict(cpu_ok and commits_ok),
        ),
    ]


def _future_goal(future: FutureJobsCase | None) -> Goal:
    name = "claims behind 200,000 not-yet-due higher-priority jobs"
    target = (
        f"drain >= {FUTURE_DRAIN_RATIO} of without; empty-due claim "
        f"< {FUTURE_CLAIM_BUFFERS} buffers"
    )
    if future is None:
        return Goal.not_run("claims-behind-future-jobs", name, target, "scale phase not run")
    with_, without = future.with_future, future.without
    return Goal(
        id="claims-behind-future-jobs",
        name=f"{future.due_jobs:,} due jobs behind {with_.future_jobs:,} future higher-"
        "priority jobs",
        measured=f"drain {fmt(with_.drain.jobs_per_second)} jobs/s; empty-due claim "
        f"p99 {with_.empty_claim.p99_ms} ms, {with_.empty_claim.shared_buffers} buffers",
        reference=f"without: {fmt(without.drain.jobs_per_second)} jobs/s; "
        f"p99 {without.empty_claim.p99_ms} ms, {without.empty_claim.shared_buffers} buffers",
        ratio=future.drain_ratio,
        target=target,
        status=Goal.verdict(
            future.drain_ratio is not None
            and future.drain_ratio >= FUTURE_DRAIN_RATIO
            and with_.empty_claim.shared_buffers < FUTURE_CLAIM_BUFFERS
        ),
    )


def _pgbouncer_goal(result: PgBouncerResult | None) -> Goal:
    name = "PgBouncer, 8 x 4 workers through <= 10 server connections"
    target = "no errors, no double claims, within 15 % of direct"
    if result is None or result.ratio is None:
        return Goal.not_run("pgbouncer-transaction-mode", name, target, "pgbouncer phase not run")
    clean = result.double_claims == 0 and not result.errors
    return Goal(
        id="pgbouncer-transaction-mode",
        name=f"PgBouncer, {result.processes} x {result.threads} workers through "
        f"<= {result.pool_size} server connections",
        measured=f"{result.server_connections} server connections, {len(result.errors)} "
        f"errors, {result.double_claims} double claims",
        reference="the same workers connected directly, same run",
        ratio=result.ratio,
        target=target,
        status=Goal.verdict(
            result.ratio >= result.goal_ratio
            and clean
            and result.server_connections <= result.pool_size
        ),
    )


def evaluate_goals(results: Results) -> list[Goal]:
    goals = _worker_goals(results)
    goals += _bulk_goals(results)
    goals.append(_create_goal(results))
    goals += _stats_goals(results)
    goals += _wakeup_goals(results)
    goals.append(_pgbouncer_goal(results.pgbouncer))
    goals += flow_control_goals(results.flowcontrol)
    goals.append(_future_goal(results.scale.future if results.scale else None))
    goals += backlog_goals(results.backlog)
    goals += peer_goals(results.peers, in_hand_limits(results.backlog))
    goals += decay_goals(results.decay)
    goals += latency_goals(results.wakeup)
    goals += mix_goals(results.mix)
    goals += workflow_goals(results.workflows)
    return goals


# --- Table ------------------------------------------------------------------------------


def fmt(value: float | int | None, spec: str = ",.0f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec)


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f} %"


def _header(meta: Meta) -> list[str]:
    pg = meta.postgres
    return [
        f"Job Queue benchmark, {meta.started_at} (took {meta.duration_seconds:.0f} s)",
        f"command : {meta.command}",
        f"commit  : {meta.commit}",
        f"machine : {meta.cpus} CPUs ({meta.cpu_model}), {meta.memory_gib} GiB RAM, "
        f"{meta.os}, Python {meta.python}",
        f"postgres: {pg.get('server_version')} at {meta.postgres_host}, db {meta.database}; "
        f"shared_buffers={pg.get('shared_buffers')} synchronous_commit="
        f"{pg.get('synchronous_commit')} fsync={pg.get('fsync')} "
        f"autovacuum={pg.get('autovacuum')}",
        f"load    : 1/5/15-min load average {meta.load_start} at start, "
        f"{meta.load_end} at end (other work shares this machine)",
    ]


def _workers(workers: list[WorkerRun], fused: dict[int, float], two: dict[int, float]) -> list[str]:
    out = [
        "",
        f"1. Worker throughput: {workers[0].jobs:,} {JOB_TYPE} jobs per run, "
        "manage.py run_job_workers, first claim to last completion",
        f"   {'workers':<18}{'path':<7}{'jobs/s':>9}{'fused limit':>13}{'ratio':>8}"
        f"{'2-stmt limit':>14}{'ratio':>8}{'commits/job':>13}{'load':>7}",
    ]
    for item in workers:
        clients = item.processes * item.threads
        base, base2 = fused.get(clients, math.nan), two.get(clients, math.nan)
        out.append(
            f"   {item.processes} proc x {item.threads} thr{'':<5}{item.path:<7}"
            f"{fmt(item.jobs_per_second):>9}{fmt(base):>13}"
            f"{pct(ratio(item.jobs_per_second, base)):>8}{fmt(base2):>14}"
            f"{pct(ratio(item.jobs_per_second, base2)):>8}"
            f"{fmt(item.commits_per_job, '.2f'):>13}{item.load_average[0]:>7}"
        )
    out.append("   path cte = the PostgreSQL driver (complete_and_claim: one statement per job);")
    out.append("   orm = OrmDriver on PostgreSQL (what SQLite runs). Limits at the same client")
    out.append("   count (section 2); the worker goals are judged against the fused limit, the")
    out.append("   statement the worker runs; the two-statement limit is the claim + complete")
    out.append("   pair the first measurements used.")
    return out


def _raw_sql(items: list[RawSqlRun]) -> list[str]:
    out = [
        "",
        "2. Raw-SQL limit: the worker's statements from pgbench "
        f"(C, {items[0].protocol} protocol, -j 2, no framework)",
        "   fused = one complete_and_claim call per job (complete the previous, claim the next);",
        "   two-statement = a complete-only and a claim-only call of it per job; batched = one",
        "   transaction per 10 jobs: complete_jobs of the previous 10, claim_jobs of the next",
        f"   {'script':<16}{'clients':>8}{'jobs/s':>9}{'pgbench tps':>14}{'span s':>8}{'load':>7}",
    ]
    for item in items:
        out.append(
            f"   {item.script:<16}{item.clients:>8}{fmt(item.jobs_per_second):>9}"
            f"{fmt(item.pgbench_tps):>14}{item.span_seconds:>8}{item.load_average[0]:>7}"
        )
    return out


def _enqueue(enqueue: EnqueueResult) -> list[str]:
    out = [
        "",
        f"3. Enqueue: POST /api/jobs/ under gunicorn ({enqueue.server}), "
        f"concurrency {enqueue.http[0].concurrency}",
        f"   {'server':<30}{'req/s':>8}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}  codes",
    ]
    for load in enqueue.http:
        out.append(
            f"   {load.label:<30}{fmt(load.requests_per_second):>8}"
            f"{fmt(load.p50_ms, '.1f'):>9}{fmt(load.p99_ms, '.1f'):>9}"
            f"{fmt(load.max_ms, '.1f'):>9}  {load.status_codes}"
        )
    if enqueue.pgbench:
        bench = enqueue.pgbench
        out.append(
            f"   {'pgbench job + event, 1 row':<30}{fmt(bench.rows_per_second):>8}"
            f"{fmt(bench.latency_ms, '.1f'):>9}{'(mean)':>9}  {bench.clients} clients"
        )
    out.append(f"   {'create_job in-process':<30}{'calls/s':>8}{'p50 ms':>9}{'p99 ms':>9}")
    for call in enqueue.in_process:
        out.append(
            f"   {'path ' + call.path:<30}{fmt(call.calls_per_second):>8}"
            f"{fmt(call.p50_ms, '.2f'):>9}{fmt(call.p99_ms, '.2f'):>9}"
        )
    profile = enqueue.profile
    if profile:
        out.append(
            f"   where a POST's time goes (cProfile, in-process, {profile.requests} "
            f"requests, {profile.ms_per_request_unprofiled} ms each unprofiled; "
            f"waiting on PostgreSQL {profile.database_wait_share} %):"
        )
        for label, share in profile.shares_percent.items():
            out.append(f"     {share:>5.1f} %  {label}")
    return out


def _compare(label: str, a: float, b: float) -> str:
    return f"   {label:<34}{fmt(a, '.2f'):>10}{fmt(b, '.2f'):>12}{fmt(ratio(b, a), '.2f'):>7}x"


def _scale(scale: ScaleResult) -> list[str]:
    small, large, backlog = scale.small, scale.large, scale.backlog
    out = [
        "",
        f"4. Scale: {small.finished_jobs:,} vs {large.finished_jobs:,} finished jobs "
        f"(3 events each; {large.finished_jobs:,} generated in "
        f"{scale.large_insert_seconds} s + VACUUM ANALYZE {scale.large_vacuum_seconds} s)",
        f"   {'measure':<34}{fmt(small.finished_jobs):>10}{fmt(large.finished_jobs):>12}"
        f"{'ratio':>8}",
        _compare("claim p50 ms (in-process)", small.claim.p50_ms, large.claim.p50_ms),
        _compare("claim p99 ms (in-process)", small.claim.p99_ms, large.claim.p99_ms),
        _compare("claim SQL p50 ms (server side)", small.claim_sql.p50_ms, large.claim_sql.p50_ms),
        _compare("claim SQL p99 ms (server side)", small.claim_sql.p99_ms, large.claim_sql.p99_ms),
        _compare(
            "GET /api/jobs/stats/ p50 ms", small.stats_endpoint.p50_ms, large.stats_endpoint.p50_ms
        ),
        _compare(
            "GET /api/jobs/stats/ p99 ms", small.stats_endpoint.p99_ms, large.stats_endpoint.p99_ms
        ),
        _compare("job_stats() p50 ms", small.stats_service.p50_ms, large.stats_service.p50_ms),
        _compare(
            "GET /api/jobs/?limit=25 p50 ms", small.list_endpoint.p50_ms, large.list_endpoint.p50_ms
        ),
        _compare(
            "GET /api/jobs/?limit=25 p99 ms", small.list_endpoint.p99_ms, large.list_endpoint.p99_ms
        ),
        *(
            f"   on the way, at {point.finished_jobs:,}: claim p99 {point.claim.p99_ms} ms, "
            f"stats p50 {point.stats_endpoint.p50_ms} ms, p99 {point.stats_endpoint.p99_ms} ms, "
            f"list p50 {point.list_endpoint.p50_ms} ms"
            for point in scale.middle
        ),
        f"   deep backlog: {backlog.queued_jobs:,} queued ({backlog.delayed_jobs:,} "
        f"delayed) vs {small.queued_jobs:,} queued, with {large.finished_jobs:,} finished",
        _compare("claim p50 ms", large.claim.p50_ms, backlog.claim.p50_ms),
        _compare("claim p99 ms", large.claim.p99_ms, backlog.claim.p99_ms),
        _compare("claim SQL p50 ms", large.claim_sql.p50_ms, backlog.claim_sql.p50_ms),
        _compare("claim SQL p99 ms", large.claim_sql.p99_ms, backlog.claim_sql.p99_ms),
        _compare(
            "GET /api/jobs/stats/ p50 ms",
            large.stats_endpoint.p50_ms,
            backlog.stats_endpoint.p50_ms,
        ),
    ]
    for name, plan in (
        ("10 k", small.claim_plan),
        ("large", large.claim_plan),
        ("backlog", backlog.claim_plan),
    ):
        verdict = (
            "walks job_claim_idx in order, no sort"
            if plan.uses_job_claim_idx and not plan.sorts
            else f"uses_job_claim_idx={plan.uses_job_claim_idx} sorts={plan.sorts}"
        )
        out.append(f"   claim plan ({name}): {verdict}")
    out.extend(f"     {line.strip()}" for line in backlog.claim_plan.key_lines)
    exact, dash = scale.exactness, scale.dashboards
    out.append(
        f"   stats at {large.finished_jobs:,} (GETs above uncached): queued {exact.queued:,} / "
        f"{exact.queued_actual:,} counted, running {exact.running} / {exact.running_actual}; "
        f"finished {'estimated (labelled estimated=true)' if exact.estimated else 'exact'}"
    )
    out.append(
        f"   {dash.dashboards} dashboards polling every {dash.poll_seconds} s for "
        f"{dash.seconds:.0f} s, cache {dash.cache_seconds} s: {dash.requests} GETs cost "
        f"{fmt(dash.stats_queries, '.1f')} stats queries (at most {dash.expected_max} "
        f"expected; {fmt(dash.scans_per_stats_query, '.1f')} jobs_job scans per query)"
    )
    if scale.future:
        out += _future(scale.future)
    out.append(f"   stats plan ({fmt(large.finished_jobs)} finished):")
    out.extend(f"     {line.strip()}" for line in large.stats_plan)
    out.append("   list count plan:")
    out.extend(f"     {line.strip()}" for line in large.count_plan)
    return out


def _future(future: FutureJobsCase) -> list[str]:
    out = [
        f"   future jobs: {future.due_jobs:,} due priority-50 jobs, drained by 1 proc x 4 thr",
        f"   {'':<34}{'claim p50 ms':>13}{'p99 ms':>8}{'buffers':>9}{'drain jobs/s':>14}",
    ]
    for label, side in (
        ("without future jobs", future.without),
        (f"behind {future.with_future.future_jobs:,} due tomorrow", future.with_future),
    ):
        out.append(
            f"   {label:<34}{fmt(side.empty_claim.p50_ms, '.3f'):>13}"
            f"{fmt(side.empty_claim.p99_ms, '.3f'):>8}{side.empty_claim.shared_buffers:>9}"
            f"{fmt(side.drain.jobs_per_second):>14}"
        )
    out.append(
        f"   claim = complete_and_claim on an empty due set (EXPLAIN ANALYZE, server side); "
        f"drain ratio {fmt(future.drain_ratio, '.2f')}, claim p99 ratio "
        f"{fmt(future.claim_p99_ratio, '.2f')}"
    )
    return out


def _bulk(bulk: BulkEnqueue) -> list[str]:
    return [
        "",
        f"7. Bulk enqueue: batches of {bulk.batch}",
        f"   POST /api/jobs/bulk/, gunicorn CONN_MAX_AGE=60, {bulk.concurrency} clients: "
        f"{fmt(bulk.http_jobs_per_second)} jobs/s ({bulk.http_jobs:,} jobs in "
        f"{bulk.http_seconds} s; per batch p50 {bulk.http_p50_ms} ms, p99 {bulk.http_p99_ms} ms)",
        f"   services.create_jobs in-process: {fmt(bulk.service_jobs_per_second)} jobs/s "
        f"({bulk.service_jobs:,} jobs)",
        f"   one INSERT ... SELECT (jobs + events): {fmt(bulk.insert_select_jobs_per_second)} "
        f"jobs/s ({bulk.insert_select_jobs:,} jobs)",
        f"   JobQueueBackend.enqueue_many (django.tasks) in-process: "
        f"{fmt(bulk.tasks_jobs_per_second)} jobs/s ({bulk.tasks_jobs:,} jobs)",
    ]


def _wakeup(wake: WakeupResult) -> list[str]:
    out = [
        "",
        f"8. Wake-up: 1 proc x {wake.threads} thr idle, poll interval {wake.poll_interval_ms} "
        "ms; jobs created one at a time, 50-250 ms apart",
        f"   {'mode':<10}{'jobs':>6}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}"
        f"{'idle CPU s/min':>16}{'idle commits/s':>16}{'load':>7}",
    ]
    for run in (wake.listen, wake.polling):
        out.append(
            f"   {run.mode:<10}{run.jobs:>6}{fmt(run.p50_ms, '.1f'):>9}"
            f"{fmt(run.p99_ms, '.1f'):>9}{fmt(run.max_ms, '.1f'):>9}"
            f"{run.idle_cpu_seconds_per_minute:>16.3f}{run.idle_commits_per_second:>16.1f}"
            f"{run.load_average[0]:>7}"
        )
    if len(wake.listen.idle_cpu_windows) == len(wake.polling.idle_cpu_windows) == 2:
        (listen_1, listen_2), (polling_1, polling_2) = (
            wake.listen.idle_cpu_windows,
            wake.polling.idle_cpu_windows,
        )
        out.append(
            f"   idle CPU s/min per window, in the order run: listen {listen_1:.3f}, "
            f"polling {polling_1:.3f}, polling {polling_2:.3f}, listen {listen_2:.3f}"
        )
    for completion in wake.completion:
        out.append(
            f"   lone job, handler return -> committed ({completion.mode}): "
            f"p50 {completion.p50_ms} ms, p99 {completion.p99_ms} ms, max {completion.max_ms} ms "
            f"({completion.jobs} jobs); finished_at - return p50 {completion.stamped_p50_ms} ms, "
            f"p99 {completion.stamped_p99_ms} ms"
        )
    return out


def _goals(goals: list[Goal]) -> list[str]:
    width = max((len(goal.id) for goal in goals), default=4)
    out = ["", "Goals: measured | same-run reference | ratio"]
    for goal in goals:
        out.append(f"   [{goal.status:<7}] {goal.id:<{width}} {goal.name}")
        out.append(f"             measured : {goal.measured}")
        out.append(f"             reference: {goal.reference}")
        out.append(f"             ratio {fmt(goal.ratio, '.2f')}; target {goal.target}")
    return out


def _tasks(tasks: TasksResult) -> list[str]:
    first = tasks.register[0]
    out = [
        "",
        f"5. django.tasks vs @register: {first.jobs:,} no-op jobs enqueued in-process, then "
        f"drained by 1 proc x {first.threads} thr; {len(tasks.register)} rounds, each running "
        "both paths back to back",
        f"   {'round':<8}{'@register jobs/s':>18}{'django.tasks jobs/s':>21}{'ratio':>8}"
        f"{'CPU ms/job @register':>22}{'django.tasks':>14}"
        f"{'enqueue calls/s @register':>27}{'django.tasks':>14}{'load':>7}",
    ]
    for number, (register, task, ratio_) in enumerate(
        zip(tasks.register, tasks.tasks, tasks.worker_ratios, strict=True), start=1
    ):
        out.append(
            f"   {number:<8}{fmt(register.jobs_per_second):>18}{fmt(task.jobs_per_second):>21}"
            f"{pct(ratio_):>8}{fmt(register.worker_cpu_ms_per_job, '.2f'):>22}"
            f"{fmt(task.worker_cpu_ms_per_job, '.2f'):>14}{fmt(register.enqueue_per_second):>27}"
            f"{fmt(task.enqueue_per_second):>14}{task.load_average[0]:>7}"
        )
    out += [
        f"   median ratio: worker jobs/s {pct(tasks.worker_ratio)}, worker CPU per job "
        f"{pct(tasks.cpu_ratio)}, enqueue calls/s {pct(tasks.enqueue_ratio)}",
        "   @register = services.create_job + a registered handler; django.tasks = "
        "Task.enqueue() + the task through the registry, with task_started/task_finished.",
    ]
    return out


def _heartbeat(cost: HeartbeatCost) -> list[str]:
    out = [
        "",
        f"6. Heartbeat cost: 1 proc x {cost.threads} thr drain {cost.jobs:,} jobs that sleep "
        f"{cost.job_seconds} s each (ceiling {fmt(cost.ceiling_jobs_per_second)} jobs/s), "
        f"lease {cost.lease_seconds} s",
        f"   {'heartbeat':<28}{'jobs/s':>9}{'of ceiling':>12}{'commits/job':>13}{'load':>7}",
    ]
    rows = [("none during the drain", cost.without)]
    rows.append((f"every {cost.heartbeat_seconds} s", cost.with_heartbeat))
    for label, run in rows:
        out.append(
            f"   {label:<28}{fmt(run.jobs_per_second, ',.1f'):>9}"
            f"{pct(ratio(run.jobs_per_second, cost.ceiling_jobs_per_second)):>12}"
            f"{fmt(run.commits_per_job, '.2f'):>13}{run.load_average[0]:>7}"
        )
    out.append(f"   throughput lost to the heartbeat: {fmt(cost.cost_percent, '.1f')} %")
    return out


def _sizes(sizes: dict[str, list[TableSize | IndexSize]]) -> list[str]:
    mb = 1024 * 1024
    out = ["", "6. Sizes"]
    for when, items in sizes.items():
        out.append(f"   {when}")
        out.append(
            f"     {'relation':<16}{'rows':>11}{'live (est)':>12}{'dead':>10}{'heap MB':>9}"
            f"{'index MB':>10}{'total MB':>10}"
        )
        for item in items:
            if isinstance(item, IndexSize):
                out.append(f"     {item.table:<16}{'':>53}{item.total_bytes / mb:>10.1f}")
                continue
            out.append(
                f"     {item.table:<16}{item.rows:>11,}{item.n_live_tup:>12,}"
                f"{item.n_dead_tup:>10,}{item.heap_bytes / mb:>9.1f}"
                f"{item.indexes_bytes / mb:>10.1f}{item.total_bytes / mb:>10.1f}"
            )
    return out


def render(results: Results) -> str:
    out = _header(results.meta)
    if results.workers:
        out += _workers(
            results.workers,
            _raw_by_clients(results, "fused"),
            _raw_by_clients(results, "two-statement"),
        )
    if results.raw_sql:
        out += _raw_sql(results.raw_sql)
    if results.enqueue:
        out += _enqueue(results.enqueue)
    if results.scale:
        out += _scale(results.scale)
    if results.tasks:
        out += _tasks(results.tasks)
    if results.activity:
        out += render_activity(results.activity)
    if results.sizes:
        out += _sizes(results.sizes)
    if results.heartbeat:
        out += _heartbeat(results.heartbeat)
    if results.bulk:
        out += _bulk(results.bulk)
    if results.wakeup:
        out += _wakeup(results.wakeup)
    if results.pgbouncer:
        out += render_pgbouncer(results.pgbouncer)
    if results.tracing:
        out += render_tracing(results.tracing)
    if results.flowcontrol:
        out += render_flow_control(results.flowcontrol)
    if results.decay:
        out += results.decay.render()
    if results.peers:
        out += results.peers.render()
    if results.backlog:
        out += results.backlog.render()
    if results.mix:
        out += results.mix.render()
    if results.workflows:
        out += results.workflows.render()
    if results.targets:
        out += ["", "Other targets"]
        for target in results.targets:
            mark = {True: "met   ", False: "MISSED", None: "n/a   "}[target.met]
            out.append(f"   [{mark}] {target.target}: {target.measured}")
    if results.goals:
        out += _goals(results.goals)
    return "\n".join(out)


def write(results: Results, output: Path) -> str:
    """Print the table and write it beside the JSON; returns the table."""
    table = render(results)
    print(table)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(asdict(results), indent=2, default=str) + "\n")
    output.with_suffix(".txt").write_text(table + "\n")
    return table
