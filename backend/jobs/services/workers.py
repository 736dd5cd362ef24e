"""Worker presence: a process says it is alive, and takes its row back when it stops.

Data access: the ORM (``WorkerPresence``), one row per process; no job is read or
written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from ..models import WorkerPresence
from .common import _now

# A presence row not written for this long belongs to a process gone for good: the next
# check-in of any worker deletes it (a reader already ignores it after one interval).
PRESENCE_SWEEP_AFTER = timedelta(hours=1)


def record_worker_presence(
    *,
    worker_id: str,
    hostname: str,
    pid: int,
    queues: Sequence[str],
    threads_configured: int,
    threads: Sequence[str],
    heartbeat_interval_seconds: float,
    started_at: datetime,
    abandoned: Sequence[Mapping[str, Any]] = (),
    now: datetime | None = None,
) -> None:
    """Say that the worker process ``worker_id`` (host:pid) is alive at ``now``, with these
    serving threads and its abandoned ones (stuck in a timed-out handler, each with the job
    it still runs): one row per process, written whole (insert or update). It is read as
    live while ``now`` is within ``heartbeat_interval_seconds`` of its last write, so the
    process writes it more often than that. Rows of processes silent for
    ``PRESENCE_SWEEP_AFTER`` are deleted in passing. No job's state is read or written."""
    now = _now(now)
    with transaction.atomic():
        WorkerPresence.objects.update_or_create(
            worker_id=worker_id,
            defaults={
                "hostname": hostname,
                "pid": pid,
                "queues": list(queues),
                "threads_configured": threads_configured,
                "threads": list(threads),
                "abandoned": [dict(entry) for entry in abandoned],
                "heartbeat_interval_seconds": heartbeat_interval_seconds,
                "started_at": started_at,
                "last_seen_at": now,
            },
        )
        WorkerPresence.objects.filter(last_seen_at__lt=now - PRESENCE_SWEEP_AFTER).delete()


def remove_worker_presence(*, worker_id: str) -> int:
    """The worker process ``worker_id`` stops cleanly: its presence row goes at once (a
    process that dies without this drops out within one heartbeat interval anyway).
    Returns the rows deleted (0 or 1)."""
    deleted, _ = WorkerPresence.objects.filter(worker_id=worker_id).delete()
    return deleted
