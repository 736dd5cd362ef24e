"""Live workers: every worker process alive now, its threads and the job each runs, and
what its threads finished.

Data access: the ORM (``WorkerPresence`` rows, the running jobs, and the per-minute
event counts rolled up in ``jobs.rollups``).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.db.models import Count, Max, Q
from django.utils import timezone

from .. import rollups
from ..models import (
    ACTIVITY_EVENT_TYPES,
    ATTEMPT_END_EVENT_TYPES,
    Job,
    JobEvent,
    JobStatus,
    WorkerPresence,
)
from ..worker_ids import is_thread_of
from .common import EpochSeconds, _window


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


def _finished_by_thread(first: int, now: datetime) -> dict[str, int]:
    finished: dict[str, int] = defaultdict(int)
    for rows in rollups.per_minute(
        "workers", first=first, now=now, compute=_activity_by_worker
    ).values():
        for worker_id, count, _last_at in rows:
            finished[worker_id] += count
    return finished


def live_workers(*, minutes: int = 60, now: datetime | None = None) -> dict[str, Any]:
    """Every worker process alive now, idle or busy, from its presence row
    (``WorkerPresence``): live while its ``last_seen_at`` is within one heartbeat interval
    of ``now`` (its maintenance thread writes it every half interval, so a process killed
    without a word drops out within one interval). Each with its serving threads and the
    job each runs, the attempt endings its threads wrote in the last ``minutes``, and its
    abandoned threads (stuck in a handler whose attempt timed out) with the job each still
    runs and that job's status now. Four queries however many workers: the presence rows,
    the running jobs, the abandoned threads' jobs, and the unsettled minutes' rollup."""
    now = timezone.now() if now is None else now
    first, start = _window(now, minutes)
    present = [
        row
        for row in WorkerPresence.objects.order_by("-started_at", "worker_id")
        if row.last_seen_at > now - timedelta(seconds=row.heartbeat_interval_seconds)
    ]
    threads = {thread for row in present for thread in row.threads if isinstance(thread, str)}
    running = (
        {
            job["locked_by"]: job
            for job in Job.objects.filter(status=JobStatus.RUNNING, locked_by__in=threads).values(
                "id",
                "type",
                "queue",
                "attempts",
                "locked_by",
                "locked_until",
                # The row keeps its claim's time (no claimed event in a lean timeline).
                "claimed_at",
            )
        }
        if threads
        else {}
    )
    finished = _finished_by_thread(first, now) if present else {}
    abandoned_ids = [
        entry["job_id"]
        for row in present
        for entry in _abandoned_entries(row)
        if entry.get("job_id")
    ]
    abandoned_status = (
        dict(Job.objects.filter(pk__in=abandoned_ids).values_list("id", "status"))
        if abandoned_ids
        else {}
    )
    processes = []
    for row in present:
        entries = []
        for thread in row.threads:
            job = running.get(thread)
            entries.append(
                {
                    "worker_id": thread,
                    "job": None
                    if job is None
                    else {
                        "id": job["id"],
                        "type": job["type"],
                        "queue": job["queue"],
                        "attempt": job["attempts"],
                        "started_at": job["claimed_at"],
                        "locked_until": job["locked_until"],
                        # A running job always has a lease (job_status_valid_shape).
                        "lease_overdue": job["locked_until"] is not None
                        and job["locked_until"] < now,
                    },
                }
            )
        processes.append(
            {
                "worker_id": row.worker_id,
                "hostname": row.hostname,
                "pid": row.pid,
                "queues": row.queues,
                "threads_configured": row.threads_configured,
                "threads_live": len(entries),
                "threads_busy": sum(1 for entry in entries if entry["job"] is not None),
                "started_at": row.started_at,
                "last_seen_at": row.last_seen_at,
                "heartbeat_interval_seconds": row.heartbeat_interval_seconds,
                "finished": sum(
                    count
                    for thread, count in finished.items()
                    if is_thread_of(thread, row.worker_id)
                ),
                "threads": entries,
                "threads_abandoned": [
                    {
                        "worker_id": entry.get("worker_id"),
                        "job": None
                        if not entry.get("job_id")
                        else {
                            "id": entry["job_id"],
                            "type": entry.get("type"),
                            "attempt": entry.get("attempt"),
                            "status": abandoned_status.get(UUID(str(entry["job_id"]))),
                        },
                        "abandoned_at": _parsed_time(entry.get("abandoned_at")),
                    }
                    for entry in _abandoned_entries(row)
                ],
            }
        )
    return {"minutes": minutes, "start": start, "end": now, "processes": processes}


def _parsed_time(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _abandoned_entries(row: WorkerPresence) -> list[dict[str, Any]]:
    return [entry for entry in row.abandoned or [] if isinstance(entry, dict)]
