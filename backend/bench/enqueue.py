"""Enqueue: how fast jobs go in, through the API and through the service.

* ``POST /api/jobs/`` under gunicorn (``bench.server``) from ``concurrency`` keep-alive
  clients, once with ``POSTGRES_CONN_MAX_AGE=0`` (a connection per request, the default)
  and once with ``60``; each run is preceded by 200 untimed requests.
* Where one POST's time goes: cProfile over in-process requests through Django's test
  client (same middleware and view, no HTTP server).
* ``services.create_job`` called in a loop in this process, on the PostgreSQL driver and,
  with ``--orm-path``, on the ORM driver (``jobs.drivers.use_driver``).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from .database import Database, reset_tables
from .environment import PATHS
from .figures import load_average, log, ms, p50_p99_ms
from .jobtypes import JOB_TYPE
from .raw_sql import pgbench, pgbench_figure
from .server import ServerShape, api_server, api_token, post_load

# The run with the settings docker-compose.yml gives the API (persistent connections,
# CONN_HEALTH_CHECKS is always on): the one the single-create goal is judged on.
PRODUCTION_CONN_MAX_AGE = 60
PRODUCTION_LABEL = f"POSTGRES_CONN_MAX_AGE={PRODUCTION_CONN_MAX_AGE}"


@dataclass(kw_only=True)
class HttpLoad:
    label: str
    concurrency: int
    requests: int
    seconds: float
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    status_codes: dict[int, int]
    load_average: list[float]


@dataclass(kw_only=True)
class InProcessCreate:
    path: str
    calls: int
    calls_per_second: float
    p50_ms: float
    p99_ms: float


@dataclass(kw_only=True)
class Profile:
    requests: int
    ms_per_request_unprofiled: float
    ms_per_request_profiled: float
    database_wait_share: float
    shares_percent: dict[str, float]


@dataclass(kw_only=True)
class PgbenchEnqueue:
    """The single-row enqueue (a job and its created event, one statement) from pgbench."""

    clients: int
    rows: int
    rows_per_second: float
    latency_ms: float
    load_average: list[float]


@dataclass(kw_only=True)
class EnqueueResult:
    server: str
    http: list[HttpLoad] = field(default_factory=list)
    pgbench: PgbenchEnqueue | None = None
    in_process: list[InProcessCreate] = field(default_factory=list)
    profile: Profile | None = None


def http_load(
    port: int, token: str, *, label: str, concurrency: int, total: int, seconds: float
) -> HttpLoad:
    """POST ``total`` jobs from ``concurrency`` keep-alive clients (or stop at ``seconds``)."""

    def body(index: int) -> bytes:
        return json.dumps({"type": JOB_TYPE, "payload": {"n": index}}).encode()

    load = post_load(
        port, token, "/api/jobs/", body, concurrency=concurrency, total=total, seconds=seconds
    )
    latencies, wall = load.latencies, load.seconds
    p50, p99 = p50_p99_ms(latencies)
    return HttpLoad(
        label=label,
        concurrency=concurrency,
        requests=len(latencies),
        seconds=round(wall, 2),
        requests_per_second=round(len(latencies) / wall, 1),
        p50_ms=p50,
        p99_ms=p99,
        max_ms=ms(max(latencies)),
        status_codes=dict(load.status_codes),
        load_average=load_average(),
    )


def create_in_process(count: int, *, driver: str) -> InProcessCreate:
    from jobs import services
    from jobs.drivers import OrmDriver, use_driver
    from jobs.drivers.postgres import PostgresDriver

    latencies = []
    with use_driver(OrmDriver() if driver == "orm" else PostgresDriver()):
        services.create_job(type=JOB_TYPE)  # connection and warm-up
        began = time.perf_counter()
        for index in range(count):
            start = time.perf_counter()
            services.create_job(type=JOB_TYPE, payload={"n": index})
            latencies.append(time.perf_counter() - start)
        wall = time.perf_counter() - began
    p50, p99 = p50_p99_ms(latencies)
    return InProcessCreate(
        path=PATHS[driver],
        calls=count,
        calls_per_second=round(count / wall, 1),
        p50_ms=p50,
        p99_ms=p99,
    )


# (label, file suffix, function name) of the parts of a POST /api/jobs/ worth naming.
_PROFILE_PARTS = [
    ("create_job (service + SQL)", "jobs/services.py", "create_job"),
    ("token authentication (1 query)", "rest_framework/authentication.py", "authenticate"),
    ("job permission check (1 query)", "jobs/permissions.py", "has_permission"),
    ("request validation (is_valid)", "rest_framework/serializers.py", "is_valid"),
    ("response serializer (.data)", "rest_framework/serializers.py", "data"),
    ("response (job_representation)", "jobs/serializers.py", "job_representation"),
]


def profile_api(token: str, count: int) -> Profile:
    """Where one ``POST /api/jobs/`` spends its time: cProfile over in-process requests.

    Django's test client runs the same middleware and view without the HTTP server; the
    connection is kept between requests, as in the ``CONN_MAX_AGE=60`` server. Profiling
    inflates Python time relative to database waits; read the shares, not the totals.
    """
    import cProfile
    import pstats

    from django.db import connection
    from django.test import Client as TestClient

    client = TestClient(HTTP_AUTHORIZATION=f"Token {token}", HTTP_HOST="127.0.0.1")
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
    # (file, line, function) -> (primitive calls, calls, own time, cumulative time, callers);
    # the attribute is undocumented and missing from typeshed's stub.
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = max(
        (ct for (_, _, name), (_, _, _, ct, _) in stats.items() if name == "get_response"),
        default=math.nan,
    )
    waits = sum(
        tt for (_, _, name), (_, _, tt, _, _) in stats.items() if name in {"wait", "wait_c"}
    )
    shares = {
        label: round(
            max(
                (
                    ct
                    for (file, _, name), (_, _, _, ct, _) in stats.items()
                    if name == function and file.endswith(suffix)
                ),
                default=0.0,
            )
            / total
            * 100,
            1,
        )
        for label, suffix, function in _PROFILE_PARTS
    }
    shares["everything else (middleware, DRF dispatch, rendering)"] = round(
        100 - sum(shares.values()), 1
    )
    return Profile(
        requests=count,
        ms_per_request_unprofiled=ms(plain),
        ms_per_request_profiled=ms(total / count),
        database_wait_share=round(waits / total * 100, 1),
        shares_percent=shares,
    )


# One job and its created event, as the create statement writes them; pgbench cannot
# build the JSON array (with a fresh uuid) that create_jobs takes, so this is the same
# write spelled for one row.
PGBENCH_ENQUEUE = """\
WITH job AS (
    INSERT INTO jobs_job (id, type, payload, status, priority, available_at, attempts,
        max_attempts, last_error, created_at, updated_at, queue)
    VALUES (gen_random_uuid(), :type, '{"n": 1}', 'queued', 50, now(), 0, 3, '', now(), now(),
        'default')
    RETURNING id, type, created_at
)
INSERT INTO jobs_jobevent (job_id, type, attempt, message, data, created_at, job_type)
SELECT id, 'created', 0, 'Job created', jsonb_build_object('type', type), created_at, type
FROM job
"""


def pgbench_enqueue(
    db: Database, env: dict[str, str], *, clients: int, rows: int, log_dir: Path
) -> PgbenchEnqueue:
    reset_tables(db)
    script = log_dir / "enqueue.pgbench.sql"
    script.write_text(PGBENCH_ENQUEUE)
    output = pgbench(
        env,
        script=script,
        clients=clients,
        transactions=math.ceil(rows / clients),
        protocol="prepared",
        variables={"type": JOB_TYPE},
        log_path=log_dir / f"pgbench-enqueue-c{clients}.log",
        timeout=300,
    )
    written = db.scalar("SELECT count(*) FROM jobs_job")
    reset_tables(db)
    return PgbenchEnqueue(
        clients=clients,
        rows=written,
        rows_per_second=round(pgbench_figure(output, "tps"), 1),
        latency_ms=pgbench_figure(output, "latency average"),
        load_average=load_average(),
    )


def run_enqueue(
    db: Database,
    env: dict[str, str],
    *,
    shape: ServerShape,
    concurrency: int,
    requests: int,
    creates: int,
    drivers: list[str],
    log_dir: Path,
) -> EnqueueResult:
    reset_tables(db)
    token = api_token()
    result = EnqueueResult(server=shape.describe())
    for conn_max_age in (0, PRODUCTION_CONN_MAX_AGE):
        log(f"enqueue: gunicorn with POSTGRES_CONN_MAX_AGE={conn_max_age}")
        label = f"POSTGRES_CONN_MAX_AGE={conn_max_age}"
        with api_server(env, shape, conn_max_age=conn_max_age, log_dir=log_dir) as port:
            http_load(port, token, label=label, concurrency=concurrency, total=200, seconds=10)
            result.http.append(
                http_load(
                    port, token, label=label, concurrency=concurrency, total=requests, seconds=60
                )
            )
    log(f"enqueue: pgbench single-row enqueue, {concurrency} clients")
    result.pgbench = pgbench_enqueue(db, env, clients=concurrency, rows=requests, log_dir=log_dir)
    log("enqueue: profiling POST /api/jobs/ in-process")
    result.profile = profile_api(token, 300)
    for driver in drivers:
        log(f"enqueue: create_job in-process, {driver} driver")
        result.in_process.append(create_in_process(creates, driver=driver))
    return result
