"""The worker's maintenance writes: expired leases released, the jobs table vacuumed and
analyzed when due.

Data access: the database driver only (``jobs.drivers.get_driver()``); the lease cleanup
locks and releases in one transaction, deciding each job's outcome here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from ..conf import app_settings
from ..drivers import Analyzed, Event, Release, Vacuumed, get_driver
from ..models import JobEventType, JobStatus
from .common import _now, backoff_delay_seconds, event_time

LEASE_EXPIRED_ERROR = "Lease expired before the job finished"


LEASE_EXPIRED_MESSAGES = {
    JobEventType.TIMEOUT_REQUEUED: "Lease expired; job requeued",
    JobEventType.FAILED: "Lease expired; attempts exhausted",
    JobEventType.CANCELLED: "Lease expired; cancelled as requested",
}


@dataclass(frozen=True)
class CleanupResult:
    requeued: int
    failed: int

    @property
    def total(self) -> int:
        return self.requeued + self.failed


def vacuum_jobs_table(*, min_dead_rows: int | None = None) -> Vacuumed | None:
    """Vacuum ``jobs_job`` once its dead row versions pass both the threshold autovacuum
    itself would act on (the table's own settings, then the server's) and ``min_dead_rows``
    (``JOB_WORKER_VACUUM_DEAD_ROWS``); ``None`` when none was due, else how many dead rows
    it found and how many it had to leave.

    Changes no job and no event. Every claim and completion leaves a dead version of its row
    and index entries that the claim's index scan walks until a vacuum removes them, and
    autovacuum looks at a table at most once per ``autovacuum_naptime`` (a minute by
    default), in which a busy queue leaves tens of thousands. ``SKIP_LOCKED``: when
    autovacuum or another worker is vacuuming it, nothing happens. A table whose
    ``autovacuum_enabled`` is false is left alone. The floor keeps the vacuum for a busy
    queue: each pass reads every index of the table, history included, and passes every
    few seconds cost more than the dead rows they remove (decay bench: worst round 0.87 of
    the first at autovacuum's 2 % threshold, 0.97 with a floor of 20,000).
    """
    if min_dead_rows is None:
        min_dead_rows = app_settings.JOB_WORKER_VACUUM_DEAD_ROWS
    return get_driver().vacuum_jobs_table(min_dead_rows=min_dead_rows)


# Live rows beyond twice the planner's count before a worker analyzes jobs_job itself.
STALE_ESTIMATE_MIN_ROWS = 1_000


def analyze_jobs_table(*, min_rows: int = STALE_ESTIMATE_MIN_ROWS) -> Analyzed | None:
    """ANALYZE ``jobs_job`` once it holds more than ``min_rows`` live rows beyond twice the
    rows the planner believes it holds, or as many queued rows beyond twice the queued
    rows it believes in (a backlog beside many waiting or finished jobs leaves the row
    count within bounds); ``None`` when it did not.

    Changes no job and no event. A vacuum of a drained table (the worker's own, or
    autovacuum's) leaves the planner believing in zero rows over the pages it kept, and
    it scales that to any size: a backlog arriving next looks like one row to every plan
    made before the next ANALYZE, and a claim planned so may read a whole priority level
    through a bitmap and sort it on every call (2 x 4 after a stale backlog: 173-306
    jobs/s against 1,187-1,510 analyzed). Autovacuum analyzes at most once per naptime;
    each worker process checks every second while attempts run. While the planner believes
    in no more than ``min_rows``, the queued rows are counted directly (up to the count
    that makes the belief stale), not only through the statistics collector's count,
    which arrives up to a second late. The ANALYZE invalidates the plans made before it.
    ``SKIP_LOCKED`` and ``autovacuum_enabled = false`` as the vacuum.
    """
    return get_driver().analyze_jobs_table(min_rows=min_rows)


def cleanup_expired_jobs(
    *,
    now: datetime | None = None,
    batch_size: int | None = None,
    worker_id: str | None = None,
) -> CleanupResult:
    """Release up to ``batch_size`` running jobs whose lease ended before ``now``.

    Rows are locked with SKIP LOCKED, so concurrent cleaners never handle the same row.
    With attempts left a job is requeued with the same backoff as a failure
    (``timeout_requeued``); with none left it fails (``failed``); one asked to cancel is
    cancelled (``cancelled``). ``worker_id`` names the cleaner in the events; the expired
    owner is kept in the event data.
    """
    now = _now(now)
    batch = app_settings.JOB_WORKER_CLEANUP_BATCH_SIZE if batch_size is None else batch_size
    driver = get_driver()
    with transaction.atomic():
        expired = driver.lock_expired_leases(now=now, limit=batch)
        releases = []
        for lease in expired:
            data: dict[str, Any] = {
                "error": LEASE_EXPIRED_ERROR,
                "expired_worker_id": lease.locked_by,
                "locked_until": event_time(lease.locked_until),
            }
            if lease.cancel_requested_at is not None:
                retry_at, finished_at = None, now
                status, event_type = JobStatus.CANCELLED, JobEventType.CANCELLED
            elif lease.attempts < lease.max_attempts:
                delay = backoff_delay_seconds(lease.attempts)
                retry_at = now + timedelta(seconds=delay)
                data.update(delay_seconds=delay, available_at=event_time(retry_at))
                status, event_type = JobStatus.QUEUED, JobEventType.TIMEOUT_REQUEUED
                finished_at = None
            else:
                retry_at, finished_at = None, now
                status, event_type = JobStatus.FAILED, JobEventType.FAILED
            releases.append(
                Release(
                    id=lease.id,
                    status=status,
                    available_at=retry_at,
                    finished_at=finished_at,
                    error=LEASE_EXPIRED_ERROR,
                    event_type=event_type,
                    attempt=lease.attempts,
                    event=Event(LEASE_EXPIRED_MESSAGES[event_type], data),
                )
            )
        if releases:
            driver.release_expired_leases(releases, now=now, worker_id=worker_id)
    requeued = sum(1 for release in releases if release.status == JobStatus.QUEUED)
    return CleanupResult(requeued=requeued, failed=len(releases) - requeued)
