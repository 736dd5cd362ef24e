"""Queues: which have queued jobs, and each one's counts, backlog, pause and limits.

Data access: the ORM (``Job`` aggregates and ``QueueSettings`` rows), and the database
driver for the queues that have queued jobs (``Driver.active_queues``: a loose index
scan on PostgreSQL).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Count, Min, Q
from django.utils import timezone

from ..conf import app_settings
from ..drivers import get_driver
from ..models import DEFAULT_QUEUE, Job, JobStatus, QueueSettings


def active_queues() -> list[str]:
    """The queues that have queued jobs, in name order (what a ``*`` worker serves)."""
    return get_driver().active_queues()


def _queue_document(
    name: str, row: QueueSettings | None, counts: dict[str, int], backlog: dict[str, Any]
) -> dict[str, Any]:
    running = counts.get(JobStatus.RUNNING, 0)
    limit = row.concurrency_limit if row is not None else None
    scheduled = backlog.get("scheduled", 0)
    return {
        "name": name,
        "paused": row is not None and row.paused_at is not None,
        "paused_at": row.paused_at if row is not None else None,
        "counts": {status: counts.get(status, 0) for status in JobStatus.values},
        "due": counts.get(JobStatus.QUEUED, 0) - scheduled,
        "scheduled": scheduled,
        "oldest_due_at": backlog.get("oldest_due_at"),
        "concurrency_limit": limit,
        "rate_limit": row.rate_limit if row is not None else None,
        "rate_period_seconds": row.rate_period_seconds if row is not None else None,
        "running": running,
        "saturation": None if not limit else round(running / limit, 4),
        "oldest_queued_at": backlog.get("oldest_queued_at"),
    }


def queue_list(names: list[str] | None = None) -> list[dict[str, Any]]:
    """Every known queue (it has jobs, a settings row, or is the default or a configured
    one), by name: counts by status, its queued jobs split into due and scheduled by
    ``available_at``, its backlog age (``oldest_due_at``, as the stats'), pause, limits and
    how full the concurrency limit is. With ``names``, just those."""
    by_queue: dict[str, dict[str, int]] = defaultdict(dict)
    jobs = Job.objects.all() if names is None else Job.objects.filter(queue__in=names)
    for queue, status, count in jobs.values_list("queue", "status").annotate(n=Count("id")):
        by_queue[queue][status] = count
    now = timezone.now()
    backlog: dict[str, dict[str, Any]] = {
        row["queue"]: dict(row)
        for row in jobs.filter(status=JobStatus.QUEUED)
        .values("queue")
        .annotate(
            scheduled=Count("pk", filter=Q(available_at__gt=now)),
            oldest_due_at=Min("available_at", filter=Q(available_at__lte=now)),
            oldest_queued_at=Min("created_at"),
        )
        .order_by()
    }
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
        _queue_document(
            name, settings_rows.get(name), by_queue.get(name, {}), backlog.get(name, {})
        )
        for name in sorted(known)
    ]


def queue_detail(name: str) -> dict[str, Any]:
    """``queue_list``'s entry for one queue (any name: a queue exists by being named)."""
    return queue_list([name])[0]


def queue_controls() -> list[QueueSettings]:
    """The queues that have a settings row (a pause or a limit, or had one), by name."""
    return list(QueueSettings.objects.order_by("name"))
