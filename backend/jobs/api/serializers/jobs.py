"""Jobs: the job's shapes (list item, detail, attempts), creating one or many, the list's
filters, lookups, and the outcomes of bulk retries and cancels.
"""

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from ... import registry, selectors
from ...limits import (
    BULK_CREATE_MAX,
    BULK_IDS_MAX,
    DEPENDS_ON_MAX,
    IDEMPOTENCY_KEY_MAX_LENGTH,
    MAX_ATTEMPTS_MAX,
    METADATA_KEY_MAX_LENGTH,
    METADATA_MAX_CHARS,
    METADATA_MAX_ENTRIES,
    METADATA_VALUE_MAX_LENGTH,
    PRIORITY_MAX,
    PRIORITY_MIN,
    TIMEOUT_SECONDS_MAX,
    TYPE_MAX_LENGTH,
    UNIQUE_KEY_MAX_LENGTH,
)
from ...models import DEFAULT_QUEUE, Job, JobStatus, OnParentFailure
from .fields import (
    AnyJSONField,
    FlatListField,
    JSONObjectField,
    MetadataField,
    QueueNameField,
    StrictBodySerializer,
    StrictIntegerField,
)


# Any, not Job: it also renders the drivers' JobRow, which has the same attributes.
class JobSerializer(serializers.ModelSerializer[Any]):
    payload = JSONObjectField(read_only=True)
    result = AnyJSONField(read_only=True, allow_null=True)
    metadata = MetadataField(
        read_only=True,
        help_text="String keys and values given at creation, and the trace context "
        "(traceparent, tracestate, baggage) the tracing adds.",
    )

    workflow_id = serializers.UUIDField(
        read_only=True,
        allow_null=True,
        help_text="The workflow it was created in (POST /api/workflows/); null if none.",
    )

    class Meta:
        model = Job
        # The spec's job shape: every column, in the table's order; the workflow by its id
        # (a step's ref is in the workflow's detail).
        fields = [
            "workflow_id" if field.name == "workflow" else field.name
            for field in Job._meta.concrete_fields
            if field.name != "ref"
        ]
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
    depends_on = serializers.ListField(
        child=serializers.UUIDField(),
        help_text="Ids of the jobs it waits for (oldest first); empty when none.",
    )
    on_parent_failure = serializers.ChoiceField(
        choices=OnParentFailure.choices,
        allow_null=True,
        help_text="What it does when one of them does not succeed; null without any.",
    )
    dependents = serializers.IntegerField(help_text="How many jobs wait for this one.")

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
            "depends_on",
            "on_parent_failure",
            "dependents",
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

    depends_on = FlatListField(
        child=serializers.UUIDField(),
        required=False,
        default=list,
        max_length=DEPENDS_ON_MAX,
        help_text=(
            f"Ids of existing jobs (at most {DEPENDS_ON_MAX}, each once) this one waits "
            "for: it is created `waiting` and queued once every one of them succeeded. "
            "Not with unique_key."
        ),
    )
    on_parent_failure = serializers.ChoiceField(
        choices=OnParentFailure.choices,
        required=False,
        default=OnParentFailure.CANCEL,
        help_text=(
            "When a job it depends on fails for good or is cancelled: cancel this one "
            "(an event names that job), or run it anyway once every one finished."
        ),
    )

    def validate_depends_on(self, value: list[Any]) -> tuple[Any, ...]:
        if len(set(value)) != len(value):
            raise serializers.ValidationError("A job is named twice.")
        return tuple(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("depends_on") and attrs.get("unique_key") is not None:
            raise serializers.ValidationError(
                {"depends_on": ["Not with unique_key: a waiting job holds no key."]}
            )
        return attrs

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
