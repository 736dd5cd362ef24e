"""Every write of the app: each job state transition, and the operator's and the worker's
writes to queues, schedules and worker presence. Reads live in ``jobs.selectors``, which
this package does not import (nor it this one).

Invariants kept by this package (the database enforces the row shapes as well):

* A job moves only along queued -> running -> succeeded | queued | failed | cancelled,
  queued -> cancelled, and failed | cancelled -> queued by manual retry; waiting ->
  queued | cancelled by the settler, and cancelled -> waiting when a manual retry of the
  parent it was cancelled for brings it back.
* A worker's write (complete, fail, renew, progress) takes effect only while the row is
  still ``running`` with the same ``locked_by`` and the same ``attempts`` the worker
  claimed. A stale worker's write changes nothing and the function returns ``None``.
* A transition and its event commit in the same transaction, or neither does.
* What is written is storable: JSON and text the database would refuse are refused
  (``UnstorableValue``) before anything is written, or, for error text, escaped.

One module per sub-domain, each saying how it reaches the database:

* ``workflows`` writes a set of jobs and their edges in one transaction through ``jobs``
  and ``dependencies``;
* ``jobs`` (a job's life) and ``actions`` (retry, cancel, run now) and ``maintenance``
  (expired leases, vacuum, analyze) go through the database driver only
  (``jobs.drivers.get_driver()``): each function decides the rule (next status, event,
  back-off, lease) and hands the values to the driver, which runs one SQL statement per
  transition on PostgreSQL and one ORM transaction elsewhere, kept together there;
* ``queues``, ``schedules`` and ``workers`` (presence) write their own rows through the
  ORM (``QueueSettings``, ``ScheduleState``, ``WorkerPresence``), which no transition's
  statement writes; a schedule's jobs are created through ``jobs``;
* ``common``: what they share (the actor of an operator action, the audit log, event
  times, the back-off).

Every public name is re-exported here: ``from jobs import services;
services.create_job(...)`` and ``from jobs.services import X`` are the ways in.
"""

from .actions import (
    HELD_KEYS_REPORTED,
    RESUMED_MESSAGE,
    cancel_job,
    cancel_jobs,
    retry_job,
    retry_jobs,
    run_job_now,
)
from .common import Actor, audit, backoff_delay_seconds, event_time, jittered_backoff_seconds
from .dependencies import (
    PARENT_ENDED_MESSAGE,
    SettledWindow,
    dependencies_problem,
    settle_waiting_jobs,
    settle_waiting_window,
)
from .jobs import (
    MESSAGES,
    TRACEBACK_MAX_CHARS,
    AttemptFailure,
    ErrorDetails,
    Fetched,
    NewJobSpec,
    claim_jobs,
    claim_next_job,
    complete_job,
    complete_jobs,
    create_job,
    create_jobs,
    delay_problem,
    fail_job,
    fail_jobs,
    heartbeat,
    matched_rule,
    record_progress,
    release_unstarted_jobs,
    renew_lease,
    snooze_job,
    time_out_job,
)
from .maintenance import (
    LEASE_EXPIRED_ERROR,
    LEASE_EXPIRED_MESSAGES,
    STALE_ESTIMATE_MIN_ROWS,
    CleanupResult,
    analyze_jobs_table,
    cleanup_expired_jobs,
    vacuum_jobs_table,
)
from .queues import pause_queue, resume_queue, set_queue_limits
from .schedules import (
    SCHEDULE_ERROR_MAX_CHARS,
    SCHEDULE_RETRY_MAX_SECONDS,
    SCHEDULE_RETRY_MIN_SECONDS,
    TickPass,
    enqueue_due_ticks,
    pause_schedule,
    resume_schedule,
    trigger_schedule,
)
from .workers import PRESENCE_SWEEP_AFTER, record_worker_presence, remove_worker_presence
from .workflows import CreatedWorkflow, WorkflowJobSpec, create_workflow, workflow_problems

__all__ = [
    "HELD_KEYS_REPORTED",
    "LEASE_EXPIRED_ERROR",
    "LEASE_EXPIRED_MESSAGES",
    "MESSAGES",
    "PARENT_ENDED_MESSAGE",
    "PRESENCE_SWEEP_AFTER",
    "RESUMED_MESSAGE",
    "SCHEDULE_ERROR_MAX_CHARS",
    "SCHEDULE_RETRY_MAX_SECONDS",
    "SCHEDULE_RETRY_MIN_SECONDS",
    "STALE_ESTIMATE_MIN_ROWS",
    "TRACEBACK_MAX_CHARS",
    "Actor",
    "AttemptFailure",
    "CleanupResult",
    "CreatedWorkflow",
    "ErrorDetails",
    "Fetched",
    "NewJobSpec",
    "SettledWindow",
    "TickPass",
    "WorkflowJobSpec",
    "analyze_jobs_table",
    "audit",
    "backoff_delay_seconds",
    "cancel_job",
    "cancel_jobs",
    "claim_jobs",
    "claim_next_job",
    "cleanup_expired_jobs",
    "complete_job",
    "complete_jobs",
    "create_job",
    "create_jobs",
    "create_workflow",
    "delay_problem",
    "dependencies_problem",
    "enqueue_due_ticks",
    "event_time",
    "fail_job",
    "fail_jobs",
    "heartbeat",
    "jittered_backoff_seconds",
    "matched_rule",
    "pause_queue",
    "pause_schedule",
    "record_progress",
    "record_worker_presence",
    "release_unstarted_jobs",
    "remove_worker_presence",
    "renew_lease",
    "resume_queue",
    "resume_schedule",
    "retry_job",
    "retry_jobs",
    "run_job_now",
    "set_queue_limits",
    "settle_waiting_jobs",
    "settle_waiting_window",
    "snooze_job",
    "time_out_job",
    "trigger_schedule",
    "vacuum_jobs_table",
    "workflow_problems",
]
