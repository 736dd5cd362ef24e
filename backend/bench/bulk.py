"""Bulk enqueue (the bulk enqueue goals): ``POST /api/jobs/bulk/`` against its references.

* ``POST /api/jobs/bulk/`` under gunicorn (``CONN_MAX_AGE=60``), batches of ``batch``
  jobs from ``concurrency`` keep-alive clients, after a few untimed batches;
* ``services.create_jobs`` in this process, the same batches one after another: the
  service without HTTP, DRF validation or JSON;
* one ``INSERT … SELECT`` of jobs and their events (``seed.enqueue_bulk``): what
  PostgreSQL itself takes, the ceiling.

* ``JobQueueBackend.enqueue_many`` in this process, the same batches of the no-op
  ``django.tasks`` task (``bench.handlers.noop_task``): the tasks path's validation and
  TaskResults on top of ``services.create_jobs``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from .database import Database, reset_tables
from .figures import load_average, log, p50_p99_ms
from .jobtypes import JOB_TYPE
from .seed import enqueue_bulk
from .server import ServerShape, api_server, api_token, post_load


@dataclass(kw_only=True)
class BulkEnqueue:
    batch: int
    concurrency: int
    http_jobs: int
    http_seconds: float
    http_jobs_per_second: float
    http_p50_ms: float
    http_p99_ms: float
    status_codes: dict[int, int]
    service_jobs: int
    service_jobs_per_second: float
    insert_select_jobs: int
    insert_select_jobs_per_second: float
    tasks_jobs: int
    tasks_jobs_per_second: float
    load_average: list[float]


def _body(start: int, batch: int) -> bytes:
    jobs = [{"type": JOB_TYPE, "payload": {"n": start + i}} for i in range(batch)]
    return json.dumps({"jobs": jobs}).encode()


def run_bulk(
    db: Database,
    env: dict[str, str],
    *,
    shape: ServerShape,
    batch: int = 500,
    batches: int = 60,
    concurrency: int = 4,
    log_dir: Path,
) -> BulkEnqueue:
    from jobs import services
    from jobs.backends import JobQueueBackend

    from .handlers import noop_task

    token = api_token()
    reset_tables(db)
    log(f"bulk: POST /api/jobs/bulk/, {batches} batches of {batch}, {concurrency} clients")
    with api_server(env, shape, conn_max_age=60, log_dir=log_dir) as port:

        def body(index: int) -> bytes:
            return _body(index * batch, batch)

        post_load(port, token, "/api/jobs/bulk/", body, concurrency=concurrency, total=4)
        load = post_load(
            port, token, "/api/jobs/bulk/", body, concurrency=concurrency, total=batches
        )
    if set(load.status_codes) != {201}:
        raise RuntimeError(f"POST /api/jobs/bulk/ answered {dict(load.status_codes)}")
    p50, p99 = p50_p99_ms(load.latencies)
    http_jobs = batch * len(load.latencies)

    reset_tables(db)
    log("bulk: services.create_jobs in-process")
    specs = [services.NewJobSpec(type=JOB_TYPE, payload={"n": i}) for i in range(batch)]
    services.create_jobs(specs)  # warm-up
    service_batches = batches // 2
    began = time.perf_counter()
    for _ in range(service_batches):
        services.create_jobs(specs)
    service_seconds = time.perf_counter() - began

    reset_tables(db)
    insert_jobs = batch * batches
    log(f"bulk: one INSERT ... SELECT of {insert_jobs:,} jobs and events")
    began = time.perf_counter()
    enqueue_bulk(db, insert_jobs)
    insert_seconds = time.perf_counter() - began
    reset_tables(db)

    log("bulk: JobQueueBackend.enqueue_many in-process (django.tasks)")
    calls: list[tuple[tuple[()], dict[str, object]]] = [((), {})] * batch
    backend = noop_task.get_backend()
    if not isinstance(backend, JobQueueBackend):
        raise RuntimeError(f"the default tasks backend is {backend!r}, not JobQueueBackend")
    backend.enqueue_many(noop_task, calls)  # warm-up
    began = time.perf_counter()
    for _ in range(service_batches):
        backend.enqueue_many(noop_task, calls)
    tasks_seconds = time.perf_counter() - began
    reset_tables(db)

    return BulkEnqueue(
        batch=batch,
        concurrency=concurrency,
        http_jobs=http_jobs,
        http_seconds=round(load.seconds, 2),
        http_jobs_per_second=round(http_jobs / load.seconds, 1),
        http_p50_ms=p50,
        http_p99_ms=p99,
        status_codes=dict(load.status_codes),
        service_jobs=batch * service_batches,
        service_jobs_per_second=round(batch * service_batches / service_seconds, 1),
        insert_select_jobs=insert_jobs,
        insert_select_jobs_per_second=round(insert_jobs / insert_seconds, 1),
        tasks_jobs=batch * service_batches,
        tasks_jobs_per_second=round(batch * service_batches / tasks_seconds, 1),
        load_average=load_average(),
    )
