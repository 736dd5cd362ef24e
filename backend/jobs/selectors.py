"""Every read the API, the admin, the metrics and the worker share: nothing here writes.

Views parse their input, call one of these, and serialize what it returns. Plain values
and querysets: what is shaped for HTTP (the config document, the session's state) is the
API's (``jobs.api.answers``). This module imports neither the writes (``jobs.services``)
nor the worker nor the REST framework.
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from django.core.cache import cache
from django.db.models import (
    Case,
    CharField,
    Count,
    DateTimeField,
    F,
    Func,
    IntegerField,
    Max,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.expressions import Combinable
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Substr
from django.utils import timezone

from . import registry, rollups
from .conf import app_settings
from .drivers import get_driver
from .errors import ScheduleNotFound
from .flowcontrol import MISSED_POLICIES, ScheduleSpec, configured_schedules
from .models import (
    ACTIVITY_EVENT_TYPES,
    ATTEMPT_END_EVENT_TYPES,
    DEFAULT_QUEUE,
    FAILURE_EVENT_TYPES,
    FINISHED_STATUSES,
    Job,
    JobEvent,
    JobEventType,
    JobStatus,
    QueueSettings,
    ScheduleState,
    WorkerPresence,
)
from .worker_ids import is_thread_of


def get_job(job_id: UUID | str) -> Job:
    """The job with this id; ``JobNotFound`` otherwise."""
    return Job.objects.by_id(job_id)


# Events that end an attempt with an error; with the claims, they are what a django.tasks
# TaskResult is built from (``jobs.backends`` makes each one a TaskError).
ATTEMPT_ERROR_EVENTS = (
    JobEventType.RETRY_SCHEDULED,
    JobEventType.FAILED,
    JobEventType.CANCELLED,
    JobEventType.TIMEOUT_REQUEUED,
)


def attempt_history(job_id: UUID | str) -> list[JobEvent]:
    """A job's ``claimed`` events, the ``released`` ones that gave a claim back before it
    started, and the events that ended an attempt with an error, oldest first, in one query
    (served by ``job_event_job_id_idx``)."""
    return list(
        JobEvent.objects.filter(
            job_id=job_id,
            type__in=[JobEventType.CLAIMED, JobEventType.RELEASED, *ATTEMPT_ERROR_EVENTS],
        )
        .order_by("id")
        .only("type", "worker_id", "message", "data", "created_at")
    )


def job_with_attempt_history(job_id: UUID | str) -> tuple[Job, list[JobEvent]]:
    """The job and its ``attempt_history``, in two queries; ``JobNotFound`` if unknown."""
    return get_job(job_id), attempt_history(job_id)


def active_queues() -> list[str]:
    """The queues that have queued jobs, in name order (what a ``*`` worker serves)."""
    return get_driver().active_queues()


# The job list's orders (``ordering``, a leading ``-`` for descending); ties are broken by
# newest first. Only created_at is served by an index; the others sort the filtered rows.
JOB_ORDERINGS = ["created_at", "started_at", "finished_at", "priority", "type"]
DEFAULT_JOB_ORDERING = "-created_at"


def started_at_expression() -> Any:
    """When the job's current attempt started (its ``claimed`` event); null while it is
    queued, as it is not running any attempt then."""
    claims = JobEvent.objects.filter(
        job_id=OuterRef("pk"), type=JobEventType.CLAIMED, attempt=OuterRef("attempts")
    ).order_by("-id")
    return Case(
        When(status=JobStatus.QUEUED, then=Value(None)),
        default=Subquery(claims.values("created_at")[:1]),
        output_field=DateTimeField(),
    )


def last_exception_expression() -> Any:
    """The exception class of the job's latest failed attempt (its newest failure event's
    ``data.exception_class``), null while it has no error or was cancelled: one probe of
    ``job_event_job_id_idx`` per listed job."""
    failures = JobEvent.objects.filter(
        job_id=OuterRef("pk"), type__in=FAILURE_EVENT_TYPES
    ).order_by("-id")
    return Case(
        # An operator's cancel is no error to triage (its attempt's exception is the
        # cancellation itself).
        When(Q(last_error="") | Q(status=JobStatus.CANCELLED), then=Value(None)),
        default=Subquery(
            failures.annotate(name=KeyTextTransform("exception_class", "data")).values("name")[:1]
        ),
        output_field=CharField(),
    )


def job_list(
    *,
    status: str | None = None,
    type: str | None = None,
    queue: str | None = None,
    idempotency_key: str | None = None,
    ordering: str = DEFAULT_JOB_ORDERING,
    unique_key: str | None = None,
    concurrency_key: str | None = None,
    key: str | None = None,
    metadata: str | None = None,
    error: str | None = None,
    due: bool | None = None,
    lease_expired: bool | None = None,
    now: datetime | None = None,
) -> QuerySet[Job]:
    """Jobs in ``ordering`` (newest first by default), each with ``started_at`` and
    ``last_exception_class``; ``status`` and ``queue`` exact, ``type`` a case-insensitive
    substring (the same selection the bulk actions take); ``idempotency_key`` exact, served
    by its unique index; ``unique_key`` and ``concurrency_key`` exact; ``key`` any of the
    three keys, exact; ``metadata`` a ``name=value`` pair (exact) or a name the metadata
    has; ``error`` a case-insensitive substring of ``last_error``; ``due`` queued jobs due
    now (true) or scheduled for later (false), by ``available_at``; ``lease_expired``
    running jobs whose lease ran out (true) or not (false)."""
    now = timezone.now() if now is None else now
    jobs = Job.objects.matching(status=status, type=type, queue=queue)
    if idempotency_key:
        jobs = jobs.filter(idempotency_key=idempotency_key)
    if unique_key:
        jobs = jobs.filter(unique_key=unique_key)
    if concurrency_key:
        jobs = jobs.filter(concurrency_key=concurrency_key)
    if key:
        jobs = jobs.filter(Q(idempotency_key=key) | Q(unique_key=key) | Q(concurrency_key=key))
    if metadata:
        name, sep, value = metadata.partition("=")
        name = name.strip()
        if sep:
            jobs = jobs.alias(metadata_value=KeyTransform(name, "metadata")).filter(
                metadata_value=value.strip()
            )
        else:
            jobs = jobs.filter(metadata__has_key=name)
    if error:
        jobs = jobs.filter(last_error__icontains=error)
    if due is not None:
        due_filter = Q(available_at__lte=now) if due else Q(available_at__gt=now)
        jobs = jobs.filter(due_filter, status=JobStatus.QUEUED)
    if lease_expired is not None:
        lease_filter = Q(locked_until__lt=now) if lease_expired else Q(locked_until__gte=now)
        jobs = jobs.filter(lease_filter, status=JobStatus.RUNNING)
    jobs = jobs.annotate(
        started_at=started_at_expression(), last_exception_class=last_exception_expression()
    )
    field = ordering.removeprefix("-")
    if field not in JOB_ORDERINGS:
        raise ValueError(f"unknown ordering {ordering!r}")
    if field == "created_at":
        order = F(field).desc() if ordering.startswith("-") else F(field).asc()
    elif ordering.startswith("-"):
        order = F(field).desc(nulls_last=True)
    else:
        order = F(field).asc(nulls_last=True)
    return jobs.order_by(order, "-created_at", "-id")


def job_timeline(job_id: UUID | str, *, heartbeats: str = "include") -> QuerySet[JobEvent]:
    """One job's events, oldest first; ``JobNotFound`` if the job does not exist.
    ``heartbeats="exclude"`` leaves out ``lease_renewed`` and ``progress``."""
    job = get_job(job_id)
    events = JobEvent.objects.filter(job=job)
    if heartbeats == "exclude":
        events = events.exclude(type__in=HEARTBEAT_EVENT_TYPES)
    return events.order_by("id")


def event_feed(
    *, type: str | None = None, job_id: UUID | None = None, heartbeats: str = "include"
) -> QuerySet[JobEvent]:
    """Events of all jobs (the paginator orders them newest first); ``heartbeats="exclude"``
    leaves out ``lease_renewed`` and ``progress``."""
    events = JobEvent.objects.all()
    if type:
        events = events.filter(type=type)
    if job_id:
        events = events.filter(job_id=job_id)
    if heartbeats == "exclude":
        events = events.exclude(type__in=HEARTBEAT_EVENT_TYPES)
    return events


# The live rows, written as an OR of one status each: each arm is read through the partial
# index that holds exactly that status (queued: job_claim_idx, running: job_timeout_idx) and
# the two are combined as a bitmap. jobs_job_status_idx holds finished jobs only (issue 25,
# migration 0009), and `status IN ('queued', 'running')` implies neither partial index's
# condition, so it would scan the whole table.
LIVE = Q(status=JobStatus.QUEUED) | Q(status=JobStatus.RUNNING)


def job_stats(*, now: datetime | None = None) -> dict[str, Any]:
    """Queue counts: total, per status, overdue leases, pending retries, queued jobs
    scheduled for later apart from those due, backlog age, and the queues that have queued
    jobs.

    Queued and running counts (and everything derived from them) are always exact: they
    read only the live rows, through their indexes (``LIVE``). Finished counts and the total are
    exact below ``JOB_STATS_EXACT_MAX_ROWS`` rows; above it, where counting would scan the
    table on every poll, they are estimated from PostgreSQL's planner statistics and
    ``estimated`` says so. One query (plus, on PostgreSQL, the table estimate), and the
    queue names (on PostgreSQL a loose index scan: one probe per queue).
    """
    now = timezone.now() if now is None else now
    live = LIVE
    aggregates = {
        JobStatus.QUEUED.value: Count("pk", filter=Q(status=JobStatus.QUEUED)),
        JobStatus.RUNNING.value: Count("pk", filter=Q(status=JobStatus.RUNNING)),
        "overdue_running": Count("pk", filter=Q(status=JobStatus.RUNNING, locked_until__lt=now)),
        "retries_pending": Count("pk", filter=Q(status=JobStatus.QUEUED, attempts__gt=0)),
        "scheduled": Count("pk", filter=Q(status=JobStatus.QUEUED, available_at__gt=now)),
        "oldest_queued_at": Min("created_at", filter=Q(status=JobStatus.QUEUED)),
        "oldest_due_at": Min(
            "available_at", filter=Q(status=JobStatus.QUEUED, available_at__lte=now)
        ),
    }
    estimate = get_driver().status_estimate()
    estimated = estimate is not None and estimate.rows > app_settings.JOB_STATS_EXACT_MAX_ROWS
    if estimated:
        assert estimate is not None
        row = Job.objects.filter(live).aggregate(**aggregates)
        finished_rows = max(estimate.rows - row["queued"] - row["running"], 0)
        shares = {status: estimate.frequencies.get(status, 0.0) for status in FINISHED_STATUSES}
        whole = sum(shares.values()) or 1.0
        for status in FINISHED_STATUSES:
            row[status.value] = round(finished_rows * shares[status] / whole)
    else:
        finished = {
            status.value: Count("pk", filter=Q(status=status)) for status in FINISHED_STATUSES
        }
        row = Job.objects.aggregate(**aggregates, **finished)
    by_status = {status.value: row[status.value] for status in JobStatus}
    return {
        "total": sum(by_status.values()),
        "by_status": by_status,
        "overdue_running": row["overdue_running"],
        "retries_pending": row["retries_pending"],
        "scheduled": row["scheduled"],
        "due": by_status[JobStatus.QUEUED.value] - row["scheduled"],
        "oldest_queued_at": row["oldest_queued_at"],
        "oldest_due_at": row["oldest_due_at"],
        "estimated": estimated,
        "queues": active_queues(),
    }


def cached_job_stats() -> dict[str, Any]:
    """``job_stats``, computed at most once per ``JOB_STATS_CACHE_SECONDS`` per cache: N
    dashboards polling cost the database one stats query per interval, not N."""
    ttl = app_settings.JOB_STATS_CACHE_SECONDS
    if not ttl:
        return job_stats()
    stats: dict[str, Any] | None = cache.get(STATS_CACHE_KEY)
    if stats is None:
        # One thread computes; the others that missed with it wait and read its result
        # (without this, every request arriving as the entry expires runs the query).
        with _STATS_LOCK:
            stats = cache.get(STATS_CACHE_KEY)
            if stats is None:
                stats = job_stats()
                cache.set(STATS_CACHE_KEY, stats, ttl)
    return stats


STATS_CACHE_KEY = "jobs:job_stats"
_STATS_LOCK = threading.Lock()


def live_jobs(*, now: datetime | None = None) -> list[dict[str, Any]]:
    """Queued and running jobs per (status, queue, type), exact: their count, the oldest
    due ``available_at`` (queued) and how many hold an expired lease (running). One query
    over the live rows only (``LIVE``), however large the history."""
    now = timezone.now() if now is None else now
    return [
        dict(row)
        for row in Job.objects.filter(LIVE)
        .values("status", "queue", "type")
        .annotate(
            jobs=Count("pk"),
            oldest_due_at=Min(
                "available_at", filter=Q(status=JobStatus.QUEUED, available_at__lte=now)
            ),
            overdue=Count("pk", filter=Q(status=JobStatus.RUNNING, locked_until__lt=now)),
        )
        .order_by("status", "queue", "type")
    ]


class EpochSeconds(Func):
    """Whole seconds since the Unix epoch of a datetime column, floored."""

    output_field = IntegerField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(
            compiler, connection, template="FLOOR(EXTRACT(EPOCH FROM %(expressions)s))::bigint"
        )

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        # SQLite stores UTC text "YYYY-MM-DD HH:MM:SS.ffffff"; the fraction is cut off
        # because strftime would round it to milliseconds (and 59.9999 up a second).
        return self.as_sql(
            compiler,
            connection,
            template="CAST(strftime('%%%%s', substr(%(expressions)s, 1, 19)) AS INTEGER)",
        )


# The events that finish a job (until a manual retry): what the throughput chart counts.
FINISHED_EVENT_TYPES = (JobEventType.SUCCEEDED, JobEventType.FAILED, JobEventType.CANCELLED)


def throughput(
    *, now: datetime | None = None, minutes: int = 15, bucket_seconds: int = 60
) -> dict[str, Any]:
    """Finished attempts per time bucket over the last ``minutes``, oldest bucket first.

    Buckets are ``bucket_seconds`` wide and aligned to multiples of ``bucket_seconds``
    since the Unix epoch, so they stay put between polls; there are
    ``ceil(minutes * 60 / bucket_seconds)`` of them and the newest one contains ``now``
    (it is partial). Each counts the ``succeeded``, ``failed`` and ``cancelled`` events
    created in it, zero when there were none. One query, grouped per bucket in the
    database; the ``created_at`` range is served by ``jobs_jobevent_created_at_idx``.
    """
    now = timezone.now() if now is None else now
    count = -(-minutes * 60 // bucket_seconds)
    last_start = int(now.timestamp()) // bucket_seconds * bucket_seconds
    first_start = last_start - (count - 1) * bucket_seconds
    start = datetime.fromtimestamp(first_start, tz=UTC)
    # Bucket bounds are whole seconds, so flooring an event's time never crosses one.
    bucket: Combinable = (EpochSeconds("created_at") - first_start) / bucket_seconds
    rows = (
        JobEvent.objects.filter(
            type__in=FINISHED_EVENT_TYPES,
            created_at__gte=start,
            created_at__lte=now,
        )
        .annotate(bucket=bucket)
        .values("bucket", "type")
        .annotate(total=Count("pk"))
        .order_by()
    )
    buckets = [
        {
            "start": datetime.fromtimestamp(first_start + index * bucket_seconds, tz=UTC),
            **{event_type.value: 0 for event_type in FINISHED_EVENT_TYPES},
        }
        for index in range(count)
    ]
    for row in rows:
        buckets[int(row["bucket"])][row["type"]] = row["total"]
    return {"bucket_seconds": bucket_seconds, "start": start, "end": now, "buckets": buckets}


# --- Job types and workers ------------------------------------------------------------

# Ended attempts per type that the run time and queue wait percentiles are taken over.
TYPE_SAMPLE_SIZE = 1000
# Points of a type's failure sparkline, at most (whole minutes each).
SPARKLINE_POINTS = 60
LAST_ERROR_MAX_CHARS = 1000


def _window(now: datetime, minutes: int) -> tuple[int, datetime]:
    """The first epoch minute of a window of ``minutes`` whole minutes ending with the one
    that holds ``now`` (partial), and that minute's start."""
    first = int(now.timestamp()) // 60 - (minutes - 1)
    return first, rollups.minute_start(first)


# What the job types page counts: the activity events, with two told apart by what they
# carry. An attempt ended at its timeout writes retry_scheduled or failed with
# ``reason: timeout`` (counted as timed_out); a cancel of a job that never ran writes
# cancelled without run_ms (counted as cancelled_queued: not an attempt). A claim given
# back before its handler started (released, issue 25) is no attempt either: it is counted
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


def error_groups(*, start: datetime, end: datetime) -> list[dict[str, Any]]:
    """The failed attempts between ``start`` and ``end`` grouped by job type, exception
    class and message (its first ``ERROR_GROUP_MESSAGE_CHARS`` characters), most frequent
    first: how many attempts and jobs, and the latest one's time. One query over the
    failure events of the window."""
    rows = (
        JobEvent.objects.filter(
            type__in=FAILURE_EVENT_TYPES,
            created_at__gte=start,
            created_at__lte=end,
            job_type__isnull=False,
        )
        .annotate(
            exception=KeyTextTransform("exception_class", "data"),
            text=Substr("message", 1, ERROR_GROUP_MESSAGE_CHARS),
        )
        .values("job_type", "exception", "text")
        .annotate(
            attempts=Count("pk"), jobs=Count("job_id", distinct=True), last_at=Max("created_at")
        )
        .order_by("-attempts", "-last_at")[:ERROR_GROUPS_MAX]
    )
    return [
        {
            "type": row["job_type"],
            "exception_class": exception_name(row["exception"]),
            "message": row["text"],
            "attempts": row["attempts"],
            "jobs": row["jobs"],
            "last_at": row["last_at"],
        }
        for row in rows
    ]


def _activity_by_worker(start: datetime, end: datetime) -> rollups.MinuteRows:
    rows: rollups.MinuteRows = defaultdict(list)
    for row in (
        JobEvent.objects.filter(
            type__in=ACTIVITY_EVENT_TYPES,
            created_at__gte=start,
            created_at__lte=end,
            worker_id__isnull=False,
        )
        .annotate(minute=EpochSeconds("created_at") / 60)
        .values("minute", "worker_id")
        .annotate(
            finished=Count("type", filter=Q(type__in=ATTEMPT_END_EVENT_TYPES)),
            last_at=Max("created_at"),
        )
        .order_by()
    ):
        rows[row["minute"]].append((row["worker_id"], row["finished"], row["last_at"]))
    return rows


# --- One job's attempts, its detail, and lookups by short id ------------------------------

# Events an attempt is read from: its claim, whatever ended it, and the manual retries that
# start a new round (the spec resets ``attempts`` on a manual retry).
ATTEMPT_EVENT_TYPES = [
    JobEventType.CLAIMED,
    *ATTEMPT_END_EVENT_TYPES,
    JobEventType.MANUAL_RETRY,
    JobEventType.RELEASED,
]
# Events a client may leave out of a timeline or the feed (``heartbeats=exclude``).
HEARTBEAT_EVENT_TYPES = [JobEventType.LEASE_RENEWED, JobEventType.PROGRESS]
# A prefix of a job id names a job when it is at least this many hex digits.
ID_PREFIX_MIN_LENGTH = 8
_HEX = re.compile(r"^[0-9a-f]+$")


class AmbiguousIdPrefix(Exception):
    """A short id that is the prefix of more than one job's id."""

    def __init__(self, prefix: str, matches: int) -> None:
        super().__init__(f"'{prefix}' matches {matches} jobs: type more characters.")
        self.prefix = prefix
        self.matches = matches


def _outcome(event: JobEvent) -> str:
    data = event.data if isinstance(event.data, dict) else {}
    if data.get("reason") == "timeout":
        return "timed_out"
    if event.type == JobEventType.TIMEOUT_REQUEUED or "expired_worker_id" in data:
        # Ended by another process's cleanup: the owner's lease ran out. A cancel that
        # was pending then still ends as cancelled.
        return "cancelled" if event.type == JobEventType.CANCELLED else "lease_expired"
    return {
        JobEventType.SUCCEEDED: "succeeded",
        JobEventType.RETRY_SCHEDULED: "retried",
        JobEventType.FAILED: "failed",
        JobEventType.CANCELLED: "cancelled",
    }[JobEventType(event.type)]


def exception_name(path: Any) -> str | None:
    """An exception's class path as the worker records it (``module.Qualname``), without
    the ``builtins.`` of Python's own exceptions; ``None`` for none."""
    if not isinstance(path, str) or not path:
        return None
    return path.removeprefix("builtins.")


def _attempts_from(job: Job, events: list[JobEvent]) -> list[dict[str, Any]]:
    attempts: list[dict[str, Any]] = []
    round_number = 1
    open_attempt: dict[str, Any] | None = None
    for event in events:
        if event.type == JobEventType.MANUAL_RETRY:
            round_number += 1
            open_attempt = None
            continue
        if event.type == JobEventType.CLAIMED:
            wait_ms = event.wait_ms
            open_attempt = {
                "round": round_number,
                "attempt": event.attempt,
                "number": len(attempts) + 1,
                "worker_id": event.worker_id,
                "queued_at": None
                if wait_ms is None
                else event.created_at - timedelta(milliseconds=wait_ms),
                "claimed_at": event.created_at,
                "started_at": event.created_at,
                "finished_at": None,
                "wait_ms": wait_ms,
                "run_ms": None,
                "outcome": "running",
                "error": None,
                "exception_class": None,
                "traceback": None,
            }
            attempts.append(open_attempt)
            continue
        if event.type == JobEventType.RELEASED:
            # Claimed but given back before its handler started: it was never an attempt.
            if open_attempt is not None and event.attempt == open_attempt["attempt"]:
                attempts.remove(open_attempt)
            open_attempt = None
            continue
        # An attempt ending: only one that follows its claim (a job cancelled while queued
        # writes ``cancelled`` with no attempt running: not an attempt).
        if open_attempt is None or event.attempt != open_attempt["attempt"]:
            continue
        data = event.data if isinstance(event.data, dict) else {}
        error = data.get("error") if event.type != JobEventType.SUCCEEDED else None
        traceback = data.get("traceback")
        open_attempt.update(
            finished_at=event.created_at,
            run_ms=event.run_ms,
            outcome=_outcome(event),
            error=error if isinstance(error, str) else None,
            exception_class=exception_name(data.get("exception_class")),
            traceback=traceback if isinstance(traceback, str) and traceback else None,
        )
        open_attempt = None
    # An attempt left open is running only while the job is; otherwise its end was not
    # recorded as an event (never by this code's writers) and it is shown as lease expired.
    for entry in attempts:
        if entry["outcome"] == "running" and not (
            job.status == JobStatus.RUNNING
            and entry is attempts[-1]
            and job.attempts == entry["attempt"]
        ):
            entry["outcome"] = "lease_expired"
    return attempts


def job_attempts(job_id: UUID | str) -> list[dict[str, Any]]:
    """One job's attempts, oldest first, read from its events: each ``claimed`` event opens
    one and the event that ends it (``succeeded``, ``retry_scheduled``, ``failed``,
    ``timeout_requeued``, ``cancelled``) closes it; each ``manual_retry`` starts a new round; a
    ``released`` claim (never started) is no attempt.
    Two queries (the job, and its attempt events through ``job_event_job_id_idx``);
    ``JobNotFound`` if the job does not exist."""
    job = get_job(job_id)
    return _attempts_from(job, _attempt_events(job.pk))


def _attempt_events(job_id: UUID) -> list[JobEvent]:
    return list(
        JobEvent.objects.filter(job_id=job_id, type__in=ATTEMPT_EVENT_TYPES)
        .order_by("id")
        .only("type", "attempt", "worker_id", "data", "created_at", "wait_ms", "run_ms")
    )


def effective_timeout(job: Job) -> tuple[int | None, str | None]:
    """The timeout an attempt of ``job`` gets and where it comes from, as a worker with this
    process's settings resolves it: the job's ``timeout_seconds`` (``"job"``), else its
    type's default (``"type"``), else ``JOB_WORKER_TIMEOUT_SECONDS`` (``"worker"``);
    ``(None, None)`` when none applies (0 means none)."""
    if job.timeout_seconds:
        return job.timeout_seconds, "job"
    spec = registry.get_handler(job.type)
    if spec is not None and spec.timeout_seconds:
        return spec.timeout_seconds, "type"
    if app_settings.JOB_WORKER_TIMEOUT_SECONDS:
        return app_settings.JOB_WORKER_TIMEOUT_SECONDS, "worker"
    return None, None


def job_detail(job_id: UUID | str) -> tuple[Job, dict[str, Any]]:
    """The job and what its page adds to it: attempts over all rounds, the current round,
    the latest failure's exception class and traceback, and the effective timeout."""
    job = get_job(job_id)
    attempts = _attempts_from(job, _attempt_events(job.pk))
    rounds = JobEvent.objects.filter(job_id=job.pk, type=JobEventType.MANUAL_RETRY).count()
    # An operator's cancel is no failure: the exception its handler raised as it stopped is
    # the cancellation itself.
    failure = next(
        (
            attempt
            for attempt in reversed(attempts)
            if attempt["exception_class"] and attempt["outcome"] != "cancelled"
        ),
        None,
    )
    timeout, source = effective_timeout(job)
    current = attempts[-1] if attempts and job.status != JobStatus.QUEUED else None
    return job, {
        "started_at": current["started_at"] if current else None,
        "total_attempts": len(attempts),
        "round": rounds + 1,
        "last_exception_class": failure["exception_class"] if failure else None,
        "last_traceback": failure["traceback"] if failure else None,
        "effective_timeout_seconds": timeout,
        "timeout_source": source,
    }


def id_prefix(text: str) -> str | None:
    """The lower-case hex digits of ``text`` (dashes ignored) when they can be the start of
    a job id (``ID_PREFIX_MIN_LENGTH`` to 32 of them), else ``None``."""
    digits = text.strip().replace("-", "").lower()
    if ID_PREFIX_MIN_LENGTH <= len(digits) <= 32 and _HEX.match(digits):
        return digits
    return None


def jobs_with_id_prefix(prefix: str) -> QuerySet[Job]:
    """The jobs whose id starts with the hex digits ``prefix``: a range of the primary key
    (the first id with the prefix to the last), so the database answers from its index,
    not by casting every id to text."""
    low = UUID(prefix.ljust(32, "0"))
    high = UUID(prefix.ljust(32, "f"))
    return Job.objects.filter(pk__gte=low, pk__lte=high)


def job_id_from_prefix(text: str) -> UUID | None:
    """The id of the one job whose id starts with ``text`` (a whole id, or at least
    ``ID_PREFIX_MIN_LENGTH`` hex digits; dashes ignored); ``None`` when no job has it;
    ``AmbiguousIdPrefix`` when several do; ``ValueError`` when ``text`` cannot be one."""
    prefix = id_prefix(text)
    if prefix is None:
        raise ValueError(text)
    ids = list(jobs_with_id_prefix(prefix).values_list("pk", flat=True)[:2])
    if len(ids) > 1:
        raise AmbiguousIdPrefix(text.strip(), jobs_with_id_prefix(prefix).count())
    return ids[0] if ids else None


def lookup_job(text: str) -> tuple[str, Job] | None:
    """The job ``text`` names, and how: its whole id (``"id"``), its idempotency key,
    exact (``"idempotency_key"``), or a unique prefix of its id of at least
    ``ID_PREFIX_MIN_LENGTH`` hex digits, dashes ignored (``"id_prefix"``). ``None`` when it
    names none; ``AmbiguousIdPrefix`` when it is the prefix of several ids."""
    text = text.strip()
    try:
        whole = UUID(text)
    except ValueError:
        whole = None
    if whole is not None:
        job = Job.objects.filter(pk=whole).first()
        if job is not None:
            return "id", job
    if text:
        job = Job.objects.filter(idempotency_key=text).first()
        if job is not None:
            return "idempotency_key", job
    prefix = id_prefix(text)
    if prefix is None or len(prefix) == 32:
        return None
    jobs = list(jobs_with_id_prefix(prefix)[:2])
    if len(jobs) > 1:
        raise AmbiguousIdPrefix(text, jobs_with_id_prefix(prefix).count())
    return ("id_prefix", jobs[0]) if jobs else None


# --- Live workers ------------------------------------------------------------------------


def _finished_by_thread(first: int, now: datetime) -> dict[str, int]:
    finished: dict[str, int] = defaultdict(int)
    for rows in rollups.per_minute(
        "workers", first=first, now=now, compute=_activity_by_worker
    ).values():
        for worker_id, count, _last_at in rows:
            finished[worker_id] += count
    return finished


def live_workers(*, minutes: int = 60, now: datetime | None = None) -> dict[str, Any]:
    """Every worker process alive now, idle or busy, from its presence row
    (``WorkerPresence``): live while its ``last_seen_at`` is within one heartbeat interval
    of ``now`` (its maintenance thread writes it every half interval, so a process killed
    without a word drops out within one interval). Each with its serving threads and the
    job each runs, the attempt endings its threads wrote in the last ``minutes``, and its
    abandoned threads (stuck in a handler whose attempt timed out) with the job each still
    runs and that job's status now. Four queries however many workers: the presence rows,
    the running jobs, the abandoned threads' jobs, and the unsettled minutes' rollup."""
    now = timezone.now() if now is None else now
    first, start = _window(now, minutes)
    present = [
        row
        for row in WorkerPresence.objects.order_by("-started_at", "worker_id")
        if row.last_seen_at > now - timedelta(seconds=row.heartbeat_interval_seconds)
    ]
    threads = {thread for row in present for thread in row.threads if isinstance(thread, str)}
    running = (
        {
            job["locked_by"]: job
            for job in Job.objects.filter(status=JobStatus.RUNNING, locked_by__in=threads).values(
                "id",
                "type",
                "queue",
                "attempts",
                "locked_by",
                "locked_until",
                # The row keeps its claim's time (no claimed event in a lean timeline).
                "claimed_at",
            )
        }
        if threads
        else {}
    )
    finished = _finished_by_thread(first, now) if present else {}
    abandoned_ids = [
        entry["job_id"]
        for row in present
        for entry in _abandoned_entries(row)
        if entry.get("job_id")
    ]
    abandoned_status = (
        dict(Job.objects.filter(pk__in=abandoned_ids).values_list("id", "status"))
        if abandoned_ids
        else {}
    )
    processes = []
    for row in present:
        entries = []
        for thread in row.threads:
            job = running.get(thread)
            entries.append(
                {
                    "worker_id": thread,
                    "job": None
                    if job is None
                    else {
                        "id": job["id"],
                        "type": job["type"],
                        "queue": job["queue"],
                        "attempt": job["attempts"],
                        "started_at": job["claimed_at"],
                        "locked_until": job["locked_until"],
                        # A running job always has a lease (job_status_valid_shape).
                        "lease_overdue": job["locked_until"] is not None
                        and job["locked_until"] < now,
                    },
                }
            )
        processes.append(
            {
                "worker_id": row.worker_id,
                "hostname": row.hostname,
                "pid": row.pid,
                "queues": row.queues,
                "threads_configured": row.threads_configured,
                "threads_live": len(entries),
                "threads_busy": sum(1 for entry in entries if entry["job"] is not None),
                "started_at": row.started_at,
                "last_seen_at": row.last_seen_at,
                "heartbeat_interval_seconds": row.heartbeat_interval_seconds,
                "finished": sum(
                    count
                    for thread, count in finished.items()
                    if is_thread_of(thread, row.worker_id)
                ),
                "threads": entries,
                "threads_abandoned": [
                    {
                        "worker_id": entry.get("worker_id"),
                        "job": None
                        if not entry.get("job_id")
                        else {
                            "id": entry["job_id"],
                            "type": entry.get("type"),
                            "attempt": entry.get("attempt"),
                            "status": abandoned_status.get(UUID(str(entry["job_id"]))),
                        },
                        "abandoned_at": _parsed_time(entry.get("abandoned_at")),
                    }
                    for entry in _abandoned_entries(row)
                ],
            }
        )
    return {"minutes": minutes, "start": start, "end": now, "processes": processes}


def _parsed_time(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _abandoned_entries(row: WorkerPresence) -> list[dict[str, Any]]:
    return [entry for entry in row.abandoned or [] if isinstance(entry, dict)]


# --- Flow control (issue 24) ------------------------------------------------------------


def _queue_document(
    name: str, row: QueueSettings | None, counts: dict[str, int], backlog: dict[str, Any]
) -> dict[str, Any]:
    running = counts.get(JobStatus.RUNNING, 0)
    limit = row.concurrency_limit if row is not None else None
    scheduled = backlog.get("scheduled", 0)
    return {
        "name": name,
        "paused": row is not None and row.paused_at is not None,
        "paused_at": row.paused_at if row is not None else None,
        "counts": {status: counts.get(status, 0) for status in JobStatus.values},
        "due": counts.get(JobStatus.QUEUED, 0) - scheduled,
        "scheduled": scheduled,
        "oldest_due_at": backlog.get("oldest_due_at"),
        "concurrency_limit": limit,
        "rate_limit": row.rate_limit if row is not None else None,
        "rate_period_seconds": row.rate_period_seconds if row is not None else None,
        "running": running,
        "saturation": None if not limit else round(running / limit, 4),
        "oldest_queued_at": backlog.get("oldest_queued_at"),
    }


def queue_list(names: list[str] | None = None) -> list[dict[str, Any]]:
    """Every known queue (it has jobs, a settings row, or is the default or a configured
    one), by name: counts by status, its queued jobs split into due and scheduled by
    ``available_at``, its backlog age (``oldest_due_at``, as the stats'), pause, limits and
    how full the concurrency limit is. With ``names``, just those."""
    by_queue: dict[str, dict[str, int]] = defaultdict(dict)
    jobs = Job.objects.all() if names is None else Job.objects.filter(queue__in=names)
    for queue, status, count in jobs.values_list("queue", "status").annotate(n=Count("id")):
        by_queue[queue][status] = count
    now = timezone.now()
    backlog: dict[str, dict[str, Any]] = {
        row["queue"]: dict(row)
        for row in jobs.filter(status=JobStatus.QUEUED)
        .values("queue")
        .annotate(
            scheduled=Count("pk", filter=Q(available_at__gt=now)),
            oldest_due_at=Min("available_at", filter=Q(available_at__lte=now)),
            oldest_queued_at=Min("created_at"),
        )
        .order_by()
    }
    rows = (
        QueueSettings.objects.all()
        if names is None
        else QueueSettings.objects.filter(name__in=names)
    )
    settings_rows = {row.name: row for row in rows}
    if names is None:
        known = {DEFAULT_QUEUE, *by_queue, *settings_rows}
        known.update(q for q in app_settings.JOB_WORKER_QUEUES if q != "*")
    else:
        known = set(names)
    return [
        _queue_document(
            name, settings_rows.get(name), by_queue.get(name, {}), backlog.get(name, {})
        )
        for name in sorted(known)
    ]


def queue_detail(name: str) -> dict[str, Any]:
    """``queue_list``'s entry for one queue (any name: a queue exists by being named)."""
    return queue_list([name])[0]


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
    wanted = schedules.names() if names is None else [n for n in names if n in schedules.names()]
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


def queue_controls() -> list[QueueSettings]:
    """The queues that have a settings row (a pause or a limit, or had one), by name."""
    return list(QueueSettings.objects.order_by("name"))
