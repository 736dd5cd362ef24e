"""Every read the API, the admin, the metrics and the worker share: nothing here writes.

Views parse their input, call one of these, and serialize what it returns. Plain values
and querysets: what is shaped for HTTP (the config document, the session's state) is the
API's (``jobs.api.answers``). This module imports neither the writes (``jobs.services``)
nor the worker nor the REST framework.
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Func, IntegerField, Max, Min, OuterRef, Q, QuerySet, Subquery
from django.db.models.expressions import Combinable
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.utils import timezone

from . import registry, rollups
from .conf import app_settings
from .drivers import get_driver
from .errors import ScheduleNotFound
from .flowcontrol import ScheduleSpec, parse_schedules
from .models import (
    ACTIVITY_EVENT_TYPES,
    ATTEMPT_END_EVENT_TYPES,
    DEFAULT_QUEUE,
    FAILURE_EVENT_TYPES,
    FINISHED_STATUSES,
    Job,
    JobEvent,
    JobEventType,
    JobStatus,
    QueueSettings,
    ScheduleState,
)


def get_job(job_id: UUID | str) -> Job:
    """The job with this id; ``JobNotFound`` otherwise."""
    return Job.objects.by_id(job_id)


# Events that end an attempt with an error; with the claims, they are what a django.tasks
# TaskResult is built from (``jobs.backends`` makes each one a TaskError).
ATTEMPT_ERROR_EVENTS = (
    JobEventType.RETRY_SCHEDULED,
    JobEventType.FAILED,
    JobEventType.CANCELLED,
    JobEventType.TIMEOUT_REQUEUED,
)


def attempt_history(job_id: UUID | str) -> list[JobEvent]:
    """A job's ``claimed`` events and the events that ended an attempt with an error,
    oldest first, in one query (served by ``job_event_job_id_idx``)."""
    return list(
        JobEvent.objects.filter(
            job_id=job_id, type__in=[JobEventType.CLAIMED, *ATTEMPT_ERROR_EVENTS]
        )
        .order_by("id")
        .only("type", "worker_id", "message", "data", "created_at")
    )


def job_with_attempt_history(job_id: UUID | str) -> tuple[Job, list[JobEvent]]:
    """The job and its ``attempt_history``, in two queries; ``JobNotFound`` if unknown."""
    return get_job(job_id), attempt_history(job_id)


def active_queues() -> list[str]:
    """The queues that have queued jobs, in name order (what a ``*`` worker serves)."""
    return get_driver().active_queues()


def job_list(
    *,
    status: str | None = None,
    type: str | None = None,
    queue: str | None = None,
    idempotency_key: str | None = None,
    unique_key: str | None = None,
    concurrency_key: str | None = None,
) -> QuerySet[Job]:
    """Jobs newest first; ``status`` and ``queue`` exact, ``type`` a case-insensitive
    substring (the same selection the bulk actions take); ``idempotency_key`` exact, served
    by its unique index."""
    jobs = Job.objects.matching(status=status, type=type, queue=queue)
    if idempotency_key:
        jobs = jobs.filter(idempotency_key=idempotency_key)
    if unique_key:
        jobs = jobs.filter(unique_key=unique_key)
    if concurrency_key:
        jobs = jobs.filter(concurrency_key=concurrency_key)
    return jobs.order_by("-created_at", "-id")


def job_timeline(job_id: UUID | str) -> QuerySet[JobEvent]:
    """One job's events, oldest first; ``JobNotFound`` if the job does not exist."""
    job = get_job(job_id)
    return JobEvent.objects.filter(job=job).order_by("id")


def event_feed(*, type: str | None = None, job_id: UUID | None = None) -> QuerySet[JobEvent]:
    """Events of all jobs (the paginator orders them newest first)."""
    events = JobEvent.objects.all()
    if type:
        events = events.filter(type=type)
    if job_id:
        events = events.filter(job_id=job_id)
    return events


def job_stats(*, now: datetime | None = None) -> dict[str, Any]:
    """Queue counts: total, per status, overdue leases, pending retries, backlog age, and
    the queues that have queued jobs.

    Queued and running counts (and everything derived from them) are always exact: they
    read only the live rows, through the status index. Finished counts and the total are
    exact below ``JOB_STATS_EXACT_MAX_ROWS`` rows; above it, where counting would scan the
    table on every poll, they are estimated from PostgreSQL's planner statistics and
    ``estimated`` says so. One query (plus, on PostgreSQL, the table estimate), and the
    queue names (on PostgreSQL a loose index scan: one probe per queue).
    """
    now = timezone.now() if now is None else now
    live = Q(status__in=[JobStatus.QUEUED, JobStatus.RUNNING])
    aggregates = {
        JobStatus.QUEUED.value: Count("pk", filter=Q(status=JobStatus.QUEUED)),
        JobStatus.RUNNING.value: Count("pk", filter=Q(status=JobStatus.RUNNING)),
        "overdue_running": Count("pk", filter=Q(status=JobStatus.RUNNING, locked_until__lt=now)),
        "retries_pending": Count("pk", filter=Q(status=JobStatus.QUEUED, attempts__gt=0)),
        "oldest_queued_at": Min("created_at", filter=Q(status=JobStatus.QUEUED)),
        "oldest_due_at": Min(
            "available_at", filter=Q(status=JobStatus.QUEUED, available_at__lte=now)
        ),
    }
    estimate = get_driver().status_estimate()
    estimated = estimate is not None and estimate.rows > app_settings.JOB_STATS_EXACT_MAX_ROWS
    if estimated:
        assert estimate is not None
        row = Job.objects.filter(live).aggregate(**aggregates)
        finished_rows = max(estimate.rows - row["queued"] - row["running"], 0)
        shares = {status: estimate.frequencies.get(status, 0.0) for status in FINISHED_STATUSES}
        whole = sum(shares.values()) or 1.0
        for status in FINISHED_STATUSES:
            row[status.value] = round(finished_rows * shares[status] / whole)
    else:
        finished = {
            status.value: Count("pk", filter=Q(status=status)) for status in FINISHED_STATUSES
        }
        row = Job.objects.aggregate(**aggregates, **finished)
    by_status = {status.value: row[status.value] for status in JobStatus}
    return {
        "total": sum(by_status.values()),
        "by_status": by_status,
        "overdue_running": row["overdue_running"],
        "retries_pending": row["retries_pending"],
        "oldest_queued_at": row["oldest_queued_at"],
        "oldest_due_at": row["oldest_due_at"],
        "estimated": estimated,
        "queues": active_queues(),
    }


def cached_job_stats() -> dict[str, Any]:
    """``job_stats``, computed at most once per ``JOB_STATS_CACHE_SECONDS`` per cache: N
    dashboards polling cost the database one stats query per interval, not N."""
    ttl = app_settings.JOB_STATS_CACHE_SECONDS
    if not ttl:
        return job_stats()
    stats: dict[str, Any] | None = cache.get(STATS_CACHE_KEY)
    if stats is None:
        # One thread computes; the others that missed with it wait and read its result
        # (without this, every request arriving as the entry expires runs the query).
        with _STATS_LOCK:
            stats = cache.get(STATS_CACHE_KEY)
            if stats is None:
                stats = job_stats()
                cache.set(STATS_CACHE_KEY, stats, ttl)
    return stats


STATS_CACHE_KEY = "jobs:job_stats"
_STATS_LOCK = threading.Lock()


def live_jobs(*, now: datetime | None = None) -> list[dict[str, Any]]:
    """Queued and running jobs per (status, queue, type), exact: their count, the oldest
    due ``available_at`` (queued) and how many hold an expired lease (running). One query
    over the live rows only (the status index), however large the history."""
    now = timezone.now() if now is None else now
    return [
        dict(row)
        for row in Job.objects.filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING])
        .values("status", "queue", "type")
        .annotate(
            jobs=Count("pk"),
            oldest_due_at=Min(
                "available_at", filter=Q(status=JobStatus.QUEUED, available_at__lte=now)
            ),
            overdue=Count("pk", filter=Q(status=JobStatus.RUNNING, locked_until__lt=now)),
        )
        .order_by("status", "queue", "type")
    ]


class EpochSeconds(Func):
    """Whole seconds since the Unix epoch of a datetime column, floored."""

    output_field = IntegerField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(
            compiler, connection, template="FLOOR(EXTRACT(EPOCH FROM %(expressions)s))::bigint"
        )

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        # SQLite stores UTC text "YYYY-MM-DD HH:MM:SS.ffffff"; the fraction is cut off
        # because strftime would round it to milliseconds (and 59.9999 up a second).
        return self.as_sql(
            compiler,
            connection,
            template="CAST(strftime('%%%%s', substr(%(expressions)s, 1, 19)) AS INTEGER)",
        )


# The events that finish a job (until a manual retry): what the throughput chart counts.
FINISHED_EVENT_TYPES = (JobEventType.SUCCEEDED, JobEventType.FAILED, JobEventType.CANCELLED)


def throughput(
    *, now: datetime | None = None, minutes: int = 15, bucket_seconds: int = 60
) -> dict[str, Any]:
    """Finished attempts per time bucket over the last ``minutes``, oldest bucket first.

    Buckets are ``bucket_seconds`` wide and aligned to multiples of ``bucket_seconds``
    since the Unix epoch, so they stay put between polls; there are
    ``ceil(minutes * 60 / bucket_seconds)`` of them and the newest one contains ``now``
    (it is partial). Each counts the ``succeeded``, ``failed`` and ``cancelled`` events
    created in it, zero when there were none. One query, grouped per bucket in the
    database; the ``created_at`` range is served by ``jobs_jobevent_created_at_idx``.
    """
    now = timezone.now() if now is None else now
    count = -(-minutes * 60 // bucket_seconds)
    last_start = int(now.timestamp()) // bucket_seconds * bucket_seconds
    first_start = last_start - (count - 1) * bucket_seconds
    start = datetime.fromtimestamp(first_start, tz=UTC)
    # Bucket bounds are whole seconds, so flooring an event's time never crosses one.
    bucket: Combinable = (EpochSeconds("created_at") - first_start) / bucket_seconds
    rows = (
        JobEvent.objects.filter(
            type__in=FINISHED_EVENT_TYPES,
            created_at__gte=start,
            created_at__lte=now,
        )
        .annotate(bucket=bucket)
        .values("bucket", "type")
        .annotate(total=Count("pk"))
        .order_by()
    )
    buckets = [
        {
            "start": datetime.fromtimestamp(first_start + index * bucket_seconds, tz=UTC),
            **{event_type.value: 0 for event_type in FINISHED_EVENT_TYPES},
        }
        for index in range(count)
    ]
    for row in rows:
        buckets[int(row["bucket"])][row["type"]] = row["total"]
    return {"bucket_seconds": bucket_seconds, "start": start, "end": now, "buckets": buckets}


# --- Job types and workers ------------------------------------------------------------

# Ended attempts per type that the run time and queue wait percentiles are taken over.
TYPE_SAMPLE_SIZE = 1000
# Points of a type's failure sparkline, at most (whole minutes each).
SPARKLINE_POINTS = 60
LAST_ERROR_MAX_CHARS = 1000


def _window(now: datetime, minutes: int) -> tuple[int, datetime]:
    """The first epoch minute of a window of ``minutes`` whole minutes ending with the one
    that holds ``now`` (partial), and that minute's start."""
    first = int(now.timestamp()) // 60 - (minutes - 1)
    return first, rollups.minute_start(first)


def _activity_by_type(start: datetime, end: datetime) -> rollups.MinuteRows:
    rows: rollups.MinuteRows = defaultdict(list)
    for row in (
        JobEvent.objects.filter(
            type__in=ACTIVITY_EVENT_TYPES, created_at__gte=start, created_at__lte=end
        )
        .annotate(minute=EpochSeconds("created_at") / 60)
        .values("minute", "job_type", "type")
        .annotate(events=Count("*"))  # count(*): the covering index answers it alone
        .order_by()
    ):
        rows[row["minute"]].append((row["job_type"], row["type"], row["events"]))
    return rows


def type_health(*, minutes: int = 60, now: datetime | None = None) -> dict[str, Any]:
    """Per job type over the last ``minutes`` whole minutes (the newest partial): events
    by outcome, failure rate, run time and queue wait percentiles, last error, and failures
    per sparkline bucket. Registered types are listed even without activity.

    Counts are exact, from per-minute rollups of ``job_event_activity_idx`` (settled
    minutes cached, see ``jobs.rollups``). Percentiles are nearest-rank over each type's
    newest ``TYPE_SAMPLE_SIZE`` ended attempts in the window (``sample_size`` says how many).
    At most two queries however many types: the unsettled minutes' rollup and the samples.
    """
    now = timezone.now() if now is None else now
    first, start = _window(now, minutes)
    per_minute = rollups.per_minute("types", first=first, now=now, compute=_activity_by_type)
    bucket_minutes = -(-minutes // SPARKLINE_POINTS)
    points = -(-minutes // bucket_minutes)
    counts: dict[str, dict[str, int]] = {}
    failures: dict[str, list[int]] = {}
    for minute, rows in per_minute.items():
        for job_type, event_type, events in rows:
            if job_type is None:  # written before events carried their job's type
                continue
            by_type = counts.setdefault(job_type, dict.fromkeys(ACTIVITY_EVENT_TYPES, 0))
            by_type[event_type] += events
            if event_type in FAILURE_EVENT_TYPES:
                series = failures.setdefault(job_type, [0] * points)
                series[(minute - first) // bucket_minutes] += events
    registered = set(registry.registered_types())
    names = sorted(registered | set(counts))
    samples = {
        sample.job_type: sample
        for sample in get_driver().type_samples(names, start=start, end=now, size=TYPE_SAMPLE_SIZE)
    }
    types = []
    for name in names:
        by_type = counts.get(name, dict.fromkeys(ACTIVITY_EVENT_TYPES, 0))
        failed = sum(by_type[event_type] for event_type in FAILURE_EVENT_TYPES)
        ended = failed + by_type[JobEventType.SUCCEEDED]
        sample = samples[name]
        types.append(
            {
                "type": name,
                "registered": name in registered,
                "counts": {str(key): value for key, value in by_type.items()},
                "attempts": ended,
                "failure_rate": round(failed / ended, 4) if ended else None,
                "sample_size": sample.attempts,
                "run_ms": {"p50": sample.run_p50_ms, "p95": sample.run_p95_ms},
                "wait_ms": {"p50": sample.wait_p50_ms, "p95": sample.wait_p95_ms},
                "last_error": None
                if sample.last_error is None
                else {
                    "message": sample.last_error[:LAST_ERROR_MAX_CHARS],
                    "at": sample.last_error_at,
                    "job_id": sample.last_error_job_id,
                },
                "failures": failures.get(name, [0] * points),
            }
        )
    return {
        "minutes": minutes,
        "start": start,
        "end": now,
        "bucket_seconds": bucket_minutes * 60,
        "sample_size_max": TYPE_SAMPLE_SIZE,
        "types": types,
    }


# hostname:pid:thread-N:random, as jobs.worker.make_worker_id builds it.
WORKER_ID = re.compile(r"^(?P<host>.+):(?P<pid>\d+):thread-(?P<thread>\d+):[0-9a-f]+$")


def _activity_by_worker(start: datetime, end: datetime) -> rollups.MinuteRows:
    rows: rollups.MinuteRows = defaultdict(list)
    for row in (
        JobEvent.objects.filter(
            type__in=ACTIVITY_EVENT_TYPES,
            created_at__gte=start,
            created_at__lte=end,
            worker_id__isnull=False,
        )
        .annotate(minute=EpochSeconds("created_at") / 60)
        .values("minute", "worker_id")
        .annotate(
            finished=Count("type", filter=Q(type__in=ATTEMPT_END_EVENT_TYPES)),
            last_at=Max("created_at"),
        )
        .order_by()
    ):
        rows[row["minute"]].append((row["worker_id"], row["finished"], row["last_at"]))
    return rows


def worker_activity(*, minutes: int = 60, now: datetime | None = None) -> dict[str, Any]:
    """The worker threads seen in the last ``minutes`` whole minutes, grouped by process.

    A thread is seen by the claims and attempt endings it wrote in the window (counted as
    ``finished``; the maintenance thread, thread 0, writes lease-expiry endings) and by the
    running job it holds. The heartbeat renews a running job's lease every lease/3 without
    an event, so a busy thread was last seen at ``locked_until - lease``. An idle thread
    writes nothing and is listed while its last event is in the window. Two queries however
    many workers: running jobs (with their claims) and the unsettled minutes' rollup.
    """
    now = timezone.now() if now is None else now
    first, start = _window(now, minutes)
    workers: dict[str, dict[str, Any]] = {}

    def worker(worker_id: str) -> dict[str, Any]:
        if worker_id not in workers:
            match = WORKER_ID.match(worker_id)
            thread = int(match["thread"]) if match else None
            workers[worker_id] = {
                "worker_id": worker_id,
                "host": match["host"] if match else None,
                "pid": int(match["pid"]) if match else None,
                "thread": thread,
                "process": f"{match['host']}:{match['pid']}" if match else worker_id,
                "role": "maintenance" if thread == 0 else "worker",
                "current_job": None,
                "finished": 0,
                "last_seen": None,
            }
        return workers[worker_id]

    def seen(entry: dict[str, Any], at: datetime) -> None:
        if entry["last_seen"] is None or at > entry["last_seen"]:
            entry["last_seen"] = at

    for rows in rollups.per_minute(
        "workers", first=first, now=now, compute=_activity_by_worker
    ).values():
        for worker_id, finished, last_at in rows:
            entry = worker(worker_id)
            entry["finished"] += finished
            seen(entry, last_at)
    claims = JobEvent.objects.filter(
        job_id=OuterRef("pk"), type=JobEventType.CLAIMED, attempt=OuterRef("attempts")
    ).order_by("-id")
    lease = app_settings.JOB_WORKER_LEASE_SECONDS
    # A running job always has locked_by and locked_until (job_status_valid_shape).
    running: list[dict[str, Any]] = [
        dict(row)
        for row in Job.objects.filter(status=JobStatus.RUNNING).values(
            "id",
            "type",
            "queue",
            "attempts",
            "locked_by",
            "locked_until",
            claimed_at=Subquery(claims.values("created_at")[:1]),
            lease_seconds=Subquery(
                claims.values(held=Cast(KeyTextTransform("lease_seconds", "data"), IntegerField()))[
                    :1
                ]
            ),
        )
    ]
    for job in running:
        entry = worker(job["locked_by"])
        held = job["lease_seconds"] if isinstance(job["lease_seconds"], int) else lease
        renewed = job["locked_until"] - timedelta(seconds=held)
        seen(entry, max(renewed, job["claimed_at"] or renewed))
        entry["current_job"] = {
            "id": job["id"],
            "type": job["type"],
            "queue": job["queue"],
            "attempt": job["attempts"],
            "since": job["claimed_at"],
            "locked_until": job["locked_until"],
            "lease_overdue": job["locked_until"] < now,
        }
    processes: dict[str, dict[str, Any]] = {}
    for entry in sorted(workers.values(), key=lambda w: (w["thread"] is None, w["thread"] or 0)):
        process = processes.setdefault(
            entry["process"],
            {
                "process": entry["process"],
                "host": entry["host"],
                "pid": entry["pid"],
                "last_seen": entry["last_seen"],
                "running": 0,
                "finished": 0,
                "workers": [],
            },
        )
        process["workers"].append(entry)
        process["running"] += entry["current_job"] is not None
        process["finished"] += entry["finished"]
        process["last_seen"] = max(process["last_seen"], entry["last_seen"])
    return {
        "minutes": minutes,
        "start": start,
        "end": now,
        "processes": sorted(
            processes.values(), key=lambda p: (p["last_seen"], p["process"]), reverse=True
        ),
    }


# --- Flow control (issue 24) ------------------------------------------------------------


def _queue_document(
    name: str, row: QueueSettings | None, counts: dict[str, int], oldest: datetime | None
) -> dict[str, Any]:
    running = counts.get(JobStatus.RUNNING, 0)
    limit = row.concurrency_limit if row is not None else None
    return {
        "name": name,
        "paused": row is not None and row.paused_at is not None,
        "paused_at": row.paused_at if row is not None else None,
        "counts": {status: counts.get(status, 0) for status in JobStatus.values},
        "concurrency_limit": limit,
        "rate_limit": row.rate_limit if row is not None else None,
        "rate_period_seconds": row.rate_period_seconds if row is not None else None,
        "running": running,
        "saturation": None if not limit else round(running / limit, 4),
        "oldest_queued_at": oldest,
    }


def queue_list(names: list[str] | None = None) -> list[dict[str, Any]]:
    """Every known queue (it has jobs, a settings row, or is the default or a configured
    one), by name: counts by status, pause, limits and how full the concurrency limit is.
    With ``names``, just those."""
    by_queue: dict[str, dict[str, int]] = defaultdict(dict)
    jobs = Job.objects.all() if names is None else Job.objects.filter(queue__in=names)
    for queue, status, count in jobs.values_list("queue", "status").annotate(n=Count("id")):
        by_queue[queue][status] = count
    oldest = dict(
        jobs.filter(status=JobStatus.QUEUED)
        .values_list("queue")
        .annotate(oldest=Min("created_at"))
        .values_list("queue", "oldest")
    )
    rows = (
        QueueSettings.objects.all()
        if names is None
        else QueueSettings.objects.filter(name__in=names)
    )
    settings_rows = {row.name: row for row in rows}
    if names is None:
        known = {DEFAULT_QUEUE, *by_queue, *settings_rows}
        known.update(q for q in app_settings.JOB_WORKER_QUEUES if q != "*")
    else:
        known = set(names)
    return [
        _queue_document(name, settings_rows.get(name), by_queue.get(name, {}), oldest.get(name))
        for name in sorted(known)
    ]


def queue_detail(name: str) -> dict[str, Any]:
    """``queue_list``'s entry for one queue (any name: a queue exists by being named)."""
    return queue_list([name])[0]


def configured_schedules() -> dict[str, ScheduleSpec]:
    """``JOB_SCHEDULES`` validated, by name."""
    return parse_schedules(
        app_settings.JOB_SCHEDULES, default_timezone=str(settings.TIME_ZONE or "UTC")
    )


def _schedule_document(
    spec: ScheduleSpec, row: ScheduleState | None, last_job: Job | None, now: datetime
) -> dict[str, Any]:
    paused = row is not None and row.paused_at is not None
    start = now if row is None else max(row.last_tick_at, now)
    return {
        "name": spec.name,
        "target": spec.target,
        "kind": spec.kind,
        "cron": spec.cron,
        "interval_seconds": spec.interval_seconds,
        "timezone": spec.timezone,
        "queue": spec.queue,
        "priority": spec.priority,
        "missed": spec.missed,
        "paused": paused,
        "paused_at": row.paused_at if row is not None else None,
        "next_run_at": None if paused else spec.next_tick(start - timedelta(microseconds=1)),
        "last_run_at": row.last_enqueued_tick_at if row is not None else None,
        "last_job": None
        if last_job is None
        else {"id": last_job.id, "status": last_job.status, "created_at": last_job.created_at},
    }


def schedule_list(names: list[str] | None = None) -> list[dict[str, Any]]:
    """Every schedule of ``JOB_SCHEDULES``, by name: its definition, whether it is paused,
    its next tick, the last tick enqueued and its last job with that job's status."""
    specs = configured_schedules()
    if names is not None:
        specs = {name: specs[name] for name in names if name in specs}
    rows = {row.name: row for row in ScheduleState.objects.filter(name__in=list(specs))}
    job_ids = [row.last_job_id for row in rows.values() if row.last_job_id is not None]
    jobs = {job.id: job for job in Job.objects.filter(pk__in=job_ids).only("status", "created_at")}
    now = timezone.now()
    documents = []
    for name, spec in specs.items():
        row = rows.get(name)
        last_job = None if row is None or row.last_job_id is None else jobs.get(row.last_job_id)
        documents.append(_schedule_document(spec, row, last_job, now))
    return documents


def schedule_detail(name: str) -> dict[str, Any]:
    """One schedule as ``schedule_list`` shows it; ``ScheduleNotFound`` if not declared."""
    found = schedule_list([name])
    if not found:
        raise ScheduleNotFound(name)
    return found[0]


def schedule_lag_seconds(now: datetime | None = None) -> dict[str, float]:
    """Per unpaused schedule: now minus its oldest due tick not yet looked at (0 when up
    to date), for the metrics."""
    now = timezone.now() if now is None else now
    specs = configured_schedules()
    rows = {row.name: row for row in ScheduleState.objects.filter(name__in=list(specs))}
    lag = {}
    for name, spec in specs.items():
        row = rows.get(name)
        if row is None or row.paused_at is not None:
            lag[name] = 0.0
            continue
        due = spec.next_tick(row.last_tick_at)
        lag[name] = max((now - due).total_seconds(), 0.0)
    return lag


def queue_controls() -> list[QueueSettings]:
    """The queues that have a settings row (a pause or a limit, or had one), by name."""
    return list(QueueSettings.objects.order_by("name"))
