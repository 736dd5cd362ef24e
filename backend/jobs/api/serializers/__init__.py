"""HTTP input validation and the JSON shapes of the API, one module per resource.

Input serializers refuse anything the services should never see (unknown job types,
out-of-range integers, non-object payloads); output serializers render exactly the
fields of the contract.

DRF serializers are generic in what they render: a model (or the drivers' row of the same
shape), a ``dict`` a selector built, or, for input-only serializers, nothing (``Any``).

``fields`` holds what the resources share (strict integers, JSON objects, metadata, queue
names, the strict request body); ``jobs``, ``events``, ``stats`` (counts, throughput, job
types), ``workers``, ``queues``, ``schedules``, ``config`` (and health), ``session`` and
``errors`` (the error bodies, for the schema) one resource each. Every public name is
re-exported here.
"""

from .config import (
    ConfigSerializer,
    HealthSerializer,
    JobTypeSerializer,
    LimitsSerializer,
    PageLimitsSerializer,
    PaginationConfigSerializer,
    TimelinePageLimitsSerializer,
    WorkerConfigSerializer,
)
from .errors import VALIDATION_ERROR_SCHEMA, ErrorSerializer, RetryConflictSerializer
from .events import (
    HEARTBEATS_HELP,
    HeartbeatsQuerySerializer,
    JobEventQuerySerializer,
    JobEventSerializer,
)
from .fields import (
    AnyJSONField,
    FlatListField,
    JSONObjectField,
    MetadataField,
    QueueNameField,
    StrictBodySerializer,
    StrictIntegerField,
)
from .jobs import (
    ERROR_FILTER_MAX_LENGTH,
    MATCHED_HELP,
    METADATA_FILTER_MAX_LENGTH,
    OUTCOMES,
    AttemptSerializer,
    BulkCreatedJobSerializer,
    CancelOutcomeSerializer,
    ExceptionNameField,
    HeldKeySerializer,
    JobBulkCreateResultSerializer,
    JobBulkCreateSerializer,
    JobCreateResultSerializer,
    JobCreateSerializer,
    JobDetailSerializer,
    JobFilterSerializer,
    JobListItemSerializer,
    JobListQuerySerializer,
    JobLookupQuerySerializer,
    JobLookupSerializer,
    JobSelectionSerializer,
    JobSerializer,
    RetryOutcomeSerializer,
    job_detail_representation,
    job_representation,
    validated_job_create,
)
from .queues import QueueCountsSerializer, QueueLimitsSerializer, QueueSerializer
from .schedules import ScheduleLastJobSerializer, ScheduleSerializer, ScheduleTriggerSerializer
from .session import JobPermissionsSerializer, LoginSerializer, SessionSerializer
from .stats import (
    ActivityWindowQuerySerializer,
    ErrorGroupSerializer,
    JobStatsSerializer,
    JobStatusCountsSerializer,
    JobTypeHealthSerializer,
    JobTypesSerializer,
    LastErrorSerializer,
    PercentilesSerializer,
    ThroughputBucketSerializer,
    ThroughputQuerySerializer,
    ThroughputSerializer,
    TypeEventCountsSerializer,
)
from .workers import (
    AbandonedJobSerializer,
    AbandonedThreadSerializer,
    ThreadJobSerializer,
    WorkerProcessSerializer,
    WorkersSerializer,
    WorkerThreadSerializer,
)

__all__ = [
    "ERROR_FILTER_MAX_LENGTH",
    "HEARTBEATS_HELP",
    "MATCHED_HELP",
    "METADATA_FILTER_MAX_LENGTH",
    "OUTCOMES",
    "VALIDATION_ERROR_SCHEMA",
    "AbandonedJobSerializer",
    "AbandonedThreadSerializer",
    "ActivityWindowQuerySerializer",
    "AnyJSONField",
    "AttemptSerializer",
    "BulkCreatedJobSerializer",
    "CancelOutcomeSerializer",
    "ConfigSerializer",
    "ErrorGroupSerializer",
    "ErrorSerializer",
    "ExceptionNameField",
    "FlatListField",
    "HealthSerializer",
    "HeartbeatsQuerySerializer",
    "HeldKeySerializer",
    "JSONObjectField",
    "JobBulkCreateResultSerializer",
    "JobBulkCreateSerializer",
    "JobCreateResultSerializer",
    "JobCreateSerializer",
    "JobDetailSerializer",
    "JobEventQuerySerializer",
    "JobEventSerializer",
    "JobFilterSerializer",
    "JobListItemSerializer",
    "JobListQuerySerializer",
    "JobLookupQuerySerializer",
    "JobLookupSerializer",
    "JobPermissionsSerializer",
    "JobSelectionSerializer",
    "JobSerializer",
    "JobStatsSerializer",
    "JobStatusCountsSerializer",
    "JobTypeHealthSerializer",
    "JobTypeSerializer",
    "JobTypesSerializer",
    "LastErrorSerializer",
    "LimitsSerializer",
    "LoginSerializer",
    "MetadataField",
    "PageLimitsSerializer",
    "PaginationConfigSerializer",
    "PercentilesSerializer",
    "QueueCountsSerializer",
    "QueueLimitsSerializer",
    "QueueNameField",
    "QueueSerializer",
    "RetryConflictSerializer",
    "RetryOutcomeSerializer",
    "ScheduleLastJobSerializer",
    "ScheduleSerializer",
    "ScheduleTriggerSerializer",
    "SessionSerializer",
    "StrictBodySerializer",
    "StrictIntegerField",
    "ThreadJobSerializer",
    "ThroughputBucketSerializer",
    "ThroughputQuerySerializer",
    "ThroughputSerializer",
    "TimelinePageLimitsSerializer",
    "TypeEventCountsSerializer",
    "WorkerConfigSerializer",
    "WorkerProcessSerializer",
    "WorkerThreadSerializer",
    "WorkersSerializer",
    "job_detail_representation",
    "job_representation",
    "validated_job_create",
]
