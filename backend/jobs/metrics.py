"""Prometheus metrics, with the official client (prometheus-client).

Two sources, each on its own endpoint:

* ``GET /metrics`` (the API, ``jobs.api.metrics.MetricsView``): the queue as the database holds it,
  read at scrape time by ``QueueCollector`` under the same rules as ``GET /api/jobs/stats/``:
  live jobs (waiting, queued, running) counted exactly per queue and type through the status index;
  finished jobs per status only, exact up to ``JOB_STATS_EXACT_MAX_ROWS`` and estimated
  from the planner's statistics above (``jobqueue_jobs_finished_estimated`` says which), so
  a scrape never counts a 10-million-row history. Rates of finished work come from the
  workers' counters below, which is what Prometheus is for.
* each worker process (``manage.py run_job_workers`` with ``JOB_WORKER_METRICS_PORT``): its
  attempts by queue, type and outcome, run time and queue wait histograms, database
  errors and busy/idle threads, recorded from ``jobs.signals`` and served by the client's
  HTTP server on a port of its own. One endpoint per process, not the client's
  multiprocess mode: a worker is one process of threads, so nothing needs merging.

Labels are bounded: queue, type, status, outcome, component, state. Never a job or worker id.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from . import selectors, signals
from .drivers import JobRow
from .extras import require
from .models import FINISHED_STATUSES, JobStatus

require("metrics", "Prometheus metrics (jobs.metrics: /metrics, JOB_WORKER_METRICS_PORT)")
from prometheus_client import (  # noqa: E402  (once the extra is known to be there)
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    generate_latest,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily, Metric  # noqa: E402
from prometheus_client.exposition import choose_encoder  # noqa: E402
from prometheus_client.registry import Collector  # noqa: E402

if TYPE_CHECKING:
    from .worker import WorkerRunner

logger = logging.getLogger("jobs.metrics")

PREFIX = "jobqueue"

# --- The queue, from the database (the API's /metrics) ---------------------------------


class QueueCollector(Collector):
    """Reads the jobs table when Prometheus scrapes: two queries (one with the planner's
    table estimate on PostgreSQL), each as cheap as the stats endpoint's."""

    def __init__(self, now: datetime | None = None) -> None:
        self.now = now

    def collect(self) -> Iterator[Metric]:
        now = timezone.now() if self.now is None else self.now
        live = selectors.live_jobs(now=now)
        stats = selectors.cached_job_stats()
        jobs = GaugeMetricFamily(
            f"{PREFIX}_jobs",
            "Waiting, queued and running jobs (exact, from the live rows).",
            labels=["status", "queue", "type"],
        )
        overdue = GaugeMetricFamily(
            f"{PREFIX}_jobs_lease_overdue",
            "Running jobs whose lease has expired: the worker is gone or stuck.",
            labels=["queue", "type"],
        )
        oldest: dict[str, datetime | None] = {}
        for row in live:
            jobs.add_metric([row["status"], row["queue"], row["type"]], row["jobs"])
            if row["status"] == JobStatus.RUNNING:
                overdue.add_metric([row["queue"], row["type"]], row["overdue"])
            due = row["oldest_due_at"]
            current = oldest.get(row["queue"])
            oldest[row["queue"]] = due if current is None or (due and due < current) else current
        yield jobs
        yield overdue
        age = GaugeMetricFamily(
            f"{PREFIX}_queue_oldest_due_age_seconds",
            "Age of the oldest due queued job per queue (0: none due): the backlog's wait.",
            labels=["queue"],
        )
        for queue, due in sorted(oldest.items()):
            age.add_metric([queue], max((now - due).total_seconds(), 0.0) if due else 0.0)
        yield age
        finished = GaugeMetricFamily(
            f"{PREFIX}_jobs_finished",
            "Finished jobs per status, kept in the table (estimated above "
            "JOB_STATS_EXACT_MAX_ROWS rows; see jobqueue_jobs_finished_estimated).",
            labels=["status"],
        )
        for status in FINISHED_STATUSES:
            finished.add_metric([status.value], stats["by_status"][status.value])
        yield finished
        yield GaugeMetricFamily(
            f"{PREFIX}_jobs_finished_estimated",
            "1 when jobqueue_jobs_finished comes from PostgreSQL's planner statistics.",
            value=1 if stats["estimated"] else 0,
        )
        yield from flow_control_metrics(live, now)
        yield from worker_metrics(now)


def worker_metrics(now: datetime) -> Iterator[Metric]:
    """Live worker processes and their serving and abandoned threads, from presence: the
    same facts as the workers page, so an alert needs no worker's own metrics port."""
    processes = selectors.live_workers(minutes=1, now=now)["processes"]
    yield GaugeMetricFamily(
        f"{PREFIX}_workers_live",
        "Worker processes that checked in within their heartbeat interval (0: none serves).",
        value=len(processes),
    )
    threads = GaugeMetricFamily(
        f"{PREFIX}_worker_process_threads",
        "Threads per live worker process: serving, or abandoned (still in a handler whose "
        "attempt timed out).",
        labels=["worker", "state"],
    )
    for process in processes:
        threads.add_metric([process["worker_id"], "serving"], process["threads_live"])
        threads.add_metric([process["worker_id"], "abandoned"], len(process["threads_abandoned"]))
    yield threads


def flow_control_metrics(live: list[dict[str, Any]], now: datetime) -> Iterator[Metric]:
    """Paused queues, concurrency limits and how full they are, schedule lag and failing
    schedules. Queues without a settings row have no pause or limit and are left out."""
    running: dict[str, int] = {}
    for row in live:
        if row["status"] == JobStatus.RUNNING:
            running[row["queue"]] = running.get(row["queue"], 0) + row["jobs"]
    paused = GaugeMetricFamily(
        f"{PREFIX}_queue_paused", "1 while the queue is paused cluster-wide.", labels=["queue"]
    )
    limit = GaugeMetricFamily(
        f"{PREFIX}_queue_concurrency_limit",
        "Most running jobs the queue allows across all workers (queues with a limit).",
        labels=["queue"],
    )
    saturation = GaugeMetricFamily(
        f"{PREFIX}_queue_saturation",
        "Running jobs over the queue's concurrency limit (1: at the limit).",
        labels=["queue"],
    )
    for queue in selectors.queue_controls():
        paused.add_metric([queue.name], 1 if queue.paused_at is not None else 0)
        if queue.concurrency_limit is not None:
            limit.add_metric([queue.name], queue.concurrency_limit)
            saturation.add_metric(
                [queue.name], running.get(queue.name, 0) / queue.concurrency_limit
            )
    yield paused
    yield limit
    yield saturation
    lag = GaugeMetricFamily(
        f"{PREFIX}_schedule_lag_seconds",
        "Now minus the schedule's oldest due tick no worker has enqueued (0: up to date).",
        labels=["schedule"],
    )
    for name, seconds in selectors.schedule_lag_seconds(now).items():
        lag.add_metric([name], seconds)
    yield lag
    failing = GaugeMetricFamily(
        f"{PREFIX}_schedule_failing",
        "1 while the schedule cannot run as declared or its last pass failed.",
        labels=["schedule"],
    )
    for name, is_failing in selectors.failing_schedules().items():
        failing.add_metric([name], 1 if is_failing else 0)
    yield failing


def queue_metrics(accept: str) -> tuple[bytes, str]:
    """The API's /metrics body and its content type: the queue as the database holds it
    now, in the format the client's ``Accept`` header asks for, chosen by the client
    library as its own HTTP server (the workers' endpoint) chooses: OpenMetrics when
    asked for it (Prometheus does), otherwise the classic text format (0.0.4), which
    every scraper, ``curl`` and any ``Accept`` (none, ``*/*``, ``text/plain``) read."""
    encoder, content_type = choose_encoder(accept)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueCollector())
    return encoder(registry), content_type


# --- Each worker process ---------------------------------------------------------------

# Handler run times and queue waits from milliseconds to an hour.
SECONDS_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5),
    *(1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0),
)


class WorkerMetrics:
    """One worker process's metrics in a registry of their own (with the process's CPU
    and memory), fed by ``jobs.signals`` once ``connect()`` is called."""

    def __init__(self, runner: WorkerRunner | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.attempts = Counter(
            f"{PREFIX}_worker_attempts",
            "Attempts this process ended, by outcome: succeeded, retry_scheduled, failed, "
            "timeout, cancelled, snoozed, lease_lost (the lease was taken over) or stale "
            "(a late write refused).",
            ["queue", "type", "outcome"],
            registry=self.registry,
        )
        self.run_time = Histogram(
            f"{PREFIX}_worker_attempt_duration_seconds",
            "Handler run time of each attempt (claim to recorded outcome).",
            ["queue", "type"],
            buckets=SECONDS_BUCKETS,
            registry=self.registry,
        )
        self.queue_wait = Histogram(
            f"{PREFIX}_worker_queue_wait_seconds",
            "Time from a job being due (available_at, or created_at if later) to its claim.",
            ["queue", "type"],
            buckets=SECONDS_BUCKETS,
            registry=self.registry,
        )
        self.database_errors = Counter(
            f"{PREFIX}_worker_database_errors",
            "Database errors the worker recovered from, by component: thread (claim loop), "
            "write (recording an outcome, retried), maintenance, listener.",
            ["component"],
            registry=self.registry,
        )
        ProcessCollector(registry=self.registry)
        if runner is not None:
            self.registry.register(ThreadsCollector(runner))
        self._lock = threading.Lock()
        self.connected = False

    def connect(self) -> None:
        """Record from the worker's signals (in this process) from now on."""
        with self._lock:
            if self.connected:
                return
            signals.attempt_started.connect(self.on_started, weak=False, dispatch_uid=id(self))
            signals.attempt_finished.connect(self.on_finished, weak=False, dispatch_uid=id(self))
            signals.database_error.connect(
                self.on_database_error, weak=False, dispatch_uid=id(self)
            )
            self.connected = True

    def disconnect(self) -> None:
        with self._lock:
            signals.attempt_started.disconnect(dispatch_uid=id(self))
            signals.attempt_finished.disconnect(dispatch_uid=id(self))
            signals.database_error.disconnect(dispatch_uid=id(self))
            self.connected = False

    def on_started(self, sender: Any, *, job: JobRow, **kwargs: Any) -> None:
        # The claim stamped updated_at with its clock; available_at/created_at were set by
        # the same database's writers.
        due = max(job.available_at, job.created_at)
        wait = max((job.updated_at - due).total_seconds(), 0.0)
        self.queue_wait.labels(job.queue, job.type).observe(wait)

    def on_finished(
        self, sender: Any, *, job: JobRow, outcome: str, run_seconds: float, **kwargs: Any
    ) -> None:
        self.attempts.labels(job.queue, job.type, outcome).inc()
        self.run_time.labels(job.queue, job.type).observe(max(run_seconds, 0.0))

    def on_database_error(self, sender: Any, *, component: str, **kwargs: Any) -> None:
        self.database_errors.labels(component).inc()

    def text(self) -> bytes:
        return generate_latest(self.registry)


class ThreadsCollector(Collector):
    """Worker threads by state at scrape time: busy (running an attempt), idle, and stuck
    (abandoned in a timed-out handler, replaced, still not returned)."""

    def __init__(self, runner: WorkerRunner) -> None:
        self.runner = runner

    def collect(self) -> Iterator[Metric]:
        threads = GaugeMetricFamily(
            f"{PREFIX}_worker_threads", "This process's worker threads by state.", labels=["state"]
        )
        abandoned = {t.worker_id for t in self.runner.threads if t.abandoned}
        busy = len(
            [
                a
                for a in self.runner.in_flight.snapshot()
                if a.started is not None and a.worker_id not in abandoned
            ]
        )
        serving = len(self.runner.serving())
        stuck = len([t for t in self.runner.threads if t.abandoned and t.is_alive()])
        threads.add_metric(["busy"], busy)
        threads.add_metric(["idle"], max(serving - busy, 0))
        threads.add_metric(["stuck"], stuck)
        yield threads


def serve_worker_metrics(runner: WorkerRunner, *, address: str, port: int) -> WorkerMetrics:
    """Record this worker process's metrics and serve them on ``address:port`` (the
    client's HTTP server, in a daemon thread; it dies with the process)."""
    metrics = WorkerMetrics(runner)
    metrics.connect()
    start_http_server(port, addr=address, registry=metrics.registry)
    logger.info("action=metrics_listening address=%s port=%d", address, port)
    return metrics
