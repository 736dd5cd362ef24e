"""Every job state transition, and nothing else, lives here.

Invariants kept by this module (the database enforces the row shapes as well):

* A job moves only along queued -> running -> succeeded | queued | failed, and
  failed -> queued by manual retry.
* A worker's write (complete, fail, renew, progress) takes effect only while the row is
  still ``running`` with the same ``locked_by`` and the same ``attempts`` the worker
  claimed. A stale worker's write changes nothing and the function returns ``None``.
* A transition and its event commit in the same transaction, or neither does.

On PostgreSQL the worker's hot path (claim, complete, fail, renew, progress) is one SQL
statement each: a data-modifying CTE that performs the guarded update and inserts the
event, so it costs a single round trip and runs atomically in autocommit mode; so is
``create_job``. Other databases (the embedded SQLite) take the equivalent ORM path inside
a transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, Min, Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from .models import Job, JobEvent

Status = Job.Status
EventType = JobEvent.Type

LEASE_EXPIRED_ERROR = "Lease expired before the job finished"


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
    return base * 2**exponent


def _now(now: datetime | None) -> datetime:
    return timezone.now() if now is None else now


def _on_postgres() -> bool:
    return connection.vendor == "postgresql"


def to_json(value: Any) -> str:
    """Serialise for a jsonb column; NaN and Infinity are refused (not valid JSON)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


# --- Create -----------------------------------------------------------------------------

# One round trip: insert the job (unless its idempotency key exists) and its ``created``
# event, or return the job that already holds the key. ON CONFLICT infers the partial
# unique index job_idempotency_key_unique; rows without a key never conflict.
_PG_CREATE = """
WITH inserted AS (
    INSERT INTO jobs_job (id, type, payload, status, priority, available_at, attempts,
        max_attempts, idempotency_key, last_error, created_at, updated_at)
    VALUES (%(id)s, %(type)s, %(payload)s::jsonb, 'queued', %(priority)s, %(available_at)s, 0,
        %(max_attempts)s, %(idempotency_key)s, '', %(now)s, %(now)s)
    ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING *
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, message, data, created_at)
    SELECT id, 'created', 0, 'Job created', %(data)s::jsonb, %(now)s FROM inserted
)
SELECT * FROM inserted
UNION ALL
SELECT * FROM jobs_job
WHERE idempotency_key = %(idempotency_key)s AND NOT EXISTS (SELECT 1 FROM inserted)
"""


def _create_job_postgres(params: dict[str, Any]) -> tuple[Job, bool]:
    key = params["idempotency_key"]
    for _ in range(3):
        job = next(iter(Job.objects.raw(_PG_CREATE, params)), None)
        if job is None and key is not None:
            # A concurrent create with this key committed while the statement waited on
            # it; the statement's snapshot predates that row, a new query sees it.
            job = Job.objects.filter(idempotency_key=key).first()
        if job is not None:
            return job, job.pk == params["id"]
    # Only reachable if the key's job keeps being deleted between the two queries.
    raise IntegrityError(f"could not create or find the job with idempotency key {key!r}")


def create_job(
    *,
    type: str,
    payload: dict[str, Any] | None = None,
    priority: int = 50,
    available_at: datetime | None = None,
    max_attempts: int | None = None,
    idempotency_key: str | None = None,
    now: datetime | None = None,
) -> tuple[Job, bool]:
    """Enqueue a job and its ``created`` event; return ``(job, created)``.

    With an ``idempotency_key`` that already exists, nothing is written and the existing
    job is returned with ``created=False``. Concurrent creates with one key yield one job:
    the partial unique index decides, and the loser returns the winner's row.
    """
    now = _now(now)
    if max_attempts is None:
        max_attempts = settings.JOB_WORKER_MAX_ATTEMPTS_DEFAULT
    if _on_postgres():
        return _create_job_postgres(
            {
                "id": uuid4(),
                "type": type,
                "payload": to_json({} if payload is None else payload),
                "priority": priority,
                "available_at": now if available_at is None else available_at,
                "max_attempts": max_attempts,
                "idempotency_key": idempotency_key,
                "now": now,
                "data": to_json({"type": type}),
            }
        )
    if idempotency_key is not None:
        existing = Job.objects.filter(idempotency_key=idempotency_key).first()
        if existing is not None:
            return existing, False
    job = Job(
        type=type,
        payload={} if payload is None else payload,
        priority=priority,
        available_at=now if available_at is None else available_at,
        max_attempts=max_attempts,
        idempotency_key=idempotency_key,
        created_at=now,
        updated_at=now,
    )
    try:
        with transaction.atomic():
            job.save(force_insert=True)
            JobEvent.objects.create(
                job=job,
                type=EventType.CREATED,
                attempt=0,
                message="Job created",
                data={"type": type},
                created_at=now,
            )
    except IntegrityError:
        if idempotency_key is None:
            raise
        existing = Job.objects.filter(idempotency_key=idempotency_key).first()
        if existing is None:
            raise
        return existing, False
    return job, True


# --- Claim ------------------------------------------------------------------------------

_PG_CLAIM = """
WITH candidate AS (
    SELECT id FROM jobs_job
    WHERE status = 'queued' AND available_at <= %(now)s AND attempts < max_attempts
    ORDER BY priority DESC, available_at, created_at, id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE jobs_job AS job
    SET status = 'running', attempts = job.attempts + 1, locked_by = %(worker_id)s,
        locked_until = %(locked_until)s, last_error = '', result = NULL, updated_at = %(now)s
    FROM candidate
    WHERE job.id = candidate.id
    RETURNING job.*
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at)
    SELECT id, 'claimed', attempts, locked_by, 'Job claimed', %(data)s::jsonb, %(now)s
    FROM claimed
)
SELECT * FROM claimed
"""


def claim_next_job(
    *, worker_id: str, lease_seconds: int | None = None, now: datetime | None = None
) -> Job | None:
    """Atomically take the next eligible queued job for ``worker_id``, or return ``None``.

    Eligible: queued, ``available_at <= now``, attempts left. Order: priority descending,
    then ``available_at``, ``created_at``, ``id``. Rows locked by another claimer are
    skipped, so each attempt is claimed by exactly one worker. The job becomes running
    with ``attempts + 1``, the lease ``now + lease_seconds``, and a ``claimed`` event.
    """
    now = _now(now)
    lease = settings.JOB_WORKER_LEASE_SECONDS if lease_seconds is None else lease_seconds
    locked_until = now + timedelta(seconds=lease)
    data = {"lease_seconds": lease, "locked_until": locked_until.isoformat()}
    if _on_postgres():
        params = {
            "now": now,
            "worker_id": worker_id,
            "locked_until": locked_until,
            "data": to_json(data),
        }
        return next(iter(Job.objects.raw(_PG_CLAIM, params)), None)

    with transaction.atomic():
        job = (
            Job.objects.select_for_update(skip_locked=True)
            .filter(status=Status.QUEUED, available_at__lte=now, attempts__lt=F("max_attempts"))
            .order_by("-priority", "available_at", "created_at", "id")
            .first()
        )
        if job is None:
            return None
        job.status = Status.RUNNING
        job.attempts += 1
        job.locked_by = worker_id
        job.locked_until = locked_until
        job.last_error = ""
        job.result = None
        job.updated_at = now
        job.save(
            update_fields=[
                "status",
                "attempts",
                "locked_by",
                "locked_until",
                "last_error",
                "result",
                "updated_at",
            ]
        )
        JobEvent.objects.create(
            job=job,
            type=EventType.CLAIMED,
            attempt=job.attempts,
            worker_id=worker_id,
            message="Job claimed",
            data=data,
            created_at=now,
        )
    return job


# --- Worker writes guarded by ownership -------------------------------------------------


def _owned(job_id: UUID | str, worker_id: str, attempt: int) -> Q:
    return Q(pk=job_id, status=Status.RUNNING, locked_by=worker_id, attempts=attempt)


_OWNED_SQL = (
    "id = %(job_id)s AND status = 'running'"
    " AND locked_by = %(worker_id)s AND attempts = %(attempt)s"
)

_PG_COMPLETE = f"""
WITH done AS (
    UPDATE jobs_job
    SET status = 'succeeded', result = %(result)s::jsonb, locked_by = NULL, locked_until = NULL,
        finished_at = %(now)s, updated_at = %(now)s
    WHERE {_OWNED_SQL}
    RETURNING *
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at)
    SELECT id, 'succeeded', attempts, %(worker_id)s, 'Job succeeded', '{{}}'::jsonb, %(now)s
    FROM done
)
SELECT * FROM done
"""


def complete_job(
    *,
    job_id: UUID | str,
    worker_id: str,
    attempt: int,
    result: Any = None,
    now: datetime | None = None,
) -> Job | None:
    """Mark the worker's attempt succeeded with ``result`` and write a ``succeeded`` event.

    Only the current owner (running, same ``locked_by`` and ``attempts``) can complete;
    otherwise nothing changes and ``None`` is returned. A ``result`` that is not
    JSON-serialisable (NaN included) raises ``TypeError``/``ValueError`` before any write.
    """
    now = _now(now)
    result_json = None if result is None else to_json(result)
    if _on_postgres():
        params = {
            "job_id": job_id,
            "worker_id": worker_id,
            "attempt": attempt,
            "result": result_json,
            "now": now,
        }
        return next(iter(Job.objects.raw(_PG_COMPLETE, params)), None)

    with transaction.atomic():
        updated = Job.objects.filter(_owned(job_id, worker_id, attempt)).update(
            status=Status.SUCCEEDED,
            result=result,
            locked_by=None,
            locked_until=None,
            finished_at=now,
            updated_at=now,
        )
        if not updated:
            return None
        JobEvent.objects.create(
            job_id=job_id,
            type=EventType.SUCCEEDED,
            attempt=attempt,
            worker_id=worker_id,
            message="Job succeeded",
            data={},
            created_at=now,
        )
    return Job.objects.get(pk=job_id)


_PG_FAIL = f"""
WITH failed AS (
    UPDATE jobs_job
    SET status = CASE WHEN attempts < max_attempts THEN 'queued' ELSE 'failed' END,
        available_at = CASE WHEN attempts < max_attempts THEN %(retry_at)s ELSE available_at END,
        finished_at = CASE WHEN attempts < max_attempts THEN NULL ELSE %(now)s END,
        locked_by = NULL, locked_until = NULL, last_error = %(error)s, updated_at = %(now)s
    WHERE {_OWNED_SQL}
    RETURNING *
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at)
    SELECT id,
           CASE WHEN status = 'queued' THEN 'retry_scheduled' ELSE 'failed' END,
           attempts, %(worker_id)s, %(error)s,
           CASE WHEN status = 'queued' THEN %(retry_data)s::jsonb ELSE %(failed_data)s::jsonb END,
           %(now)s
    FROM failed
)
SELECT * FROM failed
"""


def fail_job(
    *,
    job_id: UUID | str,
    worker_id: str,
    attempt: int,
    error: str,
    now: datetime | None = None,
) -> Job | None:
    """Record a failed attempt: requeue with backoff if attempts remain, else fail for good.

    Attempts left: back to queued, ``available_at = now + backoff_delay_seconds(attempt)``,
    event ``retry_scheduled``. Exhausted: failed with ``finished_at``, event ``failed``.
    Either way the lock is released and ``last_error`` set. Only the current owner's call
    takes effect; a stale call changes nothing and returns ``None``.
    """
    now = _now(now)
    delay = backoff_delay_seconds(attempt)
    retry_at = now + timedelta(seconds=delay)
    retry_data = {"error": error, "delay_seconds": delay, "available_at": retry_at.isoformat()}
    failed_data = {"error": error}
    if _on_postgres():
        params = {
            "job_id": job_id,
            "worker_id": worker_id,
            "attempt": attempt,
            "error": error,
            "now": now,
            "retry_at": retry_at,
            "retry_data": to_json(retry_data),
            "failed_data": to_json(failed_data),
        }
        return next(iter(Job.objects.raw(_PG_FAIL, params)), None)

    with transaction.atomic():
        job = Job.objects.filter(_owned(job_id, worker_id, attempt)).first()
        if job is None:
            return None
        retrying = job.attempts < job.max_attempts
        job.status = Status.QUEUED if retrying else Status.FAILED
        job.available_at = retry_at if retrying else job.available_at
        job.finished_at = None if retrying else now
        job.locked_by = None
        job.locked_until = None
        job.last_error = error
        job.updated_at = now
        job.save(
            update_fields=[
                "status",
                "available_at",
                "finished_at",
                "locked_by",
                "locked_until",
                "last_error",
                "updated_at",
            ]
        )
        JobEvent.objects.create(
            job=job,
            type=EventType.RETRY_SCHEDULED if retrying else EventType.FAILED,
            attempt=attempt,
            worker_id=worker_id,
            message=error,
            data=retry_data if retrying else failed_data,
            created_at=now,
        )
    return job


_PG_RENEW = f"""
WITH renewed AS (
    UPDATE jobs_job SET locked_until = %(locked_until)s, updated_at = %(now)s
    WHERE {_OWNED_SQL}
    RETURNING id, attempts, locked_until
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at)
    SELECT id, 'lease_renewed', attempts, %(worker_id)s, 'Lease renewed', %(data)s::jsonb, %(now)s
    FROM renewed
)
SELECT locked_until FROM renewed
"""


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
    lease = settings.JOB_WORKER_LEASE_SECONDS if lease_seconds is None else lease_seconds
    locked_until = now + timedelta(seconds=lease)
    data = {"locked_until": locked_until.isoformat()}
    if _on_postgres():
        params = {
            "job_id": job_id,
            "worker_id": worker_id,
            "attempt": attempt,
            "locked_until": locked_until,
            "now": now,
            "data": to_json(data),
        }
        with connection.cursor() as cursor:
            cursor.execute(_PG_RENEW, params)
            row = cursor.fetchone()
        return None if row is None else locked_until

    with transaction.atomic():
        updated = Job.objects.filter(_owned(job_id, worker_id, attempt)).update(
            locked_until=locked_until, updated_at=now
        )
        if not updated:
            return None
        JobEvent.objects.create(
            job_id=job_id,
            type=EventType.LEASE_RENEWED,
            attempt=attempt,
            worker_id=worker_id,
            message="Lease renewed",
            data=data,
            created_at=now,
        )
    return locked_until


# FOR SHARE makes a concurrent requeue finish first; the guard is then re-checked against
# the new row version, so a progress event is never written for an attempt already lost.
_PG_PROGRESS = f"""
INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at)
SELECT id, 'progress', attempts, %(worker_id)s, %(message)s, %(data)s::jsonb, %(now)s
FROM (SELECT id, attempts FROM jobs_job WHERE {_OWNED_SQL} FOR SHARE) AS owned
RETURNING id
"""


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
    now = _now(now)
    data = {} if data is None else data
    if _on_postgres():
        params = {
            "job_id": job_id,
            "worker_id": worker_id,
            "attempt": attempt,
            "message": message,
            "data": to_json(data),
            "now": now,
        }
        with connection.cursor() as cursor:
            cursor.execute(_PG_PROGRESS, params)
            return cursor.fetchone() is not None

    with transaction.atomic():
        if not Job.objects.filter(_owned(job_id, worker_id, attempt)).exists():
            return False
        JobEvent.objects.create(
            job_id=job_id,
            type=EventType.PROGRESS,
            attempt=attempt,
            worker_id=worker_id,
            message=message,
            data=data,
            created_at=now,
        )
    return True


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
    requeued = failed = 0
    with transaction.atomic():
        expired = list(
            Job.objects.select_for_update(skip_locked=True)
            .filter(status=Status.RUNNING, locked_until__lt=now)
            .order_by("locked_until")[:batch]
        )
        if not expired:
            return CleanupResult(requeued=0, failed=0)
        events = []
        for job in expired:
            data: dict[str, Any] = {
                "error": LEASE_EXPIRED_ERROR,
                "expired_worker_id": job.locked_by,
                "locked_until": job.locked_until.isoformat() if job.locked_until else None,
            }
            if job.attempts < job.max_attempts:
                delay = backoff_delay_seconds(job.attempts)
                job.status = Status.QUEUED
                job.available_at = now + timedelta(seconds=delay)
                data.update(delay_seconds=delay, available_at=job.available_at.isoformat())
                event_type, message = EventType.TIMEOUT_REQUEUED, "Lease expired; job requeued"
                requeued += 1
            else:
                job.status = Status.FAILED
                job.finished_at = now
                event_type, message = EventType.FAILED, "Lease expired; attempts exhausted"
                failed += 1
            job.locked_by = None
            job.locked_until = None
            job.last_error = LEASE_EXPIRED_ERROR
            job.updated_at = now
            events.append(
                JobEvent(
                    job=job,
                    type=event_type,
                    attempt=job.attempts,
                    worker_id=worker_id,
                    message=message,
                    data=data,
                    created_at=now,
                )
            )
        Job.objects.bulk_update(
            expired,
            [
                "status",
                "available_at",
                "finished_at",
                "locked_by",
                "locked_until",
                "last_error",
                "updated_at",
            ],
        )
        JobEvent.objects.bulk_create(events)
    return CleanupResult(requeued=requeued, failed=failed)


def retry_job(*, job_id: UUID | str, now: datetime | None = None) -> Job:
    """Manually send a failed job back to the queue with a fresh attempt budget.

    Only ``failed`` jobs qualify: attempts reset to 0, ``available_at = now``, lock,
    error, result and ``finished_at`` cleared, event ``manual_retry``. Raises
    ``JobNotFound`` or ``InvalidTransition`` (carrying the current status) otherwise.
    """
    now = _now(now)
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            raise JobNotFound(job_id)
        if job.status != Status.FAILED:
            raise InvalidTransition(
                f"Only failed jobs can be retried; job is {job.status}.",
                current_status=job.status,
            )
        previous = {"previous_attempts": job.attempts, "previous_error": job.last_error}
        job.status = Status.QUEUED
        job.attempts = 0
        job.available_at = now
        job.locked_by = None
        job.locked_until = None
        job.last_error = ""
        job.result = None
        job.finished_at = None
        job.updated_at = now
        job.save()
        JobEvent.objects.create(
            job=job,
            type=EventType.MANUAL_RETRY,
            attempt=0,
            message="Manual retry",
            data=previous,
            created_at=now,
        )
    return job


# --- Reads shared by the API and the dashboard ------------------------------------------


def get_job_stats(*, now: datetime | None = None) -> dict[str, Any]:
    """Queue counts in a single query: total, per status, overdue leases, pending retries."""
    now = _now(now)
    row = Job.objects.aggregate(
        total=Count("pk"),
        queued=Count("pk", filter=Q(status=Status.QUEUED)),
        running=Count("pk", filter=Q(status=Status.RUNNING)),
        succeeded=Count("pk", filter=Q(status=Status.SUCCEEDED)),
        failed=Count("pk", filter=Q(status=Status.FAILED)),
        overdue_running=Count("pk", filter=Q(status=Status.RUNNING, locked_until__lt=now)),
        retries_pending=Count("pk", filter=Q(status=Status.QUEUED, attempts__gt=0)),
        oldest_queued_at=Min("created_at", filter=Q(status=Status.QUEUED)),
    )
    return {
        "total": row["total"],
        "by_status": {status.value: row[status.value] for status in Status},
        "overdue_running": row["overdue_running"],
        "retries_pending": row["retries_pending"],
        "oldest_queued_at": row["oldest_queued_at"],
    }


def get_throughput(
    *, now: datetime | None = None, minutes: int = 15, bucket_seconds: int = 60
) -> dict[str, Any]:
    """Finished attempts per time bucket over the last ``minutes``, oldest bucket first.

    Buckets are ``bucket_seconds`` wide and aligned to multiples of ``bucket_seconds``
    since the Unix epoch, so they stay put between polls; there are
    ``ceil(minutes * 60 / bucket_seconds)`` of them and the newest one contains ``now``
    (it is partial). Each counts the ``succeeded`` and ``failed`` events created in it,
    zero when there were none. One query, grouped per bucket in the database; the
    ``created_at`` range is served by ``jobs_jobevent_created_at_idx``.
    """
    now = _now(now)
    count = -(-minutes * 60 // bucket_seconds)
    last_start = int(now.timestamp()) // bucket_seconds * bucket_seconds
    first_start = last_start - (count - 1) * bucket_seconds
    start = datetime.fromtimestamp(first_start, tz=UTC)
    # Whole seconds since the epoch; the bucket bounds are whole seconds too, so
    # flooring the event time never moves it across a bound. SQLite stores UTC text
    # "YYYY-MM-DD HH:MM:SS.ffffff"; the fraction is cut off because strftime would round
    # it to milliseconds (and 59.9999 up into the next second).
    column = '"jobs_jobevent"."created_at"'
    if _on_postgres():
        epoch = f"FLOOR(EXTRACT(EPOCH FROM {column}))::bigint"
    else:
        epoch = f"CAST(strftime('%%s', substr({column}, 1, 19)) AS INTEGER)"
    bucket = RawSQL(f"({epoch} - %s) / %s", (first_start, bucket_seconds))
    rows = (
        JobEvent.objects.filter(
            type__in=[EventType.SUCCEEDED, EventType.FAILED],
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
            EventType.SUCCEEDED.value: 0,
            EventType.FAILED.value: 0,
        }
        for index in range(count)
    ]
    for row in rows:
        buckets[int(row["bucket"])][row["type"]] = row["total"]
    return {"bucket_seconds": bucket_seconds, "start": start, "end": now, "buckets": buckets}
