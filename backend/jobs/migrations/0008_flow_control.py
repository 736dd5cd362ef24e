"""Flow control: unique_key (unique while queued or running) and
concurrency_key on the job, the queues' pause and limits (QueueSettings), per-key
concurrency limits (ConcurrencyKeyLimit) and the schedules' state (ScheduleState).

jobs_complete_and_claim returns the job's columns and now checks the queue's gate, so it
is dropped and created again (its body is the statement of jobs/drivers/queries.sql,
jobs.drivers.sql.plpgsql_function); it takes one more argument, keys_limited.
"""

import django.utils.timezone
from django.db import migrations, models

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
), completed_slot AS (
    -- The queue slot the completed attempt held, if any, is free again.
    UPDATE jobs_queueslot SET job_id = NULL WHERE job_id IN (SELECT id FROM completed)
), gate AS MATERIALIZED (
    -- Flow control, one probe of the primary key of jobs_queuesettings (a queue
    -- without a row has no control): a paused queue is not claimed from; a queue with a
    -- rate limit is claimed from by the gated claim (postgres.py), under a lock on its row;
    -- a queue with a concurrency limit is claimed from here, with a free slot.
    SELECT bool_or(settings.paused_at IS NOT NULL) AS paused,
        bool_or(settings.rate_limit IS NOT NULL) AS gated,
        max(settings.concurrency_limit) AS slots
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
            AND available_at <= p_now AND attempts < max_attempts
        ORDER BY available_at, created_at, id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    ) AS due
    LIMIT 1
), slot AS MATERIALIZED (
    -- A claim from a limited queue holds one of its concurrency_limit slots: a free one at a
    -- position within the limit, skipping slots other claimers hold (so they never wait
    -- on each other). A slot taken meanwhile fails the recheck of job_id IS NULL and is
    -- skipped too. While slots above a lowered limit are still held, none is free.
    SELECT free.id FROM jobs_queueslot AS free
    WHERE (SELECT slots FROM gate) IS NOT NULL AND EXISTS (SELECT 1 FROM candidate)
        AND free.queue = p_queue AND free.job_id IS NULL
        AND free.position <= (SELECT slots FROM gate)
        AND NOT EXISTS (
            SELECT 1 FROM jobs_queueslot AS held
            WHERE held.queue = p_queue AND held.position > (SELECT slots FROM gate)
                AND held.job_id IS NOT NULL)
    ORDER BY free.position
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE jobs_job AS job
    SET status = 'running', attempts = job.attempts + 1, locked_by = p_worker_id,
        locked_until = p_locked_until, last_error = '', result = NULL, updated_at = p_now
    FROM candidate
    -- A job with a concurrency_key, while key limits exist, goes to the gated claim.
    WHERE job.id = candidate.id AND (candidate.concurrency_key IS NULL
            OR NOT (p_keys_limited OR EXISTS (SELECT 1 FROM jobs_concurrencykeylimit)))
        AND ((SELECT slots FROM gate) IS NULL OR EXISTS (SELECT 1 FROM slot))
    RETURNING job.*
), slot_taken AS (
    UPDATE jobs_queueslot AS taken SET job_id = claimed.id
    FROM slot, claimed WHERE taken.id = slot.id
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
-- Also when a candidate was found but not claimed: its key may be limited, or every slot
-- of a limited queue looked held to the snapshot of this statement (the completion above may
-- have just freed one): the gated claim looks again with a fresh one.
WHERE (SELECT coalesce(gated AND NOT paused, false) FROM gate) OR EXISTS (
    SELECT 1 FROM candidate WHERE NOT EXISTS (SELECT 1 FROM claimed));
END
$function$
"""

# The function as migration 0006 made it, to go back to.
CREATE_0006 = """CREATE OR REPLACE FUNCTION jobs_complete_and_claim(p_id uuid, p_attempts integer, p_result_json text, p_completed_message text, p_completed_data text, p_worker_id text, p_queue text, p_locked_until timestamp with time zone, p_claimed_message text, p_claimed_data text, p_now timestamp with time zone)
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

DROP_0006 = "DROP FUNCTION IF EXISTS jobs_complete_and_claim(uuid, integer, text, text, text, text, text, timestamp with time zone, text, text, timestamp with time zone)"
DROP = "DROP FUNCTION IF EXISTS jobs_complete_and_claim(uuid, integer, text, text, text, text, text, timestamp with time zone, text, text, timestamp with time zone, boolean)"


def _on_postgres(*statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0007_worker_presence"),
    ]

    operations = [
        migrations.CreateModel(
            name="ConcurrencyKeyLimit",
            fields=[
                ("pattern", models.CharField(max_length=255, primary_key=True, serialize=False)),
                ("limit", models.IntegerField()),
            ],
        ),
        migrations.CreateModel(
            name="QueueSettings",
            fields=[
                ("name", models.CharField(max_length=64, primary_key=True, serialize=False)),
                ("paused_at", models.DateTimeField(blank=True, null=True)),
                ("concurrency_limit", models.IntegerField(blank=True, null=True)),
                ("rate_limit", models.IntegerField(blank=True, null=True)),
                ("rate_period_seconds", models.IntegerField(blank=True, null=True)),
                ("rate_window", models.JSONField(blank=True, db_default=[], default=list)),
                ("updated_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                "verbose_name": "queue",
            },
        ),
        migrations.CreateModel(
            name="ScheduleState",
            fields=[
                ("name", models.CharField(max_length=255, primary_key=True, serialize=False)),
                ("paused_at", models.DateTimeField(blank=True, null=True)),
                ("last_tick_at", models.DateTimeField()),
                ("last_enqueued_tick_at", models.DateTimeField(blank=True, null=True)),
                ("last_job_id", models.UUIDField(blank=True, null=True)),
                ("updated_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
        ),
        migrations.AddField(
            model_name="job",
            name="unique_key",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="concurrency_key",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("concurrency_key__isnull", False), ("status", "running")),
                fields=["concurrency_key"],
                name="job_running_key_idx",
            ),
        ),
        migrations.AddConstraint(
            model_name="job",
            constraint=models.UniqueConstraint(
                condition=models.Q(
                    ("status__in", ["queued", "running"]), ("unique_key__isnull", False)
                ),
                fields=("unique_key",),
                name="job_unique_key_active",
            ),
        ),
        migrations.AddConstraint(
            model_name="concurrencykeylimit",
            constraint=models.CheckConstraint(
                condition=models.Q(("limit__gte", 1)), name="concurrency_key_limit_valid"
            ),
        ),
        migrations.AddConstraint(
            model_name="queuesettings",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("concurrency_limit__isnull", True),
                    ("concurrency_limit__gte", 1),
                    _connector="OR",
                ),
                name="queue_concurrency_limit_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="queuesettings",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("rate_limit__isnull", True), ("rate_period_seconds__isnull", True)),
                    models.Q(("rate_limit__gte", 1), ("rate_period_seconds__gte", 1)),
                    _connector="OR",
                ),
                name="queue_rate_limit_valid",
            ),
        ),
        migrations.CreateModel(
            name="QueueSlot",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("queue", models.CharField(max_length=64)),
                ("position", models.IntegerField()),
                ("job_id", models.UUIDField(blank=True, null=True)),
            ],
            options={
                "indexes": [
                    models.Index(
                        condition=models.Q(("job_id__isnull", True)),
                        fields=["queue", "position"],
                        name="queue_slot_free_idx",
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("queue", "position"), name="queue_slot_position"
                    ),
                    models.UniqueConstraint(
                        condition=models.Q(("job_id__isnull", False)),
                        fields=("job_id",),
                        name="queue_slot_job",
                    ),
                ],
            },
        ),
        migrations.RunPython(
            _on_postgres(DROP_0006, CREATE), _on_postgres(DROP, CREATE_0006), elidable=False
        ),
    ]
