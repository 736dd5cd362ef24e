"""The fields and the strict request body every resource's serializers share."""

from collections.abc import Mapping
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ...limits import (
    METADATA_MAX_ENTRIES,
    METADATA_VALUE_MAX_LENGTH,
    QUEUE_NAME_MAX_LENGTH,
    QUEUE_NAME_PATTERN,
    json_kind,
    metadata_problem,
)
from ...storable import json_problem


class QueueNameField(serializers.RegexField):
    """A queue name: letters, digits and ``. _ : -``, starting with a letter or digit."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            QUEUE_NAME_PATTERN,
            max_length=QUEUE_NAME_MAX_LENGTH,
            error_messages={
                "invalid": "Letters, digits and . _ : - only, starting with a letter or digit."
            },
            **kwargs,
        )


class FlatListField(serializers.ListField):
    """A list whose item errors read "Item 3: ..." in one flat list, as the API's error
    shape promises (DRF's ListField nests them in an object keyed by index)."""

    def run_child_validation(self, data: list[Any]) -> list[Any]:
        try:
            validated: list[Any] = super().run_child_validation(data)
        except serializers.ValidationError as exc:
            detail = exc.detail if isinstance(exc.detail, dict) else {}
            raise serializers.ValidationError(
                [
                    f"Item {index}: {message}"
                    for index, errors in detail.items()
                    for message in errors
                ]
            ) from exc
        return validated


class StrictIntegerField(serializers.IntegerField):
    """An integer that is a JSON number: ``"5"``, ``5.0`` and ``true`` are refused."""

    default_error_messages = {
        "invalid": "A valid integer is required (a JSON number, not a string or boolean)."
    }

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


@extend_schema_field({"type": "object", "additionalProperties": {}})
class JSONObjectField(serializers.JSONField):
    """A JSON object (never an array, string, number or null)."""

    default_error_messages = {"not_object": "Must be a JSON object, got {kind}."}

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            self.fail("not_object", kind=json_kind(data))
        problem = json_problem(data)
        if problem is not None:
            raise serializers.ValidationError(problem)
        super().to_internal_value(data)  # JSONField's check that it encodes as JSON
        return data


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {"type": "string", "maxLength": METADATA_VALUE_MAX_LENGTH},
        "maxProperties": METADATA_MAX_ENTRIES,
    }
)
class MetadataField(serializers.JSONField):
    """A job's metadata: a JSON object of string keys and string values, within the
    bounds of ``jobs.limits.metadata_problem``."""

    def to_internal_value(self, data: Any) -> dict[str, str]:
        problem = metadata_problem(data) or json_problem(data)
        if problem is not None:
            raise serializers.ValidationError(problem)
        assert isinstance(data, dict)  # metadata_problem refuses anything else
        return data


@extend_schema_field(OpenApiTypes.ANY)
class AnyJSONField(serializers.JSONField):
    """Any JSON value, as stored (the handler's result)."""


class StrictBodySerializer(serializers.Serializer[Any]):
    """A request body whose keys must all be fields: an unknown key is refused ("Unknown
    field.") rather than dropped as DRF does, so a misspelt option is never ignored."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, Mapping):
            unknown = sorted(str(key) for key in data if key not in self.fields)
            if unknown:
                raise serializers.ValidationError({key: ["Unknown field."] for key in unknown})
        validated: dict[str, Any] = super().to_internal_value(data)
        return validated
