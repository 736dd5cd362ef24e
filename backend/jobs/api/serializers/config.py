"""The configuration document and the health answer."""

from typing import Any

from rest_framework import serializers

from .fields import JSONObjectField


class JobTypeSerializer(serializers.Serializer[dict[str, Any]]):
    type = serializers.CharField()
    description = serializers.CharField()
    example_payload = JSONObjectField()


class WorkerConfigSerializer(serializers.Serializer[dict[str, Any]]):
    """The worker settings in force; each field is the JOB_WORKER_ setting of its name."""

    threads = serializers.IntegerField(help_text="Threads per worker process.")
    poll_interval_ms = serializers.IntegerField(
        help_text="How long an idle thread sleeps before it looks for a job again."
    )
    lease_seconds = serializers.IntegerField(
        help_text="How long a claimed attempt is held without a renewal."
    )
    cleanup_interval_seconds = serializers.IntegerField(
        help_text="How often each worker process requeues or fails the jobs whose lease expired."
    )
    cleanup_batch_size = serializers.IntegerField(
        help_text="Most expired leases one cleanup pass recovers."
    )
    backoff_base_seconds = serializers.IntegerField(
        help_text="Retry delay after the first failed attempt; it doubles with each attempt."
    )
    backoff_max_seconds = serializers.IntegerField(help_text="Longest retry delay.")
    max_attempts_default = serializers.IntegerField(
        help_text="max_attempts of a job created without one."
    )
    heartbeat_seconds = serializers.FloatField(
        help_text="How often a worker process renews the leases of its running attempts."
    )
    timeout_seconds = serializers.IntegerField(
        help_text="Timeout of an attempt whose job and type set none; 0: no limit."
    )
    queues = serializers.ListField(
        child=serializers.CharField(), help_text='Queues a worker serves by default ("*": all).'
    )


class LimitsSerializer(serializers.Serializer[dict[str, Any]]):
    """The bounds POST /api/jobs/ enforces."""

    priority_min = serializers.IntegerField(help_text="Lowest priority (a smallint).")
    priority_max = serializers.IntegerField(help_text="Highest priority (a smallint).")
    max_attempts_max = serializers.IntegerField(help_text="Largest max_attempts accepted.")
    idempotency_key_max_length = serializers.IntegerField(
        help_text="Longest idempotency_key, in characters."
    )
    max_body_bytes = serializers.IntegerField(
        help_text="Largest request body, in bytes; a larger one is refused with 413."
    )
    timeout_seconds_max = serializers.IntegerField(help_text="Largest timeout_seconds accepted.")
    queue_name_max_length = serializers.IntegerField(help_text="Longest queue name.")
    bulk_ids_max = serializers.IntegerField(help_text="Most ids one bulk action may name.")
    bulk_create_max = serializers.IntegerField(help_text="Most jobs one bulk create may hold.")
    metadata_max_entries = serializers.IntegerField(help_text="Most entries of a job's metadata.")
    metadata_key_max_length = serializers.IntegerField(
        help_text="Longest metadata key, in characters."
    )
    metadata_value_max_length = serializers.IntegerField(
        help_text="Longest metadata value, in characters."
    )
    metadata_max_chars = serializers.IntegerField(
        help_text="Most characters of a job's metadata, keys and values together."
    )


class PageLimitsSerializer(serializers.Serializer[dict[str, Any]]):
    default_limit = serializers.IntegerField(help_text="Page size when `limit` is omitted.")
    max_limit = serializers.IntegerField(help_text="A larger `limit` is lowered to this.")


class TimelinePageLimitsSerializer(PageLimitsSerializer):
    next_page_in = serializers.CharField(
        help_text='Where the next page is announced: "link_header", the `Link` header\'s '
        '`rel="next"` (the body is the plain array of events).'
    )


class PaginationConfigSerializer(serializers.Serializer[dict[str, Any]]):
    jobs = PageLimitsSerializer(help_text="GET /api/jobs/ (limit-offset).")
    job_events = PageLimitsSerializer(help_text="GET /api/job-events/ (cursor).")
    job_timeline = TimelinePageLimitsSerializer(
        help_text="GET /api/jobs/{id}/events/: at most `default_limit` events per response "
        "unless `limit` asks for up to `max_limit`."
    )


class ConfigSerializer(serializers.Serializer[dict[str, Any]]):
    job_types = JobTypeSerializer(many=True)
    worker = WorkerConfigSerializer()
    limits = LimitsSerializer()
    pagination = PaginationConfigSerializer()


class HealthSerializer(serializers.Serializer[dict[str, Any]]):
    ok = serializers.BooleanField()
    database = serializers.ChoiceField(choices=["ok", "error"])
    detail = serializers.CharField(required=False, help_text="Only when the database failed.")
