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

from .activity import ActivityResult
from .activity import render as render_activity
from .common import JOB_TYPE, REPO_DIR, IndexSize, TableSize, load_average, ratio
from .enqueue import EnqueueResult
from .pgbouncer import PgBouncerResult
from .pgbouncer import render as render_pgbouncer
from .raw_sql import RawSqlRun
from .scale import ScaleResult
from .tasks import TasksResult
from .workers import HeartbeatCost, WorkerRun


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
    pgbouncer: PgBouncerResult | None = None
    targets: list[Target] = field(default_factory=list)


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


def _raw_by_clients(results: Results) -> dict[int, float]:
    return {item.clients: item.jobs_per_second for item in results.raw_sql or []}


def evaluate_targets(results: Results) -> list[Target]:
    targets: list[Target] = []
    raw = _raw_by_clients(results)
    for item in results.workers or []:
        if item.path != "cte" or item.threads != 4:
            continue
        goal = 0.5 if item.processes == 1 else 0.7
        value = ratio(item.jobs_per_second, raw.get(item.processes * item.threads, 0))
        targets.append(
            Target(
                target=f"{item.processes} proc x 4 thr >= {goal:.0%} of raw SQL",
                measured=pct(value),
                met=None if value is None else value >= goal,
            )
        )
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
    if results.enqueue:
        for load in results.enqueue.http:
            targets.append(
                Target(
                    target=f"API create >= 500 req/s, p99 < 50 ms ({load.label})",
                    measured=f"{load.requests_per_second:.0f} req/s, p99 {load.p99_ms} ms",
                    met=load.requests_per_second >= 500 and load.p99_ms < 50,
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
        stats = large.stats_endpoint.p50_ms
        targets.append(
            Target(
                target=f"stats under 50 ms at {large.finished_jobs:,} finished",
                measured=f"{stats} ms (p50)",
                met=stats < 50,
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


def _workers(workers: list[WorkerRun], raw: dict[int, float]) -> list[str]:
    out = [
        "",
        f"1. Worker throughput: {workers[0].jobs:,} {JOB_TYPE} jobs per run, "
        "manage.py run_job_workers, first claim to last completion",
        f"   {'workers':<18}{'path':<7}{'jobs/s':>9}{'raw SQL jobs/s':>16}{'ratio':>8}"
        f"{'commits/job':>13}{'load':>7}",
    ]
    for item in workers:
        base = raw.get(item.processes * item.threads, math.nan)
        out.append(
            f"   {item.processes} proc x {item.threads} thr{'':<5}{item.path:<7}"
            f"{fmt(item.jobs_per_second):>9}{fmt(base):>16}"
            f"{pct(ratio(item.jobs_per_second, base)):>8}"
            f"{fmt(item.commits_per_job, '.2f'):>13}{item.load_average[0]:>7}"
        )
    out.append("   path cte = one SQL statement per transition (PostgresDriver); orm = OrmDriver")
    out.append("   on PostgreSQL with --orm-path (what SQLite runs).")
    return out


def _raw_sql(items: list[RawSqlRun]) -> list[str]:
    out = [
        "",
        "2. Raw-SQL limit: the same claim + complete statements from pgbench "
        f"(C, {items[0].protocol} protocol, no framework)",
        f"   {'clients':<10}{'jobs/s':>9}{'pgbench tps':>14}{'load':>7}",
    ]
    for item in items:
        out.append(
            f"   {item.clients:<10}{fmt(item.jobs_per_second):>9}"
            f"{fmt(item.pgbench_tps):>14}{item.load_average[0]:>7}"
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
    out.append(f"   stats plan ({fmt(large.finished_jobs)} finished):")
    out.extend(f"     {line.strip()}" for line in large.stats_plan)
    out.append("   list count plan:")
    out.extend(f"     {line.strip()}" for line in large.count_plan)
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
        out += _workers(results.workers, _raw_by_clients(results))
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
    if results.pgbouncer:
        out += render_pgbouncer(results.pgbouncer)
    if results.targets:
        out += ["", "Targets"]
        for target in results.targets:
            mark = {True: "met   ", False: "MISSED", None: "n/a   "}[target.met]
            out.append(f"   [{mark}] {target.target}: {target.measured}")
    return "\n".join(out)


def write(results: Results, output: Path) -> str:
    """Print the table and write it beside the JSON; returns the table."""
    table = render(results)
    print(table)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(asdict(results), indent=2, default=str) + "\n")
    output.with_suffix(".txt").write_text(table + "\n")
    return table
