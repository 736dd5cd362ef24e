"""The queue's figures: counts by status (cached for polling dashboards), the live jobs
per queue and type, and the throughput series.

Data access: the ORM for the aggregates over live rows and events, and the database
driver for the planner's estimate of the table (``Driver.status_estimate``) and the
queue names (``Driver.active_queues``).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

from django.core.cache import cache
from django.db.models import Count, Min, Q
from django.db.models.expressions import Combinable
from django.utils import timezone

from ..conf import app_settings
from ..drivers import get_driver
from ..models import FINISHED_STATUSES, Job, JobEvent, JobEventType, JobStatus
from .common import EpochSeconds
from .queues import active_queues

# The live rows, written as an OR of one status each: each arm is read through the partial
# index that holds exactly that status (queued: job_claim_idx, running: job_timeout_idx,
# waiting: job_waiting_idx) and the three are combined as a bitmap. jobs_job_status_idx
# holds finished jobs only (migration 0009), and `status IN ('queued', 'running')` implies
# neither partial index's condition, so it would scan the whole table.
LIVE = Q(status=JobStatus.QUEUED) | Q(status=JobStatus.RUNNING) | Q(status=JobStatus.WAITING)


def job_stats(*, now: datetime | None = None) -> dict[str, Any]:
    """Queue counts: total, per status, overdue leases, pending retries, queued jobs
    scheduled for later apart from those due, backlog age, and the queues that have queued
    jobs.

    Queued, waiting and running counts (and everything derived from them) are always exact: they
    read only the live rows, through their indexes (``LIVE``). Finished counts and the total are
    exact below ``JOB_STATS_EXACT_MAX_ROWS`` rows; above it, where counting would scan the
    table on every poll, they are estimated from PostgreSQL's planner statistics and
    ``estimated`` says so. One query (plus, on PostgreSQL, the table estimate), and the
    queue names (on PostgreSQL a loose index scan: one probe per queue).
    """
    now = timezone.now() if now is None else now
    live = LIVE
    aggregates = {
        JobStatus.QUEUED.value: Count("pk", filter=Q(status=JobStatus.QUEUED)),
        JobStatus.RUNNING.value: Count("pk", filter=Q(status=JobStatus.RUNNING)),
        JobStatus.WAITING.value: Count("pk", filter=Q(status=JobStatus.WAITING)),
        "overdue_running": Count("pk", filter=Q(status=JobStatus.RUNNING, locked_until__lt=now)),
        "retries_pending": Count("pk", filter=Q(status=JobStatus.QUEUED, attempts__gt=0)),
        "scheduled": Count("pk", filter=Q(status=JobStatus.QUEUED, available_at__gt=now)),
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
        live_rows = row["queued"] + row["running"] + row["waiting"]
        finished_rows = max(estimate.rows - live_rows, 0)
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
        "scheduled": row["scheduled"],
        "due": by_status[JobStatus.QUEUED.value] - row["scheduled"],
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
    """Queued, waiting and running jobs per (status, queue, type), exact: their count, the oldest
    due ``available_at`` (queued) and how many hold an expired lease (running). One query
    over the live rows only (``LIVE``), however large the history."""
    now = timezone.now() if now is None else now
    return [
        dict(row)
        for row in Job.objects.filter(LIVE)
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
