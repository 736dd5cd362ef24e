"""When a drain is over and how fast it went: the polls the bench asks while workers
drain, and the window of a drained backlog read from its events or its rows."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .database import Database

# Whether a job is queued or running, read through the two partial indexes (job_claim_idx,
# job_timeout_idx), in their own order (the claim index holds available_at AT TIME ZONE
# 'UTC'). The bench asks ten times a second while workers drain; a plain ``EXISTS (...
# status IN ('queued', 'running'))`` is planned as a scan of jobs_job that walks the
# finished rows first, so its cost grew with history and took CPU from the worker on two
# cores: the decay phase measured the bench's own poll (and did again when the claim
# index's order changed and this poll, ordered by the bare column, sorted every queued row).
LIVE_JOB_EXISTS = """
SELECT (SELECT 1 FROM jobs_job WHERE status = 'queued'
        ORDER BY queue, priority DESC, available_at AT TIME ZONE 'UTC', created_at, id
        LIMIT 1) IS NOT NULL
    OR (SELECT 1 FROM jobs_job WHERE status = 'running' ORDER BY locked_until LIMIT 1)
        IS NOT NULL
"""

# Whether a job is running or queued and due (a scenario may hold jobs scheduled for
# later: bench.scale puts 200,000 of a higher priority in front). A loose index scan over
# job_claim_idx: one probe per (queue, priority) level, and in each the first row in
# available_at order is due if any is, so neither the history nor the future jobs are read.
# Scalar sub-selects, not EXISTS: PostgreSQL drops an EXISTS's ORDER BY and LIMIT, and then
# may scan the table for a running row.
DUE_OR_RUNNING_JOB_EXISTS = """
WITH RECURSIVE level AS (
    (SELECT queue, priority FROM jobs_job WHERE status = 'queued'
        ORDER BY queue, priority DESC LIMIT 1)
    UNION ALL
    SELECT later.queue, later.priority FROM level CROSS JOIN LATERAL (
        SELECT * FROM (
            (SELECT queue, priority FROM jobs_job
                WHERE status = 'queued' AND queue = level.queue AND priority < level.priority
                ORDER BY queue, priority DESC LIMIT 1)
            UNION ALL
            (SELECT queue, priority FROM jobs_job
                WHERE status = 'queued' AND queue > level.queue
                ORDER BY queue, priority DESC LIMIT 1)
        ) AS next_level LIMIT 1
    ) AS later
)
SELECT (SELECT 1 FROM jobs_job WHERE status = 'running' ORDER BY locked_until LIMIT 1)
        IS NOT NULL
    OR (SELECT 1 FROM level CROSS JOIN LATERAL (
            SELECT 1 FROM jobs_job
            WHERE status = 'queued' AND queue = level.queue AND priority = level.priority
                AND available_at AT TIME ZONE 'UTC' <= now() AT TIME ZONE 'UTC'
            ORDER BY available_at AT TIME ZONE 'UTC' LIMIT 1
        ) AS due LIMIT 1) IS NOT NULL
"""


def live_jobs_exist(db: Database) -> bool:
    return bool(db.scalar(LIVE_JOB_EXISTS))


def due_or_running_jobs_exist(db: Database) -> bool:
    return bool(db.scalar(DUE_OR_RUNNING_JOB_EXISTS))


def queued_count(db: Database) -> int:
    return int(db.scalar("SELECT count(*) FROM jobs_job WHERE status = 'queued'"))


@dataclass(kw_only=True)
class EventWindow:
    """A drained backlog, timed from its events: first ``claimed`` to last ``succeeded``."""

    span_seconds: float
    claimed_events: int
    succeeded_events: int
    jobs_succeeded: int
    jobs_per_second: float


def event_window(db: Database) -> EventWindow:
    first, last, claimed, succeeded, distinct = db.rows(
        """
        SELECT min(created_at) FILTER (WHERE type = 'claimed'),
               max(created_at) FILTER (WHERE type = 'succeeded'),
               count(*) FILTER (WHERE type = 'claimed'),
               count(*) FILTER (WHERE type = 'succeeded'),
               count(DISTINCT job_id) FILTER (WHERE type = 'succeeded')
        FROM jobs_jobevent
        """
    )[0]
    span = (last - first).total_seconds() if first and last else math.nan
    return EventWindow(
        span_seconds=round(span, 3),
        claimed_events=claimed,
        succeeded_events=succeeded,
        jobs_succeeded=distinct,
        jobs_per_second=round(succeeded / span, 1) if span and span > 0 else math.nan,
    )


def row_window(db: Database) -> EventWindow:
    """The same window read from the jobs' rows: first ``claimed_at`` to last ``finished_at``
    of the succeeded jobs. A claim stamps ``claimed_at`` with the time its ``claimed`` event
    would carry, a completion ``finished_at`` with its ``succeeded`` event's, so the span is
    the event window's; it is what a lean timeline (``JOB_WORKER_LEAN_TIMELINE``), which
    writes neither event, leaves to time. ``claimed_events`` and ``succeeded_events`` count
    the claims (``attempts``) and successes the rows record."""
    first, last, claims, succeeded = db.rows(
        """
        SELECT min(claimed_at), max(finished_at), coalesce(sum(attempts), 0), count(*)
        FROM jobs_job
        WHERE status = 'succeeded'
        """
    )[0]
    span = (last - first).total_seconds() if first and last else math.nan
    return EventWindow(
        span_seconds=round(span, 3),
        claimed_events=int(claims),
        succeeded_events=succeeded,
        jobs_succeeded=succeeded,
        jobs_per_second=round(succeeded / span, 1) if span and span > 0 else math.nan,
    )
