"""The queue's figures: status counts, throughput, and the job types' health."""

from typing import Any

from rest_framework import serializers

from ...limits import (
    ACTIVITY_MINUTES_MAX,
    THROUGHPUT_BUCKET_SECONDS_MAX,
    THROUGHPUT_BUCKET_SECONDS_MIN,
    THROUGHPUT_MAX_BUCKETS,
    THROUGHPUT_MINUTES_MAX,
)


class JobStatusCountsSerializer(serializers.Serializer[dict[str, Any]]):
    queued = serializers.IntegerField()
    waiting = serializers.IntegerField(
        help_text="Jobs waiting for the jobs they depend on (an extension of the spec)."
    )
    running = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()


class JobStatsSerializer(serializers.Serializer[dict[str, Any]]):
    total = serializers.IntegerField()
    by_status = JobStatusCountsSerializer()
    overdue_running = serializers.IntegerField(
        help_text="Running jobs whose lease has already expired (cleanup will requeue them)."
    )
    retries_pending = serializers.IntegerField(
        help_text="Queued jobs that already used at least one attempt."
    )
    oldest_queued_at = serializers.DateTimeField(
        allow_null=True,
        help_text="created_at of the oldest queued job, due or not (see oldest_due_at).",
    )
    estimated = serializers.BooleanField(
        help_text=(
            "True when total and the finished counts (succeeded, failed, cancelled) are "
            "estimated from PostgreSQL's planner statistics (a table above "
            "JOB_STATS_EXACT_MAX_ROWS rows); queued and running are always exact."
        )
    )
    scheduled = serializers.IntegerField(
        help_text="Queued jobs scheduled for later (available_at in the future): counted in "
        "by_status.queued, not yet claimable."
    )
    due = serializers.IntegerField(
        help_text="Queued jobs that are due (claimable now): by_status.queued - scheduled."
    )
    oldest_due_at = serializers.DateTimeField(
        allow_null=True,
        help_text=(
            "available_at of the oldest queued job that is due: how long the backlog has "
            "waited. Jobs scheduled for later do not count."
        ),
    )
    queues = serializers.ListField(
        child=serializers.CharField(),
        help_text="Queues that have queued jobs, by name (what a worker serving * serves).",
    )


class ThroughputQuerySerializer(serializers.Serializer[Any]):
    minutes = serializers.IntegerField(
        required=False, default=15, min_value=1, max_value=THROUGHPUT_MINUTES_MAX
    )
    bucket_seconds = serializers.IntegerField(
        required=False,
        default=60,
        min_value=THROUGHPUT_BUCKET_SECONDS_MIN,
        max_value=THROUGHPUT_BUCKET_SECONDS_MAX,
        help_text=f"Bucket width; at most {THROUGHPUT_MAX_BUCKETS} buckets per window.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        buckets = -(-attrs["minutes"] * 60 // attrs["bucket_seconds"])
        if buckets > THROUGHPUT_MAX_BUCKETS:
            raise serializers.ValidationError(
                {
                    "bucket_seconds": [
                        f"{attrs['minutes']} minutes in {attrs['bucket_seconds']}-second "
                        f"buckets makes {buckets} buckets; at most {THROUGHPUT_MAX_BUCKETS}."
                    ]
                }
            )
        return attrs


class ThroughputBucketSerializer(serializers.Serializer[dict[str, Any]]):
    start = serializers.DateTimeField(help_text="The bucket covers [start, start + width).")
    succeeded = serializers.IntegerField(help_text="succeeded events in the bucket.")
    failed = serializers.IntegerField(help_text="failed events (attempts exhausted).")
    cancelled = serializers.IntegerField(help_text="cancelled events (queued or running jobs).")


class ThroughputSerializer(serializers.Serializer[dict[str, Any]]):
    bucket_seconds = serializers.IntegerField()
    start = serializers.DateTimeField(help_text="Start of the oldest bucket.")
    end = serializers.DateTimeField(help_text="Now; the newest bucket is partial.")
    buckets = ThroughputBucketSerializer(many=True, help_text="Oldest first, zero-filled.")


class ActivityWindowQuerySerializer(serializers.Serializer[Any]):
    minutes = serializers.IntegerField(
        required=False,
        default=60,
        min_value=1,
        max_value=ACTIVITY_MINUTES_MAX,
        help_text=(
            "Window in whole minutes, the newest one partial (default 60, at most "
            f"{ACTIVITY_MINUTES_MAX})."
        ),
    )


class TypeEventCountsSerializer(serializers.Serializer[dict[str, Any]]):
    claimed = serializers.IntegerField(
        help_text="Claims: attempts started, and the claims later released (see released)."
    )
    succeeded = serializers.IntegerField()
    retry_scheduled = serializers.IntegerField(
        help_text="Failed attempts that will be retried (timeouts apart)."
    )
    failed = serializers.IntegerField(
        help_text="Attempts that failed their job for good (timeouts apart)."
    )
    timed_out = serializers.IntegerField(
        help_text="Attempts ended at their timeout (retried or failing the job)."
    )
    timeout_requeued = serializers.IntegerField(
        help_text="Attempts whose lease expired (worker gone or stuck); requeued."
    )
    cancelled = serializers.IntegerField(help_text="Running attempts cancelled.")
    cancelled_queued = serializers.IntegerField(
        help_text="Jobs cancelled before they ran: not attempts."
    )
    released = serializers.IntegerField(
        help_text="Claims given back before their handler started (a worker shutting down), "
        "the job queued again with its attempt not spent: not attempts."
    )


class PercentilesSerializer(serializers.Serializer[dict[str, Any]]):
    p50 = serializers.IntegerField(allow_null=True, help_text="Milliseconds; null: no sample.")
    p95 = serializers.IntegerField(allow_null=True, help_text="Milliseconds; null: no sample.")


class LastErrorSerializer(serializers.Serializer[dict[str, Any]]):
    message = serializers.CharField(help_text="The error, cut to 1,000 characters.")
    at = serializers.DateTimeField()
    job_id = serializers.UUIDField()


class JobTypeHealthSerializer(serializers.Serializer[dict[str, Any]]):
    type = serializers.CharField()
    registered = serializers.BooleanField(help_text="A handler is registered for it here.")
    counts = TypeEventCountsSerializer(help_text="Events in the window, exact.")
    attempts = serializers.IntegerField(
        help_text="Ended attempts: succeeded + retry_scheduled + failed + timed_out + "
        "timeout_requeued + cancelled (not cancelled_queued)."
    )
    failure_rate = serializers.FloatField(
        allow_null=True,
        help_text="Share of ended attempts that failed (retry_scheduled, failed, timed_out, "
        "timeout_requeued); null without any.",
    )
    sample_size = serializers.IntegerField(
        help_text="Ended attempts the percentiles are over: the newest in the window, at "
        "most sample_size_max."
    )
    run_ms = PercentilesSerializer(help_text="Handler run time: claimed to the attempt's end.")
    wait_ms = PercentilesSerializer(
        help_text="Queue wait: due (available_at, or created_at if later) to claimed."
    )
    last_error = LastErrorSerializer(
        allow_null=True, help_text="The newest failure in the window; null without any."
    )
    failures = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="retry_scheduled + failed + timed_out + timeout_requeued per bucket, "
        "oldest first.",
    )


class ErrorGroupSerializer(serializers.Serializer[dict[str, Any]]):
    type = serializers.CharField(help_text="The job type.")
    exception_class = serializers.CharField(
        allow_null=True, help_text="Exception class (builtins unprefixed); null: none raised."
    )
    message = serializers.CharField(help_text="The error message, its first 200 characters.")
    attempts = serializers.IntegerField(help_text="Failed attempts with this error.")
    jobs = serializers.IntegerField(
        help_text="Distinct jobs among them, counted up to 1,000 (see `jobs_capped`)."
    )
    jobs_capped = serializers.BooleanField(
        help_text="More than 1,000 distinct jobs: `jobs` is a lower bound."
    )
    last_at = serializers.DateTimeField(help_text="The latest of them.")


class JobTypesSerializer(serializers.Serializer[dict[str, Any]]):
    minutes = serializers.IntegerField()
    start = serializers.DateTimeField(help_text="Start of the window's oldest minute.")
    end = serializers.DateTimeField(help_text="Now; the newest minute is partial.")
    bucket_seconds = serializers.IntegerField(help_text="Width of each `failures` bucket.")
    sample_size_max = serializers.IntegerField(
        help_text="Newest ended attempts per type the percentiles are taken over, at most."
    )
    types = JobTypeHealthSerializer(
        many=True, help_text="Registered types and any other type seen, by name."
    )
    error_groups = ErrorGroupSerializer(
        many=True,
        help_text="Failed attempts in the window grouped by type, exception class and "
        "message, most frequent first (at most 50).",
    )
