-- The PostgreSQL driver's statements (jobs/drivers/postgres.py runs them by name).
-- Each one is a single statement: a data-modifying CTE performs the guarded row change and
-- inserts its event, so it costs one round trip and is atomic in autocommit mode.
-- Parameters are :name (pgbench runs this text as is; the driver turns them into %(name)s).
-- Statuses and event types are the values of jobs.models.JobStatus / JobEventType
-- (test_driver_contract checks every literal here against them).

-- name: create_job
-- Insert the job and its created event, unless its idempotency key exists: then write
-- nothing and return the job that holds the key. ON CONFLICT infers the partial unique
-- index job_idempotency_key_unique; rows without a key never conflict.
WITH inserted AS (
    INSERT INTO jobs_job (id, type, payload, status, priority, available_at, attempts,
        max_attempts, idempotency_key, last_error, created_at, updated_at)
    VALUES (:id, :type, :payload::jsonb, 'queued', :priority, :available_at, 0,
        :max_attempts, :idempotency_key, '', :now, :now)
    ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING *
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, message, data, created_at)
    SELECT id, 'created', 0, :message, :data::jsonb, :now FROM inserted
)
SELECT * FROM inserted
UNION ALL
SELECT * FROM jobs_job
WHERE idempotency_key = :idempotency_key AND NOT EXISTS (SELECT 1 FROM inserted);

-- name: claim_job
-- The first eligible queued job in claim order (priority desc, available_at, created_at,
-- id; job_claim_idx is read in that order), skipping rows another claimer holds, so each
-- attempt has exactly one owner; it becomes running under a lease, with a claimed event.
WITH candidate AS (
    SELECT id FROM jobs_job
    WHERE status = 'queued' AND available_at <= :now AND attempts < max_attempts
    ORDER BY priority DESC, available_at, created_at, id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE jobs_job AS job
    SET status = 'running', attempts = job.attempts + 1, locked_by = :worker_id,
        locked_until = :locked_until, last_error = '', result = NULL, updated_at = :now
    FROM candidate
    WHERE job.id = candidate.id
    RETURNING job.*
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at)
    SELECT id, 'claimed', attempts, locked_by, :message, :data::jsonb, :now FROM claimed
)
SELECT * FROM claimed;

-- name: complete_job
-- Ownership guard: only the running attempt with this locked_by and attempts number
-- succeeds; a stale worker's call matches no row and writes nothing.
WITH done AS (
    UPDATE jobs_job
    SET status = 'succeeded', result = :result::jsonb, locked_by = NULL, locked_until = NULL,
        finished_at = :now, updated_at = :now
    WHERE id = :job_id AND status = 'running' AND locked_by = :worker_id
        AND attempts = :attempt
    RETURNING *
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at)
    SELECT id, 'succeeded', attempts, :worker_id, :message, :data::jsonb, :now FROM done
)
SELECT * FROM done;

-- name: fail_job
-- Ownership guard as complete_job. Attempts left: back to queued at :retry_at with a
-- retry_scheduled event; none left: failed for good with a failed event.
WITH failed AS (
    UPDATE jobs_job
    SET status = CASE WHEN attempts < max_attempts THEN 'queued' ELSE 'failed' END,
        available_at = CASE WHEN attempts < max_attempts THEN :retry_at ELSE available_at END,
        finished_at = CASE WHEN attempts < max_attempts THEN NULL ELSE :now END,
        locked_by = NULL, locked_until = NULL, last_error = :error, updated_at = :now
    WHERE id = :job_id AND status = 'running' AND locked_by = :worker_id
        AND attempts = :attempt
    RETURNING *
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at)
    SELECT id,
        CASE WHEN status = 'queued' THEN 'retry_scheduled' ELSE 'failed' END,
        attempts, :worker_id,
        CASE WHEN status = 'queued' THEN :retry_message ELSE :failed_message END,
        CASE WHEN status = 'queued' THEN :retry_data::jsonb ELSE :failed_data::jsonb END,
        :now
    FROM failed
)
SELECT * FROM failed;

-- name: renew_lease
-- Ownership guard as complete_job: a stale worker cannot extend a lease it lost.
WITH renewed AS (
    UPDATE jobs_job SET locked_until = :locked_until, updated_at = :now
    WHERE id = :job_id AND status = 'running' AND locked_by = :worker_id
        AND attempts = :attempt
    RETURNING id, attempts
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at)
    SELECT id, 'lease_renewed', attempts, :worker_id, :message, :data::jsonb, :now
    FROM renewed
)
SELECT id FROM renewed;

-- name: record_progress
-- FOR SHARE makes a concurrent requeue finish first; the guard is then re-checked against
-- the new row version, so a progress event is never written for an attempt already lost.
INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at)
SELECT id, 'progress', attempts, :worker_id, :message, :data::jsonb, :now
FROM (
    SELECT id, attempts FROM jobs_job
    WHERE id = :job_id AND status = 'running' AND locked_by = :worker_id
        AND attempts = :attempt
    FOR SHARE
) AS owned
RETURNING id;

-- name: lock_expired_leases
-- Concurrent cleaners skip each other's rows, so every expired attempt is released once.
SELECT id, attempts, max_attempts, locked_by, locked_until FROM jobs_job
WHERE status = 'running' AND locked_until < :now
ORDER BY locked_until
LIMIT :limit
FOR UPDATE SKIP LOCKED;

-- name: release_expired_leases
-- Applies the releases the service decided for the rows lock_expired_leases locked in this
-- same transaction, and writes one event per row.
WITH release AS (
    SELECT * FROM jsonb_to_recordset(:releases::jsonb) AS r(
        id uuid, status text, available_at timestamptz, finished_at timestamptz,
        error text, event_type text, attempt integer, message text, data jsonb)
), released AS (
    UPDATE jobs_job AS job
    SET status = release.status,
        available_at = COALESCE(release.available_at, job.available_at),
        finished_at = release.finished_at, locked_by = NULL, locked_until = NULL,
        last_error = release.error, updated_at = :now
    FROM release
    WHERE job.id = release.id AND job.status = 'running'
    RETURNING job.id
)
INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at)
SELECT release.id, release.event_type, release.attempt, :worker_id, release.message,
    release.data, :now
FROM release JOIN released ON released.id = release.id;

-- name: retry_job
-- Only a failed job is retried: back to queued now with a fresh attempt budget, lock,
-- error, result and finished_at cleared, and a manual_retry event that keeps what the
-- last attempts were. The first column says the status the job had (no row: no job).
WITH target AS (
    SELECT id, status, attempts, last_error FROM jobs_job WHERE id = :job_id FOR UPDATE
), retried AS (
    UPDATE jobs_job AS job
    SET status = 'queued', attempts = 0, available_at = :now, locked_by = NULL,
        locked_until = NULL, last_error = '', result = NULL, finished_at = NULL,
        updated_at = :now
    FROM target
    WHERE job.id = target.id AND target.status = 'failed'
    RETURNING job.*
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, message, data, created_at)
    SELECT retried.id, 'manual_retry', 0, :message,
        jsonb_build_object('previous_attempts', target.attempts,
            'previous_error', target.last_error),
        :now
    FROM retried JOIN target ON target.id = retried.id
)
SELECT target.status AS previous_status, retried.*
FROM target LEFT JOIN retried ON retried.id = target.id;

-- name: job_by_idempotency_key
SELECT * FROM jobs_job WHERE idempotency_key = :key;
