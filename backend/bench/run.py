"""``make bench``: worker throughput, raw-SQL limit, enqueue rate and scale, on PostgreSQL.

Run from ``backend/``: ``python -m bench.run [--jobs N] [--scale-max N] ...`` (``--help``).
Everything runs in one go against a dedicated database (default ``job_queue_bench``, dropped
and recreated on 127.0.0.1), so the figures are comparable as ratios. The table is printed
and written, with the raw figures, to ``bench-results/latest.json`` (and ``latest.txt``).

1. Worker throughput (``bench.workers``): real ``manage.py run_job_workers`` processes
   draining a pre-inserted backlog, on the PostgreSQL driver and, with ``--orm-path``, on
   the ORM driver.
2. Raw-SQL limit (``bench.raw_sql``): the same claim and complete statements driven by
   ``pgbench`` at the same concurrency; each worker figure is printed as a ratio of it.
   A third script, ``batched``, runs ``complete_jobs`` + ``claim_jobs`` 10 jobs at a time.
3. Enqueue (``bench.enqueue``): ``POST /api/jobs/`` under gunicorn, and
   ``services.create_job`` in-process.
4. Scale (``bench.scale``): claim latency and the stats/list endpoints with 10 k and
   ``--scale-max`` finished jobs, claim latency with a deep backlog, and the plans.
5. django.tasks (``bench.tasks``): the same no-op enqueued with ``Task.enqueue()`` and run by
   a worker, against the ``@register`` path (``services.create_job`` and the handler).
6. Sizes: rows, dead tuples and table/index sizes after a worker run and the scale run.
7. Heartbeat cost (``bench.workers.run_heartbeat_cost``): one process draining jobs that
   stay in flight, without and with a heartbeat every second.
8. Activity (``bench.activity``): the job types and workers reads with
   ``--activity-events`` events in the last hour, cold and warm.
9. PgBouncer (``bench.pgbouncer``): 8 worker processes x 4 threads drain ``--jobs`` jobs
   directly and through pgbouncer in transaction mode with at most 10 server connections.
10. Tracing (``bench.tracing``): 1 worker process x 4 threads drains ``--tracing-jobs`` with
    OpenTelemetry not importable, installed but off, and on (exporting over OTLP/HTTP).
11. Flow control (``bench.flowcontrol``): 1 worker process x 4 threads drains
    ``--flow-jobs`` from a queue without controls and from one whose limits do not bind
    (the goal: >= 0.9 of the throughput, printed PASS or MISS).
12. Decay (``bench.decay``): one 1 x 4 worker drains ``--decay-rounds`` backlogs of
    ``--decay-jobs`` in a row, on a private PostgreSQL with autovacuum on and on this server.
13. Peers (``bench.peers``, only with ``--peers`` or ``--only peers``: ``make bench-peers``):
    PgQueuer, Celery and Dramatiq on Redis, Procrastinate and django-tasks-db, each in a
    virtualenv of its own, against this queue's 1 x 4 and 2 x 4 on the same backlog, and
    throughput mode's levers at 1 x 4, each alone and all together.
14. Backlog (``bench.backlog``): the default 1 x 4 and 2 x 4 workers drain
    ``--backlog-goal-jobs`` after a stale backlog without and with ``ANALYZE``, beside the
    in-hand pgbench limit of the same rounds.
15. Mix (``bench.mix``): 1 x 4 drains ``--mix-jobs`` jobs sleeping 1-10 ms with batch
    sizes 1 and with batched fetch (4) and completion (10), what the defaults choose for
    4 threads.
16. Workflows (``bench.workflows``): 1 x 4 runs a fan-out of ``--workflow-jobs`` children
    and a fan-in callback, enqueue to the callback's success, against as many plain jobs;
    and drains ``--workflow-jobs`` beside ``--workflow-waiting`` waiting jobs against the
    same without them, with the claim's EXPLAIN both ways.
The wake-up phase also times lone jobs from handler return to committed
(``--completion-jobs``), with the default settings and with a completion batch of 1.

Benchmarks print figures; nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from . import report
from .activity import run_activity
from .backlog import run_backlog
from .bulk import run_bulk
from .database import Database, server_info, table_sizes
from .decay import SERVERS, run_decay
from .enqueue import run_enqueue
from .environment import RESULTS_DIR, bench_database
from .figures import best_of, load_average, log
from .flowcontrol import run_flow_control
from .mix import run_mix
from .peers import OURS, PEER_KEYS, run_peers
from .pgbouncer import run_pgbouncer
from .raw_sql import PROTOCOLS, SCRIPTS, RawSqlRun, pgbench_available, run_pgbench
from .scale import SMALL, run_scale
from .server import ServerShape
from .tasks import run_tasks
from .tracing import run_tracing
from .wakeup import run_wakeup
from .workers import CONFIGS, WorkerRun, run_heartbeat_cost, run_workers
from .workflows import run_workflows

PHASES = (
    "workers",
    "raw",
    "enqueue",
    "bulk",
    "scale",
    "wakeup",
    "tasks",
    "heartbeat",
    "activity",
    "pgbouncer",
    "tracing",
    "flowcontrol",
    "decay",
    "backlog",
    "mix",
    "workflows",
    "peers",
)
# Phases that run unless --only names others; peers needs --peers (or --only peers).
DEFAULT_PHASES = tuple(phase for phase in PHASES if phase != "peers")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2000, help="jobs per worker run (default 2000)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="rounds of each raw-SQL/worker pair and heartbeat pair; the best round of each "
        "is reported (default 1)",
    )
    parser.add_argument(
        "--heartbeat-jobs",
        type=int,
        default=800,
        help="jobs per heartbeat-cost run; each sleeps 0.2 s (default 800)",
    )
    parser.add_argument(
        "--orm-path",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run the workers and create_job on the ORM driver (default: on)",
    )
    parser.add_argument(
        "--pgbench-protocol",
        choices=PROTOCOLS,
        default="prepared",
        help="pgbench --protocol for the raw-SQL limit: prepared plans once per connection, "
        "as the worker's driver does; extended plans every execution (default prepared)",
    )
    parser.add_argument(
        "--scale-max",
        "--stats-rows",
        dest="scale_max",
        type=int,
        default=1_000_000,
        help="finished jobs for the large scale point, where the stats latency goal is "
        "measured (default 1000000; 10000000 for a 10 M point, some 15 minutes "
        "more here)",
    )
    parser.add_argument(
        "--future-jobs",
        type=int,
        default=200_000,
        help="not-yet-due higher-priority jobs in front of 2,000 due ones (0 skips the case; "
        "default 200000)",
    )
    parser.add_argument(
        "--wakeup-jobs", type=int, default=100, help="jobs per wake-up latency sample (100)"
    )
    parser.add_argument(
        "--wakeup-idle-seconds",
        type=float,
        default=60,
        help="seconds of idle worker per mode for idle CPU and commits/s, in two windows "
        "of half each, run in the order listen, polling, polling, listen (60)",
    )
    parser.add_argument(
        "--completion-jobs",
        type=int,
        default=100,
        help="lone jobs per completion-latency run of the wakeup phase, default settings and "
        "batch sizes 1 (0 skips them; 100)",
    )
    parser.add_argument(
        "--backlog-goal-jobs",
        type=int,
        default=10_000,
        help="backlog of the backlog phase's pgbench and worker runs (10000)",
    )
    parser.add_argument(
        "--backlog-goal-rounds",
        type=int,
        default=2,
        help="interleaved rounds of the backlog phase; the best of each is kept (2)",
    )
    parser.add_argument(
        "--mix-jobs",
        type=int,
        default=3000,
        help="jobs sleeping 1-10 ms per run of the mix phase (3000)",
    )
    parser.add_argument(
        "--mix-rounds",
        type=int,
        default=2,
        help="interleaved rounds of the mix phase, default and batched settings; the best "
        "of each is kept (2)",
    )
    parser.add_argument(
        "--workflow-jobs",
        type=int,
        default=10_000,
        help="children of the workflows phase's fan-out, and jobs of its drains (10000)",
    )
    parser.add_argument(
        "--workflow-waiting",
        type=int,
        default=100_000,
        help="jobs waiting on an unfinished parent beside the workflows phase's drain (100000)",
    )
    parser.add_argument(
        "--workflow-rounds",
        type=int,
        default=2,
        help="interleaved rounds of the workflows phase; the best of each is kept (2)",
    )
    parser.add_argument(
        "--backlog", type=int, default=100_000, help="queued jobs for the deep backlog (100000)"
    )
    parser.add_argument("--claims", type=int, default=500, help="claims per latency sample (500)")
    parser.add_argument(
        "--endpoint-requests", type=int, default=40, help="GETs per endpoint latency sample (40)"
    )
    parser.add_argument(
        "--requests", type=int, default=3000, help="POST /api/jobs/ requests per server (3000)"
    )
    parser.add_argument(
        "--activity-events",
        type=int,
        default=1_000_000,
        help="events in the last hour for the job types and workers reads (1000000)",
    )
    parser.add_argument("--creates", type=int, default=1000, help="in-process create_job calls")
    parser.add_argument("--concurrency", type=int, default=8, help="HTTP clients (default 8)")
    parser.add_argument("--api-workers", type=int, default=2, help="gunicorn workers (2)")
    parser.add_argument("--api-threads", type=int, default=4, help="gunicorn threads each (4)")
    parser.add_argument(
        "--only",
        default=",".join(DEFAULT_PHASES),
        help=f"comma-separated phases: {','.join(PHASES)} (default all but peers)",
    )
    parser.add_argument(
        "--peers",
        action="store_true",
        help="also run the peers phase: PgQueuer, Celery, Dramatiq, Procrastinate and "
        "django-tasks-db on the same backlog (make bench-peers runs it alone)",
    )
    parser.add_argument(
        "--peer-jobs", type=int, default=10_000, help="backlog of each peers run (10000)"
    )
    parser.add_argument(
        "--peer-rounds",
        type=int,
        default=2,
        help="interleaved rounds of the peers phase; the best of each is kept (2)",
    )
    parser.add_argument(
        "--peer-analyze",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="ANALYZE each PostgreSQL system's database once its backlog is in, as "
        "autovacuum would in production (default: on)",
    )
    parser.add_argument(
        "--peer-systems",
        default=",".join([OURS, *PEER_KEYS]),
        help=f"comma-separated systems of the peers phase: {','.join([OURS, *PEER_KEYS])} "
        "(default all)",
    )
    parser.add_argument(
        "--decay-jobs",
        type=int,
        default=20_000,
        help="jobs in each backlog of the decay phase (20000)",
    )
    parser.add_argument(
        "--decay-rounds",
        type=int,
        default=6,
        help="backlogs drained in a row by one worker in the decay phase (6)",
    )
    parser.add_argument(
        "--decay-servers",
        default=",".join(SERVERS),
        help=f"comma-separated servers of the decay phase: {','.join(SERVERS)} (default both)",
    )
    parser.add_argument(
        "--task-rounds",
        type=int,
        default=2,
        help="rounds of the @register and django.tasks paths, back to back, each round "
        "starting with the other; the median ratio is reported (2)",
    )
    parser.add_argument(
        "--tracing-rounds",
        type=int,
        default=4,
        help="rounds of the tracing modes (absent, off, on), back to back, each round "
        "starting with another; the median ratios are reported (4)",
    )
    parser.add_argument(
        "--tracing-jobs",
        type=int,
        default=5000,
        help="jobs per tracing run: a drain of 2,000 lasts about a second, too short to "
        "tell a few per cent apart on a shared machine (5000)",
    )
    parser.add_argument(
        "--flow-rounds",
        type=int,
        default=4,
        help="rounds of the flow control modes (unlimited, limited, rated), changing which "
        "goes first; the median ratio is reported (4)",
    )
    parser.add_argument(
        "--flow-jobs", type=int, default=5000, help="jobs per flow control run (5000)"
    )
    parser.add_argument(
        "--db",
        "--database",
        dest="db",
        default=os.environ.get("BENCH_POSTGRES_DB", "job_queue_bench"),
        help="database to create and drop (default job_queue_bench)",
    )
    parser.add_argument("--keep-db", action="store_true", help="leave the database in place")
    parser.add_argument(
        "--output", type=Path, default=RESULTS_DIR / "latest.json", help="JSON results path"
    )
    args = parser.parse_args(argv)
    args.phases = {phase.strip() for phase in args.only.split(",") if phase.strip()}
    if args.peers:
        args.phases.add("peers")
    if unknown := args.phases - set(PHASES):
        parser.error(f"unknown phase(s) in --only: {', '.join(sorted(unknown))}")
    args.peer_systems = [item.strip() for item in args.peer_systems.split(",") if item.strip()]
    if unknown := set(args.peer_systems) - {OURS, *PEER_KEYS}:
        parser.error(f"unknown system(s) in --peer-systems: {', '.join(sorted(unknown))}")
    args.decay_servers = [item.strip() for item in args.decay_servers.split(",") if item.strip()]
    if unknown := set(args.decay_servers) - set(SERVERS):
        parser.error(f"unknown server(s) in --decay-servers: {', '.join(sorted(unknown))}")
    for name in (
        "peer_jobs",
        "peer_rounds",
        "decay_jobs",
        "decay_rounds",
        "backlog_goal_jobs",
        "backlog_goal_rounds",
        "mix_jobs",
        "mix_rounds",
        "workflow_jobs",
        "workflow_rounds",
    ):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.scale_max <= SMALL:
        parser.error(f"--scale-max must be above {SMALL} (the small scale point)")
    return args


def run_throughput(
    db: Database, env: dict[str, str], args: argparse.Namespace, results: report.Results
) -> None:
    """Workers and raw-SQL limit, each worker configuration right after its reference.

    Run as pairs at the same concurrency, so both see the same background load on a
    shared machine; with ``--repeat`` the best round of each is kept.
    """
    log_dir = RESULTS_DIR / "logs"
    run_raw = "raw" in args.phases and pgbench_available() is not None
    if "raw" in args.phases and not run_raw:
        log("pgbench is not installed (apt-get install postgresql-client); no raw-SQL limit")
    drivers = ["postgres", "orm"] if args.orm_path else ["postgres"]
    if run_raw:
        results.raw_sql = []
    if "workers" in args.phases:
        results.workers = []
    for processes, threads in CONFIGS:
        raw_samples: dict[str, list[RawSqlRun]] = {script: [] for script in SCRIPTS}
        worker_samples: dict[str, list[WorkerRun]] = {driver: [] for driver in drivers}
        for round_number in range(1, args.repeat + 1):
            suffix = f" (round {round_number}/{args.repeat})" if args.repeat > 1 else ""
            clients = processes * threads
            for script in SCRIPTS if run_raw else ():
                log(
                    f"raw SQL: pgbench {script}, {clients} clients, {args.pgbench_protocol}{suffix}"
                )
                raw_samples[script].append(
                    run_pgbench(
                        db,
                        env,
                        script=script,
                        clients=clients,
                        jobs=args.jobs,
                        protocol=args.pgbench_protocol,
                        log_dir=log_dir,
                    )
                )
            if "workers" not in args.phases:
                continue
            for driver in drivers:
                log(f"workers: {processes} x {threads}, {driver} driver{suffix}")
                run = run_workers(
                    db,
                    env,
                    processes=processes,
                    threads=threads,
                    jobs=args.jobs,
                    driver=driver,
                    log_dir=log_dir,
                )
                worker_samples[driver].append(run)
                if (processes, threads) == CONFIGS[0] and round_number == 1:
                    key = f"after a {processes} x {threads} worker run, {run.path} path"
                    results.sizes[key] = table_sizes(db)
        if results.raw_sql is not None:
            results.raw_sql.extend(best_of(samples) for samples in raw_samples.values() if samples)
        if results.workers is not None:
            results.workers.extend(best_of(samples) for samples in worker_samples.values())


def run_phases(
    db: Database,
    env: dict[str, str],
    args: argparse.Namespace,
    results: report.Results,
    *,
    shape: ServerShape,
    log_dir: Path,
) -> None:
    """Every phase ``args`` names, in order, each writing its part of ``results``."""
    if args.phases & {"workers", "raw"}:
        run_throughput(db, env, args, results)
    if "enqueue" in args.phases:
        results.enqueue = run_enqueue(
            db,
            env,
            shape=shape,
            concurrency=args.concurrency,
            requests=args.requests,
            creates=args.creates,
            drivers=["postgres", "orm"] if args.orm_path else ["postgres"],
            log_dir=log_dir,
        )
    if "bulk" in args.phases:
        results.bulk = run_bulk(db, env, shape=shape, log_dir=log_dir)
    if "scale" in args.phases:
        results.scale = run_scale(
            db,
            env,
            shape=shape,
            scale_max=args.scale_max,
            backlog=args.backlog,
            claims=args.claims,
            requests=args.endpoint_requests,
            log_dir=log_dir,
            future=args.future_jobs,
        )
        results.sizes["after the scale run"] = table_sizes(db)
    if "wakeup" in args.phases:
        results.wakeup = run_wakeup(
            db,
            env,
            jobs=args.wakeup_jobs,
            idle_seconds=args.wakeup_idle_seconds,
            log_dir=log_dir,
            completion_jobs=args.completion_jobs,
        )
    if "tasks" in args.phases:
        results.tasks = run_tasks(
            db, env, jobs=args.jobs, threads=4, rounds=args.task_rounds, log_dir=log_dir
        )
    if "heartbeat" in args.phases:
        log(f"heartbeat cost: {args.heartbeat_jobs} sleeping jobs, without and with")
        results.heartbeat = run_heartbeat_cost(
            db, env, jobs=args.heartbeat_jobs, repeat=args.repeat, log_dir=log_dir
        )
    if "activity" in args.phases:
        results.activity = run_activity(
            db, events=args.activity_events, minutes=60, calls=args.endpoint_requests
        )
    if "pgbouncer" in args.phases:
        results.pgbouncer = run_pgbouncer(
            db, env, jobs=args.jobs, repeat=args.repeat, log_dir=log_dir
        )
    if "flowcontrol" in args.phases:
        results.flowcontrol = run_flow_control(
            db,
            env,
            jobs=args.flow_jobs,
            threads=4,
            rounds=args.flow_rounds,
            log_dir=log_dir,
        )
    if "tracing" in args.phases:
        results.tracing = run_tracing(
            db,
            env,
            jobs=args.tracing_jobs,
            threads=4,
            rounds=args.tracing_rounds,
            log_dir=log_dir,
        )
    if "decay" in args.phases:
        results.decay = run_decay(
            db,
            env,
            jobs=args.decay_jobs,
            rounds=args.decay_rounds,
            servers=args.decay_servers,
            log_dir=log_dir,
        )
    if "backlog" in args.phases:
        results.backlog = run_backlog(
            db,
            env,
            jobs=args.backlog_goal_jobs,
            rounds=args.backlog_goal_rounds,
            log_dir=log_dir,
        )
    if "mix" in args.phases:
        results.mix = run_mix(db, env, jobs=args.mix_jobs, rounds=args.mix_rounds, log_dir=log_dir)
    if "workflows" in args.phases:
        results.workflows = run_workflows(
            db,
            env,
            jobs=args.workflow_jobs,
            waiting=args.workflow_waiting,
            rounds=args.workflow_rounds,
            log_dir=log_dir,
        )
    if "peers" in args.phases:
        results.peers = run_peers(
            db,
            env,
            jobs=args.peer_jobs,
            rounds=args.peer_rounds,
            systems=args.peer_systems,
            base_database=args.db,
            keep_db=args.keep_db,
            log_dir=log_dir,
            analyzed=args.peer_analyze,
        )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    began = time.monotonic()
    log_dir = RESULTS_DIR / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    shape = ServerShape(workers=args.api_workers, threads=args.api_threads)

    log(f"creating database {args.db} and migrating")
    with bench_database(args.db, keep=args.keep_db) as (env, db):
        results = report.Results(
            meta=report.machine_meta(args.db, f"{env['POSTGRES_HOST']}:{env['POSTGRES_PORT']}")
        )
        results.meta.postgres = server_info(db)
        run_phases(db, env, args, results, shape=shape, log_dir=log_dir)

    results.meta.load_end = load_average()
    results.meta.duration_seconds = round(time.monotonic() - began, 1)
    results.targets = report.evaluate_targets(results)
    results.goals = report.evaluate_goals(results)
    report.write(results, args.output)
    log(f"wrote {args.output} and {args.output.with_suffix('.txt')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
