"""``make bench``: worker throughput, raw-SQL limit, enqueue rate and scale, on PostgreSQL.

Run from ``backend/``: ``python -m bench.run [--jobs N] [--scale-max N] ...`` (``--help``).
Everything runs in one go against a dedicated database (default ``job_queue_bench``, dropped
and recreated on 127.0.0.1), so the figures are comparable as ratios. The table is printed
and written, with the raw figures, to ``bench-results/latest.json`` (and ``latest.txt``).

1. Worker throughput: N ``bench.noop`` jobs inserted in one statement, drained by the real
   ``manage.py run_job_workers`` subprocesses (started first, stopped with SIGTERM once the
   queue is empty); jobs/s from the first ``claimed`` to the last ``succeeded`` event. Run
   on the one-statement PostgreSQL path and, with ``--orm-path``, on the ORM path.
2. Raw-SQL limit: the services' own claim and complete statements driven by ``pgbench`` at
   the same concurrency; each worker figure is printed as a ratio of it.
3. Enqueue: ``POST /api/jobs/`` under gunicorn (DEBUG=false, token auth) at concurrency 8,
   and ``services.create_job`` in-process.
4. Scale: claim latency and the stats/list endpoints with 10 k and ``--scale-max`` finished
   jobs (three events each), claim latency with a deep backlog, and the claim's plan.
5. Sizes: rows, dead tuples and table/index sizes.

Benchmarks print figures; nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import math
import os
import platform
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql as pgsql

BACKEND_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = BACKEND_DIR.parent
RESULTS_DIR = REPO_DIR / "bench-results"
JOB_TYPE = "bench.noop"
WORKER_CONFIGS = [(1, 4), (2, 4), (1, 1)]  # (processes, threads per process)


# --- Small helpers ----------------------------------------------------------------------


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile; ``nan`` for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(math.ceil(pct / 100 * len(ordered)), 1)
    return ordered[rank - 1]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def ratio(value: float, base: float) -> float | None:
    if not base or math.isnan(base) or math.isnan(value):
        return None
    return round(value / base, 2)


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def log(message: str) -> None:
    print(f"[bench {datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


def wait_for(predicate: Callable[[], bool], *, timeout: float, interval: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- Database plumbing ------------------------------------------------------------------


class Database:
    """A plain psycopg connection (no Django) for setup, data generation and measurement."""

    def __init__(self, conninfo: dict[str, Any]) -> None:
        self.conninfo = conninfo
        # ClientCursor inlines parameters, so EXPLAIN sees the same literals as the services.
        self.conn = psycopg.connect(
            **conninfo, autocommit=True, cursor_factory=psycopg.ClientCursor
        )

    def execute(self, sql: str, params: Any = None) -> None:
        with self.conn.cursor() as cur:
            cur.execute(sql, params)

    def rows(self, sql: str, params: Any = None) -> list[tuple]:
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def scalar(self, sql: str, params: Any = None) -> Any:
        return self.rows(sql, params)[0][0]

    def close(self) -> None:
        self.conn.close()


def recreate_database(conninfo: dict[str, Any], name: str) -> None:
    admin = {**conninfo, "dbname": "postgres"}
    with psycopg.connect(**admin, autocommit=True) as conn:
        ident = pgsql.Identifier(name)
        conn.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))
        conn.execute(pgsql.SQL("CREATE DATABASE {}").format(ident))


def drop_database(conninfo: dict[str, Any], name: str) -> None:
    admin = {**conninfo, "dbname": "postgres"}
    with psycopg.connect(**admin, autocommit=True) as conn:
        ident = pgsql.Identifier(name)
        conn.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))


def reset_tables(db: Database) -> None:
    db.execute("TRUNCATE jobs_jobevent, jobs_job RESTART IDENTITY")


# Jobs and their ``created`` events in one statement; ``available_at``, ``priority`` and
# ``created_at`` are SQL expressions of the series number ``g``.
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
) -> None:
    sql = _ENQUEUE_SQL.format(priority=priority, available_at=available_at, created_at=created_at)
    db.execute(sql, {"type": JOB_TYPE, "count": count})


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


def table_sizes(db: Database) -> list[dict[str, Any]]:
    rows = db.rows(
        """
        SELECT s.relname, c.reltuples::bigint, s.n_live_tup, s.n_dead_tup,
               pg_relation_size(s.relid), pg_indexes_size(s.relid),
               pg_total_relation_size(s.relid)
        FROM pg_stat_user_tables AS s JOIN pg_class AS c ON c.oid = s.relid
        WHERE s.relname IN ('jobs_job', 'jobs_jobevent') ORDER BY s.relname
        """
    )
    sizes = []
    for name, _reltuples, live, dead, heap, indexes, total in rows:
        count = db.scalar(f"SELECT count(*) FROM {name}")
        sizes.append(
            {
                "table": name,
                "rows": count,
                "n_live_tup": live,
                "n_dead_tup": dead,
                "heap_bytes": heap,
                "indexes_bytes": indexes,
                "total_bytes": total,
            }
        )
    claim_idx = db.scalar("SELECT pg_relation_size('job_claim_idx')")
    sizes.append({"table": "job_claim_idx", "total_bytes": claim_idx})
    return sizes


def server_info(db: Database) -> dict[str, Any]:
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
    info = {}
    for name, setting, unit in rows:
        if unit == "8kB":
            info[name] = f"{int(setting) * 8 // 1024}MB"
        else:
            info[name] = setting
    return info


# --- Environment ------------------------------------------------------------------------


def bench_environment(args: argparse.Namespace) -> dict[str, str]:
    """Environment for this process's Django and for the workers and gunicorn it starts."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"GUNICORN_CMD_ARGS", "DJANGO_SETTINGS_MODULE"}
    }
    env.update(
        DATABASE_ENGINE="postgres",
        POSTGRES_DB=args.db,
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
        JOB_HANDLER_MODULES="bench.handlers",
        JOB_WORKER_LOG_LEVEL="INFO",
        # Only the idle poll (nothing claimable): lets every thread notice the bulk insert
        # within 20 ms instead of 500 ms. A busy worker never sleeps.
        JOB_WORKER_POLL_INTERVAL_MS="20",
        BENCH_FORCE_ORM_PATH="0",
        PYTHONUNBUFFERED="1",
    )
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    return env


def conninfo_from(env: dict[str, str]) -> dict[str, Any]:
    return {
        "host": env["POSTGRES_HOST"],
        "port": env["POSTGRES_PORT"],
        "user": env["POSTGRES_USER"],
        "password": env["POSTGRES_PASSWORD"],
        "dbname": env["POSTGRES_DB"],
        "connect_timeout": 5,
    }


@contextmanager
def started(procs: list[subprocess.Popen]) -> Iterator[list[subprocess.Popen]]:
    """Make sure every process this benchmark started is gone when the block ends."""
    try:
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


# --- 1. Worker throughput ---------------------------------------------------------------


def event_window(db: Database) -> dict[str, Any]:
    row = db.rows(
        """
        SELECT min(created_at) FILTER (WHERE type = 'claimed'),
               max(created_at) FILTER (WHERE type = 'succeeded'),
               count(*) FILTER (WHERE type = 'claimed'),
               count(*) FILTER (WHERE type = 'succeeded'),
               count(DISTINCT job_id) FILTER (WHERE type = 'succeeded')
        FROM jobs_jobevent
        """
    )[0]
    first, last, claimed, succeeded, distinct = row
    span = (last - first).total_seconds() if first and last else math.nan
    return {
        "span_seconds": round(span, 3),
        "claimed_events": claimed,
        "succeeded_events": succeeded,
        "jobs_succeeded": distinct,
        "jobs_per_second": round(succeeded / span, 1) if span and span > 0 else math.nan,
    }


def queue_empty(db: Database) -> bool:
    return not db.scalar(
        "SELECT EXISTS (SELECT 1 FROM jobs_job WHERE status IN ('queued', 'running'))"
    )


def best_of(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest of repeated runs (background load only ever slows a run down)."""
    best = dict(max(samples, key=lambda item: item["jobs_per_second"]))
    best["samples_jobs_per_second"] = [item["jobs_per_second"] for item in samples]
    return best


def run_workers(
    db: Database,
    env: dict[str, str],
    *,
    processes: int,
    threads: int,
    jobs: int,
    orm_path: bool,
    log_dir: Path,
) -> dict[str, Any]:
    reset_tables(db)
    label = f"{processes}x{threads}-{'orm' if orm_path else 'cte'}"
    worker_env = dict(env, BENCH_FORCE_ORM_PATH="1" if orm_path else "0")
    log_paths = [log_dir / f"worker-{label}-{index}.log" for index in range(processes)]
    procs: list[subprocess.Popen] = []
    with started(procs):
        for path in log_paths:
            with path.open("w") as out:
                procs.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "manage.py",
                            "run_job_workers",
                            "--threads",
                            str(threads),
                        ],
                        cwd=BACKEND_DIR,
                        env=worker_env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                )

        def ready() -> bool:
            if any(proc.poll() is not None for proc in procs):
                raise RuntimeError(f"a worker exited early; see {log_dir}")
            started_threads = sum(p.read_text().count("action=thread_started") for p in log_paths)
            return started_threads >= processes * threads

        wait_for(ready, timeout=90, interval=0.1, what="worker threads to start")
        time.sleep(0.5)  # every thread has run its first (empty) claim and now idles
        before = db.scalar(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        )
        enqueued_at = time.monotonic()
        enqueue_bulk(db, jobs)
        wait_for(
            lambda: queue_empty(db),
            timeout=max(120, jobs / 20),
            interval=0.1,
            what="the workers to drain the queue",
        )
        drained = time.monotonic() - enqueued_at
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        codes = [proc.wait(timeout=60) for proc in procs]
    if any(codes):
        raise RuntimeError(f"worker exit codes {codes}; see {log_dir}")
    result = event_window(db)
    time.sleep(0.6)  # pg_stat_database is updated when the backends report
    after = db.scalar("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
    result.update(
        processes=processes,
        threads=threads,
        path="orm" if orm_path else "cte",
        jobs=jobs,
        drain_wall_seconds=round(drained, 2),
        # Includes the idle polls before the insert and after the drain; a rough figure.
        commits_per_job=round((after - before) / jobs, 2),
        load_average=load_average(),
    )
    if result["jobs_succeeded"] != jobs or result["claimed_events"] != jobs:
        raise RuntimeError(f"expected {jobs} jobs claimed and succeeded once: {result}")
    return result


# --- 2. Raw-SQL limit -------------------------------------------------------------------


def pgbench_script() -> str:
    """The services' claim and complete statements as a pgbench script (simple protocol).

    Parameters the worker sends from Python become SQL here (``now()`` for the clock, the
    client id for the worker id); the claim's result row feeds the complete, as in the
    worker. The claim's final SELECT is wrapped so it always yields one row for ``\\gset``.
    """
    from jobs import services

    worker = "'pgbench-:client_id'"
    claim = services._PG_CLAIM % {
        "now": "now()",
        "worker_id": worker,
        "locked_until": "now() + interval '30 seconds'",
        "data": '\'{"lease_seconds":30,"locked_until":"2030-01-01T00:00:00+00:00"}\'',
    }
    tail = "SELECT * FROM claimed"
    if not claim.rstrip().endswith(tail):
        raise RuntimeError("the claim statement changed shape; update bench.run.pgbench_script")
    claim = claim.rstrip()[: -len(tail)] + (
        "SELECT claimed.* FROM (SELECT 1) AS one LEFT JOIN claimed ON true \\gset\n"
    )
    complete = services._PG_COMPLETE % {
        "job_id": "NULLIF(':id', '')::uuid",
        "worker_id": worker,
        "attempt": "NULLIF(':attempts', '')::integer",
        "result": "NULL",
        "now": "now()",
    }
    return claim.strip() + "\n" + complete.strip() + ";\n"


def pgbench_available() -> str | None:
    return shutil.which("pgbench")


def run_pgbench(
    db: Database, env: dict[str, str], *, clients: int, jobs: int, log_dir: Path
) -> dict[str, Any]:
    reset_tables(db)
    enqueue_bulk(db, jobs)
    script = log_dir / "claim_complete.pgbench.sql"
    script.write_text(pgbench_script())
    per_client = math.ceil(jobs / clients)
    command = [
        pgbench_available() or "pgbench",
        "--no-vacuum",
        "--protocol=simple",
        f"--client={clients}",
        f"--jobs={min(clients, os.cpu_count() or 1)}",
        f"--transactions={per_client}",
        f"--file={script}",
        "--host",
        env["POSTGRES_HOST"],
        "--port",
        env["POSTGRES_PORT"],
        "--username",
        env["POSTGRES_USER"],
        env["POSTGRES_DB"],
    ]
    pg_env = dict(env, PGPASSWORD=env["POSTGRES_PASSWORD"])
    done = subprocess.run(command, env=pg_env, capture_output=True, text=True, timeout=600)
    (log_dir / f"pgbench-c{clients}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"pgbench failed ({done.returncode}): {done.stderr[-2000:]}")
    tps = next(
        (
            float(line.split("=")[1].split()[0])
            for line in done.stdout.splitlines()
            if line.startswith("tps")
        ),
        math.nan,
    )
    result = event_window(db)
    result.update(clients=clients, jobs=jobs, pgbench_tps=tps, load_average=load_average())
    if result["jobs_succeeded"] != jobs:
        raise RuntimeError(f"pgbench left jobs unfinished: {result}")
    return result


# --- 3. Enqueue -------------------------------------------------------------------------


@contextmanager
def api_server(env: dict[str, str], args: argparse.Namespace, *, conn_max_age: int, log_dir: Path):
    port = free_port()
    server_env = dict(env, POSTGRES_CONN_MAX_AGE=str(conn_max_age))
    log_path = log_dir / f"gunicorn-conn-max-age-{conn_max_age}.log"
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "config.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(args.api_workers),
        "--threads",
        str(args.api_threads),
        "--worker-class",
        "gthread",
        "--no-control-socket",
        "--log-level",
        "warning",
    ]
    procs: list[subprocess.Popen] = []
    with log_path.open("w") as out, started(procs):
        procs.append(
            subprocess.Popen(
                command, cwd=BACKEND_DIR, env=server_env, stdout=out, stderr=subprocess.STDOUT
            )
        )

        def healthy() -> bool:
            if procs[0].poll() is not None:
                raise RuntimeError(f"gunicorn exited; see {log_path}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/api/health/")
                code = conn.getresponse().status
            except OSError:
                return False
            if code != 200:
                raise RuntimeError(f"GET /api/health/ answered {code}; see {log_path}")
            return True

        wait_for(healthy, timeout=60, interval=0.2, what="gunicorn to answer /api/health/")
        try:
            yield port
        finally:
            procs[0].send_signal(signal.SIGTERM)
            procs[0].wait(timeout=30)


class Client:
    """One keep-alive HTTP connection to the benchmark's server."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.headers = {
            "Authorization": f"Token {token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=body, headers=self.headers)
                response = self.conn.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, ConnectionError, http.client.BadStatusLine):
                # The server closed an idle keep-alive connection; reconnect once.
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.conn.close()


def http_load(
    port: int, token: str, *, concurrency: int, total: int, seconds: float
) -> dict[str, Any]:
    """POST ``total`` jobs from ``concurrency`` keep-alive clients (or stop at ``seconds``)."""
    counter = itertools.count()
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client_loop() -> None:
        client = Client(port, token)
        mine: list[float] = []
        codes: Counter[int] = Counter()
        try:
            while (index := next(counter)) < total and time.perf_counter() < deadline:
                body = json.dumps({"type": JOB_TYPE, "payload": {"n": index}}).encode()
                start = time.perf_counter()
                code, _ = client.request("POST", "/api/jobs/", body)
                mine.append(time.perf_counter() - start)
                codes[code] += 1
        finally:
            client.close()
            with lock:
                latencies.extend(mine)
                statuses.update(codes)

    threads = [threading.Thread(target=client_loop) for _ in range(concurrency)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    return {
        "concurrency": concurrency,
        "requests": len(latencies),
        "seconds": round(wall, 2),
        "requests_per_second": round(len(latencies) / wall, 1),
        "p50_ms": ms(percentile(latencies, 50)),
        "p99_ms": ms(percentile(latencies, 99)),
        "max_ms": ms(max(latencies)),
        "status_codes": dict(statuses),
        "load_average": load_average(),
    }


def endpoint_latency(port: int, token: str, path: str, *, count: int) -> dict[str, Any]:
    client = Client(port, token)
    latencies = []
    try:
        client.request("GET", path)  # warm the connection and the worker
        for _ in range(count):
            start = time.perf_counter()
            code, _ = client.request("GET", path)
            latencies.append(time.perf_counter() - start)
            if code != 200:
                raise RuntimeError(f"GET {path} answered {code}")
    finally:
        client.close()
    return {
        "path": path,
        "requests": count,
        "p50_ms": ms(percentile(latencies, 50)),
        "p99_ms": ms(percentile(latencies, 99)),
    }


@contextmanager
def forced_orm_path(enabled: bool) -> Iterator[None]:
    """Inside this process only: make the services take their ORM path on PostgreSQL."""
    from jobs import services

    original = services._on_postgres
    if enabled:
        services._on_postgres = lambda: False
    try:
        yield
    finally:
        services._on_postgres = original


def create_in_process(count: int, *, orm_path: bool) -> dict[str, Any]:
    from jobs import services

    latencies = []
    with forced_orm_path(orm_path):
        services.create_job(type=JOB_TYPE)  # connection and warm-up
        began = time.perf_counter()
        for index in range(count):
            start = time.perf_counter()
            services.create_job(type=JOB_TYPE, payload={"n": index})
            latencies.append(time.perf_counter() - start)
        wall = time.perf_counter() - began
    return {
        "path": "orm" if orm_path else "cte",
        "calls": count,
        "calls_per_second": round(count / wall, 1),
        "p50_ms": ms(percentile(latencies, 50)),
        "p99_ms": ms(percentile(latencies, 99)),
    }


# (label, file suffix, function name) of the parts of a POST /api/jobs/ worth naming.
_PROFILE_PARTS = [
    ("create_job (service + SQL)", "jobs/services.py", "create_job"),
    ("token authentication (1 query)", "rest_framework/authentication.py", "authenticate"),
    ("request validation (is_valid)", "rest_framework/serializers.py", "is_valid"),
    ("response serializer (.data)", "rest_framework/serializers.py", "data"),
]


def profile_api(token: str, count: int) -> dict[str, Any]:
    """Where one ``POST /api/jobs/`` spends its time: cProfile over in-process requests.

    Django's test client runs the same middleware and view without the HTTP server; the
    connection is kept between requests, as in the ``CONN_MAX_AGE=60`` server. Profiling
    inflates Python time relative to database waits; read the shares, not the totals.
    """
    import cProfile
    import pstats

    from django.db import connection
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Token {token}", HTTP_HOST="127.0.0.1")
    body = json.dumps({"type": JOB_TYPE, "payload": {"n": 1}})
    saved = connection.settings_dict["CONN_MAX_AGE"]
    connection.settings_dict["CONN_MAX_AGE"] = 60
    try:
        for _ in range(20):
            client.post("/api/jobs/", body, content_type="application/json")
        began = time.perf_counter()
        for _ in range(count):
            client.post("/api/jobs/", body, content_type="application/json")
        plain = (time.perf_counter() - began) / count
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(count):
            client.post("/api/jobs/", body, content_type="application/json")
        profiler.disable()
    finally:
        connection.settings_dict["CONN_MAX_AGE"] = saved
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = max(
        (ct for (file, _, name), (_, _, _, ct, _) in stats.items() if name == "get_response"),
        default=math.nan,
    )
    waits = sum(
        tt for (file, _, name), (_, _, tt, _, _) in stats.items() if name in {"wait", "wait_c"}
    )
    parts = {}
    for label, suffix, function in _PROFILE_PARTS:
        parts[label] = max(
            (
                ct
                for (file, _, name), (_, _, _, ct, _) in stats.items()
                if name == function and file.endswith(suffix)
            ),
            default=0.0,
        )
    shares = {label: round(value / total * 100, 1) for label, value in parts.items()}
    shares["everything else (middleware, DRF dispatch, rendering)"] = round(
        100 - sum(shares.values()), 1
    )
    return {
        "requests": count,
        "ms_per_request_unprofiled": ms(plain),
        "ms_per_request_profiled": ms(total / count),
        "database_wait_share": round(waits / total * 100, 1),
        "shares_percent": shares,
    }


def api_token() -> str:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    user, _ = get_user_model().objects.get_or_create(username="bench")
    token, _ = Token.objects.get_or_create(user=user)
    return token.key


# --- 4. Scale ---------------------------------------------------------------------------


CLAIM_WARMUP = 50


def claim_latency(count: int) -> dict[str, Any]:
    """Claim (timed) then complete (untimed) ``count`` jobs, one at a time, in-process.

    The first ``CLAIM_WARMUP`` claims are not timed (cold caches after a bulk load).
    """
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
    return {
        "claims": count,
        "p50_ms": ms(percentile(latencies, 50)),
        "p99_ms": ms(percentile(latencies, 99)),
    }


def explain(db: Database, sql: str, params: Any = None, *, rollback: bool = False) -> list[str]:
    """``EXPLAIN (ANALYZE, BUFFERS)`` lines; data-modifying statements are rolled back."""
    with db.conn.transaction(force_rollback=rollback), db.conn.cursor() as cur:
        cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
        return [row[0] for row in cur.fetchall()]


def claim_sql_latency(db: Database, count: int) -> dict[str, Any]:
    """Server-side execution time of the claim statement (EXPLAIN ANALYZE, rolled back).

    Leaves out the commit's WAL flush, the network and Python, which on a shared machine
    carry most of the noise, so it shows what the table's size does to the claim itself.
    """
    from django.utils import timezone

    from jobs import services

    times = []
    for _ in range(count):
        now = timezone.now()
        params = {"now": now, "worker_id": "bench-explain", "locked_until": now, "data": "{}"}
        with db.conn.transaction(force_rollback=True), db.conn.cursor() as cur:
            cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + services._PG_CLAIM, params)
            plan = cur.fetchone()[0]
        times.append(plan[0]["Execution Time"] / 1000)
    return {
        "runs": count,
        "p50_ms": ms(percentile(times, 50)),
        "p99_ms": ms(percentile(times, 99)),
    }


def claim_plan(db: Database) -> dict[str, Any]:
    from django.utils import timezone

    from jobs import services

    now = timezone.now()
    params = {
        "now": now,
        "worker_id": "bench-explain",
        "locked_until": now,
        "data": "{}",
    }
    lines = explain(db, services._PG_CLAIM, params, rollback=True)
    candidate = _node_lines(lines, "candidate")
    key = [
        line.rstrip()
        for line in candidate
        if any(
            word in line
            for word in ("Limit", "LockRows", "Index", "Sort", "Filter", "Rows Removed", "Buffers")
        )
    ]
    execution = next((line.strip() for line in lines if "Execution Time" in line), "")
    return {
        "uses_job_claim_idx": any("job_claim_idx" in line for line in candidate),
        "sorts": any(
            line.strip().startswith("-> Sort") or "Sort Key" in line for line in candidate
        ),
        "key_lines": [*key, execution],
        "plan": lines,
    }


def _node_lines(lines: list[str], cte: str) -> list[str]:
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


def stats_sql() -> str:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from jobs import services

    with CaptureQueriesContext(connection) as queries:
        services.get_job_stats()
    if len(queries.captured_queries) != 1:
        raise RuntimeError(f"get_job_stats ran {len(queries.captured_queries)} queries")
    return queries.captured_queries[0]["sql"]


def timed_call(fn: Callable[[], Any], count: int) -> dict[str, Any]:
    latencies = []
    fn()
    for _ in range(count):
        start = time.perf_counter()
        fn()
        latencies.append(time.perf_counter() - start)
    return {
        "calls": count,
        "p50_ms": ms(percentile(latencies, 50)),
        "p99_ms": ms(percentile(latencies, 99)),
    }


def plan_summary(lines: list[str]) -> list[str]:
    keep = ("Scan", "Aggregate", "Execution Time", "Workers", "Heap Fetches")
    return [line.rstrip() for line in lines if any(word in line for word in keep)][:12]


def scale_point(
    db: Database, port: int, token: str, args: argparse.Namespace, *, finished: int
) -> dict[str, Any]:
    from jobs import services

    log(f"scale: measuring with {finished:,} finished jobs")
    queued = db.scalar("SELECT count(*) FROM jobs_job WHERE status = 'queued'")
    point: dict[str, Any] = {"finished_jobs": finished, "queued_jobs": queued}
    point["claim"] = claim_latency(args.claims)
    point["claim_sql"] = claim_sql_latency(db, args.claims)
    point["claim_plan"] = claim_plan(db)
    point["stats_endpoint"] = endpoint_latency(
        port, token, "/api/jobs/stats/", count=args.endpoint_requests
    )
    point["list_endpoint"] = endpoint_latency(
        port, token, "/api/jobs/?limit=25", count=args.endpoint_requests
    )
    point["stats_service"] = timed_call(services.get_job_stats, args.endpoint_requests)
    point["stats_plan"] = plan_summary(explain(db, stats_sql()))
    point["count_plan"] = plan_summary(explain(db, "SELECT COUNT(*) FROM jobs_job"))
    point["load_average"] = load_average()
    return point


def run_scale(
    db: Database, env: dict[str, str], args: argparse.Namespace, token: str, log_dir: Path
) -> dict[str, Any]:
    reset_tables(db)
    from jobs import services  # noqa: F401 (Django is set up by now)

    small = 10_000
    # About 1 k queued jobs left once a claim-latency sample has taken its claims.
    queued_target = 1_000 + args.claims + CLAIM_WARMUP

    def top_up_queue() -> None:
        queued = db.scalar("SELECT count(*) FROM jobs_job WHERE status = 'queued'")
        if queued < queued_target:
            enqueue_bulk(db, queued_target - queued, created_at="now() - interval '1 minute'")

    scale: dict[str, Any] = {}
    with api_server(env, args, conn_max_age=60, log_dir=log_dir) as port:
        started_at = time.monotonic()
        add_finished_jobs(db, 1, small)
        top_up_queue()
        vacuum_analyze(db)
        scale["small_setup_seconds"] = round(time.monotonic() - started_at, 1)
        scale["small"] = scale_point(db, port, token, args, finished=small)

        log(f"scale: generating {args.scale_max - small:,} more finished jobs")
        started_at = time.monotonic()
        add_finished_jobs(db, small + 1, args.scale_max)
        scale["large_insert_seconds"] = round(time.monotonic() - started_at, 1)
        started_at = time.monotonic()
        vacuum_analyze(db)
        scale["large_vacuum_seconds"] = round(time.monotonic() - started_at, 1)
        top_up_queue()
        scale["large"] = scale_point(db, port, token, args, finished=args.scale_max)

        log(f"scale: adding a backlog of {args.backlog:,} queued jobs (10 % delayed)")
        queued = db.scalar("SELECT count(*) FROM jobs_job WHERE status = 'queued'")
        extra = args.backlog - queued
        # Three priority levels; every tenth job is delayed an hour (it stays queued but is
        # not yet claimable), so the claim must pass over delayed rows as well.
        enqueue_bulk(
            db,
            extra,
            priority="(ARRAY[10, 50, 90])[1 + g %% 3]",
            available_at=(
                "CASE WHEN g %% 10 = 0 THEN now() + interval '1 hour'"
                " ELSE now() - g * interval '1 millisecond' END"
            ),
            created_at="now() - g * interval '1 millisecond'",
        )
        db.execute("ANALYZE jobs_job")
        backlog: dict[str, Any] = {
            "queued_jobs": db.scalar("SELECT count(*) FROM jobs_job WHERE status = 'queued'"),
            "delayed_jobs": db.scalar(
                "SELECT count(*) FROM jobs_job WHERE status = 'queued' AND available_at > now()"
            ),
        }
        backlog["claim"] = claim_latency(args.claims)
        backlog["claim_sql"] = claim_sql_latency(db, args.claims)
        backlog["claim_plan"] = claim_plan(db)
        backlog["stats_endpoint"] = endpoint_latency(
            port, token, "/api/jobs/stats/", count=args.endpoint_requests
        )
        backlog["load_average"] = load_average()
        scale["backlog"] = backlog
    return scale


# --- Report -----------------------------------------------------------------------------


def fmt(value: Any, spec: str = ",.0f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec)


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f} %"


def render(results: dict[str, Any]) -> str:
    out: list[str] = []
    meta = results["meta"]
    out.append(f"Job Queue benchmark, {meta['started_at']} (took {meta['duration_seconds']:.0f} s)")
    out.append(f"command : {meta['command']}")
    out.append(f"commit  : {meta['commit']}")
    out.append(
        f"machine : {meta['cpus']} CPUs ({meta['cpu_model']}), {meta['memory_gib']} GiB RAM, "
        f"{meta['os']}, Python {meta['python']}"
    )
    pg = meta["postgres"]
    out.append(
        f"postgres: {pg.get('server_version')} at {meta['postgres_host']}, db {meta['database']}; "
        f"shared_buffers={pg.get('shared_buffers')} synchronous_commit="
        f"{pg.get('synchronous_commit')} fsync={pg.get('fsync')} "
        f"autovacuum={pg.get('autovacuum')}"
    )
    out.append(
        f"load    : 1/5/15-min load average {meta['load_start']} at start, "
        f"{meta['load_end']} at end (other work shares this machine)"
    )

    workers = results.get("workers")
    if workers:
        raw = {item["clients"]: item for item in results.get("raw_sql", [])}
        out.append("")
        out.append(
            f"1. Worker throughput: {workers[0]['jobs']:,} {JOB_TYPE} jobs per run, "
            "manage.py run_job_workers, first claim to last completion"
        )
        out.append(
            f"   {'workers':<18}{'path':<7}{'jobs/s':>9}{'raw SQL jobs/s':>16}{'ratio':>8}"
            f"{'commits/job':>13}{'load':>7}"
        )
        for item in workers:
            clients = item["processes"] * item["threads"]
            base = raw.get(clients, {}).get("jobs_per_second", math.nan)
            out.append(
                f"   {item['processes']} proc x {item['threads']} thr{'':<5}{item['path']:<7}"
                f"{fmt(item['jobs_per_second']):>9}{fmt(base):>16}"
                f"{pct(ratio(item['jobs_per_second'], base)):>8}"
                f"{fmt(item['commits_per_job'], '.2f'):>13}{item['load_average'][0]:>7}"
            )
        out.append("   path cte = one SQL statement per transition (PostgreSQL path); orm = the")
        out.append("   ORM path forced on PostgreSQL with --orm-path (what SQLite runs).")
    raw_items = results.get("raw_sql")
    if raw_items:
        out.append("")
        out.append(
            "2. Raw-SQL limit: the same claim + complete statements from pgbench "
            "(C, simple protocol, no framework)"
        )
        out.append(f"   {'clients':<10}{'jobs/s':>9}{'pgbench tps':>14}{'load':>7}")
        for item in raw_items:
            out.append(
                f"   {item['clients']:<10}{fmt(item['jobs_per_second']):>9}"
                f"{fmt(item['pgbench_tps']):>14}{item['load_average'][0]:>7}"
            )

    enqueue = results.get("enqueue")
    if enqueue:
        out.append("")
        out.append(
            f"3. Enqueue: POST /api/jobs/ under gunicorn ({enqueue['server']}), "
            f"concurrency {enqueue['http'][0]['concurrency']}"
        )
        out.append(f"   {'server':<30}{'req/s':>8}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}  codes")
        for item in enqueue["http"]:
            out.append(
                f"   {item['label']:<30}{fmt(item['requests_per_second']):>8}"
                f"{fmt(item['p50_ms'], '.1f'):>9}{fmt(item['p99_ms'], '.1f'):>9}"
                f"{fmt(item['max_ms'], '.1f'):>9}  {item['status_codes']}"
            )
        out.append(f"   {'create_job in-process':<30}{'calls/s':>8}{'p50 ms':>9}{'p99 ms':>9}")
        for item in enqueue["in_process"]:
            out.append(
                f"   {'path ' + item['path']:<30}{fmt(item['calls_per_second']):>8}"
                f"{fmt(item['p50_ms'], '.2f'):>9}{fmt(item['p99_ms'], '.2f'):>9}"
            )

        profile = enqueue.get("profile")
        if profile:
            out.append(
                f"   where a POST's time goes (cProfile, in-process, {profile['requests']} "
                f"requests, {profile['ms_per_request_unprofiled']} ms each unprofiled; "
                f"waiting on PostgreSQL {profile['database_wait_share']} %):"
            )
            for label, share in profile["shares_percent"].items():
                out.append(f"     {share:>5.1f} %  {label}")

    scale = results.get("scale")
    if scale:
        small, large, backlog = scale["small"], scale["large"], scale["backlog"]
        out.append("")
        out.append(
            f"4. Scale: {small['finished_jobs']:,} vs {large['finished_jobs']:,} finished jobs "
            f"(3 events each; {large['finished_jobs']:,} generated in "
            f"{scale['large_insert_seconds']} s + VACUUM ANALYZE {scale['large_vacuum_seconds']} s)"
        )
        out.append(
            f"   {'measure':<34}{fmt(small['finished_jobs']):>10}{fmt(large['finished_jobs']):>12}"
            f"{'ratio':>8}"
        )
        rows = [
            ("claim p50 ms (in-process)", "claim", "p50_ms"),
            ("claim p99 ms (in-process)", "claim", "p99_ms"),
            ("claim SQL p50 ms (server side)", "claim_sql", "p50_ms"),
            ("claim SQL p99 ms (server side)", "claim_sql", "p99_ms"),
            ("GET /api/jobs/stats/ p50 ms", "stats_endpoint", "p50_ms"),
            ("GET /api/jobs/stats/ p99 ms", "stats_endpoint", "p99_ms"),
            ("get_job_stats() p50 ms", "stats_service", "p50_ms"),
            ("GET /api/jobs/?limit=25 p50 ms", "list_endpoint", "p50_ms"),
            ("GET /api/jobs/?limit=25 p99 ms", "list_endpoint", "p99_ms"),
        ]
        for label, section, key in rows:
            a, b = small[section][key], large[section][key]
            out.append(
                f"   {label:<34}{fmt(a, '.2f'):>10}{fmt(b, '.2f'):>12}{fmt(ratio(b, a), '.2f'):>7}x"
            )
        out.append(
            f"   deep backlog: {backlog['queued_jobs']:,} queued ({backlog['delayed_jobs']:,} "
            f"delayed) vs {small['queued_jobs']:,} queued, with {large['finished_jobs']:,} finished"
        )
        for section, label in (("claim", "claim"), ("claim_sql", "claim SQL")):
            for key in ("p50_ms", "p99_ms"):
                a, b = large[section][key], backlog[section][key]
                out.append(
                    f"   {label + ' ' + key.replace('_ms', '') + ' ms':<34}{fmt(a, '.2f'):>10}"
                    f"{fmt(b, '.2f'):>12}{fmt(ratio(b, a), '.2f'):>7}x"
                )
        a, b = large["stats_endpoint"]["p50_ms"], backlog["stats_endpoint"]["p50_ms"]
        out.append(
            f"   {'GET /api/jobs/stats/ p50 ms':<34}{fmt(a, '.2f'):>10}{fmt(b, '.2f'):>12}"
            f"{fmt(ratio(b, a), '.2f'):>7}x"
        )
        for name, point in (("10 k", small), ("large", large), ("backlog", backlog)):
            plan = point["claim_plan"]
            verdict = (
                "walks job_claim_idx in order, no sort"
                if plan["uses_job_claim_idx"] and not plan["sorts"]
                else f"uses_job_claim_idx={plan['uses_job_claim_idx']} sorts={plan['sorts']}"
            )
            out.append(f"   claim plan ({name}): {verdict}")
        for line in backlog["claim_plan"]["key_lines"]:
            out.append(f"     {line.strip()}")
        out.append(f"   stats plan ({fmt(large['finished_jobs'])} finished):")
        for line in large["stats_plan"]:
            out.append(f"     {line.strip()}")
        out.append("   list count plan:")
        for line in large["count_plan"]:
            out.append(f"     {line.strip()}")

    sizes = results.get("sizes")
    if sizes:
        out.append("")
        out.append("5. Sizes")
        for when, items in sizes.items():
            out.append(f"   {when}")
            out.append(
                f"     {'relation':<16}{'rows':>11}{'live (est)':>12}{'dead':>10}{'heap MB':>9}"
                f"{'index MB':>10}{'total MB':>10}"
            )
            for item in items:
                mb = 1024 * 1024
                if item["table"] == "job_claim_idx":
                    out.append(
                        f"     {'job_claim_idx':<16}{'':>53}{item['total_bytes'] / mb:>10.1f}"
                    )
                    continue
                out.append(
                    f"     {item['table']:<16}{item['rows']:>11,}{item['n_live_tup']:>12,}"
                    f"{item['n_dead_tup']:>10,}{item['heap_bytes'] / mb:>9.1f}"
                    f"{item['indexes_bytes'] / mb:>10.1f}{item['total_bytes'] / mb:>10.1f}"
                )

    targets = results.get("targets")
    if targets:
        out.append("")
        out.append("Targets")
        for item in targets:
            mark = {True: "met   ", False: "MISSED", None: "n/a   "}[item["met"]]
            out.append(f"   [{mark}] {item['target']}: {item['measured']}")
    return "\n".join(out)


def evaluate_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    targets: list[dict[str, Any]] = []
    raw = {item["clients"]: item["jobs_per_second"] for item in results.get("raw_sql", [])}
    for item in results.get("workers", []):
        if item["path"] != "cte" or item["threads"] != 4:
            continue
        goal = 0.5 if item["processes"] == 1 else 0.7
        value = ratio(item["jobs_per_second"], raw.get(item["processes"] * item["threads"], 0))
        targets.append(
            {
                "target": f"{item['processes']} proc x 4 thr >= {goal:.0%} of raw SQL",
                "measured": pct(value),
                "met": None if value is None else value >= goal,
            }
        )
    enqueue = results.get("enqueue")
    if enqueue:
        for item in enqueue["http"]:
            met = item["requests_per_second"] >= 500 and item["p99_ms"] < 50
            targets.append(
                {
                    "target": f"API create >= 500 req/s, p99 < 50 ms ({item['label']})",
                    "measured": f"{item['requests_per_second']:.0f} req/s, p99 {item['p99_ms']} ms",
                    "met": met,
                }
            )
    scale = results.get("scale")
    if scale:
        small, large, backlog = scale["small"], scale["large"], scale["backlog"]
        checks = [
            (
                "claim p99 at large within 1.3x of 10 k",
                large["claim"]["p99_ms"],
                small["claim"]["p99_ms"],
                1.3,
            ),
            (
                "stats p50 at large within 1.3x of 10 k",
                large["stats_endpoint"]["p50_ms"],
                small["stats_endpoint"]["p50_ms"],
                1.3,
            ),
            (
                "claim p99 with deep backlog within 2x of 1 k queued",
                backlog["claim"]["p99_ms"],
                large["claim"]["p99_ms"],
                2.0,
            ),
        ]
        for label, value, base, limit in checks:
            r = ratio(value, base)
            targets.append(
                {
                    "target": label,
                    "measured": f"{fmt(r, '.2f')}x",
                    "met": None if r is None else r <= limit,
                }
            )
        stats = large["stats_endpoint"]["p50_ms"]
        targets.append(
            {
                "target": f"stats under 50 ms at {large['finished_jobs']:,} finished",
                "measured": f"{stats} ms (p50)",
                "met": stats < 50,
            }
        )
    return targets


# --- Main -------------------------------------------------------------------------------


def machine_meta(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
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
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO_DIR,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO_DIR,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        if dirty:
            commit += " (with uncommitted changes)"
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {
        "started_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python -m bench.run " + " ".join(sys.argv[1:]),
        "commit": commit,
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model,
        "memory_gib": memory_gib,
        "os": platform.platform(terse=True),
        "python": platform.python_version(),
        "postgres_host": f"{env['POSTGRES_HOST']}:{env['POSTGRES_PORT']}",
        "database": args.db,
        "load_start": load_average(),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2000, help="jobs per worker run (default 2000)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="rounds of each raw-SQL/worker pair; the best round is reported (default 1)",
    )
    parser.add_argument(
        "--orm-path",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run the workers and create_job with the ORM path forced (default: on)",
    )
    parser.add_argument(
        "--scale-max",
        type=int,
        default=1_000_000,
        help="finished jobs for the large scale point (default 1000000)",
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
    parser.add_argument("--creates", type=int, default=1000, help="in-process create_job calls")
    parser.add_argument("--concurrency", type=int, default=8, help="HTTP clients (default 8)")
    parser.add_argument("--api-workers", type=int, default=2, help="gunicorn workers (2)")
    parser.add_argument("--api-threads", type=int, default=4, help="gunicorn threads each (4)")
    parser.add_argument(
        "--only",
        default="workers,raw,enqueue,scale",
        help="comma-separated phases to run: workers,raw,enqueue,scale (default all)",
    )
    parser.add_argument(
        "--db",
        default=os.environ.get("BENCH_POSTGRES_DB", "job_queue_bench"),
        help="database to create and drop (default job_queue_bench)",
    )
    parser.add_argument("--keep-db", action="store_true", help="leave the database in place")
    parser.add_argument(
        "--output", type=Path, default=RESULTS_DIR / "latest.json", help="JSON results path"
    )
    args = parser.parse_args(argv)
    args.phases = {phase.strip() for phase in args.only.split(",") if phase.strip()}
    if args.scale_max <= 10_000:
        parser.error("--scale-max must be above 10000 (the small scale point)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    began = time.monotonic()
    env = bench_environment(args)
    conninfo = conninfo_from(env)
    log_dir = RESULTS_DIR / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)

    log(f"creating database {args.db} and migrating")
    recreate_database(conninfo, args.db)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=BACKEND_DIR,
        env=env,
        check=True,
    )
    os.environ.clear()
    os.environ.update(env)
    import django

    django.setup()

    db = Database(conninfo)
    results: dict[str, Any] = {"meta": machine_meta(args, env)}
    results["meta"]["postgres"] = server_info(db)
    results["sizes"] = {}
    try:
        # Each worker configuration runs right after its raw-SQL reference at the same
        # concurrency, so the pair sees the same background load on a shared machine.
        run_raw = "raw" in args.phases and pgbench_available()
        if "raw" in args.phases and not run_raw:
            log("pgbench is not installed (apt-get install postgresql-client); no raw-SQL limit")
        if run_raw:
            results["raw_sql"] = []
        if "workers" in args.phases:
            results["workers"] = []
        for processes, threads in WORKER_CONFIGS:
            raw_samples: list[dict[str, Any]] = []
            worker_samples: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
            for round_number in range(1, args.repeat + 1):
                suffix = f" (round {round_number}/{args.repeat})" if args.repeat > 1 else ""
                if run_raw:
                    log(f"raw SQL: pgbench with {processes * threads} clients{suffix}")
                    raw_samples.append(
                        run_pgbench(
                            db, env, clients=processes * threads, jobs=args.jobs, log_dir=log_dir
                        )
                    )
                if "workers" not in args.phases:
                    continue
                for orm in [False, True] if args.orm_path else [False]:
                    path = "orm" if orm else "cte"
                    log(f"workers: {processes} x {threads}, {path} path{suffix}")
                    worker_samples[orm].append(
                        run_workers(
                            db,
                            env,
                            processes=processes,
                            threads=threads,
                            jobs=args.jobs,
                            orm_path=orm,
                            log_dir=log_dir,
                        )
                    )
                    if (processes, threads) == WORKER_CONFIGS[0] and round_number == 1:
                        key = f"after a {processes} x {threads} worker run, {path} path"
                        results["sizes"][key] = table_sizes(db)
            if raw_samples:
                results["raw_sql"].append(best_of(raw_samples))
            for samples in worker_samples.values():
                if samples:
                    results["workers"].append(best_of(samples))
        if "enqueue" in args.phases:
            reset_tables(db)
            token = api_token()
            results["enqueue"] = {
                "server": (
                    f"{args.api_workers} workers x {args.api_threads} threads, gthread, "
                    "DEBUG=false, token auth"
                ),
                "http": [],
                "in_process": [],
            }
            for conn_max_age in (0, 60):
                log(f"enqueue: gunicorn with POSTGRES_CONN_MAX_AGE={conn_max_age}")
                with api_server(env, args, conn_max_age=conn_max_age, log_dir=log_dir) as port:
                    http_load(port, token, concurrency=args.concurrency, total=200, seconds=10)
                    item = http_load(
                        port,
                        token,
                        concurrency=args.concurrency,
                        total=args.requests,
                        seconds=60,
                    )
                item["label"] = f"POSTGRES_CONN_MAX_AGE={conn_max_age}"
                results["enqueue"]["http"].append(item)
            log("enqueue: profiling POST /api/jobs/ in-process")
            results["enqueue"]["profile"] = profile_api(token, 300)
            for orm in [False, True] if args.orm_path else [False]:
                log(f"enqueue: create_job in-process, {'orm' if orm else 'cte'} path")
                results["enqueue"]["in_process"].append(
                    create_in_process(args.creates, orm_path=orm)
                )
        if "scale" in args.phases:
            token = api_token()
            started_at = time.monotonic()
            results["scale"] = run_scale(db, env, args, token, log_dir)
            results["scale"]["seconds"] = round(time.monotonic() - started_at, 1)
            results["sizes"]["after the scale run"] = table_sizes(db)
    finally:
        db.close()
        from django.db import connections

        connections.close_all()
        if not args.keep_db:
            drop_database(conninfo, args.db)

    results["meta"]["load_end"] = load_average()
    results["meta"]["duration_seconds"] = round(time.monotonic() - began, 1)
    results["targets"] = evaluate_targets(results)
    table = render(results)
    print(table)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2, default=str) + "\n")
    args.output.with_suffix(".txt").write_text(table + "\n")
    log(f"wrote {args.output} and {args.output.with_suffix('.txt')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
