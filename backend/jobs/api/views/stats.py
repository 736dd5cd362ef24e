"""The queue's figures: status counts, throughput, and the job types' health."""

from ... import selectors
from ..serializers.stats import (
    ActivityWindowQuerySerializer,
    JobStatsSerializer,
    JobTypesSerializer,
    ThroughputQuerySerializer,
    ThroughputSerializer,
)
from .common import SelectorView, read_schema


@read_schema("jobs_stats", "jobs")
class JobStatsView(SelectorView):
    """Counts by status, overdue leases and pending retries, from one query; computed at most
    once per ``JOB_STATS_CACHE_SECONDS`` per process, however many dashboards poll."""

    response_serializer = JobStatsSerializer
    selector = selectors.cached_job_stats


@read_schema("jobs_throughput", "jobs")
class JobThroughputView(SelectorView):
    """Succeeded and failed events per time bucket over the last minutes."""

    query_serializer = ThroughputQuerySerializer
    response_serializer = ThroughputSerializer
    selector = selectors.throughput


@read_schema("jobs_types", "jobs")
class JobTypesView(SelectorView):
    """Per job type over the last minutes: outcomes, failure rate, run time and queue
    wait percentiles, last error, and failures per bucket (a sparkline)."""

    query_serializer = ActivityWindowQuerySerializer
    response_serializer = JobTypesSerializer
    selector = selectors.type_health
