"""Queues: each one's counts, backlog, pause and limits, and the limits a client sets."""

from typing import Any

from rest_framework import serializers

from .fields import StrictBodySerializer, StrictIntegerField


class QueueCountsSerializer(serializers.Serializer[dict[str, Any]]):
    queued = serializers.IntegerField()
    waiting = serializers.IntegerField(help_text="Waiting for the jobs they depend on.")
    running = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()


class QueueSerializer(serializers.Serializer[dict[str, Any]]):
    name = serializers.CharField()
    paused = serializers.BooleanField(help_text="No worker claims from a paused queue.")
    paused_at = serializers.DateTimeField(allow_null=True)
    counts = QueueCountsSerializer(help_text="Jobs of the queue by status.")
    concurrency_limit = serializers.IntegerField(
        allow_null=True, help_text="At most this many running at once, across all workers."
    )
    rate_limit = serializers.IntegerField(
        allow_null=True, help_text="At most this many claimed per rate_period_seconds."
    )
    rate_period_seconds = serializers.IntegerField(allow_null=True)
    running = serializers.IntegerField()
    saturation = serializers.FloatField(
        allow_null=True, help_text="running / concurrency_limit; null without a limit."
    )
    due = serializers.IntegerField(
        help_text="Queued jobs due now (available_at reached): claimable unless paused."
    )
    scheduled = serializers.IntegerField(
        help_text="Queued jobs scheduled for later (available_at in the future)."
    )
    oldest_due_at = serializers.DateTimeField(
        allow_null=True,
        help_text="available_at of the oldest due job: the queue's backlog age, as the "
        "stats' oldest_due_at; null when none is due.",
    )
    oldest_queued_at = serializers.DateTimeField(
        allow_null=True,
        help_text="created_at of the oldest queued job, due or not: not a backlog age "
        "(see oldest_due_at).",
    )


class QueueLimitsSerializer(StrictBodySerializer):
    """The body of `PATCH /api/queues/{name}/`: any of the limits; null removes one."""

    concurrency_limit = StrictIntegerField(
        required=False, allow_null=True, min_value=1, max_value=1_000_000
    )
    rate_limit = StrictIntegerField(
        required=False, allow_null=True, min_value=1, max_value=1_000_000
    )
    rate_period_seconds = StrictIntegerField(
        required=False, allow_null=True, min_value=1, max_value=86_400
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("rate_limit") is not None and attrs.get("rate_period_seconds") is None:
            raise serializers.ValidationError(
                {"rate_period_seconds": ["Required when rate_limit is set."]}
            )
        if "rate_period_seconds" in attrs and "rate_limit" not in attrs:
            raise serializers.ValidationError(
                {"rate_limit": ["Give rate_limit with rate_period_seconds."]}
            )
        return attrs
