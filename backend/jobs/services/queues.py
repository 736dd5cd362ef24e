"""Flow control of queues: pause, resume, and the concurrency and rate limits.

Data access: the ORM (``QueueSettings``, the row locked with ``select_for_update`` for
the transaction), and the driver's ``wake`` to tell idle workers at once. Claims read
these rows inside the driver's claim statement.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from ..drivers import get_driver
from ..models import QueueSettings
from .common import Actor, _audit, _now

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
