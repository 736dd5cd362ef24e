"""The two queue tables. The database itself refuses rows of an impossible shape."""

import uuid
from collections.abc import Iterable
from typing import Any

from django.db import models
from django.db.models import F, Func, Q
from django.utils import timezone

from .errors import JobNotFound
from .limits import (
    IDEMPOTENCY_KEY_MAX_LENGTH,
    QUEUE_NAME_MAX_LENGTH,
    TYPE_MAX_LENGTH,
    UNIQUE_KEY_MAX_LENGTH,
    WORKER_ID_MAX_LENGTH,
    WORKFLOW_NAME_MAX_LENGTH,
    WORKFLOW_REF_MAX_LENGTH,
)

DEFAULT_QUEUE = "default"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    # An extension of the spec: created with ``depends_on``, not claimable until its
    # parents settle it (``jobs.services.settle_waiting_jobs``); outside job_claim_idx.
    WAITING = "waiting", "Waiting"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


# What "finished" means, everywhere: the statuses a job leaves only by a manual retry. The
# row shape (job_status_valid_shape), retention, the stats, the metrics and the
# django.tasks results all read it from here.
FINISHED_STATUSES = [JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED]


class JobEventType(models.TextChoices):
    CREATED = "created", "Created"
    CLAIMED = "claimed", "Claimed"
    PROGRESS = "progress", "Progress"
    LEASE_RENEWED = "lease_renewed", "Lease renewed"
    SUCCEEDED = "succeeded", "Succeeded"
    RETRY_SCHEDULED = "retry_scheduled", "Retry scheduled"
    FAILED = "failed", "Failed"
    TIMEOUT_REQUEUED = "timeout_requeued", "Timeout requeued"
    MANUAL_RETRY = "manual_retry", "Manual retry"
    CANCEL_REQUESTED = "cancel_requested", "Cancel requested"
    CANCELLED = "cancelled", "Cancelled"
    # A claimed attempt whose handler never started went back to queued
    # (graceful shutdown), its attempt not spent.
    RELEASED = "released", "Released"
    # Added with the dashboard's "Run now": an operator made a job scheduled for later (or
    # waiting out a retry's backoff) due at once.
    RUN_NOW = "run_now", "Run now"
    # A handler asked to run again later (``snooze``): back to queued, its attempt not spent.
    SNOOZED = "snoozed", "Snoozed"


# Events that end a running attempt (they carry run_ms), the failures among them, and
# what the activity rollups read: those plus claims and the claims given back unstarted.
ATTEMPT_END_EVENT_TYPES = [
    JobEventType.SUCCEEDED,
    JobEventType.RETRY_SCHEDULED,
    JobEventType.FAILED,
    JobEventType.TIMEOUT_REQUEUED,
    JobEventType.CANCELLED,
]
FAILURE_EVENT_TYPES = [
    JobEventType.RETRY_SCHEDULED,
    JobEventType.FAILED,
    JobEventType.TIMEOUT_REQUEUED,
]
ACTIVITY_EVENT_TYPES = [JobEventType.CLAIMED, *ATTEMPT_END_EVENT_TYPES, JobEventType.RELEASED]


class AtUtc(Func):
    """A ``timestamptz`` as UTC wall-clock time: in the column's own order, but an
    expression that only the index built on it can serve. job_claim_idx holds
    ``available_at`` this way so that the claim's order and due test cannot be read through
    jobs_job_available_at_idx instead (queries.sql). SQLite stores times as text
    already in UTC: there it is the column itself."""

    template = "(%(expressions)s AT TIME ZONE 'UTC')"
    arity = 1
    output_field = models.DateTimeField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        return compiler.compile(self.get_source_expressions()[0])


class JobQuerySet(models.QuerySet["Job"]):
    def by_id(self, job_id: uuid.UUID | str) -> "Job":
        """The job with this id; ``JobNotFound`` otherwise."""
        job = self.filter(pk=job_id).first()
        if job is None:
            raise JobNotFound(job_id)
        return job

    def matching(
        self,
        *,
        status: str | None = None,
        type: str | None = None,
        queue: str | None = None,
        ids: Iterable[uuid.UUID | str] | None = None,
    ) -> "JobQuerySet":
        """The job list's filters, shared by the bulk actions: ``status`` and ``queue``
        exact, ``type`` a case-insensitive substring, ``ids`` any of; empty ones ignored."""
        jobs = self
        if status:
            jobs = jobs.filter(status=status)
        if type:
            jobs = jobs.filter(type__icontains=type)
        if queue:
            jobs = jobs.filter(queue=queue)
        if ids is not None:
            jobs = jobs.filter(pk__in=list(ids))
        return jobs


class Workflow(models.Model):
    """A set of jobs and the dependency edges between them, written in one transaction
    (``jobs.services.create_workflow``): an extension of the spec. Its state is read from
    its members' statuses, never stored here."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=WORKFLOW_NAME_MAX_LENGTH, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "jobs"
        indexes = [models.Index(fields=["created_at"], name="workflow_created_at_idx")]

    def __str__(self) -> str:
        return f"workflow {self.name or self.id}"


class Job(models.Model):
    """Current state of one job; the source of truth for the queue."""

    Status = JobStatus

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    type = models.CharField(max_length=TYPE_MAX_LENGTH)
    payload = models.JSONField(default=dict, db_default={})
    status = models.CharField(
        max_length=16,
        choices=JobStatus.choices,
        default=JobStatus.QUEUED,
        db_default=JobStatus.QUEUED,
    )
    priority = models.SmallIntegerField(default=50, db_default=50)
    available_at = models.DateTimeField(default=timezone.now)
    attempts = models.IntegerField(default=0, db_default=0)
    max_attempts = models.IntegerField(default=3, db_default=3)
    idempotency_key = models.CharField(  # noqa: DJ001
        max_length=IDEMPOTENCY_KEY_MAX_LENGTH, null=True, blank=True
    )
    locked_by = models.CharField(max_length=WORKER_ID_MAX_LENGTH, null=True, blank=True)  # noqa: DJ001
    locked_until = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(default="", db_default="", blank=True)
    result = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Columns added after the spec's first version: appended, so the table's column order
    # (which JobRow follows) stays the class's field order.
    queue = models.CharField(
        max_length=QUEUE_NAME_MAX_LENGTH, default=DEFAULT_QUEUE, db_default=DEFAULT_QUEUE
    )
    # Seconds an attempt may run before it is failed as timed out; null: the job type's
    # default, else JOB_WORKER_TIMEOUT_SECONDS (0 = none). Resolved when the attempt starts.
    timeout_seconds = models.IntegerField(null=True, blank=True)
    # Set when a cancel was asked for while the job ran; the attempt then ends as cancelled.
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    # String keys and values the caller attached (a request id to correlate by) and the
    # trace context the tracing injected (traceparent, tracestate, baggage): bounded by
    # jobs.limits.metadata_problem on the way in, never read to decide the job's state.
    metadata = models.JSONField(default=dict, db_default={}, blank=True)
    # Flow control. At most one queued or running job holds a unique_key
    # (job_unique_key_active); a finished one frees it for the next create.
    unique_key = models.CharField(max_length=UNIQUE_KEY_MAX_LENGTH, null=True, blank=True)  # noqa: DJ001
    # Running jobs with one concurrency_key are bounded by its limit (ConcurrencyKeyLimit,
    # JOB_CONCURRENCY_KEY_LIMITS) across every worker.
    concurrency_key = models.CharField(  # noqa: DJ001
        max_length=UNIQUE_KEY_MAX_LENGTH, null=True, blank=True
    )
    # When its last attempt was claimed, and for which worker id: kept when the attempt ends
    # (locked_by is cleared then), so the row says who ran it and when even where the
    # timeline leaves the success path out (a lean timeline), and a success's wait and run
    # times are read from the row instead of its claimed event.
    claimed_at = models.DateTimeField(null=True, blank=True)
    claimed_by = models.CharField(  # noqa: DJ001
        max_length=WORKER_ID_MAX_LENGTH, null=True, blank=True
    )
    # The workflow the job was created in (``jobs.services.create_workflow``), and its step
    # name there ("" outside one, or for a step given none). Indexed only where set
    # (job_workflow_idx): a job created outside a workflow costs no index entry.
    workflow = models.ForeignKey(
        Workflow,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="jobs",
        db_index=False,
    )
    ref = models.CharField(
        max_length=WORKFLOW_REF_MAX_LENGTH, default="", db_default="", blank=True
    )

    objects = JobQuerySet.as_manager()

    class Meta:
        # Named, not found from INSTALLED_APPS: a project that points TASKS at
        # jobs.backends but forgot the app can still import its tasks, and the backend's
        # check says what to add (jobs.E102) instead of a traceback.
        app_label = "jobs"
        indexes = [
            # Finished jobs only: queued rows are in job_claim_idx and running
            # ones in job_timeout_idx, and a hot statement's `status = 'queued'` or
            # `'running'` must never find this index instead of those (see queries.sql).
            models.Index(
                fields=["status"],
                name="jobs_job_status_idx",
                condition=Q(status__in=FINISHED_STATUSES),
            ),
            models.Index(fields=["available_at"], name="jobs_job_available_at_idx"),
            models.Index(fields=["created_at"], name="jobs_job_created_at_idx"),
            # One queue at a time, in the claim's ORDER BY: the claim reads it in order and
            # stops at the first unlocked eligible row instead of sorting, and a loose scan
            # over its priority levels skips not-yet-due rows (see queries.sql complete_and_claim).
            # available_at as AtUtc: no other index can offer the claim its order or its
            # due test (migration 0012).
            models.Index(
                F("queue"),
                F("priority").desc(),
                AtUtc("available_at"),
                F("created_at"),
                F("id"),
                name="job_claim_idx",
                condition=Q(status=JobStatus.QUEUED),
            ),
            # The waiting jobs the settling duty reads, oldest first. The id too: a bulk
            # create stamps its jobs with one created_at, and a window's cursor must start
            # after its last job inside such a run (migration 0019), not sort the run.
            models.Index(
                fields=["created_at", "id"],
                name="job_waiting_idx",
                condition=Q(status=JobStatus.WAITING),
            ),
            # A workflow's members; jobs outside one are not in it.
            models.Index(
                fields=["workflow"],
                name="job_workflow_idx",
                condition=Q(workflow__isnull=False),
            ),
            models.Index(
                fields=["locked_until"],
                name="job_timeout_idx",
                condition=Q(status=JobStatus.RUNNING),
            ),
            # The running count per key the gated claim reads under the key's lock.
            models.Index(
                fields=["concurrency_key"],
                name="job_running_key_idx",
                condition=Q(status=JobStatus.RUNNING, concurrency_key__isnull=False),
            ),
            # The running count of a concurrency-limited queue, read by its claims under
            # the queue's lock: its running jobs only, never every running job, in
            # updated_at order (which no other index offers, so a plan that expects many
            # keeps to this one). `queue IS NOT NULL` (always true) keeps it to statements
            # that name a queue: a bare `status = 'running'` (the rescuer, the key counts)
            # cannot pick it over the indexes designed for it.
            models.Index(
                fields=["queue", "updated_at"],
                name="job_running_queue_idx",
                condition=Q(status=JobStatus.RUNNING, queue__isnull=False),
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="job_idempotency_key_unique",
            ),
            # Unique while active: one queued or running job per unique_key.
            models.UniqueConstraint(
                fields=["unique_key"],
                condition=Q(
                    unique_key__isnull=False, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]
                ),
                name="job_unique_key_active",
            ),
            models.CheckConstraint(
                condition=(
                    Q(
                        status=JobStatus.QUEUED,
                        locked_by__isnull=True,
                        locked_until__isnull=True,
                        finished_at__isnull=True,
                        cancel_requested_at__isnull=True,
                    )
                    | Q(
                        status=JobStatus.WAITING,
                        locked_by__isnull=True,
                        locked_until__isnull=True,
                        finished_at__isnull=True,
                        cancel_requested_at__isnull=True,
                    )
                    | Q(
                        status=JobStatus.RUNNING,
                        locked_by__isnull=False,
                        locked_until__isnull=False,
                        finished_at__isnull=True,
                    )
                    | Q(
                        status__in=FINISHED_STATUSES,
                        locked_by__isnull=True,
                        locked_until__isnull=True,
                        finished_at__isnull=False,
                    )
                ),
                name="job_status_valid_shape",
            ),
            models.CheckConstraint(
                condition=Q(attempts__gte=0, max_attempts__gte=1, attempts__lte=F("max_attempts")),
                name="job_attempts_valid",
            ),
            models.CheckConstraint(condition=~Q(queue=""), name="job_queue_not_empty"),
            models.CheckConstraint(
                condition=Q(timeout_seconds__isnull=True) | Q(timeout_seconds__gte=1),
                name="job_timeout_seconds_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.id} ({self.status})"


class OnParentFailure(models.TextChoices):
    """What a waiting job does when one of its parents fails for good or is cancelled."""

    CANCEL = "cancel", "Cancel"
    RUN = "run", "Run"


class JobDependency(models.Model):
    """An edge of the dependency graph: ``job`` waits for ``parent``. An extension of the
    spec. Edges are written with the child, whose parents must exist already, so a cycle
    cannot be built. The child's ``on_parent_failure`` rides on each of its edges (the
    same on all of them), so the settling statement reads it without touching Job."""

    id = models.BigAutoField(primary_key=True)
    job = models.ForeignKey(
        Job, on_delete=models.CASCADE, related_name="parent_edges", db_index=False
    )
    parent = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="child_edges")
    on_parent_failure = models.CharField(
        max_length=16, choices=OnParentFailure.choices, default=OnParentFailure.CANCEL
    )

    class Meta:
        app_label = "jobs"
        constraints = [
            # Also the index by child (its leading column); parent_id has its own.
            models.UniqueConstraint(fields=["job", "parent"], name="job_dependency_unique"),
            models.CheckConstraint(condition=~Q(job=F("parent")), name="job_dependency_not_self"),
            models.CheckConstraint(
                condition=Q(on_parent_failure__in=OnParentFailure.values),
                name="job_dependency_policy_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.job_id} after {self.parent_id}"


class JobEvent(models.Model):
    """Append-only timeline entry explaining how a job reached its state."""

    Type = JobEventType

    id = models.BigAutoField(primary_key=True)
    # job_event_job_id_idx (job, id) serves lookups by job, so no separate FK index.
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events", db_index=False)
    type = models.CharField(max_length=32, choices=JobEventType.choices)
    attempt = models.IntegerField(default=0, db_default=0)
    worker_id = models.CharField(max_length=WORKER_ID_MAX_LENGTH, null=True, blank=True)  # noqa: DJ001
    message = models.TextField(default="", db_default="", blank=True)
    data = models.JSONField(default=dict, db_default={})
    created_at = models.DateTimeField(default=timezone.now)
    # Columns added after the spec, appended (see Job). They let the per-type and per-worker
    # reads aggregate events without a join per event. Null on events written before them.
    # The job's type, on every event.
    job_type = models.CharField(max_length=TYPE_MAX_LENGTH, null=True, blank=True)  # noqa: DJ001
    # The attempt's queue wait in ms (claimed - max(available_at, created_at)): on claimed
    # events, and copied onto the event that ends the attempt.
    wait_ms = models.BigIntegerField(null=True, blank=True)
    # The attempt's run time in ms (this event - its claimed event), on the event that ends
    # a running attempt: succeeded, retry_scheduled, failed, timeout_requeued, cancelled.
    run_ms = models.BigIntegerField(null=True, blank=True)

    class Meta:
        app_label = "jobs"  # as Job's
        indexes = [
            models.Index(fields=["type"], name="jobs_jobevent_type_idx"),
            models.Index(fields=["created_at"], name="jobs_jobevent_created_at_idx"),
            models.Index(fields=["job", "id"], name="job_event_job_id_idx"),
            models.Index(fields=["id"], name="job_event_id_idx"),
            # Claims, attempt endings and releases by time, with what the per-minute rollups of the
            # job types and workers pages group by (an index-only range scan on PostgreSQL).
            models.Index(
                fields=["created_at"],
                include=["job_type", "type", "worker_id"],
                name="job_event_activity_idx",
                condition=Q(type__in=ACTIVITY_EVENT_TYPES),
            ),
            # Each type's latest ended attempts, newest first: the run time and queue wait
            # sample of the job types page, one bounded probe per type.
            models.Index(
                F("job_type"),
                F("created_at").desc(),
                include=["run_ms", "wait_ms"],
                name="job_event_type_run_idx",
                condition=Q(run_ms__isnull=False),
            ),
            # Each type's latest failure (its error), one probe per type.
            models.Index(
                F("job_type"),
                F("created_at").desc(),
                name="job_event_type_failure_idx",
                condition=Q(type__in=FAILURE_EVENT_TYPES),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(type__in=JobEventType.values),
                name="job_event_type_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type} #{self.id} for {self.job_id}"


class WorkerPresence(models.Model):
    """One live worker process, as it last said: an extension of the spec's "no worker
    table". The process's maintenance thread writes its row every half heartbeat interval
    and deletes it on a clean stop; a reader counts it live while ``last_seen_at`` is within
    one ``heartbeat_interval_seconds``, so a process killed without a word drops out within
    one interval and its stale row is just ignored (and overwritten or swept later). Nothing
    about a job's state is ever read from here."""

    # host:pid, the process part of its threads' worker ids.
    worker_id = models.CharField(max_length=WORKER_ID_MAX_LENGTH, primary_key=True)
    hostname = models.CharField(max_length=WORKER_ID_MAX_LENGTH)
    pid = models.IntegerField()
    queues = models.JSONField(default=list)
    threads_configured = models.IntegerField()
    # The worker ids of its live, serving threads (host:pid:thread-N:random).
    threads = models.JSONField(default=list)
    # Its abandoned threads still in a timed-out handler: [{"worker_id", "job_id", "type",
    # "attempt", "abandoned_at"}] (migration 0016).
    abandoned = models.JSONField(default=list, db_default=[], blank=True)
    heartbeat_interval_seconds = models.FloatField()
    started_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()

    class Meta:
        app_label = "jobs"  # as Job's
        indexes = [models.Index(fields=["last_seen_at"], name="worker_presence_seen_idx")]

    def __str__(self) -> str:
        return f"worker {self.worker_id}"


class QueueSettings(models.Model):
    """A queue's run-time controls; a queue without a row has none.

    The claim reads this row first: a queue with a pause or a limit is claimed from only
    under a lock on its row (``FOR UPDATE``), which is what makes the limits exact across
    every worker process. A concurrency limit stores nothing but its number: the claim
    counts the queue's running jobs under that lock, so a job holds its place exactly
    while it runs and no limit change can leave a place held.
    """

    name = models.CharField(primary_key=True, max_length=QUEUE_NAME_MAX_LENGTH)
    paused_at = models.DateTimeField(null=True, blank=True)
    concurrency_limit = models.IntegerField(null=True, blank=True)
    rate_limit = models.IntegerField(null=True, blank=True)
    rate_period_seconds = models.IntegerField(null=True, blank=True)
    # The claims of the last rate period, counted per twentieth of it
    # (jobs.flowcontrol.rate_room): written under the row lock by every claim of a
    # rate-limited queue, the same size whatever the limit.
    rate_window = models.JSONField(default=dict, db_default={}, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "jobs"
        verbose_name = "queue"
        constraints = [
            models.CheckConstraint(
                condition=Q(concurrency_limit__isnull=True) | Q(concurrency_limit__gte=1),
                name="queue_concurrency_limit_valid",
            ),
            models.CheckConstraint(
                condition=Q(rate_limit__isnull=True, rate_period_seconds__isnull=True)
                | Q(rate_limit__gte=1, rate_period_seconds__gte=1),
                name="queue_rate_limit_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def gated(self) -> bool:
        return (
            self.paused_at is not None
            or self.concurrency_limit is not None
            or self.rate_limit is not None
        )


class ConcurrencyKeyLimit(models.Model):
    """At most ``limit`` running jobs per ``concurrency_key`` matching ``pattern`` (an
    exact key, an fnmatch pattern such as ``customer:*``, or ``default``), beside
    ``JOB_CONCURRENCY_KEY_LIMITS`` (a row wins over the setting for the same pattern)."""

    pattern = models.CharField(primary_key=True, max_length=UNIQUE_KEY_MAX_LENGTH)
    limit = models.IntegerField()

    class Meta:
        app_label = "jobs"
        constraints = [
            models.CheckConstraint(condition=Q(limit__gte=1), name="concurrency_key_limit_valid")
        ]

    def __str__(self) -> str:
        return f"{self.pattern} <= {self.limit}"


class ScheduleState(models.Model):
    """What the database keeps of a schedule declared in ``JOB_SCHEDULES``: whether it is
    paused, the newest tick a worker looked at, and the last job it enqueued."""

    name = models.CharField(primary_key=True, max_length=255)
    paused_at = models.DateTimeField(null=True, blank=True)
    # Ticks up to here were enqueued or, missed, skipped; the next pass starts after it.
    last_tick_at = models.DateTimeField()
    last_enqueued_tick_at = models.DateTimeField(null=True, blank=True)
    last_job_id = models.UUIDField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    # Why its last pass failed ("" once a pass succeeds again), and since when it fails.
    error = models.TextField(default="", db_default="", blank=True)
    error_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "jobs"

    def __str__(self) -> str:
        return self.name
