"""Every job state transition lives here; reads live in ``jobs.selectors``, which this
module does not import (nor it this one).

Invariants kept by this module (the database enforces the row shapes as well):

* A job moves only along queued -> running -> succeeded | queued | failed | cancelled,
  queued -> cancelled, and failed | cancelled -> queued by manual retry.
* A worker's write (complete, fail, renew, progress) takes effect only while the row is
  still ``running`` with the same ``locked_by`` and the same ``attempts`` the worker
  claimed. A stale worker's write changes nothing and the function returns ``None``.
* A transition and its event commit in the same transaction, or neither does.
* What is written is storable: JSON and text the database would refuse are refused
  (``UnstorableValue``) before anything is written, or, for error text, escaped.

Each function decides the rule (next status, event, backoff, lease) and hands the values
to the database driver (``jobs.drivers``), which runs the statement(s): one SQL statement
per transition on PostgreSQL, one ORM transaction elsewhere.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

from django.db import DatabaseError, InterfaceError, OperationalError, transaction
from django.utils import timezone

from . import tracing
from .conf import app_settings
from .drivers import Completion, JobRow, Owner, get_driver, is_read_only
from .drivers.base import (
    Analyzed,
    CancelOutcome,
    Event,
    Failure,
    Heartbeat,
    NewJob,
    Release,
    RetryOutcome,
    Selection,
    Vacuumed,
)
from .drivers.orm import job_row
from .errors import (
    DuplicateIdempotencyKey,
    EmptySelection,
    InvalidTransition,
    ScheduleInvalid,
    ScheduleNotFound,
    UniqueKeyHeld,
)
from .flowcontrol import ScheduleSpec, configured_schedules, plan_ticks, tick_key
from .limits import metadata_problem
from .models import (
    DEFAULT_QUEUE,
    Job,
    JobEventType,
    JobStatus,
    QueueSettings,
    ScheduleState,
    WorkerPresence,
)
from .storable import UnstorableValue, json_problem, storable_text, to_storable_json

LEASE_EXPIRED_ERROR = "Lease expired before the job finished"

# The fixed messages of the events transitions write (a failure's message is its error).
MESSAGES = {
    JobEventType.CREATED: "Job created",
    JobEventType.CLAIMED: "Job claimed",
    JobEventType.SUCCEEDED: "Job succeeded",
    JobEventType.LEASE_RENEWED: "Lease renewed",
    JobEventType.MANUAL_RETRY: "Manual retry",
    JobEventType.RUN_NOW: "Run now: due at once",
    JobEventType.CANCEL_REQUESTED: "Cancel requested; the running attempt will stop",
    JobEventType.CANCELLED: "Cancelled before it ran",
    JobEventType.RELEASED: "Released before it started; the attempt is not spent",
}
LEASE_EXPIRED_MESSAGES = {
    JobEventType.TIMEOUT_REQUEUED: "Lease expired; job requeued",
    JobEventType.FAILED: "Lease expired; attempts exhausted",
    JobEventType.CANCELLED: "Lease expired; cancelled as requested",
}
TRACEBACK_MAX_CHARS = 16_000


@dataclass(frozen=True)
class ErrorDetails:
    """What an attempt's failure keeps beside its message (for TaskResult.errors)."""

    exception_class: str = ""
    traceback: str = ""
    reason: str = ""  # "timeout", "cancelled", ...: why the attempt ended, when not a raise

    def as_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.exception_class:
            data["exception_class"] = storable_text(self.exception_class)
        if self.traceback:
            data["traceback"] = storable_text(self.traceback[-TRACEBACK_MAX_CHARS:])
        if self.reason:
            data["reason"] = self.reason
        return data


@dataclass(frozen=True)
class Actor:
    """Who asked for an operator action: kept in its event's ``data.actor``."""

    user: str | None  # the username; None: nobody signed in (the open local demo)
    via: str  # "api" (the dashboard and any client) or "admin"

    def as_data(self) -> dict[str, Any]:
        return {"user": self.user, "via": self.via}


def _with_actor(data: dict[str, Any], actor: Actor | None) -> dict[str, Any]:
    return data if actor is None else {**data, "actor": actor.as_data()}


# Queues and schedules have no event table: their operator actions are told here, with who.
audit = logging.getLogger("jobs.audit")


def _audit(action: str, actor: Actor | None, **fields: Any) -> None:
    if actor is None:
        return
    details = " ".join(f"{key}={value}" for key, value in fields.items())
    audit.info(
        "action=%s %s actor=%s via=%s", action, details, actor.user or "anonymous", actor.via
    )


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
    base = app_settings.JOB_WORKER_BACKOFF_BASE_SECONDS if base_seconds is None else base_seconds
    cap = app_settings.JOB_WORKER_BACKOFF_MAX_SECONDS if max_seconds is None else max_seconds
    exponent = max(attempt, 1) - 1
    # Compare before multiplying so a large attempt number cannot build a huge integer.
    if exponent >= 64 or base * (2**exponent) >= cap:
        return cap
    delay: int = base * 2**exponent  # int ** int is typed Any: a negative power is a float
    return delay


def event_time(value: datetime) -> str:
    """A time as event ``data`` keeps it: in the API's format (``TIME_ZONE``'s offset, ``Z``
    for UTC, as DRF renders the job's own fields), so an event's times read like the job's."""
    text = timezone.localtime(value).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _now(now: datetime | None) -> datetime:
    return timezone.now() if now is None else now


def _lease_until(now: datetime, lease_seconds: int | None) -> tuple[int, datetime]:
    lease = app_settings.JOB_WORKER_LEASE_SECONDS if lease_seconds is None else lease_seconds
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
    queue: str = DEFAULT_QUEUE,
    timeout_seconds: int | None = None,
    metadata: dict[str, str] | None = None,
    unique_key: str | None = None,
    concurrency_key: str | None = None,
    now: datetime | None = None,
) -> tuple[JobRow, bool]:
    """Enqueue a job and its ``created`` event; return ``(job, created)``.

    With an ``idempotency_key`` that already exists, nothing is written and the existing
    job is returned with ``created=False``; so with a ``unique_key`` that a queued or
    running job holds (a finished one frees it). Concurrent creates with one key yield
    one job: the partial unique index decides, and the loser returns the winner's row
    (``matched_rule`` says which key matched). A payload the database cannot store raises
    ``UnstorableValue`` and nothing is written.
    """
    spec = NewJobSpec(
        type=type,
        payload=payload,
        priority=priority,
        available_at=available_at,
        max_attempts=max_attempts,
        idempotency_key=idempotency_key,
        queue=queue,
        timeout_seconds=timeout_seconds,
        metadata=metadata,
        unique_key=unique_key,
        concurrency_key=concurrency_key,
    )
    (result,) = create_jobs([spec], now=now)
    return result


@dataclass(frozen=True)
class NewJobSpec:
    """One job to enqueue: ``create_job``'s arguments, for ``create_jobs``."""

    type: str
    payload: dict[str, Any] | None = None
    priority: int = 50
    available_at: datetime | None = None
    max_attempts: int | None = None
    idempotency_key: str | None = None
    queue: str = DEFAULT_QUEUE
    timeout_seconds: int | None = None
    metadata: dict[str, str] | None = None
    unique_key: str | None = None
    concurrency_key: str | None = None


def matched_rule(spec: NewJobSpec, job: JobRow, created: bool) -> str | None:
    """Which rule returned an existing job for ``spec``: ``"idempotency_key"`` (permanent)
    or ``"unique_key"`` (while active); ``None`` when ``job`` was created."""
    if created:
        return None
    if spec.idempotency_key is not None and job.idempotency_key == spec.idempotency_key:
        return "idempotency_key"
    return "unique_key"


def create_jobs(
    specs: Sequence[NewJobSpec], *, now: datetime | None = None
) -> list[tuple[JobRow, bool]]:
    """Enqueue many jobs at once, all or nothing; ``(job, created)`` per spec, in order.

    One statement on PostgreSQL writes every job and its ``created`` event. Each
    idempotency key is honoured as in ``create_job`` (an existing key returns its job with
    ``created=False``); the same key twice in one call raises ``DuplicateIdempotencyKey``
    and a payload the database cannot store, or metadata out of bounds
    (``jobs.limits.metadata_problem``), raises ``UnstorableValue``, all before any write
    and naming the spec's index. Idle workers are woken for the jobs due now. With
    tracing on, the write runs inside a producer span whose context each job's metadata
    carries (``jobs.tracing.sending``).
    """
    now = _now(now)
    seen: dict[str, int] = {}
    jobs = []
    for index, spec in enumerate(specs):
        payload = {} if spec.payload is None else spec.payload
        problem = json_problem(payload)
        if problem is not None:
            raise UnstorableValue(f"payload: {problem}", index=index)
        metadata = {} if spec.metadata is None else spec.metadata
        problem = metadata_problem(metadata) or json_problem(metadata)
        if problem is not None:
            raise UnstorableValue(f"metadata: {problem}", index=index)
        if spec.idempotency_key is not None:
            if spec.idempotency_key in seen:
                raise DuplicateIdempotencyKey(
                    spec.idempotency_key, seen[spec.idempotency_key], index
                )
            seen[spec.idempotency_key] = index
        jobs.append(
            NewJob(
                id=uuid4(),
                type=spec.type,
                payload=payload,
                priority=spec.priority,
                available_at=now if spec.available_at is None else spec.available_at,
                max_attempts=(
                    app_settings.JOB_WORKER_MAX_ATTEMPTS_DEFAULT
                    if spec.max_attempts is None
                    else spec.max_attempts
                ),
                idempotency_key=spec.idempotency_key,
                created_at=now,
                queue=spec.queue,
                timeout_seconds=spec.timeout_seconds,
                event_data={"type": spec.type},
                metadata=metadata,
                unique_key=spec.unique_key,
                concurrency_key=spec.concurrency_key,
            )
        )
    if not jobs:
        return []
    with tracing.sending(jobs) as traced:
        return get_driver().create_jobs(
            traced, message=MESSAGES[JobEventType.CREATED], now=now, notify=app_settings.JOB_NOTIFY
        )


# --- Claim and completion ---------------------------------------------------------------
#
# Three functions take a worker's attempts as arrays (the database driver picks the
# single-row statement for one row): claim_jobs (a fetch: claims, and the successes it
# carries), complete_jobs, fail_jobs. claim_next_job, complete_job, fail_job and
# time_out_job are the same transitions for one attempt.


@dataclass(frozen=True)
class Fetched:
    """What one ``claim_jobs`` wrote: the successes it carried that were completed (the
    others' owners had lost them), and the jobs it claimed, the n-th for the n-th id."""

    completed: list[JobRow]
    claimed: list[JobRow]


def claim_jobs(
    *,
    worker_ids: Sequence[str],
    queue: str = DEFAULT_QUEUE,
    completions: Sequence[Completion] = (),
    lease_seconds: int | None = None,
    lean: bool = False,
    synchronous_commit: bool = True,
    now: datetime | None = None,
) -> Fetched:
    """A fetch: complete the attempts of ``completions`` their owners still hold, and claim
    up to one job per entry of ``worker_ids`` from ``queue``, in one statement (one round
    trip, one commit) on PostgreSQL. An id may repeat (a thread that holds jobs beyond the
    one it runs): it owns as many jobs, each its own attempt with its own lease.

    Each claim takes the first eligible job in claim order (priority descending, then
    ``available_at``, ``created_at``, ``id``; eligible: queued, due, attempts left, and
    admitted by the queue's flow control), skipping rows another claimer holds, so each
    attempt has exactly one owner; it becomes running with ``attempts + 1``, the lease
    ``now + lease_seconds``, ``claimed_at``/``claimed_by`` and a ``claimed`` event. Flow
    control holds for the whole batch: nothing from a paused queue, no more than the rate
    window and the concurrency limit admit (counted under the queue's lock, so a job holds
    its place exactly while it runs), no key beyond its limit. Each completion keeps its
    own ownership guard, as in ``complete_jobs``; completions are written whatever the
    claim finds, and they commit with the claims. ``synchronous_commit=False`` (opt-in,
    with completions only): that commit does not wait for the disk, as in
    ``complete_jobs``; a database crash may then undo both halves, and each job so undone
    runs again (it is queued as before its claim, or running with its lease lapsing):
    at least once still holds. ``lean``: no ``claimed`` and ``succeeded`` events (the
    rows keep who and when). On PostgreSQL a claim the statement answered stale or left to
    the gated claim is made again in a transaction of its own: should that one fail after
    the first committed, ``ClaimCutShort`` (a ``DatabaseError``) carries what committed.
    """
    now = _now(now)
    lease, locked_until = _lease_until(now, lease_seconds)
    completed, claimed = get_driver().claim_jobs(
        completions,
        worker_ids=worker_ids,
        queue=queue,
        now=now,
        locked_until=locked_until,
        completed=_completed_event(),
        claimed=_claimed_event(lease, locked_until),
        lean=lean,
        synchronous_commit=synchronous_commit,
    )
    return Fetched(completed=completed, claimed=claimed)


def claim_next_job(
    *,
    worker_id: str,
    queue: str = DEFAULT_QUEUE,
    lease_seconds: int | None = None,
    now: datetime | None = None,
) -> JobRow | None:
    """``claim_jobs`` for one worker id: the job claimed, or ``None`` when nothing was
    eligible."""
    fetched = claim_jobs(worker_ids=[worker_id], queue=queue, lease_seconds=lease_seconds, now=now)
    return fetched.claimed[0] if fetched.claimed else None


def _claimed_event(lease: int, locked_until: datetime) -> Event:
    data = {"lease_seconds": lease, "locked_until": event_time(locked_until)}
    return Event(MESSAGES[JobEventType.CLAIMED], data)


def _completed_event() -> Event:
    return Event(MESSAGES[JobEventType.SUCCEEDED], {})


def complete_jobs(
    *,
    completions: Sequence[Completion],
    now: datetime | None = None,
    synchronous_commit: bool = True,
    lean: bool = False,
) -> list[JobRow]:
    """Every attempt of ``completions`` its owner still holds (running, same ``locked_by``
    and ``attempts``) becomes succeeded with its result and a ``succeeded`` event,
    atomically (one statement on PostgreSQL); returns those rows. A stale one changes
    nothing and does not stop the others. Results arrive as JSON text already checked by
    ``jobs.storable.to_storable_json``, so nothing in a batch can be unstorable. A cancel
    requested meanwhile does not undo a finished handler: the work was done.
    ``synchronous_commit=False`` (opt-in): PostgreSQL acknowledges the commit before its
    WAL is on disk; a database crash may forget it and the jobs run again, which
    at-least-once delivery allows. ``lean``: no ``succeeded`` event.
    """
    if not completions:
        return []
    return get_driver().complete_jobs(
        completions,
        now=_now(now),
        event=_completed_event(),
        synchronous_commit=synchronous_commit,
        lean=lean,
    )


def complete_job(
    *,
    job_id: UUID | str,
    worker_id: str,
    attempt: int,
    result: Any = None,
    now: datetime | None = None,
) -> JobRow | None:
    """``complete_jobs`` for one attempt: the row, or ``None`` when the worker no longer
    owns it (nothing written). A ``result`` the database cannot store (not JSON, NaN, NUL,
    a lone surrogate, too deep) raises ``UnstorableValue`` before any write."""
    result_json = None if result is None else to_storable_json(result)
    rows = complete_jobs(
        completions=[Completion(Owner(job_id, worker_id, attempt), result_json)], now=now
    )
    return rows[0] if rows else None


def release_unstarted_jobs(*, owners: Sequence[Owner], now: datetime | None = None) -> list[JobRow]:
    """Attempts claimed whose handler never started (a worker shutting down) go back to
    ``queued`` at once, each with a ``released`` event: the attempt is not spent (its
    number is taken again by the next claim) and the job is due as it was, so no one waits
    for a lease. One whose cancel was requested meanwhile is cancelled instead. Each keeps
    its own ownership guard: one another worker already took over changes nothing.
    Returns the rows changed."""
    if not owners:
        return []
    event = Event(MESSAGES[JobEventType.RELEASED], {})
    error = "Cancelled before its handler started"
    cancelled = Event(error, {"error": error, "reason": "cancelled"})
    return get_driver().release_jobs(owners, now=_now(now), event=event, cancelled=cancelled)


@dataclass(frozen=True)
class AttemptFailure:
    """One failed attempt for ``fail_jobs``: its owner, the error, and what it keeps beside."""

    owner: Owner
    error: str
    details: ErrorDetails = field(default_factory=lambda: ErrorDetails())


def fail_jobs(*, failures: Sequence[AttemptFailure], now: datetime | None = None) -> list[JobRow]:
    """Record failed attempts, each under its own ownership guard; returns the rows
    changed (a stale one changes nothing), atomically (one statement on PostgreSQL).

    Attempts left: back to queued, ``available_at = now + backoff_delay_seconds(attempt)``,
    event ``retry_scheduled``. Exhausted: failed with ``finished_at``, event ``failed``. A
    cancel was requested: cancelled, event ``cancelled``, whatever attempts remain. Either
    way the lock is released and ``last_error`` set; the event's message is the error and
    its data keeps the details. NUL and lone surrogates in the text are escaped so the
    outcome is always storable.
    """
    if not failures:
        return []
    now = _now(now)
    return get_driver().fail_jobs(
        [(failure.owner, _failure(failure, now)) for failure in failures], now=now
    )


def _failure(failure: AttemptFailure, now: datetime) -> Failure:
    error = storable_text(failure.error)
    data = {"error": error, **failure.details.as_data()}
    delay = backoff_delay_seconds(failure.owner.attempt)
    retry_at = now + timedelta(seconds=delay)
    retry_data = {**data, "delay_seconds": delay, "available_at": event_time(retry_at)}
    return Failure(
        error=error,
        retry_at=retry_at,
        retry_event=Event(error, retry_data),
        failed_event=Event(error, data),
        cancelled_event=Event(error, data),
    )


def fail_job(
    *,
    job_id: UUID | str,
    worker_id: str,
    attempt: int,
    error: str,
    details: ErrorDetails | None = None,
    now: datetime | None = None,
) -> JobRow | None:
    """``fail_jobs`` for one attempt: the row as recorded, or ``None`` when the worker no
    longer owns it (nothing written)."""
    failure = AttemptFailure(Owner(job_id, worker_id, attempt), error, details or ErrorDetails())
    rows = fail_jobs(failures=[failure], now=now)
    return rows[0] if rows else None


def time_out_job(
    *,
    job_id: UUID | str,
    worker_id: str,
    attempt: int,
    timeout_seconds: int,
    now: datetime | None = None,
) -> JobRow | None:
    """End the owner's attempt that ran past ``timeout_seconds`` like any failure.

    Same outcomes and guard as ``fail_job``, with the error "Timed out after N s" and
    ``reason: timeout`` in the event data; the late result of the attempt, if it ever
    comes, is refused by the ownership guard.
    """
    return fail_job(
        job_id=job_id,
        worker_id=worker_id,
        attempt=attempt,
        error=f"Timed out after {timeout_seconds} s",
        details=ErrorDetails(reason="timeout"),
        now=now,
    )


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
            MESSAGES[JobEventType.LEASE_RENEWED], {"locked_until": event_time(locked_until)}
        ),
    )
    return locked_until if renewed else None


def heartbeat(
    *,
    attempts: list[Owner],
    lease_seconds: int | None = None,
    now: datetime | None = None,
    watch: list[Owner] | None = None,
) -> list[Heartbeat]:
    """Extend the lease of every attempt in ``attempts`` its worker still owns.

    One statement for a whole worker process, under the same ownership guard as
    ``renew_lease``, and no event (an event per heartbeat would drown the timeline).
    The attempts of ``watch`` (handlers that opted out of the heartbeat) are checked in
    the same statement without extending their leases. Returns the attempts of both
    still owned, each saying whether a cancel was requested; the ones missing were lost
    (requeued by cleanup, or finished).
    """
    watch = watch or []
    if not attempts and not watch:
        return []
    now = _now(now)
    _, locked_until = _lease_until(now, lease_seconds)
    return get_driver().heartbeat(attempts, locked_until=locked_until, now=now, watch=watch)


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
    ``data`` the database cannot store raises ``UnstorableValue``; the message is escaped.
    """
    data = {} if data is None else data
    problem = json_problem(data)
    if problem is not None:
        raise UnstorableValue(f"progress data: {problem}")
    return get_driver().record_progress(
        Owner(job_id, worker_id, attempt),
        now=_now(now),
        event=Event(storable_text(message), data),
    )


# --- Maintenance ------------------------------------------------------------------------


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
    rows the planner believes it holds; ``None`` when it did not.

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


def _selection(
    *,
    ids: Sequence[UUID | str] | None,
    status: str | None,
    type: str | None,
    queue: str | None,
) -> Selection:
    selection = Selection(
        status=status, type=type, queue=queue, ids=None if ids is None else tuple(ids)
    )
    if selection.is_empty:
        raise EmptySelection()
    return selection


def _current_row(job_id: UUID | str) -> JobRow:
    """The row as it is now, after the statement answered; ``JobNotFound`` if none."""
    return job_row(Job.objects.by_id(job_id))


# Jobs a retry left alone for their unique key that it names (it counts them all).
HELD_KEYS_REPORTED = 100


def retry_jobs(
    *,
    ids: Sequence[UUID | str] | None = None,
    status: str | None = None,
    type: str | None = None,
    queue: str | None = None,
    now: datetime | None = None,
    actor: Actor | None = None,
) -> RetryOutcome:
    """Send every selected failed or cancelled job back to the queue; say how many, and
    which were left alone for their ``unique_key``.

    The selection is the job list's filters (``status``/``queue`` exact, ``type`` a
    substring) and/or ``ids``; all of them empty raises ``EmptySelection``. Each job gets
    attempts 0, ``available_at = now``, lock, error, result, ``finished_at`` and cancel
    request cleared, and one ``manual_retry`` event keeping its previous status, attempts
    and error; jobs in other states are left alone. At most one job of a ``unique_key`` is
    active: a job whose key a queued or running job holds is not retried, nor are the
    older ones when several selected jobs share a key (the newest is); each is reported
    with the job that holds its key (the first ``HELD_KEYS_REPORTED``). One statement on
    PostgreSQL: all of it or nothing. ``actor`` is recorded in each event.
    """
    selection = _selection(ids=ids, status=status, type=type, queue=queue)
    return get_driver().retry_jobs(
        selection,
        now=_now(now),
        message=MESSAGES[JobEventType.MANUAL_RETRY],
        held_max=HELD_KEYS_REPORTED,
        data=_with_actor({}, actor),
    )


def retry_job(
    *, job_id: UUID | str, now: datetime | None = None, actor: Actor | None = None
) -> JobRow:
    """Manually send a failed or cancelled job back to the queue with a fresh budget.

    As ``retry_jobs`` for one job. Raises ``JobNotFound``; ``UniqueKeyHeld`` (naming the
    job that holds it) when another active job holds its ``unique_key``; or
    ``InvalidTransition`` (carrying the current status) when the job is neither failed
    nor cancelled. Nothing is written in those cases.
    """
    outcome = retry_jobs(ids=[job_id], now=now, actor=actor)
    if not outcome:
        status = Job.objects.by_id(job_id).status
        if outcome.held:
            (held,) = outcome.held
            raise UniqueKeyHeld(
                current_status=status, unique_key=held.unique_key, held_by=held.held_by
            )
        raise InvalidTransition(
            f"Only failed or cancelled jobs can be retried; job is {status}.",
            current_status=status,
        )
    return _current_row(job_id)


def cancel_jobs(
    *,
    ids: Sequence[UUID | str] | None = None,
    status: str | None = None,
    type: str | None = None,
    queue: str | None = None,
    now: datetime | None = None,
    actor: Actor | None = None,
) -> CancelOutcome:
    """Cancel every selected job that has not finished; say how many changed and how.

    Selection as ``retry_jobs``. A queued job becomes ``cancelled`` at once (event
    ``cancelled``); a running one gets ``cancel_requested_at`` (event
    ``cancel_requested``), its worker learns it at the next heartbeat and the attempt ends
    as ``cancelled``. A running job already asked, and finished jobs, are left alone, so
    each job changes once, also when a worker claims it meanwhile. One statement on
    PostgreSQL. ``actor`` is recorded in each event.
    """
    selection = _selection(ids=ids, status=status, type=type, queue=queue)
    return get_driver().cancel_jobs(
        selection,
        now=_now(now),
        cancelled=Event(MESSAGES[JobEventType.CANCELLED], _with_actor({}, actor)),
        requested=Event(MESSAGES[JobEventType.CANCEL_REQUESTED], _with_actor({}, actor)),
    )


def cancel_job(
    *, job_id: UUID | str, now: datetime | None = None, actor: Actor | None = None
) -> JobRow:
    """Cancel one job: queued -> cancelled now; running -> cancel requested.

    As ``cancel_jobs`` for one job; asking again while it runs changes nothing. Raises
    ``JobNotFound``, or ``InvalidTransition`` (carrying the status) for a finished job.
    """
    if not cancel_jobs(ids=[job_id], now=now, actor=actor):
        status = Job.objects.by_id(job_id).status
        if status != JobStatus.RUNNING:
            raise InvalidTransition(
                f"Only queued or running jobs can be cancelled; job is {status}.",
                current_status=status,
            )
    return _current_row(job_id)


def run_job_now(
    *, job_id: UUID | str, now: datetime | None = None, actor: Actor | None = None
) -> JobRow:
    """Make a queued job that is not yet due (scheduled for later, or waiting out a retry's
    backoff) due now, with a ``run_now`` event naming ``actor`` and the time it was due;
    workers of its queue are woken. The job and its event commit together. Raises
    ``JobNotFound``, or ``InvalidTransition`` (carrying the status) when the job is not
    queued or already due: nothing is written then."""
    now = _now(now)
    job = Job.objects.by_id(job_id)
    data = _with_actor({"previous_available_at": event_time(job.available_at)}, actor)
    if not get_driver().run_job_now(
        job.pk, now=now, event=Event(MESSAGES[JobEventType.RUN_NOW], data)
    ):
        current = Job.objects.by_id(job_id)
        raise InvalidTransition(
            "Only a queued job that is not yet due can be run now; job is "
            f"{current.status}{' and due' if current.status == JobStatus.QUEUED else ''}.",
            current_status=current.status,
        )
    get_driver().wake(job.queue)
    return _current_row(job_id)


# --- Worker presence --------------------------------------------------------------------

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


# --- Flow control: queues (issue 24) ----------------------------------------------------

_UNSET: Any = object()


def _queue_row(queue: str, now: datetime) -> QueueSettings:
    """The queue's settings row, locked for this transaction (created when missing)."""
    QueueSettings.objects.get_or_create(name=queue, defaults={"updated_at": now})
    return QueueSettings.objects.select_for_update().get(name=queue)


def pause_queue(
    *, queue: str, now: datetime | None = None, actor: Actor | None = None
) -> QueueSettings:
    """Pause ``queue`` cluster-wide: from the commit on, no worker claims from it (every
    claim reads the queue's row, under its lock when the queue is gated); running jobs
    finish. Pausing a paused queue keeps its ``paused_at``."""
    now = _now(now)
    with transaction.atomic():
        row = _queue_row(queue, now)
        if row.paused_at is None:
            row.paused_at = now
            row.updated_at = now
            row.save(update_fields=["paused_at", "updated_at"])
    _audit("queue_paused", actor, queue=queue)
    return row


def resume_queue(
    *, queue: str, now: datetime | None = None, actor: Actor | None = None
) -> QueueSettings:
    """Resume ``queue``: claims start again, and idle workers are woken at once (the
    notification a create sends, on commit)."""
    now = _now(now)
    with transaction.atomic():
        row = _queue_row(queue, now)
        if row.paused_at is not None:
            row.paused_at = None
            row.updated_at = now
            row.save(update_fields=["paused_at", "updated_at"])
        get_driver().wake(queue)
    _audit("queue_resumed", actor, queue=queue)
    return row


def set_queue_limits(
    *,
    queue: str,
    concurrency_limit: int | None = _UNSET,
    rate_limit: int | None = _UNSET,
    rate_period_seconds: int | None = _UNSET,
    now: datetime | None = None,
    actor: Actor | None = None,
) -> QueueSettings:
    """Set the limits given (``None`` removes one; omitted ones stay). At most
    ``concurrency_limit`` jobs of the queue run at once, and at most ``rate_limit`` are
    claimed in any ``rate_period_seconds`` window, across every worker; the database's
    checks refuse a limit below 1 and a rate without its period. A limit is its number
    alone: claims count the queue's running jobs under this row's lock, so a change
    takes effect at the next claim, jobs running above a lowered limit finish and hold
    up new claims until the queue fits it, and nothing is left to reconcile. A changed
    rate keeps the window of claims already made. Workers are woken, as a raised limit
    may admit waiting jobs."""
    now = _now(now)
    with transaction.atomic():
        row = _queue_row(queue, now)
        if concurrency_limit is not _UNSET:
            row.concurrency_limit = concurrency_limit
        if rate_limit is not _UNSET:
            row.rate_limit = rate_limit
            if rate_limit is None:
                row.rate_period_seconds = None
        if rate_period_seconds is not _UNSET and row.rate_limit is not None:
            row.rate_period_seconds = rate_period_seconds
        row.updated_at = now
        row.save()
        get_driver().wake(queue)
    _audit(
        "queue_limits_changed",
        actor,
        queue=queue,
        concurrency_limit=row.concurrency_limit,
        rate_limit=row.rate_limit,
        rate_period_seconds=row.rate_period_seconds,
    )
    return row


# --- Flow control: schedules -----------------------------------------------------------


def _schedule_spec(name: str) -> ScheduleSpec:
    """The declared schedule ``name``: ``ScheduleNotFound`` when none is, ``ScheduleInvalid``
    when it cannot run as declared."""
    schedules = configured_schedules()
    if name in schedules.invalid:
        raise ScheduleInvalid(name, schedules.invalid[name])
    spec = schedules.valid.get(name)
    if spec is None:
        raise ScheduleNotFound(name)
    return spec


def _declared(name: str) -> None:
    """``ScheduleNotFound`` unless ``name`` is declared (runnable or not)."""
    if name not in configured_schedules().names():
        raise ScheduleNotFound(name)


def _schedule_row(name: str, now: datetime, *, skip_locked: bool = False) -> ScheduleState | None:
    """The schedule's state row, locked for this transaction; a new one starts at ``now``
    (ticks before a schedule was first seen are not due). ``skip_locked``: ``None`` when
    another transaction holds it, instead of waiting."""
    ScheduleState.objects.get_or_create(name=name, defaults={"last_tick_at": now})
    rows = ScheduleState.objects.select_for_update(skip_locked=skip_locked).filter(name=name)
    return rows.first()


def _locked_schedule_row(name: str, now: datetime) -> ScheduleState:
    row = _schedule_row(name, now)
    assert row is not None  # created above, and waited for
    return row


def pause_schedule(
    *, name: str, now: datetime | None = None, actor: Actor | None = None
) -> ScheduleState:
    """Pause a declared schedule: no tick is enqueued while it is paused (also one that
    cannot run as declared, which then stops failing)."""
    _declared(name)
    now = _now(now)
    with transaction.atomic():
        row = _locked_schedule_row(name, now)
        if row.paused_at is None:
            row.paused_at = now
            row.updated_at = now
            row.save(update_fields=["paused_at", "updated_at"])
    _audit("schedule_paused", actor, schedule=name)
    return row


def resume_schedule(
    *, name: str, now: datetime | None = None, actor: Actor | None = None
) -> ScheduleState:
    """Resume a schedule: the ticks that fell while it was paused are not run; the next
    tick after now is."""
    _declared(name)
    now = _now(now)
    with transaction.atomic():
        row = _locked_schedule_row(name, now)
        if row.paused_at is not None:
            row.paused_at = None
            row.last_tick_at = max(row.last_tick_at, now)
            row.updated_at = now
            row.save(update_fields=["paused_at", "last_tick_at", "updated_at"])
    _audit("schedule_resumed", actor, schedule=name)
    return row


def _schedule_job(
    spec: ScheduleSpec, *, key: str | None, tick: str, actor: Actor | None = None
) -> NewJobSpec:
    # A job triggered by hand says who asked in its metadata (string values only).
    by = (
        {}
        if actor is None
        else {"triggered_by": actor.user or "anonymous", "triggered_via": actor.via}
    )
    return NewJobSpec(
        type=spec.target,
        payload=spec.payload,
        priority=spec.priority,
        queue=spec.queue,
        idempotency_key=key,
        metadata={"schedule": spec.name, "schedule_tick": tick, **by},
    )


def trigger_schedule(
    *, name: str, now: datetime | None = None, actor: Actor | None = None
) -> tuple[ScheduleState, JobRow]:
    """Enqueue one job of the schedule now, outside its ticks (paused or not); it becomes
    the schedule's last job. The job and the schedule's row commit together, inside the
    caller's transaction when there is one. ``ScheduleInvalid`` for a schedule that cannot
    run as declared: nothing is written. ``actor`` goes into the job's metadata
    (``triggered_by``, ``triggered_via``)."""
    spec = _schedule_spec(name)
    now = _now(now)
    with transaction.atomic():
        row = _locked_schedule_row(name, now)
        ((job, _),) = create_jobs(
            [_schedule_job(spec, key=None, tick="manual", actor=actor)], now=now
        )
        row.last_job_id = job.id
        row.updated_at = now
        row.save(update_fields=["last_job_id", "updated_at"])
    return row, job


# A schedule whose pass failed is tried again after as long as it had been failing when
# last tried (1 s, 1 s, 2 s, 4 s...), at least this long and at most
# SCHEDULE_RETRY_MAX_SECONDS (every worker process alike: the times are on its row).
SCHEDULE_RETRY_MIN_SECONDS = 1.0
SCHEDULE_RETRY_MAX_SECONDS = 60.0
SCHEDULE_ERROR_MAX_CHARS = 2_000


@dataclass(frozen=True)
class TickPass:
    """What one ``enqueue_due_ticks`` did: the jobs it created, the schedules whose pass
    failed with a new error (name -> error), and those that succeeded again."""

    created: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    recovered: list[str] = field(default_factory=list)


def enqueue_due_ticks(*, now: datetime | None = None) -> TickPass:
    """Enqueue every due tick of every unpaused schedule that can run, each schedule on its
    own. Any number of processes may call it at once: each schedule is handled under a
    lock on its state row, which a pass that finds it held skips (never waits for), and
    each tick's job carries the permanent idempotency key ``schedule:<name>:<tick>``, so a
    tick is one job whatever happens. Ticks older than ``JOB_SCHEDULE_GRACE_SECONDS`` were
    missed: ``latest`` enqueues the newest of them once, ``skip`` none; their number
    costs nothing (``jobs.flowcontrol.plan_ticks``), and a pass enqueues at most
    ``MAX_TICKS_PER_PASS`` on-time ticks of a schedule, leaving the rest to the next.

    A schedule whose pass fails (the database refuses its job, say) changes nothing of
    its own, keeps its error on its row (``error``, since ``error_at``) and is tried again
    after a back-off; the others go on. The error is reported once per change
    (``TickPass.failed``), and its clearing once (``TickPass.recovered``). A database
    that failed rather than refused (a lost connection, a read-only server during a
    failover) is raised with nothing recorded: it is no schedule's error, every schedule
    would meet it, and the caller's loop retries the pass."""
    created = 0
    failed: dict[str, str] = {}
    recovered: list[str] = []
    for spec in configured_schedules().valid.values():
        try:
            made, was_failing = _enqueue_schedule_ticks(spec, now)
        except Exception as exc:
            if _database_failed(exc):
                # Recorded, it would set the schedule apart on its back-off once the
                # database answers again (the recording may well reach the new primary
                # that the pass just missed), and show it failing for nothing of its own.
                raise
            error = storable_text(f"{type(exc).__name__}: {exc}".strip())[:SCHEDULE_ERROR_MAX_CHARS]
            if _record_schedule_error(spec.name, error, _now(now)):
                failed[spec.name] = error
            continue
        created += made
        if was_failing:
            recovered.append(spec.name)
    return TickPass(created=created, failed=failed, recovered=recovered)


def _database_failed(exc: Exception) -> bool:
    """The database failed the pass, not its schedule: unreachable or lost (Django's
    ``OperationalError``/``InterfaceError``: a dead server, a connection timeout, a lock
    or statement timeout) or read-only (a standby, a primary being demoted)."""
    if isinstance(exc, OperationalError | InterfaceError):
        return True
    return isinstance(exc, DatabaseError) and is_read_only(exc)


def _enqueue_schedule_ticks(spec: ScheduleSpec, now: datetime | None) -> tuple[int, bool]:
    """One schedule's due ticks; (jobs created, whether this cleared an error)."""
    with transaction.atomic():
        row = _schedule_row(spec.name, _now(now), skip_locked=True)
        if row is None or row.paused_at is not None:
            return 0, False
        at = _now(now)  # after the lock
        if row.error and row.error_at is not None:
            # How long it had been failing when last tried (updated_at): each try waits
            # that long, so the back-off doubles. Measured to now instead, the wait would
            # outgrow the time since the last try forever after a second failure, and the
            # schedule would stall for SCHEDULE_RETRY_MAX_SECONDS.
            failing = (row.updated_at - row.error_at).total_seconds()
            wait = min(max(failing, SCHEDULE_RETRY_MIN_SECONDS), SCHEDULE_RETRY_MAX_SECONDS)
            if at < row.updated_at + timedelta(seconds=wait):
                return 0, False
        plan = plan_ticks(
            spec,
            last_tick=row.last_tick_at,
            now=at,
            grace_seconds=app_settings.JOB_SCHEDULE_GRACE_SECONDS,
        )
        if plan.seen_until == row.last_tick_at and not row.error:
            return 0, False
        specs = [
            _schedule_job(spec, key=tick_key(spec.name, tick), tick=tick.isoformat())
            for tick in plan.ticks
        ]
        results = create_jobs(specs, now=at) if specs else []
        row.last_tick_at = plan.seen_until
        if results:
            row.last_enqueued_tick_at = plan.ticks[-1]
            row.last_job_id = results[-1][0].id
        was_failing = bool(row.error)
        row.error, row.error_at = "", None
        row.updated_at = at
        row.save()
    return sum(1 for _, was_created in results if was_created), was_failing


def _record_schedule_error(name: str, error: str, now: datetime) -> bool:
    """Keep ``error`` on the schedule's row (since when it fails, and when it was last
    tried); whether it is a new error (it was not failing, or failed otherwise)."""
    with transaction.atomic():
        row = _schedule_row(name, now, skip_locked=True)
        if row is None:
            return False  # another process is at it, and will record what it meets
        changed = row.error != error
        if not row.error:
            row.error_at = now
        row.error = error
        row.updated_at = now
        row.save(update_fields=["error", "error_at", "updated_at"])
    return changed
