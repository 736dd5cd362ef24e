"""HTTP input validation and the JSON shapes of the API.

Input serializers refuse anything the services should never see (unknown job types,
out-of-range integers, non-object payloads); output serializers render exactly the
fields of the contract.

DRF serializers are generic in what they render: a model (or the drivers' row of the same
shape), a ``dict`` a selector built, or, for input-only serializers, nothing (``Any``).
"""

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .. import registry, selectors
from ..limits import (
    ACTIVITY_MINUTES_MAX,
    BULK_CREATE_MAX,
    BULK_IDS_MAX,
    IDEMPOTENCY_KEY_MAX_LENGTH,
    MAX_ATTEMPTS_MAX,
    METADATA_KEY_MAX_LENGTH,
    METADATA_MAX_CHARS,
    METADATA_MAX_ENTRIES,
    METADATA_VALUE_MAX_LENGTH,
    PRIORITY_MAX,
    PRIORITY_MIN,
    QUEUE_NAME_MAX_LENGTH,
    QUEUE_NAME_PATTERN,
    THROUGHPUT_BUCKET_SECONDS_MAX,
    THROUGHPUT_BUCKET_SECONDS_MIN,
    THROUGHPUT_MAX_BUCKETS,
    THROUGHPUT_MINUTES_MAX,
    TIMEOUT_SECONDS_MAX,
    TYPE_MAX_LENGTH,
    UNIQUE_KEY_MAX_LENGTH,
    json_kind,
    metadata_problem,
)
from ..models import DEFAULT_QUEUE, Job, JobEvent, JobEventType, JobStatus
from ..storable import json_problem

# --- Fields -----------------------------------------------------------------------------


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


# --- Jobs -------------------------------------------------------------------------------


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


# Any, not Job: it also renders the drivers' JobRow, which has the same attributes.
class JobSerializer(serializers.ModelSerializer[Any]):
    payload = JSONObjectField(read_only=True)
    result = AnyJSONField(read_only=True, allow_null=True)
    metadata = MetadataField(
        read_only=True,
        help_text="String keys and values given at creation, and the trace context "
        "(traceparent, tracestate, baggage) the tracing adds.",
    )

    class Meta:
        model = Job
        # The spec's job shape: every column, in the table's order.
        fields = [field.name for field in Job._meta.concrete_fields]
        read_only_fields = fields
        # Extensions of the spec's shape: kept when the attempt ends, unlike locked_by.
        extra_kwargs = {
            "claimed_at": {"help_text": "When its latest attempt was claimed; null if never."},
            "claimed_by": {"help_text": "The worker id that claimed its latest attempt."},
        }


# One JobSerializer per process for the single-job responses: a ModelSerializer builds
# its fields from the model each time it is instantiated, which cost a quarter of a
# POST /api/jobs/ (make bench's profile). Its fields keep no per-call state, so threads
# can share it.
_JOB_REPRESENTATION = JobSerializer()


def job_representation(job: Any) -> dict[str, Any]:
    """What ``JobSerializer(job).data`` gives, without building the serializer again."""
    data: dict[str, Any] = _JOB_REPRESENTATION.to_representation(job)
    return data


class ExceptionNameField(serializers.CharField):
    """An exception class path as the job page names it (``selectors.exception_name``)."""

    def to_representation(self, value: Any) -> str | None:  # type: ignore[override]
        return selectors.exception_name(value)


class JobListItemSerializer(JobSerializer):
    """A job of the list: the spec's shape and when its current attempt started."""

    started_at = serializers.DateTimeField(
        allow_null=True,
        read_only=True,
        help_text="When its current attempt was claimed; null while it is queued.",
    )
    last_exception_class = ExceptionNameField(
        allow_null=True,
        read_only=True,
        help_text="Exception class of its latest failed attempt (builtins unprefixed), beside "
        "last_error's message; null without an error, or when it was cancelled.",
    )

    class Meta(JobSerializer.Meta):
        fields = [*JobSerializer.Meta.fields, "started_at", "last_exception_class"]
        read_only_fields = fields


class JobDetailSerializer(JobSerializer):
    """The job page's job: the spec's shape and what its attempts and settings tell."""

    started_at = serializers.DateTimeField(
        allow_null=True, help_text="When its current attempt was claimed; null while queued."
    )

    total_attempts = serializers.IntegerField(
        help_text="Attempts over every round (`attempts` restarts at 0 on a manual retry)."
    )
    round = serializers.IntegerField(
        help_text="Manual-retry round, 1-based: each manual retry starts a new one."
    )
    last_exception_class = serializers.CharField(
        allow_null=True,
        help_text="Exception class of the latest attempt that raised (builtins unprefixed).",
    )
    last_traceback = serializers.CharField(
        allow_null=True, help_text="Its traceback, as text with real newlines."
    )
    effective_timeout_seconds = serializers.IntegerField(
        allow_null=True,
        help_text="The timeout an attempt gets: the job's, else its type's, else the "
        "worker's JOB_WORKER_TIMEOUT_SECONDS; null when none applies.",
    )
    timeout_source = serializers.ChoiceField(
        choices=["job", "type", "worker"],
        allow_null=True,
        help_text="Where effective_timeout_seconds comes from.",
    )

    class Meta(JobSerializer.Meta):
        fields = [
            *JobSerializer.Meta.fields,
            "started_at",
            "total_attempts",
            "round",
            "last_exception_class",
            "last_traceback",
            "effective_timeout_seconds",
            "timeout_source",
        ]
        read_only_fields = fields


def job_detail_representation(job: Any, extra: Mapping[str, Any]) -> dict[str, Any]:
    """The job page's job: ``job_representation`` and the fields of ``JobDetailSerializer``
    beyond the spec's shape."""
    started_at = extra.get("started_at")
    return {
        **job_representation(job),
        **extra,
        "started_at": None if started_at is None else _DATETIME.to_representation(started_at),
    }


_DATETIME = serializers.DateTimeField()


OUTCOMES = ["running", "succeeded", "retried", "failed", "timed_out", "cancelled", "lease_expired"]


class AttemptSerializer(serializers.Serializer[dict[str, Any]]):
    round = serializers.IntegerField(help_text="Manual-retry round, 1-based.")
    attempt = serializers.IntegerField(help_text="Attempt number within its round.")
    number = serializers.IntegerField(help_text="Ordinal over every round, 1-based.")
    worker_id = serializers.CharField(allow_null=True, help_text="The thread that claimed it.")
    queued_at = serializers.DateTimeField(
        allow_null=True, help_text="When it became claimable (claimed_at - wait_ms)."
    )
    claimed_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    wait_ms = serializers.IntegerField(allow_null=True, help_text="Queue wait before the claim.")
    run_ms = serializers.IntegerField(allow_null=True, help_text="Claim to the attempt's end.")
    outcome = serializers.ChoiceField(
        choices=OUTCOMES,
        help_text="timed_out: ended at its timeout; lease_expired: its worker stopped "
        "renewing the lease and cleanup ended it.",
    )
    error = serializers.CharField(allow_null=True)
    exception_class = serializers.CharField(allow_null=True)
    traceback = serializers.CharField(allow_null=True, help_text="Text with real newlines.")


class JobLookupQuerySerializer(serializers.Serializer[Any]):
    q = serializers.CharField(
        max_length=IDEMPOTENCY_KEY_MAX_LENGTH,
        help_text=(
            "A job id, a unique prefix of one (at least "
            f"{selectors.ID_PREFIX_MIN_LENGTH} hex digits, dashes ignored), or an "
            "idempotency key (exact)."
        ),
    )


class JobLookupSerializer(serializers.Serializer[Any]):
    match = serializers.ChoiceField(
        choices=["id", "id_prefix", "idempotency_key"], help_text="What `q` matched."
    )
    job = JobSerializer()


class JobCreateSerializer(StrictBodySerializer):
    """The body of `POST /api/jobs/`. Unknown keys are refused, not ignored."""

    type = serializers.CharField(
        max_length=TYPE_MAX_LENGTH,
        help_text="Handler routing key; one of the types listed by GET /api/config/.",
    )
    payload = JSONObjectField(
        required=False, default=dict, help_text="Handler input; a JSON object."
    )
    priority = StrictIntegerField(
        required=False,
        default=50,
        min_value=PRIORITY_MIN,
        max_value=PRIORITY_MAX,
        help_text="Higher is claimed first.",
    )
    available_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="ISO 8601; earliest time the job may run. Omitted or null: now.",
    )
    max_attempts = StrictIntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=1,
        max_value=MAX_ATTEMPTS_MAX,
        help_text=(
            f"Attempts before the job fails for good (1..{MAX_ATTEMPTS_MAX}). "
            "Omitted or null: JOB_WORKER_MAX_ATTEMPTS_DEFAULT."
        ),
    )
    idempotency_key = serializers.CharField(
        required=False,
        allow_null=True,
        default=None,
        max_length=IDEMPOTENCY_KEY_MAX_LENGTH,
        trim_whitespace=False,
        help_text="Repeating a create with the same key returns the existing job (200).",
    )
    queue = QueueNameField(
        required=False,
        default=DEFAULT_QUEUE,
        help_text="The queue the job waits in; a worker serves the queues it is given.",
    )
    timeout_seconds = StrictIntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=1,
        max_value=TIMEOUT_SECONDS_MAX,
        help_text=(
            "Seconds an attempt may run before it is failed as timed out. Omitted or null: "
            "the job type's default, else JOB_WORKER_TIMEOUT_SECONDS (0: no limit)."
        ),
    )

    metadata = MetadataField(
        required=False,
        default=dict,
        help_text=(
            f"String keys and string values to correlate by (a request id): at most "
            f"{METADATA_MAX_ENTRIES} entries, keys of 1 to {METADATA_KEY_MAX_LENGTH} "
            f"characters, values of at most {METADATA_VALUE_MAX_LENGTH}, "
            f"{METADATA_MAX_CHARS} characters in all. With tracing on, the trace context "
            "is added as traceparent, tracestate and baggage."
        ),
    )

    unique_key = serializers.CharField(
        required=False,
        allow_null=True,
        default=None,
        max_length=UNIQUE_KEY_MAX_LENGTH,
        trim_whitespace=False,
        help_text=(
            "While a queued or running job holds this key, a create with it returns that "
            "job (200, matched: unique_key); once it finished, a new job is created."
        ),
    )
    concurrency_key = serializers.CharField(
        required=False,
        allow_null=True,
        default=None,
        max_length=UNIQUE_KEY_MAX_LENGTH,
        trim_whitespace=False,
        help_text=(
            "Running jobs with one key are bounded by its limit (JOB_CONCURRENCY_KEY_LIMITS "
            "and the concurrency key limits table), across every worker."
        ),
    )

    def validate_type(self, value: str) -> str:
        known = registry.registered_types()
        if value not in known:
            raise serializers.ValidationError(
                f"No handler is registered for {value!r}. Known types: {', '.join(known)}."
            )
        return value


# One JobCreateSerializer per process, for single creates and bulk items alike: DRF
# deep-copies a serializer's declared fields for every instance, a tenth of a POST
# /api/jobs/ (make bench's profile). Validation keeps no state on the serializer or its
# fields, so threads can share it; its fields are bound now, not by two threads at once.
_JOB_CREATE = JobCreateSerializer()
_JOB_CREATE.fields  # noqa: B018


def validated_job_create(data: Any) -> dict[str, Any]:
    """The body of a single create, validated as ``JobCreateSerializer(data=data)
    .is_valid(raise_exception=True)`` validates it, with the same errors."""
    try:
        validated: dict[str, Any] = _JOB_CREATE.run_validation(data)
    except serializers.ValidationError:
        # Refused: DRF's own path words the error as usual (a null body is "No data
        # provided", not a bare list); a refusal's cost does not matter.
        JobCreateSerializer(data=data).is_valid(raise_exception=True)
        raise
    return validated


class JobBulkCreateSerializer(serializers.Serializer[Any]):
    """The body of `POST /api/jobs/bulk/`: up to BULK_CREATE_MAX jobs, validated as a
    whole. Any bad item refuses the request; errors are keyed ``jobs[<index>].<field>``."""

    jobs = JobCreateSerializer(
        many=True,
        help_text=f"1 to {BULK_CREATE_MAX} jobs, each as the body of POST /api/jobs/.",
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({"non_field_errors": ["Must be a JSON object."]})
        errors: dict[str, list[str]] = {
            str(key): ["Unknown field."] for key in data if key != "jobs"
        }
        items = data.get("jobs")
        if not isinstance(items, list) or not 1 <= len(items) <= BULK_CREATE_MAX:
            errors["jobs"] = [f"A list of 1 to {BULK_CREATE_MAX} jobs is required."]
        if errors:
            raise serializers.ValidationError(errors)
        assert isinstance(items, list)
        validated: list[dict[str, Any]] = []
        keys: dict[str, int] = {}
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                errors[f"jobs[{index}]"] = ["Must be a JSON object."]
                continue
            try:
                job = _JOB_CREATE.run_validation(item)
            except serializers.ValidationError as exc:
                detail = exc.detail if isinstance(exc.detail, dict) else {"": exc.detail}
                for field, messages in detail.items():
                    errors[f"jobs[{index}].{field}"] = [str(message) for message in messages]
                continue
            key = job["idempotency_key"]
            if key is not None:
                if key in keys:
                    errors[f"jobs[{index}].idempotency_key"] = [f"Also used by jobs[{keys[key]}]."]
                keys.setdefault(key, index)
            validated.append(job)
        if errors:
            raise serializers.ValidationError(errors)
        return {"jobs": validated}


MATCHED_HELP = (
    "Which rule returned an existing job: idempotency_key (permanent), unique_key (a "
    "queued or running job holds it); null: the job was created."
)


class JobCreateResultSerializer(JobSerializer):
    """A created job, or the existing one a key matched, and which rule matched."""

    matched = serializers.ChoiceField(
        choices=["idempotency_key", "unique_key"],
        allow_null=True,
        read_only=True,
        help_text=MATCHED_HELP,
    )

    class Meta(JobSerializer.Meta):
        fields = [*JobSerializer.Meta.fields, "matched"]
        read_only_fields = fields


class BulkCreatedJobSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    created = serializers.BooleanField(
        help_text="False: a key was known; this is the existing job."
    )
    matched = serializers.ChoiceField(
        choices=["idempotency_key", "unique_key"], allow_null=True, help_text=MATCHED_HELP
    )


class JobBulkCreateResultSerializer(serializers.Serializer[Any]):
    created = serializers.IntegerField(help_text="Jobs written by this request.")
    existing = serializers.IntegerField(help_text="Items whose idempotency key was known.")
    jobs = BulkCreatedJobSerializer(many=True, help_text="One per item, in request order.")


# An empty filter (`?status=&type=`, as a form submits it) filters nothing.
class JobFilterSerializer(serializers.Serializer[Any]):
    """The job list's filters that the bulk actions take too."""

    status = serializers.ChoiceField(
        choices=JobStatus.choices, required=False, allow_blank=True, help_text="Exact status."
    )
    type = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=TYPE_MAX_LENGTH,
        help_text="Case-insensitive substring of the job type.",
    )
    queue = QueueNameField(required=False, allow_blank=True, help_text="Exact queue name.")


METADATA_FILTER_MAX_LENGTH = 1000
ERROR_FILTER_MAX_LENGTH = 1000


class JobListQuerySerializer(JobFilterSerializer):
    # A lookup, not a selection: a key names at most one job, so the bulk actions (which
    # act on the filters) do not take it.
    idempotency_key = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=IDEMPOTENCY_KEY_MAX_LENGTH,
        help_text="Exact idempotency key: the one job created with it, if any.",
    )
    ordering = serializers.ChoiceField(
        choices=[order for field in selectors.JOB_ORDERINGS for order in (field, f"-{field}")],
        required=False,
        allow_blank=True,
        help_text=(
            "Sort by this field, `-` first for descending (default "
            f"`{selectors.DEFAULT_JOB_ORDERING}`, newest first); ties newest first. "
            "Jobs without the value (never started, not finished) come last."
        ),
    )

    def validate_ordering(self, value: str) -> str:
        return value or selectors.DEFAULT_JOB_ORDERING

    unique_key = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=UNIQUE_KEY_MAX_LENGTH,
        help_text="Exact unique key.",
    )
    concurrency_key = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=UNIQUE_KEY_MAX_LENGTH,
        help_text="Exact concurrency key.",
    )
    key = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=max(IDEMPOTENCY_KEY_MAX_LENGTH, UNIQUE_KEY_MAX_LENGTH),
        help_text="Exact idempotency, unique or concurrency key: jobs with any of the three.",
    )
    metadata = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=METADATA_FILTER_MAX_LENGTH,
        help_text="`name=value`: jobs whose metadata has that value under that name "
        "(exact); `name`: jobs whose metadata has that name.",
    )
    error = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=ERROR_FILTER_MAX_LENGTH,
        help_text="Case-insensitive substring of last_error (exception message).",
    )
    due = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="true: queued jobs due now; false: queued jobs scheduled for later "
        "(by available_at).",
    )
    lease_expired = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="true: running jobs whose lease has expired (their worker is gone or "
        "frozen); false: running jobs whose lease holds.",
    )

    def validate_metadata(self, value: str) -> str:
        if value and not value.partition("=")[0].strip():
            raise serializers.ValidationError("Give a metadata name: `name` or `name=value`.")
        return value


class JobSelectionSerializer(StrictBodySerializer, JobFilterSerializer):
    """The body of the bulk actions: the job list's filters and/or ids, never nothing."""

    ids = FlatListField(
        child=serializers.UUIDField(),
        required=False,
        allow_empty=False,
        max_length=BULK_IDS_MAX,
        help_text=f"Act on these jobs (at most {BULK_IDS_MAX}); combined with the filters.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs.get("ids") and not any(
            attrs.get(name) for name in ("status", "type", "queue")
        ):
            raise serializers.ValidationError(
                "Give ids or at least one filter (status, type, queue): an empty selection "
                "would act on every job."
            )
        return attrs


class CancelOutcomeSerializer(serializers.Serializer[Any]):
    cancelled = serializers.IntegerField(help_text="Queued jobs that became cancelled.")
    cancel_requested = serializers.IntegerField(
        help_text="Running jobs asked to stop; each ends as cancelled within a heartbeat."
    )


class HeldKeySerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField(source="job_id", help_text="The job left alone.")
    unique_key = serializers.CharField()
    held_by = serializers.UUIDField(help_text="The job that holds the key.")


class RetryOutcomeSerializer(serializers.Serializer[Any]):
    retried = serializers.IntegerField(help_text="Failed or cancelled jobs queued again.")
    held = serializers.IntegerField(
        source="held_count",
        help_text=(
            "Selected failed or cancelled jobs left alone because another job holds their "
            "unique_key (an active one, or the newest selected job of the key, retried)."
        ),
    )
    held_jobs = HeldKeySerializer(
        source="held", many=True, help_text="The first 100 of them, with their holders."
    )


class JobStatusCountsSerializer(serializers.Serializer[dict[str, Any]]):
    queued = serializers.IntegerField()
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


# --- Events -----------------------------------------------------------------------------


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


# --- Throughput -------------------------------------------------------------------------


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


# --- Job types and workers -------------------------------------------------------------


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
    jobs = serializers.IntegerField(help_text="Distinct jobs among them.")
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


class ThreadJobSerializer(serializers.Serializer[dict[str, Any]]):
    id = serializers.UUIDField()
    type = serializers.CharField()
    queue = serializers.CharField()
    attempt = serializers.IntegerField()
    started_at = serializers.DateTimeField(
        allow_null=True, help_text="When this attempt was claimed."
    )
    locked_until = serializers.DateTimeField()
    lease_overdue = serializers.BooleanField(
        help_text="The lease has expired: the thread is stuck; cleanup will requeue the job."
    )


class WorkerThreadSerializer(serializers.Serializer[dict[str, Any]]):
    worker_id = serializers.CharField(help_text="host:pid:thread-N:random, as in locked_by.")
    job = ThreadJobSerializer(allow_null=True, help_text="What it runs now; null: idle.")


class AbandonedJobSerializer(serializers.Serializer[dict[str, Any]]):
    id = serializers.UUIDField()
    type = serializers.CharField(allow_null=True)
    attempt = serializers.IntegerField(allow_null=True, help_text="The attempt that timed out.")
    status = serializers.ChoiceField(
        choices=JobStatus.choices,
        allow_null=True,
        help_text="The job's status now (it moved on when the attempt timed out); null if "
        "it was deleted.",
    )


class AbandonedThreadSerializer(serializers.Serializer[dict[str, Any]]):
    worker_id = serializers.CharField(help_text="The thread's worker id.")
    job = AbandonedJobSerializer(
        allow_null=True, help_text="The job whose handler it is still in; null if unknown."
    )
    abandoned_at = serializers.DateTimeField(
        allow_null=True, help_text="When its attempt timed out and it was replaced."
    )


class WorkerProcessSerializer(serializers.Serializer[dict[str, Any]]):
    worker_id = serializers.CharField(help_text="host:pid, the process part of its threads' ids.")
    hostname = serializers.CharField()
    pid = serializers.IntegerField()
    queues = serializers.ListField(
        child=serializers.CharField(), help_text="The queues it serves (* : every queue)."
    )
    threads_configured = serializers.IntegerField(help_text="Worker threads it was started with.")
    threads_live = serializers.IntegerField(
        help_text="Threads serving now (a thread stuck past its timeout is replaced)."
    )
    threads_busy = serializers.IntegerField(help_text="Live threads running a job now.")
    started_at = serializers.DateTimeField()
    last_seen_at = serializers.DateTimeField(
        help_text="Its last check-in (every half heartbeat interval)."
    )
    heartbeat_interval_seconds = serializers.FloatField(
        help_text="Listed while last_seen_at is within one interval of now."
    )
    finished = serializers.IntegerField(
        help_text="Attempt endings its threads wrote in the window."
    )
    threads = WorkerThreadSerializer(many=True, help_text="Its live threads, by thread number.")
    threads_abandoned = AbandonedThreadSerializer(
        many=True,
        help_text="Threads it gave up on: still running a handler whose attempt timed out "
        "(replaced by new threads; not in threads).",
    )


class WorkersSerializer(serializers.Serializer[dict[str, Any]]):
    minutes = serializers.IntegerField(help_text="The window `finished` counts over.")
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    processes = WorkerProcessSerializer(
        many=True, help_text="Every live worker process, idle or busy, newest first."
    )


# --- Config and health ------------------------------------------------------------------


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


# --- Session (the dashboard's sign-in) ---------------------------------------------------


class LoginSerializer(serializers.Serializer[Any]):
    username = serializers.CharField(max_length=150, trim_whitespace=False)
    password = serializers.CharField(max_length=4096, trim_whitespace=False)


class JobPermissionsSerializer(serializers.Serializer[dict[str, Any]]):
    view = serializers.BooleanField(help_text="jobs.view_job: read jobs, events and stats.")
    add = serializers.BooleanField(help_text="jobs.add_job: create jobs.")
    change = serializers.BooleanField(help_text="jobs.change_job: retry and cancel jobs.")


class SessionSerializer(serializers.Serializer[dict[str, Any]]):
    login_required = serializers.BooleanField(
        help_text="False on the open local demo (DEBUG=true): the API needs no sign-in."
    )
    authenticated = serializers.BooleanField()
    username = serializers.CharField(allow_null=True)
    permissions = JobPermissionsSerializer(help_text="What this user may do through the API.")


# --- Errors (documentation only) --------------------------------------------------------


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


# --- Flow control (issue 24) ------------------------------------------------------------


class QueueCountsSerializer(serializers.Serializer[dict[str, Any]]):
    queued = serializers.IntegerField()
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
