"""The driver contract: what ``jobs.services`` asks of a database, and the values it trades.

A driver runs each transition as the statement(s) its database does best, with the same
signature, the same guards and the same events on every implementation; the rules (what
the next status is, which event is written, the backoff) are decided in ``services`` and
handed over as values, so a driver holds statements and nothing else.
``tests/integration/drivers/test_driver_contract.py`` runs one behaviour suite against every
driver.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from django.db import DatabaseError

if TYPE_CHECKING:
    from django.db.models import Model

    from .portable import TokenUser, WaitingJob


def to_json(value: Any) -> str:
    """Serialise for a JSON column; NaN and Infinity are refused (not valid JSON)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True, slots=True)
class JobRow:
    """A job row as one transition left it; plain values, no model instance.

    Field order is the table's column order, so a driver can build it from a
    ``RETURNING *`` tuple (``test_job_row_matches_the_table`` keeps the two in step).
    """

    id: UUID
    type: str
    payload: Any
    status: str
    priority: int
    available_at: datetime
    attempts: int
    max_attempts: int
    idempotency_key: str | None
    locked_by: str | None
    locked_until: datetime | None
    last_error: str
    result: Any
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    queue: str
    timeout_seconds: int | None
    cancel_requested_at: datetime | None
    metadata: dict[str, str]
    unique_key: str | None = None
    concurrency_key: str | None = None
    claimed_at: datetime | None = None
    claimed_by: str | None = None
    workflow_id: UUID | None = None
    ref: str = ""

    @property
    def pk(self) -> UUID:
        return self.id


JOB_ROW_FIELDS: tuple[str, ...] = tuple(field.name for field in fields(JobRow))


@dataclass(frozen=True, slots=True)
class Owner:
    """The ownership guard: a worker's write applies only to this running attempt."""

    job_id: UUID | str
    worker_id: str
    attempt: int


@dataclass(frozen=True, slots=True)
class Completion:
    """One finished attempt of a batched completion: its owner and its result as JSON
    text (``None``: no result)."""

    owner: Owner
    result_json: str | None


def unclaimed(worker_ids: Sequence[str], claimed: Sequence[JobRow]) -> list[str]:
    """The entries of ``worker_ids`` a claim left without a job: each claimed row takes one
    entry of its owner's id (an id repeats for a thread that holds jobs)."""
    taken: dict[str, int] = {}
    for row in claimed:
        taken[row.locked_by or ""] = taken.get(row.locked_by or "", 0) + 1
    left: list[str] = []
    for worker_id in worker_ids:
        if taken.get(worker_id, 0) > 0:
            taken[worker_id] -= 1
        else:
            left.append(worker_id)
    return left


@dataclass(frozen=True, slots=True)
class NewJob:
    id: UUID
    type: str
    payload: dict[str, Any]
    priority: int
    available_at: datetime
    max_attempts: int
    idempotency_key: str | None
    created_at: datetime
    queue: str
    timeout_seconds: int | None
    event_data: dict[str, Any]
    metadata: dict[str, str]
    unique_key: str | None = None
    concurrency_key: str | None = None
    # Set for the members of a workflow (``jobs.services.create_workflow``).
    workflow_id: UUID | None = None
    ref: str = ""


@dataclass(frozen=True, slots=True)
class Event:
    """The event a transition writes beside its row change."""

    message: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Failure:
    """How a failed attempt ends: cancelled (``cancelled_event``) if a cancel was
    requested, else requeued at ``retry_at`` (``retry_event``) while attempts remain and
    ``retry_at`` is set, else failed for good (``failed_event``). ``error`` becomes
    ``last_error`` in every case."""

    error: str
    retry_at: datetime | None
    retry_event: Event
    failed_event: Event
    cancelled_event: Event


@dataclass(frozen=True, slots=True)
class Selection:
    """Jobs picked by the list filters (status exact, type substring, queue exact) and/or
    by id; the bulk transitions act on the jobs that match every given part."""

    status: str | None = None
    type: str | None = None
    queue: str | None = None
    ids: tuple[UUID | str, ...] | None = None

    @property
    def is_empty(self) -> bool:
        return self.ids is None and not (self.status or self.type or self.queue)


@dataclass(frozen=True, slots=True)
class CancelOutcome:
    cancelled: int  # queued jobs that became cancelled
    cancel_requested: int  # running jobs now asked to stop

    def __bool__(self) -> bool:
        return bool(self.cancelled or self.cancel_requested)


@dataclass(frozen=True, slots=True)
class HeldKey:
    """A job a retry left alone: another job holds its ``unique_key`` (an active one, or
    one retried in the same call), and two active jobs of a key cannot exist."""

    job_id: UUID
    unique_key: str
    held_by: UUID


@dataclass(frozen=True, slots=True)
class RetryOutcome:
    retried: int  # failed or cancelled jobs queued again
    held: list[HeldKey]  # selected ones left alone for their unique_key (the first ones)
    held_count: int  # all of them
    # Retried jobs that other jobs depend on (their dependents cancelled for them come back).
    parents: list[UUID] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.retried)


@dataclass(frozen=True, slots=True)
class Vacuumed:
    """A vacuum of ``jobs_job``: its dead row versions before, and those it had to leave
    (an older transaction may still see them)."""

    dead_rows: int
    remaining: int


@dataclass(frozen=True, slots=True)
class Analyzed:
    """An ANALYZE of ``jobs_job``: its live rows, and the rows the planner believed it held."""

    live_rows: int
    estimated_rows: int


@dataclass(frozen=True, slots=True)
class StatusEstimate:
    """The planner's idea of the jobs table: its row count and each status's share."""

    rows: int
    frequencies: dict[str, float]


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A running attempt the heartbeat still holds, and whether a cancel was requested."""

    job_id: UUID
    cancel_requested: bool


@dataclass(frozen=True, slots=True)
class ExpiredLease:
    """A running job whose lease ended, locked by the cleaning transaction."""

    id: UUID
    attempts: int
    max_attempts: int
    locked_by: str | None
    locked_until: datetime
    cancel_requested_at: datetime | None


@dataclass(frozen=True, slots=True)
class Release:
    """How cleanup ends one expired attempt: the row's next state and its event."""

    id: UUID
    status: str
    available_at: datetime | None  # None: unchanged
    finished_at: datetime | None
    error: str
    event_type: str
    attempt: int
    event: Event


@dataclass(frozen=True, slots=True)
class TypeSample:
    """One job type's newest ended attempts in a time range (at most the sample size),
    their nearest-rank percentiles in ms (``None`` without any), and its newest failure."""

    job_type: str
    attempts: int
    run_p50_ms: int | None
    run_p95_ms: int | None
    wait_p50_ms: int | None
    wait_p95_ms: int | None
    last_error: str | None
    last_error_at: datetime | None
    last_error_job_id: UUID | None


class ClaimCutShort(DatabaseError):
    """A fetch made of more than one transaction (a claim answered stale, keyed or gated is
    made again in one of its own) whose first committed and a later one failed (the error
    is its ``__cause__``). What committed is written whatever comes after: ``completed``,
    the successes it wrote, and ``claimed``, the jobs it claimed, each now running under
    its worker id with its lease, are the caller's to acknowledge and hand over."""

    def __init__(self, completed: list[JobRow], claimed: list[JobRow], error: BaseException):
        super().__init__(f"claim cut short after a commit: {error}")
        self.completed = completed
        self.claimed = claimed


class ListenerUnusable(Exception):
    """A listening connection that cannot receive notifications: it goes through a pooler
    (PgBouncer in transaction mode drops them without an error)."""

    def __init__(self, message: str, *, host: str, port: int) -> None:
        super().__init__(message)
        self.host = host
        self.port = port


class ServerInRecovery(Exception):
    """The listening connection reached a server in recovery (a standby): LISTEN would fail
    there, and notifications from the primary never reach it. Read-only like a refused write
    (``is_read_only``), so retried like a lost connection."""

    sqlstate = "25006"  # read_only_sql_transaction, as PostgreSQL says of LISTEN there


class Listening(Protocol):
    """A connection of its own that receives the notifications ``create_jobs`` sends, and
    the probes sent to it alone (``probe_channel``), which prove it still receives."""

    channel: str
    probe_channel: str
    # The payload of the last probe that arrived.
    last_probe: str | None

    def fileno(self) -> int:
        """A descriptor to wait on (``select``) until something arrives."""
        ...

    def received(self) -> list[str]:
        """The payloads (queue names of new due jobs) arrived so far, without waiting (a
        probe's sets ``last_probe``); raises when the connection was lost."""
        ...


class Driver(Protocol):
    """Every write ``jobs.services`` makes, and the database's side of the worker's
    listener. Each write is atomic on its own (one statement or one transaction) and
    writes its event with its row change, or neither."""

    name: str
    # Whether create_jobs notifies and listen() can hear it; without, workers only poll.
    supports_listen: bool

    def listen(self, *, application_name: str) -> AbstractContextManager[Listening]:
        """Open a connection of its own (named ``application_name`` where the database
        shows one) listening for ``create_jobs``' notifications; closed when the block
        ends. ``ListenerUnusable`` if it would not receive them (through a pooler),
        ``ServerInRecovery`` on a standby (before any LISTEN)."""
        ...

    def probe(self, channel: str, token: str) -> None:
        """Notify ``channel`` with ``token`` from this thread's connection, as a job's
        creation notifies: a listener that receives it is alive end to end."""
        ...

    def behind_pooler(self) -> bool:
        """Whether the default connection reaches the database through a pooler (which
        cannot carry prepared statements in transaction mode)."""
        ...

    def prepares_statements(self) -> bool:
        """Whether the hot statements are prepared, so each connection plans them once (not
        behind a transaction pooler): what makes the batched ones cheap."""
        ...

    def plan_generically(self) -> None:
        """From now on, this process's connections run the prepared statements with their
        generic plans, whatever the statistics (a worker process: its statements run per
        job, and their generic plans are the designed ones); not through a pooler."""
        ...

    def create_jobs(
        self, jobs: list[NewJob], *, message: str, now: datetime, notify: bool
    ) -> list[tuple[JobRow, bool]]:
        """Insert ``jobs`` and a ``created`` event each (``message``, the job's
        ``event_data``), all or nothing; a job whose idempotency key exists is not written
        and its existing row comes back with ``False``. Results are in input order. With
        ``notify``, idle workers of the queues that got due jobs are woken (PostgreSQL)."""
        ...

    def wake(self, queue: str) -> None:
        """Wake idle workers of ``queue`` when the current transaction commits (a resumed
        or re-limited queue); nothing where workers only poll."""
        ...

    def claim_jobs(
        self,
        completions: Sequence[Completion],
        *,
        worker_ids: Sequence[str],
        queue: str,
        now: datetime,
        locked_until: datetime,
        completed: Event,
        claimed: Event,
        lean: bool,
        synchronous_commit: bool = True,
    ) -> tuple[list[JobRow], list[JobRow]]:
        """A fetch, atomically: each attempt of ``completions`` its owner still holds
        becomes succeeded (``completed`` event unless ``lean``), and up to one job per
        entry of ``worker_ids`` is claimed in claim order (priority desc, available_at,
        created_at, id), skipping rows other claimers hold, the n-th to the n-th id (an id
        may repeat: a thread that holds jobs), each with its ``claimed`` event (unless
        ``lean``), ``claimed_at`` and ``claimed_by``, within the queue's flow control (no
        claim from a paused queue; no more than its rate window and concurrency limit
        admit, counted under the queue's lock; a key at its limit skipped). (completed
        rows, claimed rows, each id's in claim order). One statement on PostgreSQL: the
        single-row one for one worker id and at most its own completion.
        ``synchronous_commit=False`` with completions: the commit does not wait for its
        WAL to reach disk (as ``complete_jobs``)."""
        ...

    def release_jobs(
        self,
        owners: Sequence[Owner],
        *,
        now: datetime,
        event: Event,
        cancelled: Event,
        available_at: datetime | None = None,
        event_type: str = "released",
    ) -> list[JobRow]:
        """Each attempt its owner still holds goes back to ``queued`` with its attempt not
        spent and an ``event_type`` event (``event``: ``released``, or ``snoozed`` with its
        ``available_at`` set in place of the time it was due), atomically; one whose cancel was
        requested becomes ``cancelled`` with a ``cancelled`` event (``cancelled``, whose
        data's ``error`` is also its ``last_error``). The others change nothing. The rows
        changed."""
        ...

    def active_queues(self) -> list[str]:
        """The queues that have queued jobs, in name order."""
        ...

    def vacuum_jobs_table(self, *, min_dead_rows: int) -> Vacuumed | None:
        """Vacuum ``jobs_job`` if its dead row versions passed both autovacuum's own
        threshold for it and ``min_dead_rows``, unless another vacuum holds it; ``None``
        when none was due (or the database has no such thing)."""
        ...

    def analyze_jobs_table(self, *, min_rows: int) -> Analyzed | None:
        """ANALYZE ``jobs_job`` if it holds more than ``min_rows`` live rows beyond twice
        what the planner believes, unless another ANALYZE holds it; ``None`` when none was
        due (or the database keeps no such statistics)."""
        ...

    def status_estimate(self) -> StatusEstimate | None:
        """The table's estimated size and status shares, or ``None`` when the database
        keeps no such statistics (then counts are exact)."""
        ...

    def type_samples(
        self, types: list[str], *, start: datetime, end: datetime, size: int
    ) -> list[TypeSample]:
        """For each of ``types`` (in that order): the run time and queue wait percentiles
        of its newest ``size`` attempt-ending events with a run time in ``[start, end]``
        (nearest rank: the smallest value with at least p of the sample at or below it),
        and its newest failure event (retry_scheduled, failed, timeout_requeued) there."""
        ...

    def complete_jobs(
        self,
        completions: Sequence[Completion],
        *,
        now: datetime,
        event: Event,
        synchronous_commit: bool = True,
        lean: bool = False,
    ) -> list[JobRow]:
        """Each attempt its owner still holds becomes succeeded with its result and a
        ``succeeded`` event (none when ``lean``), atomically; the others change nothing.
        The completed rows. ``synchronous_commit=False``: the commit does not wait for its
        WAL to reach disk (PostgreSQL; a crash of the database may forget it, and the jobs
        run again)."""
        ...

    def fail_jobs(
        self, failures: Sequence[tuple[Owner, Failure]], *, now: datetime
    ) -> list[JobRow]:
        """End each owner's attempt as its ``Failure`` says (cancelled, requeued or failed),
        atomically; attempts no longer owned change nothing. The rows changed."""
        ...

    def renew_lease(
        self, owner: Owner, *, locked_until: datetime, now: datetime, event: Event
    ) -> bool:
        """Move the owner's lease to ``locked_until``; ``lease_renewed`` event."""
        ...

    def heartbeat(
        self,
        owners: list[Owner],
        *,
        locked_until: datetime,
        now: datetime,
        watch: Sequence[Owner] = (),
    ) -> list[Heartbeat]:
        """Move every still-owned lease among ``owners`` to ``locked_until`` (no event),
        and look at the attempts of ``watch`` without moving theirs (handlers that opted
        out of the heartbeat); return the still-owned attempts of both, so the caller
        learns which it lost and which must stop."""
        ...

    def record_progress(self, owner: Owner, *, now: datetime, event: Event) -> bool:
        """Append a ``progress`` event for the owner's attempt; the row is unchanged."""
        ...

    def lock_expired_leases(self, *, now: datetime, limit: int) -> list[ExpiredLease]:
        """Lock (SKIP LOCKED) up to ``limit`` running jobs whose lease ended before ``now``,
        oldest lease first. Call inside a transaction; ``release_expired_leases`` ends it."""
        ...

    def release_expired_leases(
        self, releases: list[Release], *, now: datetime, worker_id: str | None
    ) -> None:
        """Apply each release to its locked row and write its event."""
        ...

    def retry_jobs(
        self,
        selection: Selection,
        *,
        now: datetime,
        message: str,
        held_max: int,
        data: Mapping[str, Any] | None = None,
    ) -> RetryOutcome:
        """Every selected failed or cancelled job goes back to queued with a fresh attempt
        budget and a ``manual_retry`` event keeping its previous status, attempts and error,
        but one whose ``unique_key`` another job holds (an active job, or the newest
        selected job of that key, which is retried): that one is left alone and reported
        (the first ``held_max`` of them). Nothing half-written."""
        ...

    def run_job_now(self, job_id: UUID | str, *, now: datetime, event: Event) -> bool:
        """The job, if queued and not yet due, becomes due at ``now`` (``run_now`` event);
        ``True`` when it changed."""
        ...

    def job(self, job_id: UUID | str) -> JobRow:
        """The job's row as it is now; ``JobNotFound`` when there is none."""
        ...

    def cancel_jobs(
        self, selection: Selection, *, now: datetime, cancelled: Event, requested: Event
    ) -> CancelOutcome:
        """Selected queued jobs become cancelled (``cancelled`` event); selected running
        jobs not yet asked get ``cancel_requested_at`` (``cancel_requested`` event)."""
        ...

    # The health probe and a request's authentication and permission check
    # (``jobs.drivers.portable``: the same statements on every driver).

    def ping(self) -> None:
        """One round trip to the database; ``DatabaseError`` when it fails."""
        ...

    def held_permissions(
        self, *, user_pk: Any, app_label: str, codenames: Sequence[str]
    ) -> frozenset[str]:
        """Which of ``codenames`` of ``app_label`` the user holds, directly or through a
        group."""
        ...

    def token_user(self, token_model: type[Model], key: str, *, app_label: str) -> TokenUser | None:
        """The user and the token of an API key, with the user's permissions of
        ``app_label``; ``None`` for an unknown key."""
        ...

    # Job dependencies (``jobs.drivers.portable.DependencyStatements``, on every driver).

    def existing_job_ids(self, ids: Sequence[UUID | str]) -> set[UUID]:
        """Which of ``ids`` are jobs."""
        ...

    def job_rows(self, ids: Sequence[UUID]) -> dict[UUID, JobRow]:
        """The rows of the jobs ``ids`` names, as they are now, by id."""
        ...

    def create_workflow(self, workflow_id: UUID, *, name: str, now: datetime) -> None:
        """Write a workflow's row (its jobs are written by ``create_jobs``)."""
        ...

    def revive_dependents(
        self, parent_ids: Sequence[UUID], *, now: datetime, message: str, data: dict[str, Any]
    ) -> list[tuple[UUID, UUID]]:
        """The cancelled dependents whose cancel named one of ``parent_ids``, and theirs
        recursively, back to waiting with a ``manual_retry`` event; ``(job, parent)``
        each. Inside the caller's transaction."""
        ...

    def add_dependencies(self, edges: Sequence[tuple[UUID, UUID, str]], *, now: datetime) -> None:
        """Write ``(job, parent, on_parent_failure)`` edges; their jobs become waiting."""
        ...

    def find_settleable_jobs(
        self, *, limit: int, after: tuple[datetime, UUID] | None = None
    ) -> tuple[list[UUID], tuple[datetime, UUID] | None]:
        """Which of the next ``limit`` waiting jobs after ``after`` their parents decide
        now (unlocked); and where the next probe starts (``None``: the end was reached)."""
        ...

    def lock_settleable_jobs(
        self,
        *,
        limit: int,
        ids: Sequence[UUID] | None = None,
        after: tuple[datetime, UUID] | None = None,
    ) -> tuple[list[WaitingJob], tuple[datetime, UUID] | None]:
        """Lock waiting jobs whose parents decide them now, with the parents' statuses,
        among ``ids`` or among the next ``limit`` waiting jobs after ``after``; and where
        the next window starts (``None``: the end was reached)."""
        ...

    def settle_jobs(
        self,
        *,
        queued: Sequence[UUID],
        cancelled: Sequence[tuple[WaitingJob, str, dict[str, Any]]],
        now: datetime,
    ) -> list[str]:
        """Locked waiting jobs queued, or cancelled with their event; the queued ones'
        queues."""
        ...
