"""Schedules of ``JOB_SCHEDULES`` as the dashboard and the metrics read them: definition,
pause, next and last tick, last job, and whether each is failing.

Data access: the ORM (``ScheduleState`` rows and the schedules' last jobs).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from ..conf import app_settings
from ..errors import ScheduleNotFound
from ..flowcontrol import MISSED_POLICIES, ScheduleSpec, configured_schedules
from ..models import DEFAULT_QUEUE, Job, ScheduleState


def _schedule_document(
    spec: ScheduleSpec, row: ScheduleState | None, last_job: Job | None, now: datetime
) -> dict[str, Any]:
    paused = row is not None and row.paused_at is not None
    start = now if row is None else max(row.last_tick_at, now)
    return {
        "name": spec.name,
        "target": spec.target,
        "kind": spec.kind,
        "cron": spec.cron,
        "interval_seconds": spec.interval_seconds,
        "timezone": spec.timezone,
        "queue": spec.queue,
        "priority": spec.priority,
        "missed": spec.missed,
        "paused": paused,
        "paused_at": row.paused_at if row is not None else None,
        "next_run_at": None if paused else spec.next_tick(start - timedelta(microseconds=1)),
        "last_run_at": row.last_enqueued_tick_at if row is not None else None,
        "last_job": None
        if last_job is None
        else {"id": last_job.id, "status": last_job.status, "created_at": last_job.created_at},
        "runnable": True,
        "error": row.error or None if row is not None else None,
        "error_at": row.error_at if row is not None and row.error else None,
    }


def _invalid_schedule_document(
    name: str, raw: Any, problems: str, row: ScheduleState | None
) -> dict[str, Any]:
    """What can be shown of a schedule that cannot run as declared: the fields as given
    where they have the right shape, and why it cannot run."""
    raw = raw if isinstance(raw, Mapping) else {}

    def text(key: str) -> str | None:
        value = raw.get(key)
        return value if isinstance(value, str) else None

    def integer(key: str) -> int | None:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    kind = "task" if "task" in raw else "type" if "type" in raw else None
    missed = raw.get("missed", "latest")
    return {
        "name": name,
        "target": None if kind is None else text(kind),
        "kind": kind,
        "cron": text("cron"),
        "interval_seconds": integer("interval"),
        "timezone": text("timezone"),
        "queue": text("queue") if "queue" in raw else DEFAULT_QUEUE,
        "priority": integer("priority") if "priority" in raw else 50,
        "missed": missed if missed in MISSED_POLICIES else None,
        "paused": row is not None and row.paused_at is not None,
        "paused_at": row.paused_at if row is not None else None,
        "next_run_at": None,
        "last_run_at": row.last_enqueued_tick_at if row is not None else None,
        "last_job": None,
        "runnable": False,
        "error": f"Cannot run as declared: {problems}.",
        "error_at": None,
    }


def schedule_list(names: list[str] | None = None) -> list[dict[str, Any]]:
    """Every schedule of ``JOB_SCHEDULES``, by name: its definition, whether it is paused,
    its next tick, the last tick enqueued and its last job with that job's status, and
    whether it is failing: one that cannot run as declared is listed too, with why."""
    schedules = configured_schedules()
    wanted = schedules.names() if names is None else [n for n in names if schedules.declares(n)]
    rows = {row.name: row for row in ScheduleState.objects.filter(name__in=wanted)}
    job_ids = [row.last_job_id for row in rows.values() if row.last_job_id is not None]
    jobs = {job.id: job for job in Job.objects.filter(pk__in=job_ids).only("status", "created_at")}
    now = timezone.now()
    documents = []
    for name in wanted:
        row = rows.get(name)
        spec = schedules.valid.get(name)
        if spec is None:
            raw = app_settings.JOB_SCHEDULES.get(name)
            documents.append(_invalid_schedule_document(name, raw, schedules.invalid[name], row))
            continue
        last_job = None if row is None or row.last_job_id is None else jobs.get(row.last_job_id)
        documents.append(_schedule_document(spec, row, last_job, now))
    return documents


def schedule_detail(name: str) -> dict[str, Any]:
    """One schedule as ``schedule_list`` shows it; ``ScheduleNotFound`` if not declared."""
    found = schedule_list([name])
    if not found:
        raise ScheduleNotFound(name)
    return found[0]


def schedule_lag_seconds(now: datetime | None = None) -> dict[str, float]:
    """Per unpaused runnable schedule: now minus its oldest due tick not yet looked at (0
    when up to date), for the metrics."""
    now = timezone.now() if now is None else now
    specs = configured_schedules().valid
    rows = {row.name: row for row in ScheduleState.objects.filter(name__in=list(specs))}
    lag = {}
    for name, spec in specs.items():
        row = rows.get(name)
        if row is None or row.paused_at is not None:
            lag[name] = 0.0
            continue
        due = spec.next_tick(row.last_tick_at)
        lag[name] = max((now - due).total_seconds(), 0.0)
    return lag


def failing_schedules() -> dict[str, bool]:
    """Per declared schedule: whether it is failing (it cannot run as declared, or its
    last pass failed), for the metrics."""
    schedules = configured_schedules()
    erring = set(
        ScheduleState.objects.filter(name__in=list(schedules.valid))
        .exclude(error="")
        .values_list("name", flat=True)
    )
    return {name: name in schedules.invalid or name in erring for name in schedules.names()}
