"""The HTTP API: each view parses its input with a serializer, calls one service or read,
and serializes the result. Every job-state change goes through ``jobs.services``.

Nothing here assumes where the project mounted ``jobs.urls``: whether a request is the
API's is decided by the view its path resolves to (``jobs.middleware.is_api_request``).

One module per resource: ``jobs``, ``events``, ``stats`` (counts, throughput, job types),
``workers``, ``queues``, ``schedules``, ``workflows``, ``config`` (the index, health and the config
document), ``session`` (the dashboard's sign-in), ``fallbacks`` (JSON where Django would
answer in HTML), on ``common`` (error mapping, parsing, the shared view shapes). Every
public name is re-exported here (``jobs.api.urls`` routes to them).
"""

from .common import (
    BAD_REQUEST,
    JOB_ID_PARAMETER,
    NOT_FOUND,
    TOO_LARGE,
    DomainErrorsMixin,
    FilteredListView,
    SelectorView,
    list_schema,
    parse_job_id,
    read_schema,
    request_actor,
    validated_query,
)
from .config import API_INDEX_SCHEMA, ApiIndexView, ConfigView, HealthView, api_index
from .events import TIMELINE_LINK_HEADER, JobEventListView, JobEventsView, TimelineSchema
from .fallbacks import api_not_found, csrf_failure, server_error
from .jobs import (
    JobAttemptsView,
    JobBulkCancelView,
    JobBulkCreateView,
    JobBulkRetryView,
    JobCancelView,
    JobDetailView,
    JobListCreateView,
    JobLookupView,
    JobRetryView,
    JobRunNowView,
)
from .queues import (
    QUEUE_NAME_PARAMETER,
    QueueDetailView,
    QueueListView,
    QueuePauseView,
    QueueResumeView,
    parse_queue_name,
)
from .schedules import (
    SCHEDULE_NAME_PARAMETER,
    SCHEDULE_NOT_FOUND,
    ScheduleListView,
    SchedulePauseView,
    ScheduleResumeView,
    ScheduleTriggerView,
)
from .session import LoginView, LogoutView, SessionView
from .stats import JobStatsView, JobThroughputView, JobTypesView
from .workers import WorkersView
from .workflows import (
    WORKFLOW_ID_PARAMETER,
    WORKFLOW_NOT_FOUND,
    WorkflowDetailView,
    WorkflowListCreateView,
    parse_workflow_id,
)

__all__ = [
    "API_INDEX_SCHEMA",
    "BAD_REQUEST",
    "JOB_ID_PARAMETER",
    "NOT_FOUND",
    "QUEUE_NAME_PARAMETER",
    "SCHEDULE_NAME_PARAMETER",
    "SCHEDULE_NOT_FOUND",
    "TIMELINE_LINK_HEADER",
    "TOO_LARGE",
    "WORKFLOW_ID_PARAMETER",
    "WORKFLOW_NOT_FOUND",
    "ApiIndexView",
    "ConfigView",
    "DomainErrorsMixin",
    "FilteredListView",
    "HealthView",
    "JobAttemptsView",
    "JobBulkCancelView",
    "JobBulkCreateView",
    "JobBulkRetryView",
    "JobCancelView",
    "JobDetailView",
    "JobEventListView",
    "JobEventsView",
    "JobListCreateView",
    "JobLookupView",
    "JobRetryView",
    "JobRunNowView",
    "JobStatsView",
    "JobThroughputView",
    "JobTypesView",
    "LoginView",
    "LogoutView",
    "QueueDetailView",
    "QueueListView",
    "QueuePauseView",
    "QueueResumeView",
    "ScheduleListView",
    "SchedulePauseView",
    "ScheduleResumeView",
    "ScheduleTriggerView",
    "SelectorView",
    "SessionView",
    "TimelineSchema",
    "WorkersView",
    "WorkflowDetailView",
    "WorkflowListCreateView",
    "api_index",
    "api_not_found",
    "csrf_failure",
    "list_schema",
    "parse_job_id",
    "parse_queue_name",
    "parse_workflow_id",
    "read_schema",
    "request_actor",
    "server_error",
    "validated_query",
]
