"""Job dependencies: a job created with ``depends_on`` waits until its parents settle it.

Data access: the database driver only. A child is written with its edges in the create's
transaction, and its parents must exist already, so the graph cannot hold a cycle. The
default success path is untouched: no completion statement looks for dependents. Waiting
jobs are settled by ``settle_waiting_jobs``, run at create time (parents already done) and
by every worker's maintenance thread every second (and at once again while a fan-out is
being released), whatever ended the parent (success, failure for good, a cancel, a lease
expiry, a bulk action).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import transaction

from ..drivers import WaitingJob, get_driver
from ..limits import DEPENDS_ON_MAX
from ..models import FINISHED_STATUSES, JobStatus, OnParentFailure
from .common import _now

PARENT_ENDED_MESSAGE = "Cancelled: a job it depends on ended without success"


def dependencies_problem(depends_on: Sequence[UUID | str]) -> str | None:
    """Why ``depends_on`` cannot be stored as it is (bound, duplicates, unknown ids)."""
    if len(depends_on) > DEPENDS_ON_MAX:
        return f"At most {DEPENDS_ON_MAX} parents."
    ids = [UUID(str(parent)) for parent in depends_on]
    if len(set(ids)) != len(ids):
        return "A parent is named twice."
    missing = set(ids) - get_driver().existing_job_ids(ids)
    if missing:
        return "No such job: " + ", ".join(sorted(str(parent) for parent in missing)) + "."
    return None


def _decision(job: WaitingJob) -> tuple[str, dict[str, Any]] | None:
    """``("queued", {})``, ``("cancelled", event data)``, or ``None`` (still waiting)."""
    statuses = job.parents.values()
    if all(status == JobStatus.SUCCEEDED for status in statuses):
        return JobStatus.QUEUED, {}
    ended = sorted(
        (str(parent), status)
        for parent, status in job.parents.items()
        if status in (JobStatus.FAILED, JobStatus.CANCELLED)
    )
    if ended and job.on_parent_failure == OnParentFailure.CANCEL:
        parent, status = ended[0]
        return JobStatus.CANCELLED, {"parent_id": parent, "parent_status": status}
    if all(status in FINISHED_STATUSES for status in statuses):
        return JobStatus.QUEUED, {}
    return None


@dataclass(frozen=True)
class SettledWindow:
    """What one window of ``settle_waiting_window`` did, and where the next one starts
    (``None``: the window reached the last waiting job)."""

    queued: int
    cancelled: int
    resume_after: tuple[datetime, UUID] | None


def settle_waiting_jobs(
    *, limit: int = 1000, ids: Sequence[UUID] | None = None, now: datetime | None = None
) -> tuple[int, int]:
    """Settle the waiting jobs among ``ids``, or else among the ``limit`` oldest, in one
    transaction; return ``(queued, cancelled)``.

    Invariant: a waiting job becomes queued (due now, or later as it was scheduled) once
    every parent succeeded, or under ``on_parent_failure="run"`` once every parent
    finished; under ``"cancel"`` (the default) it is cancelled as soon as a parent failed
    for good or was cancelled, with a ``cancelled`` event whose data names that parent.
    Otherwise it keeps waiting. Idle workers of the queued jobs' queues are woken on
    commit. Rows are locked ``SKIP LOCKED``: concurrent workers split them. A manual
    retry of a parent brings its dependents cancelled for it back to waiting
    (``jobs.services.retry_jobs``).
    """
    settled = _settle(limit=limit, ids=ids, after=None, now=now)
    return settled.queued, settled.cancelled


def settle_waiting_window(
    *, after: tuple[datetime, UUID] | None, limit: int, now: datetime | None = None
) -> SettledWindow:
    """``settle_waiting_jobs``' invariant over the next ``limit`` waiting jobs after
    ``after`` (by creation). One read without a lock finds those their parents decide now;
    they are settled in one transaction, locked ``SKIP LOCKED`` and decided again under
    the lock. A window reads at most ``limit`` rows of ``job_waiting_idx`` from its cursor
    on, however many jobs wait, so the settler's pass costs the same with a million jobs
    waiting on unfinished parents as with none; a window with nothing to settle is two
    reads and no transaction."""
    ids, resume_after = get_driver().find_settleable_jobs(limit=limit, after=after)
    if not ids:
        return SettledWindow(0, 0, resume_after)
    settled = _settle(limit=len(ids), ids=ids, after=None, now=now)
    return SettledWindow(settled.queued, settled.cancelled, resume_after)


def _settle(
    *,
    limit: int,
    ids: Sequence[UUID] | None,
    after: tuple[datetime, UUID] | None,
    now: datetime | None,
) -> SettledWindow:
    now = _now(now)
    driver = get_driver()
    with transaction.atomic():
        locked, resume_after = driver.lock_settleable_jobs(limit=limit, ids=ids, after=after)
        queued: list[UUID] = []
        cancelled: list[tuple[WaitingJob, str, dict[str, Any]]] = []
        for job in locked:
            decision = _decision(job)
            if decision is None:
                continue
            status, data = decision
            if status == JobStatus.QUEUED:
                queued.append(job.id)
            else:
                cancelled.append((job, PARENT_ENDED_MESSAGE, data))
        if queued or cancelled:
            # Idle workers hear of the queued jobs as of a create's (no NOTIFY otherwise).
            for queue in driver.settle_jobs(queued=queued, cancelled=cancelled, now=now):
                driver.wake(queue)
    return SettledWindow(len(queued), len(cancelled), resume_after)
