"""Schedules of ``JOB_SCHEDULES``: pause, resume, trigger by hand, and the pass that
enqueues due ticks.

Data access: the ORM for each schedule's state row (``ScheduleState``, locked with
``select_for_update``); the jobs a tick enqueues are created through
``jobs.services.jobs.create_jobs`` (the driver), in the same transaction as the row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import DatabaseError, InterfaceError, OperationalError, transaction

from ..conf import app_settings
from ..drivers import JobRow, is_read_only
from ..errors import ScheduleNotFound
from ..flowcontrol import ScheduleSpec, configured_schedules, plan_ticks, tick_key
from ..models import ScheduleState
from ..storable import storable_text
from .common import Actor, _audit, _now
from .jobs import NewJobSpec, create_jobs


def _declared(name: str) -> None:
    """``ScheduleNotFound`` unless ``name`` is declared (runnable or not)."""
    if not configured_schedules().declares(name):
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
    spec = configured_schedules().runnable(name)
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
