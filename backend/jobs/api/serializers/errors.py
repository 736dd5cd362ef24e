"""The error bodies, for the schema only (``jobs.api.errors`` writes them)."""

from typing import Any

from rest_framework import serializers

from ...models import JobStatus


class ErrorSerializer(serializers.Serializer[dict[str, Any]]):
    detail = serializers.CharField()


class RetryConflictSerializer(serializers.Serializer[dict[str, Any]]):
    detail = serializers.CharField()
    status = serializers.ChoiceField(choices=JobStatus.choices, help_text="The job's status.")
    unique_key = serializers.CharField(
        required=False, help_text="When another active job holds the job's unique_key: the key."
    )
    held_by = serializers.UUIDField(
        required=False, help_text="When another active job holds the job's unique_key: that job."
    )


VALIDATION_ERROR_SCHEMA = {
    "type": "object",
    "description": (
        "Each key names a field (`non_field_errors` for a body that is not an object) and "
        "lists the reasons; a body that is not valid JSON gets a single `detail` string "
        "(a list under `detail` is the reasons of a body field named so)."
    ),
    "properties": {
        "detail": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
    },
    "additionalProperties": {"type": "array", "items": {"type": "string"}},
    "example": {"priority": ["Ensure this value is less than or equal to 32767."]},
}
