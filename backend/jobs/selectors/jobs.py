"""One job and the job list: a job, its attempts and page, lookups by short id or key, the
filtered and ordered list, and a job's attempt history for ``django.tasks``.

Data access: the ORM (``Job`` and ``JobEvent`` querysets, served by the indexes their
docstrings name).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.db.models import (
    Case,
    CharField,
    DateTimeField,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.fields.json import KeyTextTransform
from django.utils import timezone

from .. import registry
from ..conf import app_settings
from ..models import (
    ATTEMPT_END_EVENT_TYPES,
    FAILURE_EVENT_TYPES,
    Job,
    JobDependency,
    JobEvent,
    JobEventType,
    JobStatus,
)
from .common import ObjectKeyText


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
            jobs = jobs.alias(metadata_value=ObjectKeyText("metadata", name)).filter(
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


# Events an attempt is read from: its claim, whatever ended it, and the manual retries that
# start a new round (the spec resets ``attempts`` on a manual retry).
ATTEMPT_EVENT_TYPES = [
    JobEventType.CLAIMED,
    *ATTEMPT_END_EVENT_TYPES,
    JobEventType.MANUAL_RETRY,
    JobEventType.RELEASED,
    JobEventType.SNOOZED,
]


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
        if event.type in (JobEventType.RELEASED, JobEventType.SNOOZED):
            # Claimed but given back before its handler started, or snoozed by it: no
            # attempt was spent (the next claim takes its number), so none is listed.
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
    the latest failure's exception class and traceback, the effective timeout, and its
    dependencies (``dependencies_of``)."""
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
        **dependencies_of(job.pk),
    }


def dependencies_of(job_id: UUID) -> dict[str, Any]:
    """The jobs ``job_id`` waits for (``depends_on``, oldest first), its policy when one of
    them does not succeed (``on_parent_failure``, null without parents), and how many jobs
    wait for it (``dependents``). Two index probes, one per direction of the edges."""
    edges = list(
        JobDependency.objects.filter(job_id=job_id)
        .order_by("parent__created_at", "parent_id")
        .values_list("parent_id", "on_parent_failure")
    )
    return {
        "depends_on": [parent_id for parent_id, _ in edges],
        "on_parent_failure": edges[0][1] if edges else None,
        "dependents": JobDependency.objects.filter(parent_id=job_id).count(),
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
