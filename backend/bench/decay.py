"""Decay over history: does throughput hold as finished jobs pile up? (the no-decay goal)

One ``manage.py run_job_workers`` process with 4 threads is started once and drains
``--decay-rounds`` backlogs of ``--decay-jobs`` no-op jobs, one after another, nothing
cleaned up in between: every round runs on the dead row versions and index entries the
rounds before it left. Each round's jobs/s is counted from its first ``claimed`` to its last
``succeeded`` event and printed as a ratio of the first round's (goal: every round >= 0.85).

It runs on two servers:

- ``private``: a PostgreSQL cluster of the phase's own (Debian's binaries, ``initdb`` into
  a temporary directory, its own port), configured as production is: PostgreSQL's defaults,
  so autovacuum on at its default thresholds, fsync on; the queue is migrated into it with
  ``manage.py migrate``, so per-table storage settings a migration sets apply;
- ``shared``: the bench's database on this machine's server, whatever its autovacuum says
  (off here), the same worker and sizes.

After each round the report shows ``jobs_job``'s dead tuples and how many (auto)vacuums it
has had, and the worker's resident memory.
"""

from __future__ import annotations

import math
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import PrivatePostgres, WorkerProcess, postgres_bin_dir, wait_until

from .database import Database, reset_tables
from .drain import live_jobs_exist
from .figures import load_average, log, ratio
from .goals import Goal
from .seed import enqueue_bulk

SERVERS = ("private", "shared")
DECAY_GOAL = 0.85
THREADS = 4


class ProductionPostgres(PrivatePostgres):
    """A private cluster with PostgreSQL's defaults (autovacuum on, fsync on)."""

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c autovacuum=on"
        self.pg_ctl("-o", options, "-w", "start")


@dataclass(kw_only=True)
class DecayRound:
    number: int
    jobs: int
    span_seconds: float
    jobs_per_second: float
    ratio_to_first: float | None
    dead_tuples: int  # jobs_job's n_dead_tup after the round (statistics, may lag)
    vacuums: int  # jobs_job's vacuum_count + autovacuum_count so far
    worker_rss_mib: float | None


@dataclass(kw_only=True)
class DecayRun:
    server: str
    description: str
    autovacuum: str
    reloptions: str  # jobs_job's storage parameters (a migration's autovacuum settings)
    jobs: int
    rounds: list[DecayRound]
    load_average: list[float] = field(default_factory=list)

    @property
    def worst_ratio(self) -> float | None:
        return worst_ratio([item.jobs_per_second for item in self.rounds])


@dataclass(kw_only=True)
class DecayResult:
    jobs: int
    rounds: int
    runs: list[DecayRun]
    errors: dict[str, str] = field(default_factory=dict)

    def goals(self) -> list[Goal]:
        return goals(self)

    def render(self) -> list[str]:
        return render(self)


# --- Ratios and verdicts (no database) ----------------------------------------------------


def ratios_to_first(rates: list[float]) -> list[float | None]:
    return [ratio(rate, rates[0]) for rate in rates] if rates else []


def worst_ratio(rates: list[float]) -> float | None:
    """The slowest round as a ratio of the first (``None`` without a usable first round)."""
    values = ratios_to_first(rates)
    if not values or any(value is None for value in values):
        return None
    return min(value for value in values if value is not None)


def decay_verdict(rates: list[float]) -> str:
    worst = worst_ratio(rates)
    if worst is None or len(rates) < 2:
        return "not run"
    return "PASS" if worst >= DECAY_GOAL else "MISS"


def goals(result: DecayResult | None) -> list[Goal]:
    target = f"every round >= {DECAY_GOAL} of the first"
    out = []
    for server in SERVERS:
        runs = result.runs if result else []
        run = next((item for item in runs if item.server == server), None)
        goal_id = f"no-decay-{server}-server"
        name = (
            f"no decay: one 1 x {THREADS} worker drains backlogs in a row, {server} server"
            if run is None
            else f"no decay: one 1 x {THREADS} worker drains {len(run.rounds)} backlogs of "
            f"{run.jobs:,} in a row, {run.description}"
        )
        if run is None:
            why = "decay phase not run" if result is None else result.errors.get(server, "")
            out.append(Goal.not_run(goal_id, name, target, why or "not measured"))
            continue
        rates = [item.jobs_per_second for item in run.rounds]
        out.append(
            Goal(
                id=goal_id,
                name=name,
                measured=" -> ".join(f"{rate:,.0f}" for rate in rates) + " jobs/s",
                reference=f"round 1: {rates[0]:,.0f} jobs/s",
                ratio=run.worst_ratio,
                target=target,
                status=decay_verdict(rates),
            )
        )
    return out


def render(result: DecayResult) -> list[str]:
    out = [
        "",
        f"12. Decay: one 1 proc x {THREADS} thr worker drains {result.rounds} backlogs of "
        f"{result.jobs:,} no-op jobs in a row, nothing cleaned up in between",
    ]
    for run in result.runs:
        out.append(
            f"   {run.description}: autovacuum={run.autovacuum}, jobs_job reloptions "
            f"{run.reloptions or '(none)'}"
        )
        out.append(
            f"   {'round':>8}{'jobs/s':>9}{'of first':>10}{'dead tuples':>13}{'vacuums':>9}"
            f"{'worker RSS MiB':>16}"
        )
        for item in run.rounds:
            rss = "-" if item.worker_rss_mib is None else f"{item.worker_rss_mib:.0f}"
            share = "-" if item.ratio_to_first is None else f"{item.ratio_to_first:.2f}"
            out.append(
                f"   {item.number:>8}{item.jobs_per_second:>9,.0f}{share:>10}"
                f"{item.dead_tuples:>13,}{item.vacuums:>9}{rss:>16}"
            )
        worst = run.worst_ratio
        out.append(
            f"   worst round {'-' if worst is None else f'{worst:.2f}'} of the first: "
            f"[{decay_verdict([item.jobs_per_second for item in run.rounds])}] "
            f"goal >= {DECAY_GOAL}"
        )
    for server, message in result.errors.items():
        out.append(f"   {server}: NOT MEASURED: {message}")
    return out


# --- Running ------------------------------------------------------------------------------


def _rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _window_since(db: Database, since: Any) -> tuple[float, int]:
    first, last, succeeded = db.rows(
        """
        SELECT min(created_at) FILTER (WHERE type = 'claimed'),
               max(created_at) FILTER (WHERE type = 'succeeded'),
               count(*) FILTER (WHERE type = 'succeeded')
        FROM jobs_jobevent WHERE created_at >= %s
        """,
        [since],
    )[0]
    span = (last - first).total_seconds() if first and last else math.nan
    return span, succeeded


def _table_state(db: Database) -> tuple[int, int]:
    dead, vacuums = db.rows(
        "SELECT n_dead_tup, vacuum_count + autovacuum_count FROM pg_stat_user_tables"
        " WHERE relname = 'jobs_job'"
    )[0]
    return int(dead), int(vacuums)


def drain_in_a_row(
    db: Database, env: dict[str, str], *, jobs: int, rounds: int, log_dir: Path, label: str
) -> list[DecayRound]:
    """One worker, ``rounds`` backlogs of ``jobs`` one after another."""
    reset_tables(db)
    worker = WorkerProcess(
        log_dir / f"worker-decay-{label}.log", "--threads", str(THREADS), env=env
    )
    results: list[DecayRound] = []
    try:
        wait_until(
            lambda: worker.log().count("action=thread_started") >= THREADS,
            90,
            "the decay worker's threads to start",
        )
        for number in range(1, rounds + 1):
            since = db.scalar("SELECT clock_timestamp()")
            enqueue_bulk(db, jobs)
            wait_until(
                lambda: not live_jobs_exist(db),
                max(300, jobs / 20),
                f"round {number} to drain",
                interval=0.1,
            )
            if worker.proc.poll() is not None:
                raise RuntimeError(f"the worker exited; see {worker.log_path}")
            span, succeeded = _window_since(db, since)
            if succeeded != jobs:
                raise RuntimeError(f"round {number}: {succeeded} of {jobs} jobs succeeded")
            rate = round(jobs / span, 1) if span > 0 else math.nan
            db.reconnect()  # this session's pending statistics reach the views
            dead, vacuums = _table_state(db)
            first_rate = results[0].jobs_per_second if results else rate
            results.append(
                DecayRound(
                    number=number,
                    jobs=jobs,
                    span_seconds=round(span, 3),
                    jobs_per_second=rate,
                    ratio_to_first=ratio(rate, first_rate),
                    dead_tuples=dead,
                    vacuums=vacuums,
                    worker_rss_mib=_rss_mib(worker.proc.pid),
                )
            )
            log(
                f"decay {label}: round {number}/{rounds}: {rate:,.0f} jobs/s "
                f"({results[-1].ratio_to_first} of the first), {dead:,} dead tuples"
            )
        worker.signal(signal.SIGTERM)
        worker.wait(timeout=60)
    finally:
        worker.kill()
    return results


def _describe(db: Database) -> tuple[str, str, str]:
    version = db.scalar("SHOW server_version").split()[0]
    autovacuum = db.scalar("SHOW autovacuum")
    reloptions = db.scalar("SELECT reloptions FROM pg_class WHERE relname = 'jobs_job'")
    return version, autovacuum, ", ".join(reloptions or [])


def run_decay(
    db: Database,
    env: dict[str, str],
    *,
    jobs: int,
    rounds: int,
    servers: list[str],
    log_dir: Path,
) -> DecayResult:
    result = DecayResult(jobs=jobs, rounds=rounds, runs=[])
    if "private" in servers:
        bin_dir = postgres_bin_dir()
        if bin_dir is None:
            result.errors["private"] = "no PostgreSQL server binaries (initdb) installed"
        else:
            log(f"decay: private PostgreSQL ({bin_dir}), autovacuum on, {rounds} x {jobs}")
            private = ProductionPostgres(bin_dir, database="job_queue_decay")
            try:
                private.init_and_start()
                private.migrate(env)
                private_env = {**env, **private.env()}
                private_db = Database(
                    {**db.conninfo, "port": str(private.port), "dbname": private.database}
                )
                try:
                    version, autovacuum, reloptions = _describe(private_db)
                    rows = drain_in_a_row(
                        private_db,
                        private_env,
                        jobs=jobs,
                        rounds=rounds,
                        log_dir=log_dir,
                        label="private",
                    )
                finally:
                    private_db.close()
                result.runs.append(
                    DecayRun(
                        server="private",
                        description=f"private PostgreSQL {version} (defaults: autovacuum on)",
                        autovacuum=autovacuum,
                        reloptions=reloptions,
                        jobs=jobs,
                        rounds=rows,
                        load_average=load_average(),
                    )
                )
            except (RuntimeError, TimeoutError, OSError, AssertionError) as error:
                log(f"decay: private server failed: {error}")
                result.errors["private"] = str(error)
            finally:
                private.destroy()
    if "shared" in servers:
        log(f"decay: this machine's server, {rounds} x {jobs}")
        version, autovacuum, reloptions = _describe(db)
        try:
            rows = drain_in_a_row(
                db, env, jobs=jobs, rounds=rounds, log_dir=log_dir, label="shared"
            )
            result.runs.append(
                DecayRun(
                    server="shared",
                    description=f"this machine's PostgreSQL {version} (autovacuum={autovacuum})",
                    autovacuum=autovacuum,
                    reloptions=reloptions,
                    jobs=jobs,
                    rounds=rows,
                    load_average=load_average(),
                )
            )
        except (RuntimeError, TimeoutError) as error:
            log(f"decay: shared server failed: {error}")
            result.errors["shared"] = str(error)
        finally:
            reset_tables(db)
    return result
