"""Events: one job's timeline and the feed of all jobs' events."""

from typing import Any
from uuid import UUID

from rest_framework import serializers

from ... import selectors
from ...models import Job, JobEvent, JobEventType
from .fields import JSONObjectField


class JobEventSerializer(serializers.ModelSerializer[JobEvent]):
    job: serializers.PrimaryKeyRelatedField[Job] = serializers.PrimaryKeyRelatedField(
        read_only=True, help_text="The job's id."
    )
    # DRF's metaclass moves declared fields out of the class, so this does not replace the
    # Serializer.data property the stubs see here.
    data = JSONObjectField(read_only=True)  # type: ignore[assignment]

    class Meta:
        model = JobEvent
        fields = ["id", "job", "type", "attempt", "worker_id", "message", "data", "created_at"]
        read_only_fields = fields


HEARTBEATS_HELP = (
    "`include` (the default): every event. `exclude`: leave out the heartbeat events "
    "`lease_renewed` and `progress`."
)


class HeartbeatsQuerySerializer(serializers.Serializer[Any]):
    heartbeats = serializers.ChoiceField(
        choices=["include", "exclude"], default="include", help_text=HEARTBEATS_HELP
    )


class JobEventQuerySerializer(HeartbeatsQuerySerializer):
    type = serializers.ChoiceField(
        choices=JobEventType.choices,
        required=False,
        allow_blank=True,
        help_text="Exact event type.",
    )
    job_id = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text=(
            "Only this job's events: its id, or a unique prefix of it of at least "
            f"{selectors.ID_PREFIX_MIN_LENGTH} hex digits (dashes ignored)."
        ),
    )

    def validate_job_id(self, value: str) -> UUID | None:
        if not value.strip():
            return None
        try:
            job_id = selectors.job_id_from_prefix(value)
        except selectors.AmbiguousIdPrefix as exc:
            raise serializers.ValidationError(str(exc)) from None
        except ValueError:
            raise serializers.ValidationError(
                f"Must be a job id or at least {selectors.ID_PREFIX_MIN_LENGTH} hex digits of one."
            ) from None
        if job_id is None:
            # No job has the prefix: an id in its range, which no job has either, so the
            # feed is empty as for an unknown whole id.
            prefix = selectors.id_prefix(value)
            assert prefix is not None
            return UUID(prefix.ljust(32, "0"))
        return job_id
