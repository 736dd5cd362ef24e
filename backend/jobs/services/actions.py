"""An operator's actions on jobs: retry, cancel and run now, one job or a selection.

Data access: the database driver only (``jobs.drivers.get_driver()``): each action is
one statement on PostgreSQL, and a single job's current row is read through the driver
too (``Driver.job``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from django.db import transaction

from ..drivers import CancelOutcome, Event, JobRow, RetryOutcome, Selection, get_driver
from ..errors import EmptySelection, InvalidTransition, UniqueKeyHeld
from ..models import JobEventType, JobStatus
from .common import Actor, _now, _with_actor, event_time
from .jobs import MESSAGES


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


# Jobs a retry left alone for their unique key that it names (it counts them all).
HELD_KEYS_REPORTED = 100

# The manual_retry event of a dependent a retry brought back (its data names the parent).
RESUMED_MESSAGE = "Waiting again: a job it depends on was retried"


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
    and error; jobs in other states are left alone. The dependents a retried job's failure
    or cancel had cancelled (the settler's ``cancelled`` event names it as ``parent_id``)
    come back to ``waiting``, and theirs cancelled for them, recursively, each with a
    ``manual_retry`` event naming its parent (``RESUMED_MESSAGE``), in the retry's
    transaction; a dependent an operator cancelled stays cancelled. At most one job of a
    ``unique_key`` is active: a job whose key a queued or running job holds is not retried,
    nor are the older ones when several selected jobs share a key (the newest is); each is
    reported with the job that holds its key (the first ``HELD_KEYS_REPORTED``). One
    statement on PostgreSQL for the retry itself: all of it or nothing. ``actor`` is
    recorded in each event.
    """
    selection = _selection(ids=ids, status=status, type=type, queue=queue)
    now = _now(now)
    driver = get_driver()
    with transaction.atomic():
        outcome = driver.retry_jobs(
            selection,
            now=now,
            message=MESSAGES[JobEventType.MANUAL_RETRY],
            held_max=HELD_KEYS_REPORTED,
            data=_with_actor({}, actor),
        )
        if outcome.parents:
            driver.revive_dependents(
                outcome.parents, now=now, message=RESUMED_MESSAGE, data=_with_actor({}, actor)
            )
    return outcome


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
        status = get_driver().job(job_id).status
        if outcome.held:
            (held,) = outcome.held
            raise UniqueKeyHeld(
                current_status=status, unique_key=held.unique_key, held_by=held.held_by
            )
        raise InvalidTransition(
            f"Only failed or cancelled jobs can be retried; job is {status}.",
            current_status=status,
        )
    return get_driver().job(job_id)


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
        status = get_driver().job(job_id).status
        if status != JobStatus.RUNNING:
            raise InvalidTransition(
                f"Only queued or running jobs can be cancelled; job is {status}.",
                current_status=status,
            )
    return get_driver().job(job_id)


def run_job_now(
    *, job_id: UUID | str, now: datetime | None = None, actor: Actor | None = None
) -> JobRow:
    """Make a queued job that is not yet due (scheduled for later, or waiting out a retry's
    backoff) due now, with a ``run_now`` event naming ``actor`` and the time it was due;
    workers of its queue are woken. The job and its event commit together. Raises
    ``JobNotFound``, or ``InvalidTransition`` (carrying the status) when the job is not
    queued or already due: nothing is written then."""
    now = _now(now)
    job = get_driver().job(job_id)
    data = _with_actor({"previous_available_at": event_time(job.available_at)}, actor)
    if not get_driver().run_job_now(
        job.id, now=now, event=Event(MESSAGES[JobEventType.RUN_NOW], data)
    ):
        current = get_driver().job(job_id)
        raise InvalidTransition(
            "Only a queued job that is not yet due can be run now; job is "
            f"{current.status}{' and due' if current.status == JobStatus.QUEUED else ''}.",
            current_status=current.status,
        )
    get_driver().wake(job.queue)
    return get_driver().job(job_id)
