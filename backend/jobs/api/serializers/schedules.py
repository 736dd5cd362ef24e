"""Schedules: each one's definition and state, and what a trigger answers."""

from typing import Any

from rest_framework import serializers

from ...models import JobStatus
from .jobs import JobSerializer


class ScheduleLastJobSerializer(serializers.Serializer[dict[str, Any]]):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=JobStatus.choices)
    created_at = serializers.DateTimeField()


class ScheduleSerializer(serializers.Serializer[dict[str, Any]]):
    name = serializers.CharField()
    target = serializers.CharField(
        allow_null=True,
        help_text="The job type or the django.tasks task path (null: not given as a string).",
    )
    kind = serializers.ChoiceField(choices=["type", "task"], allow_null=True)
    cron = serializers.CharField(allow_null=True)
    interval_seconds = serializers.IntegerField(allow_null=True)
    timezone = serializers.CharField(allow_null=True)
    queue = serializers.CharField(allow_null=True)
    priority = serializers.IntegerField(allow_null=True)
    missed = serializers.ChoiceField(
        choices=["latest", "skip"],
        allow_null=True,
        help_text="Ticks missed while no worker ran: run the latest once, or skip them.",
    )
    paused = serializers.BooleanField()
    paused_at = serializers.DateTimeField(allow_null=True)
    next_run_at = serializers.DateTimeField(
        allow_null=True, help_text="Null while paused, and for a schedule that cannot run."
    )
    last_run_at = serializers.DateTimeField(allow_null=True, help_text="The last tick enqueued.")
    last_job = ScheduleLastJobSerializer(allow_null=True)
    runnable = serializers.BooleanField(
        help_text=(
            "False: JOB_SCHEDULES declares it in a way that cannot run (see error); a field "
            "given in the wrong shape is null here. Workers refuse to start until it is "
            "corrected."
        )
    )
    error = serializers.CharField(
        allow_null=True,
        help_text="Why it cannot run, or why its last pass failed; null while it runs fine.",
    )
    error_at = serializers.DateTimeField(
        allow_null=True, help_text="Since when its passes fail (null for a refused definition)."
    )


class ScheduleTriggerSerializer(serializers.Serializer[dict[str, Any]]):
    schedule = ScheduleSerializer()
    job = JobSerializer()
