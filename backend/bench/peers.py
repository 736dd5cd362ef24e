"""Peers in the same run: this queue against PgQueuer, Celery and Dramatiq on Redis,
Procrastinate and django-tasks-db, each draining the same backlog.

``make bench-peers`` or ``make bench BENCH_ARGS=--peers``. Each peer runs in a virtualenv
of its own under ``backend/.bench-venvs/`` made from ``bench/peer_apps/requirements/``
(pinned; remade when the file changes), from a small app in ``bench/peer_apps/`` that
sets it up the way its documentation or its own benchmark does for throughput. Each peer
keeps its jobs in a PostgreSQL database of its own on the bench's server, or in a private
``redis-server`` (Debian's; installed with apt-get when missing) started for the phase.

Every run: ``--peer-jobs`` no-op jobs enqueued the peer's own way before any worker runs,
then one worker with 4 executors drains them and exits. jobs/s is counted over the drain
window each system records: this queue's first ``claimed`` to last ``succeeded`` event
(the existing worker phase, ``run_workers``, with the backlog inserted before the workers
start), PgQueuer's first handler call to the flush of its last completions, Procrastinate's
and django-tasks-db's own start and finish timestamps, Celery's and Dramatiq's first handler
call to their last handler's return. CPU per job over that window: the worker processes'
and the store's (PostgreSQL backends of the database, or redis-server), from ``/proc``
(``bench/cpu.py``); commits per job from ``pg_stat_database`` (Redis: commands per job).

The PostgreSQL systems' databases are analyzed once the backlog is in (``ANALYZE``, what
autovacuum does in production soon after a backlog arrives; ``--no-peer-analyze`` leaves
the statistics as they were). ``--peer-rounds`` rounds (2) run every system and
configuration once each, every other round in reverse order; the best round of each is
kept.

This queue runs its default settings (1 x 4 and 2 x 4) and, at 1 x 4, each lever of
throughput mode alone and all three together (``OUR_CONFIGS``): ``JOB_WORKER_PREFETCH``
(36: 40 jobs in hand), ``JOB_WORKER_LEAN_TIMELINE`` (no ``claimed`` or ``succeeded`` event;
such a drain is timed from the jobs' rows, ``drain.row_window``) and
``JOB_WORKER_COMPLETE_SYNCHRONOUS_COMMIT=false``.

Goals (``peer_goals``): the default 1 x 4 and 2 x 4 >= ``MATCHED_GOAL`` x PgQueuer at the
matched shape (one instance, batch 4: no more than 4 jobs in hand) and >=
``GOALS["celery"]`` x Celery's best configuration (rows ``peers-default-…``); throughput
mode at 1 x 4 >= ``THROUGHPUT_GOAL`` x PgQueuer's best configuration (the row
``throughput-mode-1x4-vs-pgqueuer-best``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import BACKEND_DIR, REPO_DIR, free_port, terminate, wait_until

from .backlog import beyond_reach
from .cpu import CpuSampler, cpu_between, ms_per_job
from .database import Database, drop_database, recreate_database
from .figures import best_of, load_average, log, ratio
from .goals import NOT_RUN, Goal
from .workers import run_workers

APPS_DIR = Path(__file__).resolve().parent / "peer_apps"
VENVS_DIR = BACKEND_DIR / ".bench-venvs"
INSTALL_PACKAGE = REPO_DIR / "scripts" / "install-debian-package.sh"
OURS = "this-queue"


@dataclass(frozen=True, kw_only=True)
class OurConfig:
    processes: int
    threads: int
    env: dict[str, str] = field(default_factory=dict)  # worker settings beyond the defaults
    description: str = ""


PREFETCH = {"JOB_WORKER_PREFETCH": "36"}  # 4 running + 36 held: 40 jobs in hand
LEAN = {"JOB_WORKER_LEAN_TIMELINE": "true"}
ASYNC_COMMIT = {"JOB_WORKER_COMPLETE_SYNCHRONOUS_COMMIT": "false"}
OUR_CONFIGS = {
    "1 x 4": OurConfig(processes=1, threads=4),
    "2 x 4": OurConfig(processes=2, threads=4),
    "1 x 4 prefetch": OurConfig(processes=1, threads=4, env=PREFETCH, description="prefetch 36"),
    "1 x 4 lean": OurConfig(processes=1, threads=4, env=LEAN, description="lean timeline"),
    "1 x 4 async": OurConfig(processes=1, threads=4, env=ASYNC_COMMIT, description="async commit"),
    "1 x 4 throughput": OurConfig(
        processes=1,
        threads=4,
        env={**PREFETCH, **LEAN, **ASYNC_COMMIT},
        description="prefetch 36, lean timeline, async commit",
    ),
}
# The default settings: compared with every peer's best configuration.
DEFAULT_CONFIGS = ("1 x 4", "2 x 4")
# Throughput mode's levers at 1 x 4, each alone and all together, beside the default 1 x 4.
LEVER_BASE = "1 x 4"
LEVER_CONFIGS = ("1 x 4 prefetch", "1 x 4 lean", "1 x 4 async", "1 x 4 throughput")
THROUGHPUT = "1 x 4 throughput"
# (peer, goal): the default configurations against that peer's best configuration.
GOALS = {"celery": 2.0}
# The default configurations against PgQueuer at the matched shape.
MATCHED_PEER, MATCHED_CONFIG, MATCHED_GOAL = "pgqueuer", "1x4", 1.2
# Throughput mode at 1 x 4 against PgQueuer's best configuration.
THROUGHPUT_PEER, THROUGHPUT_GOAL = "pgqueuer", 1.0


@dataclass(frozen=True, kw_only=True)
class Peer:
    key: str
    name: str
    app: str  # module in peer_apps/
    package: str  # the pinned distribution whose version the report names
    store: str  # "postgres" or "redis"
    configs: dict[str, str]  # config key -> what it is


PEERS = [
    Peer(
        key="pgqueuer",
        name="PgQueuer",
        app="pgqueuer_app",
        package="pgqueuer",
        store="postgres",
        configs={
            "4x10": "4 instances x batch 10 (its benchmark)",
            "1x10": "1 instance, batch 10",
            "1x4": "1 instance, batch 4 (this queue's 1 x 4 shape)",
        },
    ),
    Peer(
        key="celery",
        name="Celery + Redis",
        app="celery_app",
        package="celery",
        store="redis",
        configs={
            "default": "threads x 4, prefetch x4 (default)",
            "prefetch64": "threads x 4, prefetch x64",
        },
    ),
    Peer(
        key="dramatiq",
        name="Dramatiq + Redis",
        app="dramatiq_app",
        package="dramatiq",
        store="redis",
        configs={
            "default": "1 proc x 4 threads, prefetch 8 (default)",
            "prefetch64": "1 proc x 4 threads, prefetch 64",
        },
    ),
    Peer(
        key="procrastinate",
        name="Procrastinate",
        app="procrastinate_app",
        package="procrastinate",
        store="postgres",
        configs={"default": "1 worker, concurrency 4, async task"},
    ),
    Peer(
        key="django-tasks-db",
        name="django-tasks-db",
        app="djtasks_app",
        package="django-tasks-db",
        store="postgres",
        configs={"default": "4 db_worker processes, CONN_MAX_AGE 60"},
    ),
]
PEER_KEYS = [peer.key for peer in PEERS]


@dataclass(kw_only=True)
class SystemRun:
    """One system and configuration draining the backlog (the best round, with every
    round's jobs/s in ``samples_jobs_per_second``)."""

    system: str  # OURS or a peer key
    name: str
    version: str
    config: str
    description: str
    store: str
    jobs: int
    span_seconds: float
    jobs_per_second: float
    worker_cpu_ms_per_job: float | None
    store_cpu_ms_per_job: float | None
    commits_per_job: float | None  # PostgreSQL stores
    redis_commands_per_job: float | None  # Redis stores
    load_average: list[float]
    samples_jobs_per_second: list[float] = field(default_factory=list)


@dataclass(kw_only=True)
class Comparison:
    """This queue's configuration against a peer's best configuration."""

    ours: str
    ours_jobs_per_second: float
    peer: str
    peer_name: str
    peer_config: str
    peer_jobs_per_second: float
    ratio: float | None
    goal: float | None
    status: str | None  # PASS or MISS where there is a goal


@dataclass(kw_only=True)
class PeersResult:
    jobs: int
    rounds: int
    analyzed: bool = True  # ANALYZE after each backlog arrived, on every PostgreSQL system
    redis_version: str = ""  # the redis-server the Redis peers ran against
    runs: list[SystemRun]
    comparisons: list[Comparison] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)

    def goals(self) -> list[Goal]:
        return peer_goals(self)

    def render(self) -> list[str]:
        return render(self)


# --- Ratios and verdicts (no database) ----------------------------------------------------


def best_by_system(runs: list[SystemRun]) -> dict[str, SystemRun]:
    """Each system's fastest configuration."""
    best: dict[str, SystemRun] = {}
    for run in runs:
        if run.system not in best or run.jobs_per_second > best[run.system].jobs_per_second:
            best[run.system] = run
    return best


def verdict(value: float | None, goal: float | None) -> str | None:
    if goal is None:
        return None
    return "MISS" if value is None else "PASS" if value >= goal else "MISS"


def compare(runs: list[SystemRun]) -> list[Comparison]:
    """This queue's default configurations against every peer's best one."""
    best = best_by_system(runs)
    ours = [run for run in runs if run.system == OURS and run.config in DEFAULT_CONFIGS]
    comparisons = []
    for mine in ours:
        for key in PEER_KEYS:
            peer = best.get(key)
            if peer is None:
                continue
            value = ratio(mine.jobs_per_second, peer.jobs_per_second)
            goal = GOALS.get(key)
            comparisons.append(
                Comparison(
                    ours=mine.config,
                    ours_jobs_per_second=mine.jobs_per_second,
                    peer=key,
                    peer_name=peer.name,
                    peer_config=peer.config,
                    peer_jobs_per_second=peer.jobs_per_second,
                    ratio=value,
                    goal=goal,
                    status=verdict(value, goal),
                )
            )
    return comparisons


@dataclass(kw_only=True)
class Lever:
    """One configuration of this queue at 1 x 4 against the default 1 x 4 and PgQueuer's
    best configuration of the same run."""

    config: str
    description: str
    jobs_per_second: float
    versus_default: float | None
    versus_peer: float | None


def find_run(runs: list[SystemRun], system: str, config: str) -> SystemRun | None:
    return next((run for run in runs if (run.system, run.config) == (system, config)), None)


def levers(runs: list[SystemRun]) -> list[Lever]:
    """The default 1 x 4 and each lever's configuration that ran, in ``OUR_CONFIGS`` order."""
    base = find_run(runs, OURS, LEVER_BASE)
    peer = best_by_system(runs).get(THROUGHPUT_PEER)
    rows = []
    for config in (LEVER_BASE, *LEVER_CONFIGS):
        run = find_run(runs, OURS, config)
        if run is None:
            continue
        rows.append(
            Lever(
                config=config,
                description=OUR_CONFIGS[config].description or "default settings",
                jobs_per_second=run.jobs_per_second,
                versus_default=None
                if base is None
                else ratio(run.jobs_per_second, base.jobs_per_second),
                versus_peer=None
                if peer is None
                else ratio(run.jobs_per_second, peer.jobs_per_second),
            )
        )
    return rows


def _why_not(result: PeersResult | None, *systems: str) -> str:
    """Why a goal row has no figure: the phase did not run, a system failed, or a
    configuration was left out."""
    if result is None:
        return "peers phase not run"
    for system in systems:
        if system in result.errors:
            return result.errors[system]
    return "not measured"


def _in_hand_note(
    config: str, in_hand: Mapping[str, float], reference: float, target: float
) -> str:
    limit = in_hand.get(config)
    if limit is None:
        return ""
    return (
        f"; in-hand limit of {config} {limit:,.0f} jobs/s "
        f"({_fmt(ratio(limit, reference), '.2f')}x)"
        f"{beyond_reach(limit, reference * target)}"
    )


def _pair_goal(
    *,
    goal_id: str,
    name: str,
    mine: SystemRun | None,
    peer: SystemRun | None,
    target: float,
    why: str,
    beside: str = "",
) -> Goal:
    if mine is None or peer is None:
        return Goal.not_run(goal_id, name, f">= {target:.1f}x", why)
    value = ratio(mine.jobs_per_second, peer.jobs_per_second)
    return Goal(
        id=goal_id,
        name=name,
        measured=f"{mine.jobs_per_second:,.0f} jobs/s",
        reference=f"{peer.name} {peer.config}: {peer.jobs_per_second:,.0f} jobs/s{beside}",
        ratio=value,
        target=f">= {target:.1f}x",
        status=verdict(value, target) or NOT_RUN,
    )


def peer_goals(
    result: PeersResult | None, in_hand: Mapping[str, float] | None = None
) -> list[Goal]:
    """The peers goals: the default 1 x 4 and 2 x 4 against PgQueuer at the matched shape
    and against each ``GOALS`` peer's best configuration, then throughput mode at 1 x 4
    against PgQueuer's best. ``in_hand``: the backlog phase's in-hand limit of each
    configuration in the same run (``backlog.in_hand_limits``), printed beside the default
    configurations' rows with the share of the peer it reaches."""
    in_hand = in_hand or {}
    runs = result.runs if result else []
    best = best_by_system(runs)
    matched_name = next(peer.name for peer in PEERS if peer.key == MATCHED_PEER)
    matched = find_run(runs, MATCHED_PEER, MATCHED_CONFIG)
    goals = []
    for config in DEFAULT_CONFIGS:
        mine = find_run(runs, OURS, config)
        goals.append(
            _pair_goal(
                goal_id=f"peers-default-{config.replace(' ', '')}-vs-{MATCHED_PEER}-matched-shape",
                name=f"this queue {config} (default settings) vs {matched_name} "
                f"{MATCHED_CONFIG} (matched shape)",
                mine=mine,
                peer=matched,
                target=MATCHED_GOAL,
                why=_why_not(result, OURS, MATCHED_PEER),
                beside=""
                if matched is None
                else _in_hand_note(config, in_hand, matched.jobs_per_second, MATCHED_GOAL),
            )
        )
    for key, target in GOALS.items():
        name = next(peer.name for peer in PEERS if peer.key == key)
        peer = best.get(key)
        for config in DEFAULT_CONFIGS:
            goals.append(
                _pair_goal(
                    goal_id=f"peers-default-{config.replace(' ', '')}-vs-{key}-best",
                    name=f"this queue {config} (default settings) vs {name}'s best configuration",
                    mine=find_run(runs, OURS, config),
                    peer=peer,
                    target=target,
                    why=_why_not(result, OURS, key),
                    beside=""
                    if peer is None
                    else _in_hand_note(config, in_hand, peer.jobs_per_second, target),
                )
            )
    name = next(peer.name for peer in PEERS if peer.key == THROUGHPUT_PEER)
    goals.append(
        _pair_goal(
            goal_id=f"throughput-mode-1x4-vs-{THROUGHPUT_PEER}-best",
            name=f"this queue {THROUGHPUT} ({OUR_CONFIGS[THROUGHPUT].description}) vs "
            f"{name}'s best configuration",
            mine=find_run(runs, OURS, THROUGHPUT),
            peer=best.get(THROUGHPUT_PEER),
            target=THROUGHPUT_GOAL,
            why=_why_not(result, OURS, THROUGHPUT_PEER),
        )
    )
    return goals


def _fmt(value: float | None, spec: str) -> str:
    if value is None or math.isnan(value):
        return "-"
    return format(value, spec)


def _rounds(run: SystemRun) -> str:
    return "/".join(f"{value:,.0f}" for value in run.samples_jobs_per_second)


def render(result: PeersResult) -> list[str]:
    # Wide enough for every round's figure: three rounds of four-digit rates overflowed a
    # fixed column into the one before.
    width = max([16, *(2 + len(_rounds(run)) for run in result.runs)])
    out = [
        "",
        f"13. Peers in the same run: {result.jobs:,} no-op jobs enqueued before the worker "
        f"starts{', then ANALYZE' if result.analyzed else ''}, 4 executors, best of "
        f"{result.rounds} interleaved rounds",
        f"   {'system':<26}{'configuration':<50}{'jobs/s':>8}{'rounds':>{width}}"
        f"{'worker CPU':>11}{'store CPU':>10}{'commits':>8}{'redis cmd':>10}",
        f"   {'':<26}{'':<50}{'':>8}{'':>{width}}"
        f"{'ms/job':>11}{'ms/job':>10}{'/job':>8}{'/job':>10}",
    ]
    for run in result.runs:
        out.append(
            f"   {(run.name + ' ' + run.version).strip():<26}{run.description[:49]:<50}"
            f"{run.jobs_per_second:>8,.0f}{_rounds(run):>{width}}"
            f"{_fmt(run.worker_cpu_ms_per_job, '.3f'):>11}"
            f"{_fmt(run.store_cpu_ms_per_job, '.3f'):>10}"
            f"{_fmt(run.commits_per_job, '.2f'):>8}{_fmt(run.redis_commands_per_job, '.1f'):>10}"
        )
    out.append(
        "   store CPU = the PostgreSQL backends of the system's database, or redis-server"
        + (f" ({result.redis_version}, no persistence)" if result.redis_version else "")
    )
    out.append("   ratios, this queue's default settings / each peer's best configuration:")
    for item in result.comparisons:
        mark = f"  [{item.status}] goal >= {item.goal:.1f}" if item.goal else ""
        out.append(
            f"     this queue {item.ours} ({item.ours_jobs_per_second:,.0f}) / "
            f"{item.peer_name} {item.peer_config} ({item.peer_jobs_per_second:,.0f}) = "
            f"{_fmt(item.ratio, '.2f')}{mark}"
        )
    rows = levers(result.runs)
    if rows:
        peer = best_by_system(result.runs).get(THROUGHPUT_PEER)
        versus = "/ PgQueuer" if peer is None else f"/ {peer.name} {peer.config}"
        out += [
            "   throughput mode's levers at 1 x 4, each alone and all together:",
            f"     {'configuration':<20}{'settings':<44}{'jobs/s':>8}{'/ 1 x 4':>9}{versus:>20}",
        ]
        out += [
            f"     {row.config:<20}{row.description:<44}{row.jobs_per_second:>8,.0f}"
            f"{_fmt(row.versus_default, '.2f'):>9}{_fmt(row.versus_peer, '.2f'):>20}"
            for row in rows
        ]
    for key, message in result.errors.items():
        out.append(f"   {key}: NOT MEASURED: {message}")
    return out


# --- Running the peers ------------------------------------------------------------------


def requirements(peer: Peer) -> Path:
    return APPS_DIR / "requirements" / f"{peer.key}.txt"


def pinned_version(peer: Peer) -> str:
    for line in requirements(peer).read_text().splitlines():
        name, _, version = line.partition("==")
        if name.strip().lower().replace("_", "-") == peer.package:
            return version.strip()
    return "?"


def ensure_venv(peer: Peer) -> Path:
    """The peer's virtualenv python, (re)made when its requirements file changed."""
    venv = VENVS_DIR / peer.key
    python = venv / "bin" / "python"
    wanted = hashlib.sha256(requirements(peer).read_bytes()).hexdigest()
    marker = venv / ".requirements-sha256"
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    log(f"peers: installing {peer.name} into {venv}")
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-r", str(requirements(peer))], check=True
    )
    marker.write_text(wanted)
    return python


def redis_binary() -> str:
    """Debian's redis-server, installed with apt-get when missing (the bench only)."""
    found = shutil.which("redis-server")
    if found is None:
        log("peers: redis-server is missing; installing Debian's (apt-get)")
        subprocess.run(["bash", str(INSTALL_PACKAGE), "redis-server"], check=True)
        found = shutil.which("redis-server")
    if found is None:
        raise RuntimeError("redis-server could not be installed")
    return found


def redis_command(port: int, *words: str) -> bytes:
    """One inline Redis command over a plain socket (the bench's venv has no client): a
    bulk reply's payload, or a simple reply's line."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall((" ".join(words) + "\r\n").encode())
        data = b""
        while b"\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        if not data.startswith(b"$"):
            return data
        header, _, rest = data.partition(b"\r\n")
        size = int(header[1:])
        while len(rest) < size + 2:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        return rest[:size]


def redis_commands_processed(port: int) -> int:
    for line in redis_command(port, "INFO", "stats").decode().splitlines():
        if line.startswith("total_commands_processed:"):
            return int(line.split(":", 1)[1])
    raise RuntimeError("INFO stats without total_commands_processed")


class PrivateRedis:
    """A redis-server of the phase's own on a free port, without persistence."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="jobq-redis-"))
        self.proc: subprocess.Popen[bytes] = subprocess.Popen(
            [
                redis_binary(),
                *("--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir)),
                *("--save", "", "--appendonly", "no", "--daemonize", "no"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        def up() -> bool:
            try:
                return redis_command(self.port, "PING").startswith(b"+PONG")
            except OSError:
                return False

        wait_until(up, 20, "redis-server to answer")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        terminate(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)


def peer_database(base: str, peer: Peer) -> str:
    return f"{base}_{peer.key.replace('-', '_')}"


def _commits(conninfo: dict[str, Any]) -> int:
    db = Database(conninfo)
    try:
        return int(
            db.scalar("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        )
    finally:
        db.close()


def analyze(conninfo: dict[str, Any]) -> None:
    """What autovacuum does in production soon after a backlog arrives: statistics for
    every table of the database."""
    db = Database(conninfo)
    try:
        db.execute("ANALYZE")
    finally:
        db.close()


def run_peer(
    peer: Peer,
    config: str,
    *,
    python: Path,
    jobs: int,
    conninfo: dict[str, Any],
    redis: PrivateRedis | None,
    log_dir: Path,
    label: str,
    analyzed: bool,
) -> SystemRun:
    """Prepare the backlog with the peer's app, then run its worker until it exits."""
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(APPS_DIR),
        "PYTHONUNBUFFERED": "1",
        "BENCH_PEER_JOBS": str(jobs),
        "BENCH_PEER_CONFIG": config,
        "BENCH_PEER_DSN": "postgresql://{user}:{password}@{host}:{port}/{dbname}".format(
            **conninfo
        ),
    }
    if redis is not None:
        env["BENCH_PEER_REDIS"] = redis.url
    log_path = log_dir / f"peer-{label}.log"
    result_path = log_dir / f"peer-{label}.json"
    result_path.unlink(missing_ok=True)
    with log_path.open("w") as out:
        subprocess.run(
            [str(python), "-m", peer.app, "prepare", "--jobs", str(jobs)],
            cwd=APPS_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=True,
            timeout=600,
        )
    postgres = peer.store == "postgres"
    if postgres and analyzed:
        analyze(conninfo)

    def counter() -> int:
        if postgres:
            return _commits(conninfo)
        assert redis is not None
        return redis_commands_processed(redis.port)

    before = counter()
    command = [
        str(python),
        *("-m", peer.app, "work", "--jobs", str(jobs)),
        *("--config", config, "--result", str(result_path)),
    ]
    procs: list[subprocess.Popen[bytes]] = []
    sampler = CpuSampler(
        roots=lambda: [proc.pid for proc in procs],
        conninfo=conninfo if postgres else None,
        redis_pid=None if redis is None else redis.proc.pid,
    )
    with log_path.open("a") as out, sampler:
        # A session of its own: whatever the app starts (db_worker processes) goes with it.
        procs.append(
            subprocess.Popen(
                command,
                cwd=APPS_DIR,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        try:
            code = procs[0].wait(timeout=max(300, jobs / 10))
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(procs[0].pid, signal.SIGKILL)
            procs[0].wait(timeout=10)
    if code != 0 or not result_path.exists():
        raise RuntimeError(f"{peer.name} {config}: worker exit code {code}; see {log_path}")
    window = json.loads(result_path.read_text())
    if window["jobs"] != jobs:
        raise RuntimeError(f"{peer.name} {config}: {window['jobs']} of {jobs} jobs done")
    time.sleep(0.6)  # pg_stat_database is updated when the backends report
    after = counter()
    span = window["last"] - window["first"]
    cpu = cpu_between(sampler.samples, window["first"], window["last"])
    return SystemRun(
        system=peer.key,
        name=peer.name,
        version=pinned_version(peer),
        config=config,
        description=peer.configs[config],
        store="PostgreSQL" if postgres else "Redis",
        jobs=jobs,
        span_seconds=round(span, 3),
        jobs_per_second=round(jobs / span, 1) if span > 0 else math.nan,
        worker_cpu_ms_per_job=ms_per_job(cpu["worker"], jobs),
        store_cpu_ms_per_job=ms_per_job(cpu["postgres" if postgres else "redis"], jobs),
        commits_per_job=round((after - before) / jobs, 3) if postgres else None,
        redis_commands_per_job=None if postgres else round((after - before) / jobs, 2),
        load_average=load_average(),
    )


def run_ours(
    db: Database,
    env: dict[str, str],
    config: str,
    *,
    jobs: int,
    log_dir: Path,
    label: str,
    analyzed: bool,
) -> SystemRun:
    ours = OUR_CONFIGS[config]
    processes, threads = ours.processes, ours.threads
    run = run_workers(
        db,
        env,
        processes=processes,
        threads=threads,
        jobs=jobs,
        driver="postgres",
        log_dir=log_dir,
        label=label,
        extra_env=ours.env,
        enqueue_first=True,
        after_enqueue=(lambda target: target.execute("ANALYZE")) if analyzed else None,
        measure_cpu=True,
    )
    return SystemRun(
        system=OURS,
        name="this queue",
        version="",
        config=config,
        description=f"{processes} x {threads}, {ours.description}"
        if ours.description
        else f"{processes} proc x {threads} threads (run_job_workers)",
        store="PostgreSQL",
        jobs=jobs,
        span_seconds=run.span_seconds,
        jobs_per_second=run.jobs_per_second,
        worker_cpu_ms_per_job=run.worker_cpu_ms_per_job,
        store_cpu_ms_per_job=run.postgres_cpu_ms_per_job,
        commits_per_job=run.commits_per_job,
        redis_commands_per_job=None,
        load_average=run.load_average,
    )


def run_peers(
    db: Database,
    env: dict[str, str],
    *,
    jobs: int,
    rounds: int,
    systems: list[str],
    base_database: str,
    keep_db: bool,
    log_dir: Path,
    analyzed: bool = True,
) -> PeersResult:
    peers = [peer for peer in PEERS if peer.key in systems]
    errors: dict[str, str] = {}
    pythons: dict[str, Path] = {}
    for peer in peers:
        try:
            pythons[peer.key] = ensure_venv(peer)
        except (subprocess.CalledProcessError, OSError) as error:
            errors[peer.key] = f"virtualenv not installed ({error})"
    peers = [peer for peer in peers if peer.key in pythons]
    redis = PrivateRedis() if any(peer.store == "redis" for peer in peers) else None
    redis_version = ""
    if redis is not None:
        for line in redis_command(redis.port, "INFO", "server").decode().splitlines():
            if line.startswith("redis_version:"):
                redis_version = "Redis " + line.split(":", 1)[1].strip()
    conninfos: dict[str, dict[str, Any]] = {}
    for peer in peers:
        if peer.store == "postgres":
            name = peer_database(base_database, peer)
            conninfos[peer.key] = {**db.conninfo, "dbname": name}
            recreate_database(db.conninfo, name)
        else:
            conninfos[peer.key] = db.conninfo  # unused by the Redis peers' apps
    plan: list[tuple[str, str]] = [(OURS, config) for config in OUR_CONFIGS]
    if OURS not in systems:
        plan = []
    plan += [(peer.key, config) for peer in peers for config in peer.configs]
    samples: dict[tuple[str, str], list[SystemRun]] = {}
    try:
        for number in range(rounds):
            for system, config in plan if number % 2 == 0 else plan[::-1]:
                if system in errors:
                    continue
                label = f"{system}-{config.replace(' ', '')}-{number + 1}"
                log(f"peers: {system} {config} (round {number + 1}/{rounds}), {jobs} jobs")
                try:
                    if system == OURS:
                        run = run_ours(
                            db,
                            env,
                            config,
                            jobs=jobs,
                            log_dir=log_dir,
                            label=label,
                            analyzed=analyzed,
                        )
                    else:
                        peer = next(item for item in peers if item.key == system)
                        run = run_peer(
                            peer,
                            config,
                            python=pythons[system],
                            jobs=jobs,
                            conninfo=conninfos[system],
                            redis=redis,
                            log_dir=log_dir,
                            label=label,
                            analyzed=analyzed,
                        )
                except (RuntimeError, subprocess.SubprocessError, TimeoutError) as error:
                    log(f"peers: {system} {config} failed: {error}")
                    errors[system] = str(error)
                    continue
                log(f"peers: {system} {config}: {run.jobs_per_second:,.0f} jobs/s")
                samples.setdefault((system, config), []).append(run)
    finally:
        if redis is not None:
            redis.stop()
        if not keep_db:
            for peer in peers:
                if peer.store == "postgres":
                    drop_database(db.conninfo, peer_database(base_database, peer))
    runs = [best_of(items) for items in samples.values()]
    result = PeersResult(
        jobs=jobs,
        rounds=rounds,
        analyzed=analyzed,
        redis_version=redis_version,
        runs=runs,
        errors=errors,
    )
    result.comparisons = compare(runs)
    return result
