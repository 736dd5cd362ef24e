"""Every read the API, the admin and the dashboard share: nothing here writes.

Views parse their input, call one of these, and serialize what it returns.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from django.core.cache import cache
from django.db.models import Count, Func, IntegerField, Min, Q, QuerySet
from django.db.models.expressions import Combinable
from django.utils import timezone
from rest_framework.permissions import AllowAny
from rest_framework.settings import api_settings

from . import handlers
from .conf import app_settings
from .drivers import get_driver
from .errors import JobNotFound
from .models import Job, JobEvent, JobEventType, JobStatus
from .pagination import JobEventCursorPagination, JobPagination, JobTimelinePagination
from .permissions import ADD, CHANGE, VIEW
from .serializers import input_limits


def get_job(job_id: UUID | str) -> Job:
    """The job with this id; ``JobNotFound`` otherwise."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        raise JobNotFound(job_id)
    return job


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
    *, status: str | None = None, type: str | None = None, queue: str | None = None
) -> QuerySet[Job]:
    """Jobs newest first; ``status`` and ``queue`` exact, ``type`` a case-insensitive
    substring (the same selection the bulk actions take)."""
    return Job.objects.matching(status=status, type=type, queue=queue).order_by(
        "-created_at", "-id"
    )


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


FINISHED = [JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED]


def job_stats(*, now: datetime | None = None) -> dict[str, Any]:
    """Queue counts: total, per status, overdue leases, pending retries, backlog age.

    Queued and running counts (and everything derived from them) are always exact: they
    read only the live rows, through the status index. Finished counts and the total are
    exact below ``JOB_STATS_EXACT_MAX_ROWS`` rows; above it, where counting would scan the
    table on every poll, they are estimated from PostgreSQL's planner statistics and
    ``estimated`` says so. One query (plus, on PostgreSQL, the table estimate).
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
        shares = {status: estimate.frequencies.get(status, 0.0) for status in FINISHED}
        whole = sum(shares.values()) or 1.0
        for status in FINISHED:
            row[status.value] = round(finished_rows * shares[status] / whole)
    else:
        finished = {status.value: Count("pk", filter=Q(status=status)) for status in FINISHED}
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
    }


def cached_job_stats() -> dict[str, Any]:
    """``job_stats``, computed at most once per ``JOB_STATS_CACHE_SECONDS`` per cache: N
    dashboards polling cost the database one stats query per interval, not N."""
    ttl = app_settings.JOB_STATS_CACHE_SECONDS
    if not ttl:
        return job_stats()
    stats: dict[str, Any] | None = cache.get(STATS_CACHE_KEY)
    if stats is None:
        stats = job_stats()
        cache.set(STATS_CACHE_KEY, stats, ttl)
    return stats


STATS_CACHE_KEY = "jobs:job_stats"


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


def session_state(user: Any) -> dict[str, Any]:
    """Who the request's user is and which job permissions the API grants them."""
    classes: list[Any] = list(api_settings.DEFAULT_PERMISSION_CLASSES)  # imported classes
    open_api = all(cls is AllowAny for cls in classes)
    signed_in = bool(user and user.is_authenticated)
    return {
        "login_required": not open_api,
        "authenticated": signed_in,
        "username": user.get_username() if signed_in else None,
        "permissions": {
            name: open_api or (signed_in and user.has_perm(perm))
            for name, perm in (("view", VIEW), ("add", ADD), ("change", CHANGE))
        },
    }


def api_config() -> dict[str, Any]:
    """What a client needs to build a create form, explain the worker and size its pages."""
    from .worker import WorkerConfig  # the worker imports this module

    return {
        "job_types": [
            {
                "type": spec.type,
                "description": spec.description,
                "example_payload": spec.example_payload,
            }
            for spec in handlers.handler_specs()
        ],
        "worker": {
            "threads": app_settings.JOB_WORKER_THREADS,
            "poll_interval_ms": app_settings.JOB_WORKER_POLL_INTERVAL_MS,
            "lease_seconds": app_settings.JOB_WORKER_LEASE_SECONDS,
            "cleanup_interval_seconds": app_settings.JOB_WORKER_CLEANUP_INTERVAL_SECONDS,
            "cleanup_batch_size": app_settings.JOB_WORKER_CLEANUP_BATCH_SIZE,
            "backoff_base_seconds": app_settings.JOB_WORKER_BACKOFF_BASE_SECONDS,
            "backoff_max_seconds": app_settings.JOB_WORKER_BACKOFF_MAX_SECONDS,
            "max_attempts_default": app_settings.JOB_WORKER_MAX_ATTEMPTS_DEFAULT,
            "heartbeat_seconds": WorkerConfig.from_settings().heartbeat_interval_seconds,
            "timeout_seconds": app_settings.JOB_WORKER_TIMEOUT_SECONDS,
            "queues": list(app_settings.JOB_WORKER_QUEUES),
        },
        "limits": input_limits(),
        # Read from the paginators the list views use, so the advertised sizes are enforced ones.
        "pagination": {
            "jobs": {
                "default_limit": JobPagination.default_limit,
                "max_limit": JobPagination.max_limit,
            },
            "job_events": {
                "default_limit": JobEventCursorPagination.page_size,
                "max_limit": JobEventCursorPagination.max_page_size,
            },
            "job_timeline": {
                "default_limit": JobTimelinePagination.page_size,
                "max_limit": JobTimelinePagination.max_page_size,
            },
        },
    }
