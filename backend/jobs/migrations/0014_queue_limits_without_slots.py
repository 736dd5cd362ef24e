"""Queue limits that cannot leak or grow: no slots, a rate window of constant size.

* ``jobs_queueslot`` goes: a concurrency limit stores nothing but its number, and the
  claim counts the queue's running jobs under the queue's row lock. A slot left held by a
  job that had finished (a limit set while jobs ended) could stall a queue for good, and a
  limit of a million wrote a million rows.
* ``job_running_queue_idx``: a queue's running jobs, which the claims of a
  concurrency-limited queue count.
* ``rate_window`` holds counts per twentieth of the rate period
  (``jobs.flowcontrol.rate_room``) instead of one timestamp per claim; a list of
  timestamps is converted to the counts that hold the same claims.

``jobs_complete_and_claim`` is replaced with the statement as it now reads (it no longer
takes a slot); its arguments and columns are unchanged. Reversible but for the slots'
rows, which a limit set again recreates.
"""

from importlib import import_module

from django.db import migrations, models

from jobs.flowcontrol import rate_room

CREATE = """
CREATE OR REPLACE FUNCTION jobs_complete_and_claim(p_id uuid, p_attempts integer, p_result_json text, p_completed_message text, p_completed_data text, p_worker_id text, p_queue text, p_locked_until timestamp with time zone, p_claimed_message text, p_claimed_data text, p_now timestamp with time zone, p_keys_limited boolean)
RETURNS TABLE (part text, id uuid, type character varying(120), payload jsonb, status character varying(16), priority smallint, available_at timestamp with time zone, attempts integer, max_attempts integer, idempotency_key character varying(255), locked_by character varying(255), locked_until timestamp with time zone, last_error text, result jsonb, created_at timestamp with time zone, updated_at timestamp with time zone, finished_at timestamp with time zone, queue character varying(64), timeout_seconds integer, cancel_requested_at timestamp with time zone, metadata jsonb, unique_key character varying(255), concurrency_key character varying(255))
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
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type, wait_ms, run_ms)
    SELECT ended.id, 'succeeded', ended.attempts, p_worker_id, p_completed_message,
        p_completed_data::jsonb, p_now, ended.type, claim.wait_ms, claim.run_ms
    FROM completed AS ended
    LEFT JOIN LATERAL (
        SELECT wait_ms,
            GREATEST(floor(EXTRACT(EPOCH FROM p_now - created_at) * 1000), 0)::bigint AS run_ms
        FROM jobs_jobevent AS event
        WHERE event.job_id = ended.id AND event.type || '' = 'claimed'
            AND event.attempt = ended.attempts
        ORDER BY event.id + 0 DESC LIMIT 1
    ) AS claim ON true
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
        locked_until = p_locked_until, last_error = '', result = NULL, updated_at = p_now
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
_0012 = import_module("jobs.migrations.0012_claim_index_at_utc")


def _windows_as_counts(apps, schema_editor):
    QueueSettings = apps.get_model("jobs", "QueueSettings")
    for row in QueueSettings.objects.all():
        claims = row.rate_window
        if not isinstance(claims, list):
            continue
        window: dict[str, object] = {}
        if claims and row.rate_limit and row.rate_period_seconds:
            period = row.rate_period_seconds
            newest = rate_room(None, limit=0, period_seconds=period, now=max(claims))
            counts = [0] * len(newest.counts)
            for claim in claims:
                age = newest.bucket - rate_room(None, limit=0, period_seconds=period, now=claim).bucket
                if age < len(counts):
                    counts[age] += 1
            window = {"bucket": newest.bucket, "counts": counts}
        row.rate_window = window
        row.save(update_fields=["rate_window"])


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0013_schedule_errors"),
    ]

    operations = [
        migrations.DeleteModel(name="QueueSlot"),
        migrations.AlterField(
            model_name="queuesettings",
            name="rate_window",
            field=models.JSONField(blank=True, db_default={}, default=dict),
        ),
        migrations.RunPython(_windows_as_counts, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("queue__isnull", False), ("status", "running")),
                fields=["queue", "updated_at"],
                name="job_running_queue_idx",
            ),
        ),
        migrations.RunPython(
            _0009._on_postgres(CREATE), _0009._on_postgres(_0012.CREATE), elidable=False
        ),
    ]
