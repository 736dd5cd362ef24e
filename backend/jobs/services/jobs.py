"""A job's life: create, claim, complete, fail, time out, renew, heartbeat, progress.

Data access: the database driver only (``jobs.drivers.get_driver()``). Each function
decides the rule (next status, event, back-off, lease) and hands the values to the
driver, which runs the transition as one statement on PostgreSQL and one ORM
transaction elsewhere; no model is read or written here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

from django.db import transaction

from .. import tracing
from ..conf import app_settings
from ..drivers import Completion, Event, Failure, Heartbeat, JobRow, NewJob, Owner, get_driver
from ..errors import DuplicateIdempotencyKey, InvalidDependencies
from ..limits import RETRY_DELAY_MAX_SECONDS, metadata_problem
from ..models import DEFAULT_QUEUE, JobEventType, OnParentFailure
from ..storable import UnstorableValue, json_problem, storable_text, to_storable_json
from .common import _now, backoff_delay_seconds, event_time
from .dependencies import dependencies_problem, settle_waiting_jobs

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
    JobEventType.SNOOZED: "Snoozed; the attempt is not spent",
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


def _lease_until(now: datetime, lease_seconds: int | None) -> tuple[int, datetime]:
    lease = app_settings.JOB_WORKER_LEASE_SECONDS if lease_seconds is None else lease_seconds
    return lease, now + timedelta(seconds=lease)


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
    depends_on: Sequence[UUID | str] = (),
    on_parent_failure: str = OnParentFailure.CANCEL,
    now: datetime | None = None,
) -> tuple[JobRow, bool]:
    """Enqueue a job and its ``created`` event; return ``(job, created)``.

    With an ``idempotency_key`` that already exists, nothing is written and the existing
    job is returned with ``created=False``; so with a ``unique_key`` that a queued or
    running job holds (a finished one frees it). Concurrent creates with one key yield
    one job: the partial unique index decides, and the loser returns the winner's row
    (``matched_rule`` says which key matched). A payload the database cannot store raises
    ``UnstorableValue`` and nothing is written. With ``depends_on`` (existing job ids) the
    job waits for them (``jobs.services.settle_waiting_jobs``); ``on_parent_failure``
    (``cancel`` or ``run``) says what it does when one fails for good or is cancelled.
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
        depends_on=tuple(depends_on),
        on_parent_failure=on_parent_failure,
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
    depends_on: tuple[UUID | str, ...] = ()
    on_parent_failure: str = OnParentFailure.CANCEL
    # A workflow's member (``jobs.services.create_workflow`` sets them): its workflow and
    # its step name there.
    workflow_id: UUID | None = None
    ref: str = ""


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
        if spec.depends_on:
            problem = (
                "depends_on cannot be combined with unique_key."
                if spec.unique_key is not None
                else dependencies_problem(spec.depends_on)
            )
            if problem is not None:
                raise InvalidDependencies(problem, index=index)
        if spec.on_parent_failure not in OnParentFailure.values:
            raise InvalidDependencies(
                f"on_parent_failure must be one of {', '.join(OnParentFailure.values)}.",
                index=index,
            )
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
                workflow_id=spec.workflow_id,
                ref=spec.ref,
            )
        )
    if not jobs:
        return []
    if not any(spec.depends_on for spec in specs):
        with tracing.sending(jobs) as traced:
            return get_driver().create_jobs(
                traced,
                message=MESSAGES[JobEventType.CREATED],
                now=now,
                notify=app_settings.JOB_NOTIFY,
            )
    return _create_with_dependencies(specs, jobs, now=now)


def _create_with_dependencies(
    specs: Sequence[NewJobSpec], jobs: list[NewJob], *, now: datetime
) -> list[tuple[JobRow, bool]]:
    """``create_jobs`` where some jobs wait for parents: the jobs, their edges and the
    waiting status in one transaction, then settled at once (their parents may have
    finished already); the rows as they are after that."""
    driver = get_driver()
    with transaction.atomic(), tracing.sending(jobs) as traced:
        results = driver.create_jobs(
            traced, message=MESSAGES[JobEventType.CREATED], now=now, notify=app_settings.JOB_NOTIFY
        )
        edges = [
            (row.id, UUID(str(parent)), spec.on_parent_failure)
            for spec, (row, created) in zip(specs, results, strict=True)
            if created
            for parent in spec.depends_on
        ]
        if not edges:
            return results
        driver.add_dependencies(edges, now=now)
        children = list({job_id for job_id, _, _ in edges})
        settle_waiting_jobs(ids=children, limit=len(children), now=now)
        return [(driver.job(row.id) if created else row, created) for row, created in results]


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


def snooze_job(
    *,
    job_id: UUID | str,
    worker_id: str,
    attempt: int,
    seconds: float,
    now: datetime | None = None,
) -> JobRow | None:
    """The owner's attempt asked to run again later: back to ``queued`` with
    ``available_at = now + seconds`` and a ``snoozed`` event (``data.seconds``), its attempt
    not spent (the next claim takes its number again), in one statement, as a release. A
    cancel requested meanwhile cancels it instead. ``None`` when the worker no longer owns
    the attempt (nothing written). ``seconds`` must be a finite number from 0 to
    ``RETRY_DELAY_MAX_SECONDS``: anything else raises ``ValueError`` before any write.
    """
    problem = delay_problem(seconds)
    if problem is not None:
        raise ValueError(f"snooze seconds {problem}")
    now = _now(now)
    available_at = now + timedelta(seconds=seconds)
    data = {"seconds": seconds, "available_at": event_time(available_at)}
    error = "Cancelled while snoozing"
    rows = get_driver().release_jobs(
        [Owner(job_id, worker_id, attempt)],
        now=now,
        event=Event(MESSAGES[JobEventType.SNOOZED], data),
        cancelled=Event(error, {"error": error, "reason": "cancelled"}),
        available_at=available_at,
        event_type=JobEventType.SNOOZED,
    )
    return rows[0] if rows else None


def delay_problem(seconds: object) -> str | None:
    """Why ``seconds`` is no wait a job can be given (a number, finite, from 0 to
    ``RETRY_DELAY_MAX_SECONDS``), or ``None``."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return f"must be a number, not {seconds!r}"
    if math.isnan(seconds) or not 0 <= seconds <= RETRY_DELAY_MAX_SECONDS:
        return f"must be from 0 to {RETRY_DELAY_MAX_SECONDS}, not {seconds!r}"
    return None


@dataclass(frozen=True)
class AttemptFailure:
    """One failed attempt for ``fail_jobs``: its owner, the error, and what it keeps beside."""

    owner: Owner
    error: str
    details: ErrorDetails = field(default_factory=lambda: ErrorDetails())
    # The retry policy's answer: seconds before the next attempt (None: the ladder,
    # backoff_delay_seconds), or give_up: failed now whatever attempts remain.
    delay_seconds: float | None = None
    give_up: bool = False


def fail_jobs(*, failures: Sequence[AttemptFailure], now: datetime | None = None) -> list[JobRow]:
    """Record failed attempts, each under its own ownership guard; returns the rows
    changed (a stale one changes nothing), atomically (one statement on PostgreSQL).

    Attempts left: back to queued, ``available_at = now + delay``, event
    ``retry_scheduled``; the delay is the failure's ``delay_seconds``, else
    ``backoff_delay_seconds(attempt)``. Exhausted, or ``give_up``: failed with
    ``finished_at``, event ``failed``. A
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
    delay = failure.delay_seconds
    if delay is None:
        delay = backoff_delay_seconds(failure.owner.attempt)
    retry_at = now + timedelta(seconds=delay)
    retry_data = {**data, "delay_seconds": delay, "available_at": event_time(retry_at)}
    return Failure(
        error=error,
        retry_at=None if failure.give_up else retry_at,
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
