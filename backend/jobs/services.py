"""Every job state transition lives here; reads live in ``jobs.selectors``.

Invariants kept by this module (the database enforces the row shapes as well):

* A job moves only along queued -> running -> succeeded | queued | failed, and
  failed -> queued by manual retry.
* A worker's write (complete, fail, renew, progress) takes effect only while the row is
  still ``running`` with the same ``locked_by`` and the same ``attempts`` the worker
  claimed. A stale worker's write changes nothing and the function returns ``None``.
* A transition and its event commit in the same transaction, or neither does.

Each function decides the rule (next status, event, backoff, lease) and hands the values
to the database driver (``jobs.drivers``), which runs the statement(s): one SQL statement
per transition on PostgreSQL, one ORM transaction elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .drivers import JobRow, Owner, get_driver
from .drivers.base import Event, Failure, NewJob, Release, to_json
from .models import JobEventType, JobStatus

LEASE_EXPIRED_ERROR = "Lease expired before the job finished"

# The fixed messages of the events transitions write (a failure's message is its error).
MESSAGES = {
    JobEventType.CREATED: "Job created",
    JobEventType.CLAIMED: "Job claimed",
    JobEventType.SUCCEEDED: "Job succeeded",
    JobEventType.LEASE_RENEWED: "Lease renewed",
    JobEventType.MANUAL_RETRY: "Manual retry",
}
LEASE_EXPIRED_MESSAGES = {
    JobEventType.TIMEOUT_REQUEUED: "Lease expired; job requeued",
    JobEventType.FAILED: "Lease expired; attempts exhausted",
}


class JobQueueError(Exception):
    """Base class of the domain errors the API maps to HTTP responses."""


class JobNotFound(JobQueueError):
    def __init__(self, job_id: UUID | str) -> None:
        super().__init__(f"Job {job_id} does not exist.")
        self.job_id = job_id


class InvalidTransition(JobQueueError):
    def __init__(self, message: str, *, current_status: str) -> None:
        super().__init__(message)
        self.current_status = current_status


@dataclass(frozen=True)
class CleanupResult:
    requeued: int
    failed: int

    @property
    def total(self) -> int:
        return self.requeued + self.failed


def backoff_delay_seconds(
    attempt: int, *, base_seconds: int | None = None, max_seconds: int | None = None
) -> int:
    """Delay before retrying after failed attempt number ``attempt`` (1-based).

    ``min(base * 2 ** (attempt - 1), max)``: 5, 10, 20, ... capped at 300 by default.
    """
    base = settings.JOB_WORKER_BACKOFF_BASE_SECONDS if base_seconds is None else base_seconds
    cap = settings.JOB_WORKER_BACKOFF_MAX_SECONDS if max_seconds is None else max_seconds
    exponent = max(attempt, 1) - 1
    # Compare before multiplying so a large attempt number cannot build a huge integer.
    if exponent >= 64 or base * (2**exponent) >= cap:
        return cap
    delay: int = base * 2**exponent  # int ** int is typed Any: a negative power is a float
    return delay


def _now(now: datetime | None) -> datetime:
    return timezone.now() if now is None else now


def _lease_until(now: datetime, lease_seconds: int | None) -> tuple[int, datetime]:
    lease = settings.JOB_WORKER_LEASE_SECONDS if lease_seconds is None else lease_seconds
    return lease, now + timedelta(seconds=lease)


# --- Create -----------------------------------------------------------------------------


def create_job(
    *,
    type: str,
    payload: dict[str, Any] | None = None,
    priority: int = 50,
    available_at: datetime | None = None,
    max_attempts: int | None = None,
    idempotency_key: str | None = None,
    now: datetime | None = None,
) -> tuple[JobRow, bool]:
    """Enqueue a job and its ``created`` event; return ``(job, created)``.

    With an ``idempotency_key`` that already exists, nothing is written and the existing
    job is returned with ``created=False``. Concurrent creates with one key yield one job:
    the partial unique index decides, and the loser returns the winner's row.
    """
    now = _now(now)
    job = NewJob(
        id=uuid4(),
        type=type,
        payload={} if payload is None else payload,
        priority=priority,
        available_at=now if available_at is None else available_at,
        max_attempts=(
            settings.JOB_WORKER_MAX_ATTEMPTS_DEFAULT if max_attempts is None else max_attempts
        ),
        idempotency_key=idempotency_key,
        created_at=now,
    )
    return get_driver().create_job(job, event=Event(MESSAGES[JobEventType.CREATED], {"type": type}))


# --- Claim ------------------------------------------------------------------------------


def claim_next_job(
    *, worker_id: str, lease_seconds: int | None = None, now: datetime | None = None
) -> JobRow | None:
    """Atomically take the next eligible queued job for ``worker_id``, or return ``None``.

    Eligible: queued, ``available_at <= now``, attempts left. Order: priority descending,
    then ``available_at``, ``created_at``, ``id``. Rows locked by another claimer are
    skipped, so each attempt is claimed by exactly one worker. The job becomes running
    with ``attempts + 1``, the lease ``now + lease_seconds``, and a ``claimed`` event.
    """
    now = _now(now)
    lease, locked_until = _lease_until(now, lease_seconds)
    data = {"lease_seconds": lease, "locked_until": locked_until.isoformat()}
    return get_driver().claim_job(
        worker_id=worker_id,
        now=now,
        locked_until=locked_until,
        event=Event(MESSAGES[JobEventType.CLAIMED], data),
    )


# --- Worker writes guarded by ownership -------------------------------------------------


def complete_job(
    *,
    job_id: UUID | str,
    worker_id: str,
    attempt: int,
    result: Any = None,
    now: datetime | None = None,
) -> JobRow | None:
    """Mark the worker's attempt succeeded with ``result`` and write a ``succeeded`` event.

    Only the current owner (running, same ``locked_by`` and ``attempts``) can complete;
    otherwise nothing changes and ``None`` is returned. A ``result`` that is not
    JSON-serialisable (NaN included) raises ``TypeError``/``ValueError`` before any write.
    """
    result_json = None if result is None else to_json(result)
    return get_driver().complete_job(
        Owner(job_id, worker_id, attempt),
        result_json=result_json,
        now=_now(now),
        event=Event(MESSAGES[JobEventType.SUCCEEDED], {}),
    )


def fail_job(
    *,
    job_id: UUID | str,
    worker_id: str,
    attempt: int,
    error: str,
    now: datetime | None = None,
) -> JobRow | None:
    """Record a failed attempt: requeue with backoff if attempts remain, else fail for good.

    Attempts left: back to queued, ``available_at = now + backoff_delay_seconds(attempt)``,
    event ``retry_scheduled``. Exhausted: failed with ``finished_at``, event ``failed``.
    Either way the lock is released and ``last_error`` set; the event's message is the
    error. Only the current owner's call takes effect; a stale call returns ``None``.
    """
    now = _now(now)
    delay = backoff_delay_seconds(attempt)
    retry_at = now + timedelta(seconds=delay)
    retry_data = {"error": error, "delay_seconds": delay, "available_at": retry_at.isoformat()}
    failure = Failure(
        error=error,
        retry_at=retry_at,
        retry_event=Event(error, retry_data),
        failed_event=Event(error, {"error": error}),
    )
    return get_driver().fail_job(Owner(job_id, worker_id, attempt), failure, now=now)


def renew_lease(
    *,
    job_id: UUID | str,
    worker_id: str,
    attempt: int,
    lease_seconds: int | None = None,
    now: datetime | None = None,
) -> datetime | None:
    """Extend the owner's lease to ``now + lease_seconds`` and write ``lease_renewed``.

    Returns the new ``locked_until``, or ``None`` when the caller no longer owns the
    attempt (nothing is written then).
    """
    now = _now(now)
    _, locked_until = _lease_until(now, lease_seconds)
    renewed = get_driver().renew_lease(
        Owner(job_id, worker_id, attempt),
        locked_until=locked_until,
        now=now,
        event=Event(
            MESSAGES[JobEventType.LEASE_RENEWED], {"locked_until": locked_until.isoformat()}
        ),
    )
    return locked_until if renewed else None


def record_progress(
    *,
    job_id: UUID | str,
    worker_id: str,
    attempt: int,
    message: str,
    data: dict[str, Any] | None = None,
    now: datetime | None = None,
) -> bool:
    """Append a ``progress`` event for the owner's attempt; the job row is unchanged.

    Returns ``False`` (and writes nothing) when the caller no longer owns the attempt.
    """
    return get_driver().record_progress(
        Owner(job_id, worker_id, attempt),
        now=_now(now),
        event=Event(message, {} if data is None else data),
    )


# --- Maintenance ------------------------------------------------------------------------


def cleanup_expired_jobs(
    *,
    now: datetime | None = None,
    batch_size: int | None = None,
    worker_id: str | None = None,
) -> CleanupResult:
    """Release up to ``batch_size`` running jobs whose lease ended before ``now``.

    Rows are locked with SKIP LOCKED, so concurrent cleaners never handle the same row.
    With attempts left a job is requeued with the same backoff as a failure
    (``timeout_requeued``); with none left it fails (``failed``). ``worker_id`` names the
    cleaner in the events; the expired owner is kept in the event data.
    """
    now = _now(now)
    batch = settings.JOB_WORKER_CLEANUP_BATCH_SIZE if batch_size is None else batch_size
    driver = get_driver()
    with transaction.atomic():
        expired = driver.lock_expired_leases(now=now, limit=batch)
        releases = []
        for lease in expired:
            data: dict[str, Any] = {
                "error": LEASE_EXPIRED_ERROR,
                "expired_worker_id": lease.locked_by,
                "locked_until": lease.locked_until.isoformat(),
            }
            if lease.attempts < lease.max_attempts:
                delay = backoff_delay_seconds(lease.attempts)
                retry_at = now + timedelta(seconds=delay)
                data.update(delay_seconds=delay, available_at=retry_at.isoformat())
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


def retry_job(*, job_id: UUID | str, now: datetime | None = None) -> JobRow:
    """Manually send a failed job back to the queue with a fresh attempt budget.

    Only ``failed`` jobs qualify: attempts reset to 0, ``available_at = now``, lock,
    error, result and ``finished_at`` cleared, event ``manual_retry`` (its data keeps the
    previous attempts and error). Raises ``JobNotFound`` or ``InvalidTransition``
    (carrying the current status) otherwise.
    """
    outcome = get_driver().retry_job(
        job_id, now=_now(now), message=MESSAGES[JobEventType.MANUAL_RETRY]
    )
    if outcome.status is None:
        raise JobNotFound(job_id)
    if outcome.job is None:
        raise InvalidTransition(
            f"Only failed jobs can be retried; job is {outcome.status}.",
            current_status=outcome.status,
        )
    return outcome.job
