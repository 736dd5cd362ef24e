"""The job's metadata: string keys and values a caller attaches, and the trace
context jobs.tracing injects (traceparent, tracestate, baggage).

A JSON column with an empty default (PostgreSQL adds it without rewriting the table).
jobs_complete_and_claim returns the job's columns, so the function is dropped and created
again with the new one (a function's result type cannot be replaced in place); its body
is the statement of jobs/drivers/queries.sql, unchanged (jobs.drivers.sql.plpgsql_function).
"""

from django.db import migrations, models

CREATE = """
CREATE OR REPLACE FUNCTION jobs_complete_and_claim(p_id uuid, p_attempts integer, p_result_json text, p_completed_message text, p_completed_data text, p_worker_id text, p_queue text, p_locked_until timestamp with time zone, p_claimed_message text, p_claimed_data text, p_now timestamp with time zone)
RETURNS TABLE (part text, id uuid, type character varying(120), payload jsonb, status character varying(16), priority smallint, available_at timestamp with time zone, attempts integer, max_attempts integer, idempotency_key character varying(255), locked_by character varying(255), locked_until timestamp with time zone, last_error text, result jsonb, created_at timestamp with time zone, updated_at timestamp with time zone, finished_at timestamp with time zone, queue character varying(64), timeout_seconds integer, cancel_requested_at timestamp with time zone, metadata jsonb)
LANGUAGE plpgsql AS $function$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH RECURSIVE completed AS (
    UPDATE jobs_job
    SET status = 'succeeded', result = p_result_json::jsonb, locked_by = NULL,
        locked_until = NULL, finished_at = p_now, updated_at = p_now
    WHERE id = p_id AND status = 'running' AND locked_by = p_worker_id AND attempts = p_attempts
    RETURNING *
), completed_event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type, wait_ms, run_ms)
    SELECT ended.id, 'succeeded', ended.attempts, p_worker_id, p_completed_message,
        p_completed_data::jsonb, p_now, ended.type, claim.wait_ms, claim.run_ms
    FROM completed AS ended
    LEFT JOIN LATERAL (
        SELECT wait_ms,
            GREATEST(floor(EXTRACT(EPOCH FROM p_now - created_at) * 1000), 0)::bigint AS run_ms
        FROM jobs_jobevent AS event
        WHERE event.job_id = ended.id AND event.type = 'claimed'
            AND event.attempt = ended.attempts
        ORDER BY event.id DESC LIMIT 1
    ) AS claim ON true
), level AS (
    (SELECT priority FROM jobs_job
        WHERE status = 'queued' AND queue = p_queue
        ORDER BY priority DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT job.priority FROM jobs_job AS job
            WHERE job.status = 'queued' AND job.queue = p_queue
                AND job.priority < level.priority
            ORDER BY job.priority DESC LIMIT 1)
    FROM level WHERE level.priority IS NOT NULL
), candidate AS MATERIALIZED (
    SELECT due.id FROM level CROSS JOIN LATERAL (
        SELECT id FROM jobs_job
        WHERE status = 'queued' AND queue = p_queue AND priority = level.priority
            AND available_at <= p_now AND attempts < max_attempts
        ORDER BY available_at, created_at, id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    ) AS due
    LIMIT 1
), claimed AS (
    UPDATE jobs_job AS job
    SET status = 'running', attempts = job.attempts + 1, locked_by = p_worker_id,
        locked_until = p_locked_until, last_error = '', result = NULL, updated_at = p_now
    FROM candidate
    WHERE job.id = candidate.id
    RETURNING job.*
), claimed_event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type, wait_ms)
    SELECT id, 'claimed', attempts, locked_by, p_claimed_message, p_claimed_data::jsonb, p_now,
        type, GREATEST(floor(EXTRACT(EPOCH FROM
            p_now - GREATEST(available_at, created_at)) * 1000), 0)::bigint
    FROM claimed
)
SELECT 'completed' AS part, * FROM completed
UNION ALL
SELECT 'claimed', * FROM claimed;
END
$function$
"""

# The function as migration 0005 made it, to go back to.
CREATE_0005 = """
CREATE OR REPLACE FUNCTION jobs_complete_and_claim(p_id uuid, p_attempts integer, p_result_json text, p_completed_message text, p_completed_data text, p_worker_id text, p_queue text, p_locked_until timestamp with time zone, p_claimed_message text, p_claimed_data text, p_now timestamp with time zone)
RETURNS TABLE (part text, id uuid, type character varying(120), payload jsonb, status character varying(16), priority smallint, available_at timestamp with time zone, attempts integer, max_attempts integer, idempotency_key character varying(255), locked_by character varying(255), locked_until timestamp with time zone, last_error text, result jsonb, created_at timestamp with time zone, updated_at timestamp with time zone, finished_at timestamp with time zone, queue character varying(64), timeout_seconds integer, cancel_requested_at timestamp with time zone)
LANGUAGE plpgsql AS $function$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH RECURSIVE completed AS (
    UPDATE jobs_job
    SET status = 'succeeded', result = p_result_json::jsonb, locked_by = NULL,
        locked_until = NULL, finished_at = p_now, updated_at = p_now
    WHERE id = p_id AND status = 'running' AND locked_by = p_worker_id AND attempts = p_attempts
    RETURNING *
), completed_event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type, wait_ms, run_ms)
    SELECT ended.id, 'succeeded', ended.attempts, p_worker_id, p_completed_message,
        p_completed_data::jsonb, p_now, ended.type, claim.wait_ms, claim.run_ms
    FROM completed AS ended
    LEFT JOIN LATERAL (
        SELECT wait_ms,
            GREATEST(floor(EXTRACT(EPOCH FROM p_now - created_at) * 1000), 0)::bigint AS run_ms
        FROM jobs_jobevent AS event
        WHERE event.job_id = ended.id AND event.type = 'claimed'
            AND event.attempt = ended.attempts
        ORDER BY event.id DESC LIMIT 1
    ) AS claim ON true
), level AS (
    (SELECT priority FROM jobs_job
        WHERE status = 'queued' AND queue = p_queue
        ORDER BY priority DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT job.priority FROM jobs_job AS job
            WHERE job.status = 'queued' AND job.queue = p_queue
                AND job.priority < level.priority
            ORDER BY job.priority DESC LIMIT 1)
    FROM level WHERE level.priority IS NOT NULL
), candidate AS MATERIALIZED (
    SELECT due.id FROM level CROSS JOIN LATERAL (
        SELECT id FROM jobs_job
        WHERE status = 'queued' AND queue = p_queue AND priority = level.priority
            AND available_at <= p_now AND attempts < max_attempts
        ORDER BY available_at, created_at, id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    ) AS due
    LIMIT 1
), claimed AS (
    UPDATE jobs_job AS job
    SET status = 'running', attempts = job.attempts + 1, locked_by = p_worker_id,
        locked_until = p_locked_until, last_error = '', result = NULL, updated_at = p_now
    FROM candidate
    WHERE job.id = candidate.id
    RETURNING job.*
), claimed_event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type, wait_ms)
    SELECT id, 'claimed', attempts, locked_by, p_claimed_message, p_claimed_data::jsonb, p_now,
        type, GREATEST(floor(EXTRACT(EPOCH FROM
            p_now - GREATEST(available_at, created_at)) * 1000), 0)::bigint
    FROM claimed
)
SELECT 'completed' AS part, * FROM completed
UNION ALL
SELECT 'claimed', * FROM claimed;
END
$function$
"""

DROP = "DROP FUNCTION IF EXISTS jobs_complete_and_claim(uuid, integer, text, text, text, text, text, timestamp with time zone, text, text, timestamp with time zone)"


def _on_postgres(*statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0005_complete_and_claim_function"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="metadata",
            field=models.JSONField(blank=True, db_default={}, default=dict),
        ),
        migrations.RunPython(
            _on_postgres(DROP, CREATE), _on_postgres(DROP, CREATE_0005), elidable=False
        ),
    ]
