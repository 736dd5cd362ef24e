"""Job types' health: attempts by outcome, failure rate, run time and wait percentiles,
sparklines, and the failure triage's error groups.

Data access: the ORM for the per-minute event counts (rolled up in ``jobs.rollups``) and
the error groups, and the database driver for the percentile samples
(``Driver.type_samples``).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from django.db.models import Case, CharField, Count, F, Max, Q, Value, When
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Substr
from django.utils import timezone

from .. import registry, rollups
from ..drivers import get_driver
from ..models import ACTIVITY_EVENT_TYPES, FAILURE_EVENT_TYPES, JobEvent, JobEventType
from .common import EpochSeconds, _window
from .jobs import exception_name

# Ended attempts per type that the run time and queue wait percentiles are taken over.
TYPE_SAMPLE_SIZE = 1000
# Points of a type's failure sparkline, at most (whole minutes each).
SPARKLINE_POINTS = 60
LAST_ERROR_MAX_CHARS = 1000


# What the job types page counts: the activity events, with two told apart by what they
# carry. An attempt ended at its timeout writes retry_scheduled or failed with
# ``reason: timeout`` (counted as timed_out); a cancel of a job that never ran writes
# cancelled without run_ms (counted as cancelled_queued: not an attempt). A claim given
# back before its handler started (released) is no attempt either: it is counted
# among the claims and as released. Kinds added later go last (the slices below).
TYPE_COUNT_KINDS = [
    JobEventType.CLAIMED.value,
    JobEventType.SUCCEEDED.value,
    JobEventType.RETRY_SCHEDULED.value,
    JobEventType.FAILED.value,
    "timed_out",
    JobEventType.TIMEOUT_REQUEUED.value,
    JobEventType.CANCELLED.value,
    "cancelled_queued",
    JobEventType.RELEASED.value,
]
# The kinds that end an attempt, and the failures among them.
TYPE_ATTEMPT_KINDS = TYPE_COUNT_KINDS[1:7]
TYPE_FAILURE_KINDS = TYPE_COUNT_KINDS[2:6]


def _activity_by_type(start: datetime, end: datetime) -> rollups.MinuteRows:
    rows: rollups.MinuteRows = defaultdict(list)
    kind = Case(
        When(
            Q(type__in=[JobEventType.RETRY_SCHEDULED, JobEventType.FAILED], data__reason="timeout"),
            then=Value("timed_out"),
        ),
        When(Q(type=JobEventType.CANCELLED, run_ms__isnull=True), then=Value("cancelled_queued")),
        default=F("type"),
        output_field=CharField(),
    )
    for row in (
        JobEvent.objects.filter(
            type__in=ACTIVITY_EVENT_TYPES, created_at__gte=start, created_at__lte=end
        )
        .annotate(minute=EpochSeconds("created_at") / 60, kind=kind)
        .values("minute", "job_type", "kind")
        .annotate(events=Count("*"))
        .order_by()
    ):
        rows[row["minute"]].append((row["job_type"], row["kind"], row["events"]))
    return rows


def type_health(*, minutes: int = 60, now: datetime | None = None) -> dict[str, Any]:
    """Per job type over the last ``minutes`` whole minutes (the newest partial): attempts
    by outcome (``TYPE_COUNT_KINDS``: timeouts and cancels of running attempts counted as
    such, cancels of jobs that never ran apart and not as attempts), failure rate, run time
    and queue wait percentiles, last error, and failures per sparkline bucket. Registered
    types are listed even without activity.

    Counts are exact, from per-minute rollups of the events ``job_event_activity_idx``
    finds (settled minutes cached, see ``jobs.rollups``). Percentiles are nearest-rank over
    each type's newest ``TYPE_SAMPLE_SIZE`` ended attempts in the window (``sample_size``
    says how many). At most two queries however many types: the unsettled minutes' rollup
    and the samples.
    """
    now = timezone.now() if now is None else now
    first, start = _window(now, minutes)
    # "type-kinds-2": the rows hold TYPE_COUNT_KINDS, released among them (the cache's
    # "types" held event types, "type-kinds" the kinds before released).
    per_minute = rollups.per_minute("type-kinds-2", first=first, now=now, compute=_activity_by_type)
    bucket_minutes = -(-minutes // SPARKLINE_POINTS)
    points = -(-minutes // bucket_minutes)
    counts: dict[str, dict[str, int]] = {}
    failures: dict[str, list[int]] = {}
    for minute, rows in per_minute.items():
        for job_type, event_type, events in rows:
            if job_type is None:  # written before events carried their job's type
                continue
            by_type = counts.setdefault(job_type, dict.fromkeys(TYPE_COUNT_KINDS, 0))
            by_type[event_type] += events
            if event_type in TYPE_FAILURE_KINDS:
                series = failures.setdefault(job_type, [0] * points)
                series[(minute - first) // bucket_minutes] += events
    registered = set(registry.registered_types())
    names = sorted(registered | set(counts))
    samples = {
        sample.job_type: sample
        for sample in get_driver().type_samples(names, start=start, end=now, size=TYPE_SAMPLE_SIZE)
    }
    types = []
    for name in names:
        by_type = counts.get(name, dict.fromkeys(TYPE_COUNT_KINDS, 0))
        failed = sum(by_type[kind] for kind in TYPE_FAILURE_KINDS)
        ended = sum(by_type[kind] for kind in TYPE_ATTEMPT_KINDS)
        sample = samples[name]
        types.append(
            {
                "type": name,
                "registered": name in registered,
                "counts": {str(key): value for key, value in by_type.items()},
                "attempts": ended,
                "failure_rate": round(failed / ended, 4) if ended else None,
                "sample_size": sample.attempts,
                "run_ms": {"p50": sample.run_p50_ms, "p95": sample.run_p95_ms},
                "wait_ms": {"p50": sample.wait_p50_ms, "p95": sample.wait_p95_ms},
                "last_error": None
                if sample.last_error is None
                else {
                    "message": sample.last_error[:LAST_ERROR_MAX_CHARS],
                    "at": sample.last_error_at,
                    "job_id": sample.last_error_job_id,
                },
                "failures": failures.get(name, [0] * points),
            }
        )
    return {
        "minutes": minutes,
        "start": start,
        "end": now,
        "bucket_seconds": bucket_minutes * 60,
        "sample_size_max": TYPE_SAMPLE_SIZE,
        "types": types,
        "error_groups": error_groups(start=start, end=now),
    }


# The failure triage's groups: at most this many (the most frequent), each message cut to
# this many characters (a message with a per-job number in it otherwise makes one group
# per job).
ERROR_GROUPS_MAX = 50
ERROR_GROUP_MESSAGE_CHARS = 200
# Distinct jobs counted per group, at most: a group's job ids ride in the per-minute
# rollups, so this bounds what a poll unions (beyond it the count says "at least").
ERROR_GROUP_JOBS_MAX = 1000
_UUID_BYTES = 16


def _failures_by_minute(start: datetime, end: datetime) -> rollups.MinuteRows:
    """Per minute: ``(type, exception, message, attempts, last_at, job ids)`` per group,
    the job ids packed 16 bytes each, at most ``ERROR_GROUP_JOBS_MAX + 1`` (one more says
    the group had more)."""
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for row in (
        JobEvent.objects.filter(
            type__in=FAILURE_EVENT_TYPES,
            created_at__gte=start,
            created_at__lte=end,
            job_type__isnull=False,
        )
        .annotate(
            minute=EpochSeconds("created_at") / 60,
            exception=KeyTextTransform("exception_class", "data"),
            text=Substr("message", 1, ERROR_GROUP_MESSAGE_CHARS),
        )
        .values("minute", "job_type", "exception", "text", "job_id")
        .annotate(attempts=Count("pk"), last_at=Max("created_at"))
        .order_by()
    ):
        key = (row["minute"], row["job_type"], row["exception"], row["text"])
        group = groups.setdefault(key, [0, row["last_at"], []])
        group[0] += row["attempts"]
        group[1] = max(group[1], row["last_at"])
        if len(group[2]) <= ERROR_GROUP_JOBS_MAX:
            group[2].append(row["job_id"].bytes)
    rows: rollups.MinuteRows = defaultdict(list)
    for (minute, *name), (attempts, last_at, ids) in groups.items():
        rows[minute].append((*name, attempts, last_at, b"".join(ids)))
    return rows


def error_groups(*, start: datetime, end: datetime) -> list[dict[str, Any]]:
    """The failed attempts between ``start`` and ``end`` grouped by job type, exception
    class and message (its first ``ERROR_GROUP_MESSAGE_CHARS`` characters), most frequent
    first: how many attempts and distinct jobs (exact up to ``ERROR_GROUP_JOBS_MAX``,
    ``jobs_capped`` beyond), and the latest one's time.

    Whole minutes, like ``type_health``'s counts: from per-minute rollups (see
    ``jobs.rollups``), so a warm poll reads the failures of the unsettled minutes only,
    however many the window holds."""
    first = int(start.timestamp()) // 60
    per_minute = rollups.per_minute(
        "error-groups", first=first, now=end, compute=_failures_by_minute
    )
    merged: dict[tuple[str, str | None, str], list[Any]] = {}
    for minute_rows in per_minute.values():
        for job_type, exception, text, attempts, last_at, packed in minute_rows:
            group = merged.setdefault((job_type, exception, text), [0, last_at, set()])
            group[0] += attempts
            group[1] = max(group[1], last_at)
            ids = group[2]
            if len(ids) <= ERROR_GROUP_JOBS_MAX:
                ids.update(
                    packed[at : at + _UUID_BYTES] for at in range(0, len(packed), _UUID_BYTES)
                )
    top = sorted(merged.items(), key=lambda item: (item[1][0], item[1][1]), reverse=True)
    return [
        {
            "type": job_type,
            "exception_class": exception_name(exception),
            "message": text,
            "attempts": attempts,
            "jobs": min(len(ids), ERROR_GROUP_JOBS_MAX),
            "jobs_capped": len(ids) > ERROR_GROUP_JOBS_MAX,
            "last_at": last_at,
        }
        for (job_type, exception, text), (attempts, last_at, ids) in top[:ERROR_GROUPS_MAX]
    ]
