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

# Column sizes (jobs_job.type, idempotency_key, queue; the worker id of locked_by).
TYPE_MAX_LENGTH = 120
IDEMPOTENCY_KEY_MAX_LENGTH = 255
WORKER_ID_MAX_LENGTH = 255
QUEUE_NAME_MAX_LENGTH = 64
# Letters, digits and . _ : -, starting with a letter or digit (the API, the django.tasks
# backend and JOB_WORKER_QUEUES refuse other names).
QUEUE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"

# Ids one bulk request may name; filters reach any number of jobs.
BULK_IDS_MAX = 1000
# Jobs one bulk create may hold.
BULK_CREATE_MAX = 1000

# GET /api/jobs/throughput/: the window and its buckets.
THROUGHPUT_MINUTES_MAX = 1440
THROUGHPUT_BUCKET_SECONDS_MIN = 10
THROUGHPUT_BUCKET_SECONDS_MAX = 3600
THROUGHPUT_MAX_BUCKETS = 500
# GET /api/jobs/types/ and /api/workers/: the window.
ACTIVITY_MINUTES_MAX = 1440
