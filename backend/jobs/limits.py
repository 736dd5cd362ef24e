"""The app's limits: the bounds every way in enforces (the REST API, the ``django.tasks``
backend, the settings checks) and the columns are sized by, in one place.

A leaf of the app: it imports nothing else of ``jobs``, so the models, the backend and
the HTTP layer take their bounds from here instead of from one another.
"""

# job.priority is a smallint: its range.
PRIORITY_MIN = -32768
PRIORITY_MAX = 32767
MAX_ATTEMPTS_MAX = 100
TIMEOUT_SECONDS_MAX = 7 * 24 * 3600
# The longest wait a handler may ask for: a backoff callable's answer is clamped to it, a
# snooze beyond it is refused.
RETRY_DELAY_MAX_SECONDS = 7 * 24 * 3600

# Column sizes (jobs_job.type, idempotency_key, queue; the worker id of locked_by).
TYPE_MAX_LENGTH = 120
IDEMPOTENCY_KEY_MAX_LENGTH = 255
# unique_key and concurrency_key, as long as an idempotency key.
UNIQUE_KEY_MAX_LENGTH = 255
WORKER_ID_MAX_LENGTH = 255
QUEUE_NAME_MAX_LENGTH = 64
# Letters, digits and . _ : -, starting with a letter or digit (the API, the django.tasks
# backend and JOB_WORKER_QUEUES refuse other names).
QUEUE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"

# Ids one bulk request may name; filters reach any number of jobs.
BULK_IDS_MAX = 1000
# Jobs one bulk create may hold.
BULK_CREATE_MAX = 1000
# Parents one job may wait for (depends_on).
DEPENDS_ON_MAX = 100

# Workflows (``jobs.services.create_workflow``): the jobs one may hold (a group of 10,000
# with a parent and a callback), and the parents one of its jobs may wait for among them
# (the callback of that group); ids of jobs outside the workflow keep DEPENDS_ON_MAX.
WORKFLOW_JOBS_MAX = 10_002
WORKFLOW_DEPENDS_ON_MAX = 10_000
WORKFLOW_NAME_MAX_LENGTH = 200
WORKFLOW_REF_MAX_LENGTH = 200
# Members a workflow's detail lists (the first ones, in creation order).
WORKFLOW_MEMBERS_SHOWN = 1000

# GET /api/jobs/throughput/: the window and its buckets.
THROUGHPUT_MINUTES_MAX = 1440
THROUGHPUT_BUCKET_SECONDS_MIN = 10
THROUGHPUT_BUCKET_SECONDS_MAX = 3600
THROUGHPUT_MAX_BUCKETS = 500
# GET /api/jobs/types/ and /api/workers/: the window.
ACTIVITY_MINUTES_MAX = 1440

# A job's metadata: a JSON object of string keys and string values (correlation ids and the
# trace context; see metadata_problem). Bounds of what a caller gives; the trace context
# the tracing injects on top (traceparent, tracestate, baggage) is bounded by W3C's limits.
METADATA_MAX_ENTRIES = 32
METADATA_KEY_MAX_LENGTH = 128
# W3C baggage's own limit, so a baggage header a caller carries over fits in one value.
METADATA_VALUE_MAX_LENGTH = 8192
# Keys and values together, in characters.
METADATA_MAX_CHARS = 16384


def metadata_problem(value: object) -> str | None:
    """Why ``value`` is not acceptable job metadata, or ``None`` when it is: a JSON object
    of at most ``METADATA_MAX_ENTRIES`` string keys (1 to ``METADATA_KEY_MAX_LENGTH``
    characters) and string values (at most ``METADATA_VALUE_MAX_LENGTH``), with at most
    ``METADATA_MAX_CHARS`` characters in all. Storability (NUL, lone surrogates) is
    ``jobs.storable``'s rule, checked beside this one."""
    if not isinstance(value, dict):
        return "Must be a JSON object of string keys and string values."
    if len(value) > METADATA_MAX_ENTRIES:
        return f"At most {METADATA_MAX_ENTRIES} entries are allowed, got {len(value)}."
    total = 0
    for key, item in value.items():
        if not isinstance(key, str) or not 1 <= len(key) <= METADATA_KEY_MAX_LENGTH:
            return f"Keys must be strings of 1 to {METADATA_KEY_MAX_LENGTH} characters."
        if not isinstance(item, str):
            return f"The value of {key!r} must be a string, got {json_kind(item)}."
        if len(item) > METADATA_VALUE_MAX_LENGTH:
            return (
                f"The value of {key!r} is {len(item)} characters long; at most "
                f"{METADATA_VALUE_MAX_LENGTH} are allowed."
            )
        total += len(key) + len(item)
    if total > METADATA_MAX_CHARS:
        return f"Keys and values add up to {total} characters; at most {METADATA_MAX_CHARS}."
    return None


def json_kind(value: object) -> str:
    """What a JSON value is, as an error message names it ("a string", "an array"...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
