"""Scale-out through PgBouncer: the same workers draining the same backlog directly and
through Debian's pgbouncer in transaction pooling mode, in one invocation.

``PROCESSES`` x ``THREADS`` ``run_job_workers`` processes (``bench.workers.run_workers``:
rate = jobs / span between the first ``claimed`` and the last ``succeeded`` event) drain
``jobs`` no-op jobs twice per round: straight to PostgreSQL (one server connection per
thread, plus each process's maintenance thread and listener), and through a private
pgbouncer (``harness.PrivatePgBouncer``) with at most ``POOL_SIZE`` server
connections, as the README's "Scaling out" section configures it: prepared statements
off (``POSTGRES_TRANSACTION_POOLING``), LISTEN straight to PostgreSQL. A third drain goes
direct with prepared statements off too, which splits the difference into what losing
them costs and what the pooler's extra hop costs. Every mode runs with batch sizes 1
(``SINGLE_ENV``): the defaults batch only where statements are prepared, so with them
the direct drains would also measure batching. Rounds rotate the order (use
``--repeat 3`` or more on a shared machine); the best of each is kept.

Each run also records what the README's capacity figures need: the server connections in
use (the most of ``SHOW POOLS`` and ``pg_stat_activity`` samples every 50 ms), WAL syncs
(fsyncs) and commits per second from ``pg_stat_wal``/``pg_stat_database``, the machine's
CPU busy share, errors in the worker logs and double claims (two ``claimed`` events for
one attempt; must be 0).
"""

from __future__ import annotations

import math
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from harness import PrivatePgBouncer, pgbouncer_binary

from .cpu import cpu_seconds, live_cpu_seconds
from .database import Database
from .environment import SINGLE_ENV
from .figures import best_of, log
from .workers import WorkerRun, run_workers

PROCESSES = 8
THREADS = 4
POOL_SIZE = 10
LISTENER_APPLICATION_NAME = "job-queue-listener"  # jobs.worker.listener's
GOAL_RATIO = 0.85  # within 15 % of direct connections


@dataclass(kw_only=True)
class ConnectionRun(WorkerRun):
    """One drain, with what it cost the server."""

    mode: str  # "direct" or "pgbouncer"
    server_connections: int  # most backends of the database seen at once (listeners aside)
    pooled_server_connections: int | None  # most pgbouncer reported (SHOW POOLS)
    wal_syncs_per_second: float
    commits_per_second: float
    wal_bytes_per_job: float
    cpu_busy_percent: float  # the whole machine, during the drain
    pooler_cpu_percent: float | None  # pgbouncer's own CPU, of one core
    postgres_cpu_us_per_job: float  # the database's backends' CPU per job (about)
    double_claims: int
    errors: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class PgBouncerResult:
    processes: int
    threads: int
    jobs: int
    pool_size: int
    pgbouncer_version: str
    direct: ConnectionRun
    # Direct with prepared statements off, as they must be through pgbouncer 1.18: splits
    # the gap into what losing them costs and what the pooler's hop costs.
    direct_unprepared: ConnectionRun
    pgbouncer: ConnectionRun
    ratio: float | None  # pgbouncer jobs/s over direct jobs/s
    ratio_unprepared: float | None  # pgbouncer jobs/s over direct-unprepared jobs/s
    pgbouncer_cpu_percent: float  # of one core, during the best pooled drain
    goal_ratio: float
    errors: list[str]  # both runs' worker log problems and pgbouncer's warnings
    double_claims: int  # over every run
    server_connections: int  # the most the pooled runs used
    samples_ratio: list[float] = field(default_factory=list)


# --- Sampling ---------------------------------------------------------------------------


def _cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine since boot."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _server_counters(db: Database) -> tuple[int, int, int]:
    """(WAL syncs, WAL bytes, commits of this database) so far."""
    syncs, wal_bytes = db.rows("SELECT wal_sync, wal_bytes FROM pg_stat_wal")[0]
    commits = db.scalar(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
    )
    return int(syncs), int(wal_bytes), int(commits)


class Sampler(threading.Thread):
    """Every 50 ms: the database's backends (without the listeners and the bench's own
    connections) and, through pgbouncer, its server connections; every 200 ms the CPU
    time of each of the database's backends (listeners included), from /proc."""

    def __init__(self, conninfo: dict[str, Any], exclude: set[int], pgbouncer: Any) -> None:
        super().__init__(name="bench-sampler", daemon=True)
        self.conninfo = conninfo
        self.exclude = exclude
        self.pgbouncer = pgbouncer
        self.stop = threading.Event()
        self.backends = 0
        self.pooled = 0
        self.cpu_first: dict[int, float] = {}  # pid -> CPU seconds when first seen
        self.cpu_last: dict[int, float] = {}

    def backend_cpu_seconds(self) -> float:
        """CPU the sampled backends used while sampled (a new backend from its start)."""
        return sum(self.cpu_last[pid] - self.cpu_first[pid] for pid in self.cpu_last)

    def run(self) -> None:
        with psycopg.connect(**self.conninfo, autocommit=True) as conn:
            exclude = [*self.exclude, conn.info.backend_pid]
            ticks = 0
            while not self.stop.wait(0.05):
                rows = conn.execute(
                    "SELECT pid, application_name FROM pg_stat_activity"
                    " WHERE datname = current_database() AND backend_type = 'client backend'"
                    " AND pid <> ALL(%s)",
                    [exclude],
                ).fetchall()
                counted = [pid for pid, name in rows if name != LISTENER_APPLICATION_NAME]
                self.backends = max(self.backends, len(counted))
                if self.pgbouncer is not None:
                    database = self.conninfo["dbname"]
                    self.pooled = max(self.pooled, self.pgbouncer.server_connections(database))
                ticks += 1
                if ticks % 4 == 0:
                    for pid, _ in rows:
                        seconds = cpu_seconds(pid)
                        if seconds is None:
                            continue  # gone (its last 200 ms are not counted)
                        # Present at the first sample (pgbouncer's server connections
                        # outlive a run): from then; born later: from its start.
                        self.cpu_first.setdefault(pid, seconds if ticks == 4 else 0.0)
                        self.cpu_last[pid] = seconds


def _double_claims(db: Database) -> int:
    return int(
        db.scalar(
            "SELECT count(*) FROM (SELECT job_id, attempt FROM jobs_jobevent"
            " WHERE type = 'claimed' GROUP BY job_id, attempt HAVING count(*) > 1) AS twice"
        )
    )


def _log_problems(log_dir: Path, label: str) -> list[str]:
    problems = []
    for path in sorted(log_dir.glob(f"worker-{label}-*.log")):
        for line in path.read_text().splitlines():
            if any(mark in line for mark in (" WARNING ", " ERROR ", " CRITICAL ", "Traceback")):
                problems.append(f"{path.name}: {line}")
    return problems


def _drain(
    db: Database,
    env: dict[str, str],
    *,
    mode: str,
    jobs: int,
    log_dir: Path,
    label: str,
    extra_env: dict[str, str],
    pgbouncer: Any,
) -> ConnectionRun:
    exclude = {db.conn.info.backend_pid}
    from django.db import connection

    if connection.connection is not None:  # this process's Django session, if open
        exclude.add(connection.connection.info.backend_pid)
    sampler = Sampler(db.conninfo, exclude, pgbouncer)
    syncs, wal_bytes, commits = _server_counters(db)
    busy, total = _cpu_times()
    pooler_pid = int(pgbouncer.pidfile.read_text()) if pgbouncer is not None else None
    pooler_cpu = live_cpu_seconds(pooler_pid) if pooler_pid else 0.0
    sampler.start()
    try:
        # Raises if any job was not claimed and succeeded exactly once: a double claim
        # stops the benchmark.
        run = run_workers(
            db,
            env,
            processes=PROCESSES,
            threads=THREADS,
            jobs=jobs,
            driver="postgres",
            log_dir=log_dir,
            extra_env=extra_env,
            label=label,
        )
    finally:
        sampler.stop.set()
        sampler.join(timeout=10)
    busy_after, total_after = _cpu_times()
    syncs_after, wal_bytes_after, commits_after = _server_counters(db)
    seconds = run.drain_wall_seconds or math.nan
    pooler_percent = None
    if pooler_pid:
        pooler_percent = round(100 * (live_cpu_seconds(pooler_pid) - pooler_cpu) / seconds, 1)
    return ConnectionRun(
        **vars(run),
        mode=mode,
        server_connections=sampler.backends,
        pooled_server_connections=sampler.pooled if pgbouncer is not None else None,
        wal_syncs_per_second=round((syncs_after - syncs) / seconds, 1),
        commits_per_second=round((commits_after - commits) / seconds, 1),
        wal_bytes_per_job=round((wal_bytes_after - wal_bytes) / jobs, 1),
        cpu_busy_percent=round(100 * (busy_after - busy) / max(total_after - total, 1), 1),
        pooler_cpu_percent=pooler_percent,
        postgres_cpu_us_per_job=round(sampler.backend_cpu_seconds() / jobs * 1e6, 1),
        double_claims=_double_claims(db),
        errors=_log_problems(log_dir, label),
    )


def run_pgbouncer(
    db: Database,
    env: dict[str, str],
    *,
    jobs: int,
    repeat: int,
    log_dir: Path,
    pool_size: int = POOL_SIZE,
) -> PgBouncerResult:
    """Drain ``jobs`` jobs directly and through pgbouncer, ``repeat`` rounds (alternating
    which goes first); the best of each is reported beside their ratio."""
    binary = pgbouncer_binary()
    if binary is None:
        raise RuntimeError("pgbouncer is not installed (apt-get install pgbouncer)")
    version = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, check=False
    ).stdout.split("\n")[0]
    server = {
        "POSTGRES_LISTEN_HOST": env["POSTGRES_HOST"],
        "POSTGRES_LISTEN_PORT": env["POSTGRES_PORT"],
    }
    samples: dict[str, list[ConnectionRun]] = {
        "direct": [],
        "direct-unprepared": [],
        "pgbouncer": [],
    }
    with PrivatePgBouncer(
        binary,
        server_host=env["POSTGRES_HOST"],
        server_port=int(env["POSTGRES_PORT"]),
        user=env["POSTGRES_USER"],
        password=env["POSTGRES_PASSWORD"],
        pool_size=pool_size,
    ) as pgbouncer:
        # Batch sizes 1 in every mode: the defaults batch only where statements are
        # prepared, and this compares the pooler's cost, not batching's gain.
        modes: dict[str, tuple[dict[str, str], Any]] = {
            "direct": (SINGLE_ENV, None),
            "direct-unprepared": ({**SINGLE_ENV, "JOB_DB_PREPARED_STATEMENTS": "false"}, None),
            "pgbouncer": (
                {
                    **SINGLE_ENV,
                    **pgbouncer.env(),
                    "POSTGRES_TRANSACTION_POOLING": "true",
                    **server,
                },
                pgbouncer,
            ),
        }
        for round_number in range(repeat):
            # Rotate which goes first, so over 3 rounds each mode runs in each position
            # once and a burst of background load favours none.
            shift = round_number % len(modes)
            order = [*list(modes)[shift:], *list(modes)[:shift]]
            for mode in order:
                extra_env, via = modes[mode]
                log(
                    f"pgbouncer: {PROCESSES} x {THREADS}, {mode}"
                    + (f", {pool_size} server connections" if via else "")
                    + (f" (round {round_number + 1}/{repeat})" if repeat > 1 else "")
                )
                samples[mode].append(
                    _drain(
                        db,
                        env,
                        mode=mode,
                        jobs=jobs,
                        log_dir=log_dir,
                        label=f"{mode}-{round_number + 1}",
                        extra_env=extra_env,
                        pgbouncer=via,
                    )
                )
        pgbouncer_problems = [
            f"pgbouncer.log: {line}"
            for line in pgbouncer.log().splitlines()
            if " LOG " not in line and line.strip()
        ]
    direct, pooled = best_of(samples["direct"]), best_of(samples["pgbouncer"])
    unprepared = best_of(samples["direct-unprepared"])
    ratios = [
        round(p.jobs_per_second / d.jobs_per_second, 2)
        for d, p in zip(samples["direct"], samples["pgbouncer"], strict=True)
        if d.jobs_per_second > 0
    ]
    every = [run for runs in samples.values() for run in runs]
    base = direct.jobs_per_second
    return PgBouncerResult(
        processes=PROCESSES,
        threads=THREADS,
        jobs=jobs,
        pool_size=pool_size,
        pgbouncer_version=version,
        direct=direct,
        direct_unprepared=unprepared,
        pgbouncer=pooled,
        ratio=round(pooled.jobs_per_second / base, 2) if base > 0 else None,
        ratio_unprepared=round(pooled.jobs_per_second / unprepared.jobs_per_second, 2)
        if unprepared.jobs_per_second > 0
        else None,
        pgbouncer_cpu_percent=pooled.pooler_cpu_percent or 0.0,
        goal_ratio=GOAL_RATIO,
        errors=[error for run in every for error in run.errors] + pgbouncer_problems,
        double_claims=sum(run.double_claims for run in every),
        server_connections=max(
            max(run.server_connections, run.pooled_server_connections or 0)
            for run in samples["pgbouncer"]
        ),
        samples_ratio=ratios,
    )


def render(result: PgBouncerResult) -> list[str]:
    """The report's section: both runs side by side, then the verdict's inputs."""
    out = [
        "",
        f"9. Scale-out through PgBouncer ({result.pgbouncer_version}, transaction mode, "
        f"at most {result.pool_size} server connections): {result.processes} proc x "
        f"{result.threads} thr drain {result.jobs:,} jobs",
        f"   {'connections':<19}{'jobs/s':>9}{'server conns':>14}{'fsyncs/s':>10}"
        f"{'commits/s':>11}{'WAL B/job':>11}{'PG CPU us/job':>14}{'CPU %':>7}{'load':>7}",
    ]
    for run in (result.direct, result.direct_unprepared, result.pgbouncer):
        out.append(
            f"   {run.mode:<19}{run.jobs_per_second:>9,.1f}{run.server_connections:>14}"
            f"{run.wal_syncs_per_second:>10,.0f}{run.commits_per_second:>11,.0f}"
            f"{run.wal_bytes_per_job:>11,.0f}{run.postgres_cpu_us_per_job:>14,.0f}"
            f"{run.cpu_busy_percent:>7.0f}"
            f"{run.load_average[0]:>7}"
        )
    ratio = "-" if result.ratio is None else f"{result.ratio:.0%}"
    out.append(
        f"   pgbouncer / direct: {ratio} (goal >= {result.goal_ratio:.0%}, within 15 % of "
        f"direct connections; per round {result.samples_ratio}); most server connections "
        f"through pgbouncer: {result.server_connections}; double claims: "
        f"{result.double_claims}; errors: {len(result.errors)}"
    )
    unprepared = "-" if result.ratio_unprepared is None else f"{result.ratio_unprepared:.0%}"
    out.append(
        f"   pgbouncer / direct without prepared statements: {unprepared}; pgbouncer itself "
        f"used {result.pgbouncer_cpu_percent:.0f} % of a core"
    )
    out += [f"     {error}" for error in result.errors[:5]]
    return out
