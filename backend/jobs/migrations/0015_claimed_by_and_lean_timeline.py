"""Who ran a job, kept on its row, and a timeline that may leave the success path out.

``jobs_job.claimed_at`` and ``claimed_by``: when the last attempt was claimed and for which
worker id, set by every claim and kept when the attempt ends. A success's wait and run
times are read from them (the claimed event is no longer looked up), and a worker in a
lean timeline (``JOB_WORKER_LEAN_TIMELINE``) writes no ``claimed`` or ``succeeded`` event:
the row says what they would have said.

``jobs_complete_and_claim`` takes ``p_lean`` and returns the two columns; the function of
the previous signature is dropped.
"""

from importlib import import_module

from django.db import migrations, models

CREATE = """
CREATE OR REPLACE FUNCTION jobs_complete_and_claim(p_id uuid, p_attempts integer, p_result_json text, p_completed_message text, p_completed_data text, p_worker_id text, p_queue text, p_locked_until timestamp with time zone, p_claimed_message text, p_claimed_data text, p_now timestamp with time zone, p_keys_limited boolean, p_lean boolean)
RETURNS TABLE (part text, id uuid, type character varying(120), payload jsonb, status character varying(16), priority smallint, available_at timestamp with time zone, attempts integer, max_attempts integer, idempotency_key character varying(255), locked_by character varying(255), locked_until timestamp with time zone, last_error text, result jsonb, created_at timestamp with time zone, updated_at timestamp with time zone, finished_at timestamp with time zone, queue character varying(64), timeout_seconds integer, cancel_requested_at timestamp with time zone, metadata jsonb, unique_key character varying(255), concurrency_key character varying(255), claimed_at timestamp with time zone, claimed_by character varying(255))
LANGUAGE plpgsql AS $function$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH RECURSIVE completed AS (
    UPDATE jobs_job
    SET status = 'succeeded', result = p_result_json::jsonb, locked_by = NULL,
        locked_until = NULL, finished_at = p_now, updated_at = p_now
    WHERE id = p_id AND locked_by = p_worker_id AND attempts = p_attempts
    RETURNING *
), completed_event AS (
    -- Not in a lean timeline (:lean): the row keeps what the event would say.
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type, wait_ms, run_ms)
    SELECT ended.id, 'succeeded', ended.attempts, p_worker_id, p_completed_message,
        p_completed_data::jsonb, p_now, ended.type, GREATEST(floor(EXTRACT(EPOCH FROM
            (ended.claimed_at - GREATEST(ended.available_at, ended.created_at))) * 1000), 0)::bigint,
        GREATEST(floor(EXTRACT(EPOCH FROM (p_now - ended.claimed_at)) * 1000), 0)::bigint
    FROM completed AS ended
    WHERE NOT p_lean
), gate AS MATERIALIZED (
    -- Flow control, one probe of the primary key of jobs_queuesettings (a queue without a
    -- row has none): a paused queue is not claimed from; a queue with a rate or a
    -- concurrency limit is claimed from by the gated claim (postgres.py), which counts
    -- under a lock on its row.
    SELECT bool_or(settings.paused_at IS NOT NULL) AS paused,
        bool_or(settings.rate_limit IS NOT NULL OR settings.concurrency_limit IS NOT NULL)
            AS gated
    FROM jobs_queuesettings AS settings WHERE settings.name = p_queue
), level AS (
    (SELECT priority FROM jobs_job
        WHERE status = 'queued' AND queue = p_queue
            AND NOT (SELECT coalesce(paused OR gated, false) FROM gate)
        ORDER BY priority DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT job.priority FROM jobs_job AS job
            WHERE job.status = 'queued' AND job.queue = p_queue
                AND job.priority < level.priority
            ORDER BY job.priority DESC LIMIT 1)
    FROM level WHERE level.priority IS NOT NULL
), candidate AS MATERIALIZED (
    SELECT due.id, due.concurrency_key FROM level CROSS JOIN LATERAL (
        SELECT id, concurrency_key FROM jobs_job
        WHERE status = 'queued' AND queue = p_queue AND priority = level.priority
            AND available_at AT TIME ZONE 'UTC' <= p_now::timestamptz AT TIME ZONE 'UTC'
            AND attempts < max_attempts
        ORDER BY available_at AT TIME ZONE 'UTC', created_at, id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    ) AS due
    LIMIT 1
), claimed AS (
    UPDATE jobs_job AS job
    SET status = 'running', attempts = job.attempts + 1, locked_by = p_worker_id,
        locked_until = p_locked_until, last_error = '', result = NULL, updated_at = p_now,
        claimed_at = p_now, claimed_by = p_worker_id
    FROM candidate
    -- A job with a concurrency_key, while key limits exist, goes to the gated claim. The
    -- array hands the primary key the row to probe: joined to the candidate alone, over
    -- statistics that call the table empty, the plan read the whole primary key.
    WHERE job.id = ANY(ARRAY(SELECT id FROM candidate)) AND job.id = candidate.id
        AND (candidate.concurrency_key IS NULL
            OR NOT (p_keys_limited OR EXISTS (SELECT 1 FROM jobs_concurrencykeylimit)))
    RETURNING job.*
), claimed_event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type, wait_ms)
    SELECT id, 'claimed', attempts, locked_by, p_claimed_message, p_claimed_data::jsonb, p_now,
        type, GREATEST(floor(EXTRACT(EPOCH FROM
            p_now - GREATEST(available_at, created_at)) * 1000), 0)::bigint
    FROM claimed
    WHERE NOT p_lean
)
SELECT 'completed' AS part, * FROM completed
UNION ALL
SELECT 'claimed', * FROM claimed
UNION ALL
-- A gated row (its columns NULL): the claim is for the gated claim to make.
SELECT 'gated', job.* FROM (SELECT 1) AS one LEFT JOIN jobs_job AS job ON false
-- Also when a candidate was found but not claimed: its key may be limited.
WHERE (SELECT coalesce(gated AND NOT paused, false) FROM gate) OR EXISTS (
    SELECT 1 FROM candidate WHERE NOT EXISTS (SELECT 1 FROM claimed));
END
$function$
"""

_0009 = import_module("jobs.migrations.0009_hot_tables")
_0014 = import_module("jobs.migrations.0014_queue_limits_without_slots")
_ARGS = (
    "uuid, integer, text, text, text, text, text, timestamp with time zone, text, text, "
    "timestamp with time zone, boolean"
)
DROP_0014 = f"DROP FUNCTION IF EXISTS jobs_complete_and_claim({_ARGS})"
DROP = f"DROP FUNCTION IF EXISTS jobs_complete_and_claim({_ARGS}, boolean)"


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0014_queue_limits_without_slots"),
    ]

    operations = [
        migrations.RunPython(
            _0009._on_postgres(DROP_0014), _0009._on_postgres(_0014.CREATE), elidable=False
        ),
        migrations.AddField(
            model_name="job",
            name="claimed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="claimed_by",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.RunPython(_0009._on_postgres(CREATE), _0009._on_postgres(DROP), elidable=False),
    ]
