"""The ORM driver: the same contract through Django's ORM, one transaction per call.

It serves the embedded SQLite database (and any other the ORM speaks); the driver suite
also runs it on PostgreSQL, so the two implementations are held to the same behaviour.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from ..conf import app_settings
from ..flowcontrol import key_limit, rate_room
from ..models import (
    FAILURE_EVENT_TYPES,
    AtUtc,
    ConcurrencyKeyLimit,
    Job,
    JobDependency,
    JobEvent,
    JobEventType,
    JobStatus,
    QueueSettings,
)
from .base import (
    JOB_ROW_FIELDS,
    Analyzed,
    CancelOutcome,
    Completion,
    Event,
    ExpiredLease,
    Failure,
    Heartbeat,
    HeldKey,
    JobRow,
    Listening,
    NewJob,
    Owner,
    Release,
    RetryOutcome,
    Selection,
    StatusEstimate,
    TypeSample,
    Vacuumed,
)
from .portable import DependencyStatements, PortableStatements


def job_row(job: Job) -> JobRow:
    return JobRow(*(getattr(job, name) for name in JOB_ROW_FIELDS))


def _owned(owner: Owner) -> Q:
    return Q(
        pk=owner.job_id,
        status=JobStatus.RUNNING,
        locked_by=owner.worker_id,
        attempts=owner.attempt,
    )


def _any_owned(owners: Iterable[Owner]) -> Q:
    held = Q(pk__in=[])
    for owner in owners:
        held |= _owned(owner)
    return held


def _lock_owned_type(owner: Owner) -> str | None:
    """Lock the owner's running attempt for this transaction; its job type, or ``None``
    when the attempt is no longer the owner's (the guard of renew and progress)."""
    job_type: str | None = (
        Job.objects.select_for_update().filter(_owned(owner)).values_list("type", flat=True).first()
    )
    return job_type


def _event(
    job_id: Any, type: str, attempt: int, event: Event, *, job_type: str, **extra: Any
) -> JobEvent:
    return JobEvent(
        job_id=job_id,
        type=type,
        attempt=attempt,
        message=event.message,
        data=event.data,
        job_type=job_type,
        **extra,
    )


def _owner_event(
    owner: Owner, type: str, event: Event, now: datetime, *, job_type: str, **extra: Any
) -> None:
    _event(
        owner.job_id,
        type,
        owner.attempt,
        event,
        job_type=job_type,
        worker_id=owner.worker_id,
        created_at=now,
        **extra,
    ).save()


def milliseconds(delta: timedelta) -> int:
    """Whole milliseconds, floored, never negative (as queries.sql computes them)."""
    return max(delta // timedelta(milliseconds=1), 0)


def _attempt_timings(
    attempts: Iterable[tuple[Any, int]], now: datetime
) -> dict[tuple[str, int], dict[str, int | None]]:
    """``wait_ms`` and ``run_ms`` (up to ``now``) of each (job id, attempt) from its
    newest claimed event; an attempt without one is left out."""
    wanted = {(str(job_id), attempt) for job_id, attempt in attempts}
    if not wanted:
        return {}
    claims = (
        JobEvent.objects.filter(
            job_id__in={job_id for job_id, _ in wanted}, type=JobEventType.CLAIMED
        )
        .order_by("id")
        .values_list("job_id", "attempt", "wait_ms", "created_at")
    )
    found: dict[tuple[str, int], dict[str, int | None]] = {}
    for job_id, attempt, wait_ms, claimed_at in claims:  # newest last, so it wins
        if (str(job_id), attempt) in wanted:
            found[str(job_id), attempt] = {
                "wait_ms": wait_ms,
                "run_ms": milliseconds(now - claimed_at),
            }
    return found


def _ended_attempt(owner: Owner, now: datetime) -> dict[str, int | None]:
    """The timing columns of the event that ends the owner's attempt."""
    key = (str(owner.job_id), owner.attempt)
    return _attempt_timings([key], now).get(key, {"wait_ms": None, "run_ms": None})


def _next_candidate(
    queue: str, now: datetime, key_limits: dict[str, int], blocked: list[str]
) -> Job | None:
    """The first due job of ``queue`` in claim order that no other claimer holds (locked,
    SKIP LOCKED), skipping the keys at their limits (added to ``blocked`` as found)."""
    while True:
        job = (
            Job.objects.select_for_update(skip_locked=True)
            .filter(
                status=JobStatus.QUEUED,
                queue=queue,
                available_at__lte=now,
                attempts__lt=F("max_attempts"),
            )
            .exclude(concurrency_key__in=blocked)
            # job_claim_idx's order (on SQLite, AtUtc is the column itself).
            .order_by("-priority", AtUtc("available_at").asc(), "created_at", "id")
            .first()
        )
        if job is None or job.concurrency_key is None or not key_limits:
            return job
        key_max = key_limit(job.concurrency_key, key_limits)
        if key_max is None or (
            Job.objects.filter(
                status=JobStatus.RUNNING, concurrency_key=job.concurrency_key
            ).count()
            < key_max
        ):
            return job
        blocked.append(job.concurrency_key)


def _claim(
    job: Job, worker_id: str, now: datetime, locked_until: datetime, event: Event, *, lean: bool
) -> JobRow:
    """``job`` (locked) becomes running under ``worker_id``'s lease, with its claimed event
    (none in a lean timeline: ``claimed_at`` and ``claimed_by`` say it)."""
    job.status = JobStatus.RUNNING
    job.attempts += 1
    job.locked_by = worker_id
    job.locked_until = locked_until
    job.last_error = ""
    job.result = None
    job.updated_at = now
    job.claimed_at = now
    job.claimed_by = worker_id
    job.save(
        update_fields=[
            "status",
            "attempts",
            "locked_by",
            "locked_until",
            "last_error",
            "result",
            "updated_at",
            "claimed_at",
            "claimed_by",
        ]
    )
    if not lean:
        _owner_event(
            Owner(job.pk, worker_id, job.attempts),
            JobEventType.CLAIMED,
            event,
            now,
            job_type=job.type,
            wait_ms=milliseconds(now - max(job.available_at, job.created_at)),
        )
    return job_row(job)


def _succeeded_timing(job: Job, now: datetime) -> dict[str, int | None]:
    """A success's wait and run times, from the row (as queries.sql's succeeded_timing)."""
    if job.claimed_at is None:
        return {"wait_ms": None, "run_ms": None}
    return {
        "wait_ms": milliseconds(job.claimed_at - max(job.available_at, job.created_at)),
        "run_ms": milliseconds(now - job.claimed_at),
    }


class OrmDriver(PortableStatements, DependencyStatements):
    name = "orm"
    # Its creates notify nobody: its workers poll (SQLite has no notifications).
    supports_listen = False

    def listen(self, *, application_name: str) -> AbstractContextManager[Listening]:
        raise NotImplementedError("the ORM driver sends no notifications; workers poll")

    def behind_pooler(self) -> bool:
        return False  # PgBouncer's pooling is PostgreSQL's; this driver prepares nothing

    def prepares_statements(self) -> bool:
        return False

    def plan_generically(self) -> None:
        pass  # nothing prepared

    def create_jobs(
        self, jobs: list[NewJob], *, message: str, now: datetime, notify: bool
    ) -> list[tuple[JobRow, bool]]:
        keys = [job.idempotency_key for job in jobs if job.idempotency_key is not None]
        unique = [job.unique_key for job in jobs if job.unique_key is not None]
        with transaction.atomic():
            existing = {
                job.idempotency_key: job for job in Job.objects.filter(idempotency_key__in=keys)
            }
            active = {
                job.unique_key: job
                for job in Job.objects.filter(
                    unique_key__in=unique, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]
                )
            }
            outcome: list[tuple[Job, bool]] = []
            new: list[Job] = []
            for spec in jobs:
                if spec.idempotency_key is not None and spec.idempotency_key in existing:
                    outcome.append((existing[spec.idempotency_key], False))
                    continue
                if spec.unique_key is not None and spec.unique_key in active:
                    outcome.append((active[spec.unique_key], False))
                    continue
                job = Job(
                    id=spec.id,
                    type=spec.type,
                    payload=spec.payload,
                    priority=spec.priority,
                    available_at=spec.available_at,
                    max_attempts=spec.max_attempts,
                    idempotency_key=spec.idempotency_key,
                    created_at=now,
                    updated_at=now,
                    queue=spec.queue,
                    timeout_seconds=spec.timeout_seconds,
                    metadata=spec.metadata,
                    unique_key=spec.unique_key,
                    concurrency_key=spec.concurrency_key,
                    workflow_id=spec.workflow_id,
                    ref=spec.ref,
                )
                if spec.unique_key is not None:
                    active[spec.unique_key] = job  # a later job of the batch gets this one
                new.append(job)
                outcome.append((job, True))
            new_ids = {job.id for job in new}
            try:
                with transaction.atomic():
                    Job.objects.bulk_create(new)
                    JobEvent.objects.bulk_create(
                        _event(
                            spec.id,
                            JobEventType.CREATED,
                            0,
                            Event(message, spec.event_data),
                            job_type=spec.type,
                            created_at=now,
                        )
                        for spec in jobs
                        if spec.id in new_ids
                    )
            except IntegrityError:
                # A concurrent create took one of the keys: nothing of this call was
                # written; the caller sees the winners' rows on the next read.
                if not keys and not unique:
                    raise
                return self.create_jobs(jobs, message=message, now=now, notify=notify)
        return [(job_row(job), created) for job, created in outcome]

    def wake(self, queue: str) -> None:
        return None  # its workers poll

    def probe(self, channel: str, token: str) -> None:
        raise NotImplementedError("the ORM driver has no listener to probe")

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
        # synchronous_commit is PostgreSQL's; every commit here is durable.
        with transaction.atomic():
            done = self.complete_jobs(completions, now=now, event=completed, lean=lean)
            return done, self._claim_jobs(
                queue=queue,
                worker_ids=worker_ids,
                now=now,
                locked_until=locked_until,
                event=claimed,
                lean=lean,
            )

    def _claim_jobs(
        self,
        *,
        queue: str,
        worker_ids: Sequence[str],
        now: datetime,
        locked_until: datetime,
        event: Event,
        lean: bool,
    ) -> list[JobRow]:
        if not worker_ids:
            return []
        with transaction.atomic():
            # Flow control: a paused or limited queue is claimed from under a lock on its
            # settings row (on SQLite: the database's one writer at a time), and what runs
            # is counted after it.
            gate = QueueSettings.objects.select_for_update().filter(name=queue).first()
            wanting = list(worker_ids)
            room = None
            limit = None
            if gate is not None and gate.gated:
                if gate.paused_at is not None:
                    return []
                claimed_at = timezone.now()
                locked_until += claimed_at - now
                now = claimed_at
                limit = gate.concurrency_limit
                if gate.rate_limit is not None:
                    room = rate_room(
                        gate.rate_window,
                        limit=gate.rate_limit,
                        period_seconds=gate.rate_period_seconds or 1,
                        now=now.timestamp(),
                    )
                    wanting = wanting[: room.room]
            key_limits = dict(app_settings.JOB_CONCURRENCY_KEY_LIMITS)
            key_limits.update(ConcurrencyKeyLimit.objects.values_list("pattern", "limit"))
            claimed: list[JobRow] = []
            blocked: list[str] = []
            for worker_id in wanting:
                if (
                    limit is not None
                    and Job.objects.filter(queue=queue, status=JobStatus.RUNNING).count() >= limit
                ):
                    break
                job = _next_candidate(queue, now, key_limits, blocked)
                if job is None:
                    break
                claimed.append(_claim(job, worker_id, now, locked_until, event, lean=lean))
            if room is not None and claimed:
                QueueSettings.objects.filter(name=queue).update(
                    rate_window=room.stored(len(claimed))
                )
        return claimed

    def active_queues(self) -> list[str]:
        queued = Job.objects.filter(status=JobStatus.QUEUED)
        return list(queued.order_by("queue").values_list("queue", flat=True).distinct())

    def vacuum_jobs_table(self, *, min_dead_rows: int) -> Vacuumed | None:
        return None  # the embedded database reuses its free pages itself

    def analyze_jobs_table(self, *, min_rows: int) -> Analyzed | None:
        return None  # the embedded database plans without row estimates of this kind

    def status_estimate(self) -> StatusEstimate | None:
        return None  # the embedded database is small: count

    def type_samples(
        self, types: list[str], *, start: datetime, end: datetime, size: int
    ) -> list[TypeSample]:
        # Numbered newest first per type in the database (a window function), so only the
        # sample comes back; without an index-only probe per type, fine for SQLite's sizes.
        in_range = JobEvent.objects.filter(
            job_type__in=types, created_at__gte=start, created_at__lte=end
        )
        newest_first = Window(
            RowNumber(), partition_by=[F("job_type")], order_by=[F("created_at").desc()]
        )
        runs: dict[str | None, list[tuple[int | None, int | None]]] = {t: [] for t in types}
        for job_type, run_ms, wait_ms in (
            in_range.filter(run_ms__isnull=False)
            .annotate(rank=newest_first)
            .filter(rank__lte=size)
            .values_list("job_type", "run_ms", "wait_ms")
        ):
            runs[job_type].append((run_ms, wait_ms))
        failures = {
            job_type: (message, created_at, job_id)
            for job_type, message, created_at, job_id in in_range.filter(
                type__in=FAILURE_EVENT_TYPES
            )
            .annotate(rank=newest_first)
            .filter(rank=1)
            .values_list("job_type", "message", "created_at", "job_id")
        }
        samples = []
        for job_type in types:
            run = sorted(run_ms for run_ms, _ in runs[job_type] if run_ms is not None)
            wait = sorted(wait_ms for _, wait_ms in runs[job_type] if wait_ms is not None)
            message, at, job_id = failures.get(job_type, (None, None, None))
            samples.append(
                TypeSample(
                    job_type=job_type,
                    attempts=len(run),
                    run_p50_ms=nearest_rank(run, 0.5),
                    run_p95_ms=nearest_rank(run, 0.95),
                    wait_p50_ms=nearest_rank(wait, 0.5),
                    wait_p95_ms=nearest_rank(wait, 0.95),
                    last_error=message,
                    last_error_at=at,
                    last_error_job_id=job_id,
                )
            )
        return samples

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
        def release(job: Job) -> dict[str, Any]:
            if job.cancel_requested_at is not None:
                return {
                    "status": JobStatus.CANCELLED,
                    "finished_at": now,
                    "last_error": cancelled.data["error"],
                    "locked_by": None,
                    "locked_until": None,
                    "updated_at": now,
                }
            return {
                "status": JobStatus.QUEUED,
                "attempts": job.attempts - 1,
                "available_at": job.available_at if available_at is None else available_at,
                "locked_by": None,
                "locked_until": None,
                "updated_at": now,
            }

        released: list[JobRow] = []
        with transaction.atomic():
            for owner in owners:
                job = self._update_owned(owner, release)
                if job is None:
                    continue
                if job.status == JobStatus.CANCELLED:
                    _owner_event(owner, JobEventType.CANCELLED, cancelled, now, job_type=job.type)
                else:
                    _owner_event(owner, event_type, event, now, job_type=job.type)
                released.append(job_row(job))
        return released

    def _update_owned(self, owner: Owner, changes: Callable[[Job], dict[str, Any]]) -> Job | None:
        """Lock the owner's row and apply ``changes(job)``; ``None`` if it is not owned."""
        job = Job.objects.select_for_update().filter(_owned(owner)).first()
        if job is None:
            return None
        values = changes(job)
        for name, value in values.items():
            setattr(job, name, value)
        job.save(update_fields=list(values))
        return job

    def complete_jobs(
        self,
        completions: Sequence[Completion],
        *,
        now: datetime,
        event: Event,
        synchronous_commit: bool = True,
        lean: bool = False,
    ) -> list[JobRow]:
        # One row at a time, in one transaction: each keeps its own ownership guard.
        # synchronous_commit is PostgreSQL's; every commit here is durable.
        rows = []
        with transaction.atomic():
            for done in completions:
                row = self._complete(done, now=now, event=event, lean=lean)
                if row is not None:
                    rows.append(row)
        return rows

    def _complete(
        self, done: Completion, *, now: datetime, event: Event, lean: bool
    ) -> JobRow | None:
        result = None if done.result_json is None else json.loads(done.result_json)
        job = self._update_owned(
            done.owner,
            lambda job: {
                "status": JobStatus.SUCCEEDED,
                "result": result,
                "locked_by": None,
                "locked_until": None,
                "finished_at": now,
                "updated_at": now,
            },
        )
        if job is None:
            return None
        if not lean:
            _owner_event(
                done.owner,
                JobEventType.SUCCEEDED,
                event,
                now,
                job_type=job.type,
                **_succeeded_timing(job, now),
            )
        return job_row(job)

    def fail_jobs(
        self, failures: Sequence[tuple[Owner, Failure]], *, now: datetime
    ) -> list[JobRow]:
        rows = []
        with transaction.atomic():
            for owner, failure in sorted(failures, key=lambda each: str(each[0].job_id)):
                row = self._fail(owner, failure, now=now)
                if row is not None:
                    rows.append(row)
        return rows

    def _fail(self, owner: Owner, failure: Failure, *, now: datetime) -> JobRow | None:
        def changes(job: Job) -> dict[str, Any]:
            retrying = (
                job.cancel_requested_at is None
                and job.attempts < job.max_attempts
                and failure.retry_at is not None
            )
            if job.cancel_requested_at is not None:
                status = JobStatus.CANCELLED
            else:
                status = JobStatus.QUEUED if retrying else JobStatus.FAILED
            return {
                "status": status,
                "available_at": failure.retry_at if retrying else job.available_at,
                "finished_at": None if retrying else now,
                "locked_by": None,
                "locked_until": None,
                "last_error": failure.error,
                "updated_at": now,
            }

        with transaction.atomic():
            job = self._update_owned(owner, changes)
            if job is None:
                return None
            if job.status == JobStatus.QUEUED:
                event_type, event = JobEventType.RETRY_SCHEDULED, failure.retry_event
            elif job.status == JobStatus.CANCELLED:
                event_type, event = JobEventType.CANCELLED, failure.cancelled_event
            else:
                event_type, event = JobEventType.FAILED, failure.failed_event
            _owner_event(
                owner, event_type, event, now, job_type=job.type, **_ended_attempt(owner, now)
            )
        return job_row(job)

    def renew_lease(
        self, owner: Owner, *, locked_until: datetime, now: datetime, event: Event
    ) -> bool:
        with transaction.atomic():
            job_type = _lock_owned_type(owner)
            if job_type is None:
                return False
            Job.objects.filter(pk=owner.job_id).update(locked_until=locked_until, updated_at=now)
            _owner_event(owner, JobEventType.LEASE_RENEWED, event, now, job_type=job_type)
        return True

    def heartbeat(
        self,
        owners: list[Owner],
        *,
        locked_until: datetime,
        now: datetime,
        watch: Sequence[Owner] = (),
    ) -> list[Heartbeat]:
        with transaction.atomic():
            rows = list(
                Job.objects.select_for_update()
                .filter(_any_owned(owners))
                .values_list("pk", "cancel_requested_at")
            )
            Job.objects.filter(pk__in=[pk for pk, _ in rows]).update(
                locked_until=locked_until, updated_at=now
            )
            if watch:
                rows += Job.objects.filter(_any_owned(watch)).values_list(
                    "pk", "cancel_requested_at"
                )
        return [Heartbeat(pk, requested is not None) for pk, requested in rows]

    def record_progress(self, owner: Owner, *, now: datetime, event: Event) -> bool:
        with transaction.atomic():
            job_type = _lock_owned_type(owner)
            if job_type is None:
                return False
            _owner_event(owner, JobEventType.PROGRESS, event, now, job_type=job_type)
        return True

    def lock_expired_leases(self, *, now: datetime, limit: int) -> list[ExpiredLease]:
        rows = (
            Job.objects.select_for_update(skip_locked=True)
            .filter(status=JobStatus.RUNNING, locked_until__lt=now)
            .order_by("locked_until")
            .values_list(
                "id", "attempts", "max_attempts", "locked_by", "locked_until", "cancel_requested_at"
            )[:limit]
        )
        # locked_until is nullable, but the locked_until__lt filter only matches rows that have one.
        return [ExpiredLease(*row) for row in rows]  # type: ignore[arg-type]

    def release_expired_leases(
        self, releases: list[Release], *, now: datetime, worker_id: str | None
    ) -> None:
        jobs = Job.objects.in_bulk([release.id for release in releases])
        for release in releases:
            job = jobs[release.id]
            job.status = release.status
            if release.available_at is not None:
                job.available_at = release.available_at
            job.finished_at = release.finished_at
            job.locked_by = None
            job.locked_until = None
            job.last_error = release.error
            job.updated_at = now
        Job.objects.bulk_update(
            jobs.values(),
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
        timings = _attempt_timings(((release.id, release.attempt) for release in releases), now)
        JobEvent.objects.bulk_create(
            _event(
                release.id,
                release.event_type,
                release.attempt,
                release.event,
                job_type=jobs[release.id].type,
                worker_id=worker_id,
                created_at=now,
                **timings.get((str(release.id), release.attempt), {}),
            )
            for release in sorted(releases, key=lambda release: release.id)
        )

    def retry_jobs(
        self,
        selection: Selection,
        *,
        now: datetime,
        message: str,
        held_max: int,
        data: Mapping[str, Any] | None = None,
    ) -> RetryOutcome:
        with transaction.atomic():
            jobs = list(
                _selected(selection)
                .select_for_update()
                .filter(status__in=[JobStatus.FAILED, JobStatus.CANCELLED])
                .order_by("id")
            )
            keys = {job.unique_key for job in jobs if job.unique_key is not None}
            holders = dict(
                Job.objects.filter(
                    unique_key__in=keys, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]
                ).values_list("unique_key", "pk")
            )
            active = set(holders)
            for job in sorted(jobs, key=lambda job: (job.created_at, job.pk), reverse=True):
                if job.unique_key is not None:
                    holders.setdefault(job.unique_key, job.pk)  # the newest selected keeps it
            chosen = [
                job
                for job in jobs
                if job.unique_key is None
                or (job.unique_key not in active and holders[job.unique_key] == job.pk)
            ]
            held = [
                HeldKey(job.pk, job.unique_key, holders[job.unique_key])
                for job in jobs
                if job.unique_key is not None and job not in chosen
            ]
            events = [
                _event(
                    job.pk,
                    JobEventType.MANUAL_RETRY,
                    0,
                    Event(
                        message,
                        {
                            "previous_status": job.status,
                            "previous_attempts": job.attempts,
                            "previous_error": job.last_error,
                            **(data or {}),
                        },
                    ),
                    job_type=job.type,
                    created_at=now,
                )
                for job in chosen
            ]
            Job.objects.filter(pk__in=[job.pk for job in chosen]).update(
                status=JobStatus.QUEUED,
                attempts=0,
                available_at=now,
                locked_by=None,
                locked_until=None,
                last_error="",
                result=None,
                finished_at=None,
                cancel_requested_at=None,
                updated_at=now,
            )
            JobEvent.objects.bulk_create(events)
            parents = list(
                JobDependency.objects.filter(parent_id__in=[job.pk for job in chosen])
                .values_list("parent_id", flat=True)
                .distinct()
            )
        return RetryOutcome(
            retried=len(chosen), held=held[:held_max], held_count=len(held), parents=parents
        )

    def run_job_now(self, job_id: UUID | str, *, now: datetime, event: Event) -> bool:
        with transaction.atomic():
            job = (
                Job.objects.select_for_update()
                .filter(pk=job_id, status=JobStatus.QUEUED, available_at__gt=now)
                .first()
            )
            if job is None:
                return False
            Job.objects.filter(pk=job.pk).update(available_at=now, updated_at=now)
            _event(
                job.pk, JobEventType.RUN_NOW, job.attempts, event, job_type=job.type, created_at=now
            ).save()
        return True

    def job(self, job_id: UUID | str) -> JobRow:
        return job_row(Job.objects.by_id(job_id))

    def cancel_jobs(
        self, selection: Selection, *, now: datetime, cancelled: Event, requested: Event
    ) -> CancelOutcome:
        with transaction.atomic():
            jobs = list(
                _selected(selection)
                .select_for_update()
                .filter(
                    Q(status__in=[JobStatus.QUEUED, JobStatus.WAITING])
                    | Q(status=JobStatus.RUNNING, cancel_requested_at__isnull=True)
                )
                .order_by("id")
                .values_list("pk", "status", "attempts", "type")
            )
            # A waiting job is cancelled as a queued one.
            jobs = [
                (pk, JobStatus.QUEUED if status == JobStatus.WAITING else status, attempts, kind)
                for pk, status, attempts, kind in jobs
            ]
            queued = [pk for pk, status, _, _ in jobs if status == JobStatus.QUEUED]
            running = [pk for pk, status, _, _ in jobs if status == JobStatus.RUNNING]
            Job.objects.filter(pk__in=queued).update(
                status=JobStatus.CANCELLED, finished_at=now, cancel_requested_at=now, updated_at=now
            )
            Job.objects.filter(pk__in=running).update(cancel_requested_at=now, updated_at=now)
            JobEvent.objects.bulk_create(
                _event(
                    pk,
                    JobEventType.CANCELLED
                    if status == JobStatus.QUEUED
                    else JobEventType.CANCEL_REQUESTED,
                    attempts,
                    cancelled if status == JobStatus.QUEUED else requested,
                    job_type=job_type,
                    created_at=now,
                )
                for pk, status, attempts, job_type in jobs
            )
        return CancelOutcome(cancelled=len(queued), cancel_requested=len(running))


def nearest_rank(ordered: Sequence[int], fraction: float) -> int | None:
    """The smallest value with at least ``fraction`` of ``ordered`` at or below it
    (PostgreSQL's ``percentile_disc``); ``None`` for no values."""
    if not ordered:
        return None
    return ordered[max(math.ceil(fraction * len(ordered)), 1) - 1]


def _selected(selection: Selection) -> QuerySet[Job]:
    return Job.objects.matching(
        status=selection.status, type=selection.type, queue=selection.queue, ids=selection.ids
    )
