"""Every read the API, the admin, the metrics and the worker share: nothing here writes.

Views parse their input, call one of these, and serialize what it returns. Plain values
and querysets: what is shaped for HTTP (the config document, the session's state) is the
API's (``jobs.api.answers``). This package imports neither the writes (``jobs.services``)
nor the worker nor the REST framework.

One module per sub-domain: ``jobs`` (one job, the list, lookups), ``events``, ``stats``
(counts and throughput), ``types`` (job types' health), ``workers`` (presence),
``queues``, ``schedules``, ``workflows``, and ``common`` (time windows). Most read through the ORM;
what the database driver answers better (the planner's estimates, the loose index scan
of queue names, the percentile samples) is asked of ``jobs.drivers.get_driver()``. Each
module's docstring says which.

Every public name is re-exported here: ``from jobs import selectors;
selectors.job_list(...)`` and ``from jobs.selectors import X`` are the ways in.
"""

from .common import EpochSeconds
from .events import HEARTBEAT_EVENT_TYPES, event_feed, job_timeline
from .jobs import (
    ATTEMPT_ERROR_EVENTS,
    ATTEMPT_EVENT_TYPES,
    DEFAULT_JOB_ORDERING,
    ID_PREFIX_MIN_LENGTH,
    JOB_ORDERINGS,
    AmbiguousIdPrefix,
    attempt_history,
    effective_timeout,
    exception_name,
    get_job,
    id_prefix,
    job_attempts,
    job_detail,
    job_id_from_prefix,
    job_list,
    job_with_attempt_history,
    jobs_with_id_prefix,
    last_exception_expression,
    lookup_job,
    started_at_expression,
)
from .queues import active_queues, queue_controls, queue_detail, queue_list
from .schedules import failing_schedules, schedule_detail, schedule_lag_seconds, schedule_list
from .stats import (
    FINISHED_EVENT_TYPES,
    LIVE,
    STATS_CACHE_KEY,
    cached_job_stats,
    job_stats,
    live_jobs,
    throughput,
)
from .types import (
    ERROR_GROUP_MESSAGE_CHARS,
    ERROR_GROUPS_MAX,
    LAST_ERROR_MAX_CHARS,
    SPARKLINE_POINTS,
    TYPE_ATTEMPT_KINDS,
    TYPE_COUNT_KINDS,
    TYPE_FAILURE_KINDS,
    TYPE_SAMPLE_SIZE,
    error_groups,
    type_health,
)
from .workers import live_workers
from .workflows import (
    WORKFLOW_STATES,
    job_relatives,
    parent_results,
    workflow_detail,
    workflow_list,
    workflow_summaries,
)

__all__ = [
    "ATTEMPT_ERROR_EVENTS",
    "ATTEMPT_EVENT_TYPES",
    "DEFAULT_JOB_ORDERING",
    "ERROR_GROUPS_MAX",
    "ERROR_GROUP_MESSAGE_CHARS",
    "FINISHED_EVENT_TYPES",
    "HEARTBEAT_EVENT_TYPES",
    "ID_PREFIX_MIN_LENGTH",
    "JOB_ORDERINGS",
    "LAST_ERROR_MAX_CHARS",
    "LIVE",
    "SPARKLINE_POINTS",
    "STATS_CACHE_KEY",
    "TYPE_ATTEMPT_KINDS",
    "TYPE_COUNT_KINDS",
    "TYPE_FAILURE_KINDS",
    "TYPE_SAMPLE_SIZE",
    "WORKFLOW_STATES",
    "AmbiguousIdPrefix",
    "EpochSeconds",
    "active_queues",
    "attempt_history",
    "cached_job_stats",
    "effective_timeout",
    "error_groups",
    "event_feed",
    "exception_name",
    "failing_schedules",
    "get_job",
    "id_prefix",
    "job_attempts",
    "job_detail",
    "job_id_from_prefix",
    "job_list",
    "job_relatives",
    "job_stats",
    "job_timeline",
    "job_with_attempt_history",
    "jobs_with_id_prefix",
    "last_exception_expression",
    "live_jobs",
    "live_workers",
    "lookup_job",
    "parent_results",
    "queue_controls",
    "queue_detail",
    "queue_list",
    "schedule_detail",
    "schedule_lag_seconds",
    "schedule_list",
    "started_at_expression",
    "throughput",
    "type_health",
    "workflow_detail",
    "workflow_list",
    "workflow_summaries",
]
