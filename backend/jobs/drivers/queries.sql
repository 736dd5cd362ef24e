-- The PostgreSQL driver's statements (jobs/drivers/postgres.py runs them by name).
-- Each one is a single statement: a data-modifying CTE performs the guarded row change and
-- inserts its event, so it costs one round trip and is atomic in autocommit mode.
-- Parameters are :name (pgbench runs this text as is; the driver turns them into %(name)s).
-- Statuses and event types are the values of jobs.models.JobStatus / JobEventType
-- (test_driver_contract checks every literal here against them).
-- Every event carries its job's type (job_type). A claimed event carries the attempt's
-- queue wait (wait_ms); the event that ends a running attempt carries its run time
-- (run_ms, from that attempt's claimed event) and a copy of its wait_ms. Milliseconds are
-- floored and never negative, as the ORM driver computes them.
-- A -- fragment: is SQL several statements share, placed with {name} (see sql.py).
-- Plans that hold whatever ANALYZE saw (bench/tests/test_hot_plans.py):
-- a statement that acts on one attempt finds its row by the primary key and nothing else.
-- Its ownership guard tests locked_by and attempts, never status: locked_by is set exactly
-- while a job runs (the job_status_valid_shape constraint), and a status test would offer
-- the planner jobs_job_status_idx or job_timeout_idx, which it takes when its statistics
-- say `running` is rare and which then walk every dead `running` entry. A claim reads
-- job_claim_idx; jobs_job_status_idx holds finished jobs only (migration 0009).

-- fragment: ended_attempt_timing
-- Joins the claimed event of the attempt that the job row `ended` (id, attempts) ends: the
-- attempt's queue wait (claim.wait_ms) and its run time up to :now (claim.run_ms). The
-- newest claimed event of that job and attempt, found via job_event_job_id_idx; without
-- one, both are NULL. The type test is an expression (type appended to an empty string) so that jobs_jobevent_type_idx
-- cannot serve it: statistics taken while a backlog arrived say `claimed` is rare, and
-- that index then walks every claimed event ever written. The order is an expression
-- too: job_event_id_idx could give `id DESC` itself, and statistics that call the table
-- empty make a backward walk of every event ever written look as cheap as the job's few.
LEFT JOIN LATERAL (
    SELECT wait_ms,
        GREATEST(floor(EXTRACT(EPOCH FROM :now - created_at) * 1000), 0)::bigint AS run_ms
    FROM jobs_jobevent AS event
    WHERE event.job_id = ended.id AND event.type || '' = 'claimed'
        AND event.attempt = ended.attempts
    ORDER BY event.id + 0 DESC LIMIT 1
) AS claim ON true

-- fragment: succeeded_timing
-- The queue wait and run time of the attempt the succeeded row `ended` ends, from the row
-- itself: claimed_at (the claim's time, which completion leaves as it is) against the time
-- the job was due and :now, in milliseconds as its claimed event counts them. NULL for an
-- attempt claimed before claimed_at existed.
GREATEST(floor(EXTRACT(EPOCH FROM
    (ended.claimed_at - GREATEST(ended.available_at, ended.created_at))) * 1000), 0)::bigint,
GREATEST(floor(EXTRACT(EPOCH FROM (:now - ended.claimed_at)) * 1000), 0)::bigint

-- fragment: selection
-- The bulk actions' selection (jobs.drivers.base.Selection): each part that is not NULL
-- narrows it; :type_pattern is an ILIKE pattern.
(:status::text IS NULL OR status = :status)
AND (:type_pattern::text IS NULL OR type ILIKE :type_pattern)
AND (:queue::text IS NULL OR queue = :queue) AND (:ids::uuid[] IS NULL OR id = ANY(:ids))

-- fragment: lower_priority_levels
-- The recursive step of a claim's loose index scan over job_claim_idx (see
-- complete_and_claim): the next lower priority of :queue that has queued jobs, one index
-- probe per level.
UNION ALL
SELECT (SELECT job.priority FROM jobs_job AS job
        WHERE job.status = 'queued' AND job.queue = :queue
            AND job.priority < level.priority
        ORDER BY job.priority DESC LIMIT 1)
FROM level WHERE level.priority IS NOT NULL

-- name: create_jobs
-- Insert the jobs of :jobs (a JSON array, in order) and a created event for each, one
-- statement for one job or a thousand. A job whose idempotency key already exists is not
-- written: its existing row comes back instead, flagged created = false. ON CONFLICT
-- infers the partial unique index job_idempotency_key_unique; rows without a key never
-- conflict. One pg_notify per queue that got due jobs wakes idle workers when the
-- transaction commits (a notification is only a hint: workers poll anyway).
WITH new AS (
    SELECT * FROM jsonb_to_recordset(:jobs::jsonb) AS new(
        position integer, id uuid, type text, payload jsonb, priority smallint,
        available_at timestamptz, max_attempts integer, idempotency_key text, queue text,
        timeout_seconds integer, event_data jsonb, metadata jsonb, unique_key text,
        concurrency_key text, workflow_id uuid, ref text)
), inserted AS (
    INSERT INTO jobs_job (id, type, payload, status, priority, available_at, attempts,
        max_attempts, idempotency_key, last_error, created_at, updated_at, queue,
        timeout_seconds, metadata, unique_key, concurrency_key, workflow_id, ref)
    SELECT id, type, payload, 'queued', priority, available_at, 0, max_attempts,
        idempotency_key, '', :now, :now, queue, timeout_seconds, metadata, unique_key,
        concurrency_key, workflow_id, coalesce(ref, '')
    -- Keys in one order: concurrent batches sharing keys wait instead of deadlocking.
    FROM new ORDER BY idempotency_key, unique_key, position
    -- No conflict target: both job_idempotency_key_unique and job_unique_key_active
    -- (queued or running jobs only) are arbiters.
    ON CONFLICT DO NOTHING
    RETURNING *
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, message, data, created_at, job_type)
    SELECT new.id, 'created', 0, :message, new.event_data, :now, new.type
    FROM new JOIN inserted ON inserted.id = new.id
    ORDER BY new.position
), notified AS (
    SELECT pg_notify(:channel, queue)
    FROM (SELECT DISTINCT queue FROM inserted WHERE :notify AND available_at <= :now) AS due
)
SELECT true AS created, inserted.* FROM inserted, (SELECT count(*) FROM notified) AS sent
UNION ALL
SELECT false, job.* FROM new CROSS JOIN LATERAL (
    -- The job of the idempotency key first; else the active job holding the unique key.
    (SELECT * FROM jobs_job AS job WHERE job.idempotency_key = new.idempotency_key)
    UNION ALL
    (SELECT * FROM jobs_job AS job WHERE job.unique_key = new.unique_key
        AND job.status IN ('queued', 'running'))
    LIMIT 1
) AS job
WHERE NOT EXISTS (SELECT 1 FROM inserted WHERE inserted.id = new.id);

-- name: complete_and_claim
-- One statement for a worker thread's two hot writes: complete its attempt (:id, :attempts)
-- and claim the next job of :queue. Either half may be skipped: a NULL :id completes
-- nothing (a plain claim), a NULL :queue claims nothing (a plain complete). The
-- parameters are named like the returned columns, so pgbench's \aset feeds the claimed
-- row straight into the next call, as a worker thread does. Fused, a
-- finished job and the next claim cost one round trip and one commit instead of two.
-- Completing: the ownership guard lets only the running attempt with this locked_by and
-- attempts number succeed; a stale worker's call matches no row and writes nothing.
-- Claiming: the first eligible job of one queue in claim order (priority desc,
-- available_at, created_at, id), skipping rows another claimer holds, so each attempt has
-- exactly one owner; it becomes running under a lease, with a claimed event.
-- The claim is a loose index scan over job_claim_idx: `level` walks the queue's distinct
-- priorities from the top, one index probe each, and for each level one probe finds its
-- first due row (within a level rows are in available_at order, so a level whose first
-- row is not due has no due row). Not-yet-due rows of a higher priority cost a probe per
-- level, not a walk over every one of them. MATERIALIZED keeps the locking subquery from
-- being inlined into the UPDATE and run again.
WITH RECURSIVE completed AS (
    UPDATE jobs_job
    SET status = 'succeeded', result = :result_json::jsonb, locked_by = NULL,
        locked_until = NULL, finished_at = :now, updated_at = :now
    WHERE id = :id AND locked_by = :worker_id AND attempts = :attempts
    RETURNING *
), completed_event AS (
    -- Not in a lean timeline (:lean): the row keeps what the event would say.
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type, wait_ms, run_ms)
    SELECT ended.id, 'succeeded', ended.attempts, :worker_id, :completed_message,
        :completed_data::jsonb, :now, ended.type, {succeeded_timing}
    FROM completed AS ended
    WHERE NOT :lean
), gate AS MATERIALIZED (
    -- Flow control, one probe of the primary key of jobs_queuesettings (a queue without a
    -- row has none): a paused queue is not claimed from; a queue with a rate or a
    -- concurrency limit is claimed from by the gated claim (postgres.py), which counts
    -- under a lock on its row.
    SELECT bool_or(settings.paused_at IS NOT NULL) AS paused,
        bool_or(settings.rate_limit IS NOT NULL OR settings.concurrency_limit IS NOT NULL)
            AS gated
    FROM jobs_queuesettings AS settings WHERE settings.name = :queue
), level AS (
    (SELECT priority FROM jobs_job
        WHERE status = 'queued' AND queue = :queue
            AND NOT (SELECT coalesce(paused OR gated, false) FROM gate)
        ORDER BY priority DESC LIMIT 1)
    {lower_priority_levels}
), candidate AS MATERIALIZED (
    SELECT due.id, due.concurrency_key FROM level CROSS JOIN LATERAL (
        SELECT id, concurrency_key FROM jobs_job
        WHERE status = 'queued' AND queue = :queue AND priority = level.priority
            AND available_at AT TIME ZONE 'UTC' <= :now::timestamptz AT TIME ZONE 'UTC'
            AND attempts < max_attempts
        ORDER BY available_at AT TIME ZONE 'UTC', created_at, id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    ) AS due
    LIMIT 1
), claimed AS (
    UPDATE jobs_job AS job
    SET status = 'running', attempts = job.attempts + 1, locked_by = :worker_id,
        locked_until = :locked_until, last_error = '', result = NULL, updated_at = :now,
        claimed_at = :now, claimed_by = :worker_id
    FROM candidate
    -- A job with a concurrency_key, while key limits exist, goes to the gated claim. The
    -- array hands the primary key the row to probe: joined to the candidate alone, over
    -- statistics that call the table empty, the plan read the whole primary key.
    WHERE job.id = ANY(ARRAY(SELECT id FROM candidate)) AND job.id = candidate.id
        AND (candidate.concurrency_key IS NULL
            OR NOT (:keys_limited OR EXISTS (SELECT 1 FROM jobs_concurrencykeylimit)))
    RETURNING job.*
), claimed_event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type, wait_ms)
    SELECT id, 'claimed', attempts, locked_by, :claimed_message, :claimed_data::jsonb, :now,
        type, GREATEST(floor(EXTRACT(EPOCH FROM
            :now - GREATEST(available_at, created_at)) * 1000), 0)::bigint
    FROM claimed
    WHERE NOT :lean
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

-- fragment: batch_completion
-- The batched fragments read their arrays' sizes and the claim's bound through sub-selects,
-- which no plan folds: a custom plan (the first five calls of a prepared statement) then
-- estimates them as the generic plan does, and PostgreSQL settles on the generic plan
-- instead of planning the statement again on every call (about 1 ms here, more than
-- running it; test_prepared_hot_statement_settles_on_its_generic_plan).
done AS (
    SELECT * FROM unnest((SELECT :done_ids::uuid[]), (SELECT :done_worker_ids::text[]),
        (SELECT :done_attempts::integer[]), (SELECT :done_results::text[]))
        AS done(id, worker_id, attempt, result)
    -- :asynchronous_commit (opt-in; never in a transaction that enqueues): the
    -- transaction of this statement commits without waiting for its WAL to reach disk.
    -- Set here, once (an InitPlan), rather than by a SET LOCAL sent before it: one
    -- statement instead of a pipeline of four.
    WHERE (SELECT CASE WHEN :asynchronous_commit::boolean
        THEN set_config('synchronous_commit', 'off', true) = 'off' ELSE true END)
), completed AS (
    UPDATE jobs_job AS job
    SET status = 'succeeded', result = done.result::jsonb, locked_by = NULL,
        locked_until = NULL, finished_at = :now, updated_at = :now
    FROM done
    WHERE job.id = ANY(ARRAY(SELECT id FROM done)) AND job.id = done.id
        AND job.locked_by = done.worker_id AND job.attempts = done.attempt
    RETURNING job.*
), completed_event AS (
    -- Not in a lean timeline (:lean): the row keeps what the event would say.
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type, wait_ms, run_ms)
    SELECT ended.id, 'succeeded', ended.attempts, done.worker_id, :completed_message,
        :completed_data::jsonb, :now, ended.type, {succeeded_timing}
    FROM completed AS ended JOIN done ON done.id = ended.id
    WHERE NOT :lean
    ORDER BY ended.id
)

-- fragment: batch_gate
-- A batch's room, within the queue's flow control. A queue without a control (no settings
-- row, or one with no pause and no limit, in this statement's snapshot) takes one job per
-- worker id. A controlled one is claimed from under its settings row's lock, which every
-- claim there takes (`locked`, FOR UPDATE) and, when it claimed, updates (`gate_bumped`):
-- nothing from a paused queue; with a concurrency limit, no more than the limit less the
-- queue's running jobs, counted here (a lowered limit that running jobs exceed admits
-- none); with a rate limit, no more than its window admits at the database's clock (one
-- clock whichever host claims). The counts are exact when the row this statement locked
-- is the version its snapshot holds: no claim committed in between, and none can commit
-- before this one. When another claim committed in between (the lock waited for it, or it
-- slipped in before), the versions differ: nothing is claimed and the answer says stale,
-- and the caller claims again with a fresh snapshot. The rate window is counts of claims
-- per 1/:rate_buckets of the period by age (age 0: the bucket of now), as
-- jobs.flowcontrol.rate_room reads it: the stored counts shifted by the buckets elapsed
-- since, negative counts read as none.
gate AS MATERIALIZED (
    SELECT settings.paused_at IS NOT NULL AS paused, settings.concurrency_limit,
        settings.rate_limit, settings.rate_window, settings.xmin::text AS version,
        floor(extract(epoch FROM clock_timestamp()) * :rate_buckets
            / settings.rate_period_seconds)::bigint AS bucket
    FROM jobs_queuesettings AS settings
    WHERE settings.name = :queue AND (settings.paused_at IS NOT NULL
        OR settings.concurrency_limit IS NOT NULL OR settings.rate_limit IS NOT NULL)
), locked AS MATERIALIZED (
    SELECT settings.xmin::text AS version FROM jobs_queuesettings AS settings
    WHERE settings.name = :queue AND EXISTS (SELECT 1 FROM gate)
    FOR UPDATE
), rate_counts AS MATERIALIZED (
    SELECT stored.age, greatest(coalesce(CASE WHEN stored.age >= stored.shift
            THEN (gate.rate_window -> 'counts' ->> (stored.age - stored.shift)::integer)::integer
            END, 0), 0) AS claims
    FROM gate CROSS JOIN LATERAL (
        SELECT age, greatest(gate.bucket - (gate.rate_window ->> 'bucket')::bigint, 0) AS shift
        FROM generate_series(0, :rate_buckets) AS age
    ) AS stored
    WHERE gate.rate_limit IS NOT NULL
), room AS MATERIALIZED (
    SELECT CASE
        WHEN gate.version IS NULL THEN cardinality(:worker_ids::text[])
        WHEN gate.paused OR gate.version <> (SELECT version FROM locked) THEN 0
        ELSE greatest(least(
            cardinality(:worker_ids::text[]),
            coalesce(gate.concurrency_limit - greatest((
                -- Counted up to the limit, in the order of job_running_queue_idx: a plan for
                -- statistics that call every job running still reads that index.
                SELECT count(*) FROM (
                    SELECT 1 FROM jobs_job WHERE status = 'running' AND queue = :queue
                    ORDER BY updated_at
                    LIMIT gate.concurrency_limit + cardinality(:done_ids::uuid[])) AS running
                ) - (
                    -- The successes this statement writes free their slots, which its
                    -- snapshot still counts: those their owners still hold, as completed
                    -- guards them.
                    SELECT count(*) FROM jobs_job AS job
                    JOIN unnest((SELECT :done_ids::uuid[]), (SELECT :done_worker_ids::text[]),
                        (SELECT :done_attempts::integer[])) AS done(id, worker_id, attempt)
                        ON job.id = done.id
                    WHERE job.id = ANY(ARRAY(SELECT unnest((SELECT :done_ids::uuid[]))))
                        AND job.status = 'running' AND job.queue = :queue
                        AND job.locked_by = done.worker_id AND job.attempts = done.attempt),
                0), cardinality(:worker_ids::text[])),
            coalesce(gate.rate_limit - (SELECT sum(claims) FROM rate_counts),
                cardinality(:worker_ids::text[]))), 0) END AS n,
        NOT gate.paused AND gate.version <> (SELECT version FROM locked) AS stale
    FROM (SELECT 1) AS one LEFT JOIN gate ON true
)

-- fragment: gate_bumped
-- A controlled queue's row once claims were made there (`new_claims`): a new version,
-- which tells a claim whose snapshot is older that it may have missed these, and the rate
-- window with the claims in the bucket of now.
bumped AS (
    UPDATE jobs_queuesettings AS settings
    SET rate_window = CASE WHEN gate.rate_limit IS NULL THEN settings.rate_window
        ELSE jsonb_build_object('bucket', gate.bucket, 'counts', (
            SELECT jsonb_agg(claims
                + CASE WHEN age = 0 THEN (SELECT n FROM new_claims) ELSE 0 END ORDER BY age)
            FROM rate_counts)) END
    FROM gate
    WHERE settings.name = :queue AND (SELECT n FROM new_claims) > 0
)

-- fragment: batch_answers
-- Besides its rows, a batch answers `stale` (its claim must be made again: see batch_gate)
-- and `keyed` (candidates were left for their concurrency_key while key limits exist: the
-- caller claims those one by one, each under its key's lock); their columns are NULL.
SELECT 'stale', job.* FROM (SELECT 1) AS one LEFT JOIN jobs_job AS job ON false
WHERE (SELECT stale FROM room)
UNION ALL
SELECT 'keyed', job.* FROM (SELECT 1) AS one LEFT JOIN jobs_job AS job ON false
WHERE EXISTS (
    SELECT 1 FROM candidate
    WHERE NOT EXISTS (SELECT 1 FROM numbered WHERE numbered.id = candidate.id))

-- fragment: batch_claim
-- Claims up to the n of the `room` its statement defines before it.
keyed AS MATERIALIZED (
    SELECT :keys_limited OR EXISTS (SELECT 1 FROM jobs_concurrencykeylimit) AS limited
), level AS (
    (SELECT priority FROM jobs_job
        WHERE status = 'queued' AND queue = :queue AND (SELECT n FROM room) > 0
        ORDER BY priority DESC LIMIT 1)
    {lower_priority_levels}
), candidate AS MATERIALIZED (
    SELECT due.id, due.concurrency_key FROM level CROSS JOIN LATERAL (
        SELECT id, concurrency_key, available_at, created_at FROM jobs_job
        WHERE status = 'queued' AND queue = :queue AND priority = level.priority
            AND available_at AT TIME ZONE 'UTC' <= (SELECT :now::timestamptz) AT TIME ZONE 'UTC'
            AND attempts < max_attempts
        ORDER BY available_at AT TIME ZONE 'UTC', created_at, id
        LIMIT (SELECT n FROM room)
        FOR UPDATE SKIP LOCKED
    ) AS due
    LIMIT (SELECT n FROM room)
), numbered AS MATERIALIZED (
    -- A job with a concurrency_key, while key limits exist, is left to the gated claim.
    SELECT id, row_number() OVER () AS n FROM candidate
    WHERE candidate.concurrency_key IS NULL OR NOT (SELECT limited FROM keyed)
), claimed AS (
    UPDATE jobs_job AS job
    SET status = 'running', attempts = job.attempts + 1,
        locked_by = (:worker_ids::text[])[numbered.n], locked_until = :locked_until,
        last_error = '', result = NULL, updated_at = :now, claimed_at = :now,
        claimed_by = (:worker_ids::text[])[numbered.n]
    FROM numbered
    -- The array hands the primary key the rows to probe (a join would guess the size of
    -- the batch and may scan the table).
    WHERE job.id = ANY(ARRAY(SELECT id FROM numbered)) AND job.id = numbered.id
    RETURNING job.*
), claimed_event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type, wait_ms)
    SELECT id, 'claimed', attempts, locked_by, :claimed_message, :claimed_data::jsonb, :now,
        type, GREATEST(floor(EXTRACT(EPOCH FROM
            :now - GREATEST(available_at, created_at)) * 1000), 0)::bigint
    FROM claimed
    WHERE NOT :lean
    ORDER BY locked_by
)

-- name: complete_jobs
-- Batched completion: every attempt of the arrays (:done_ids, :done_worker_ids,
-- :done_attempts, with each result as JSON text in :done_results) that its owner still
-- holds becomes succeeded, with its succeeded event, in one statement. Each row has its
-- own ownership guard, as complete_and_claim's completion: a stale attempt in the batch
-- matches no row and writes nothing, and the others still complete. The id array hands
-- the primary key the rows to probe (a join would guess the arrays' size).
WITH {batch_completion}
SELECT * FROM completed;

-- name: claim_jobs
-- Batched fetch: claim up to one job per worker id of :worker_ids (the process's idle
-- threads, never more) from :queue, in claim order, in one statement; the n-th job
-- claimed goes to the n-th worker id, with its own claimed event, as claim_job would
-- write it, within the queue's flow control (batch_gate). The candidates are a loose
-- index scan over job_claim_idx as in complete_and_claim, taking up to the batch from each
-- priority level in turn.
WITH RECURSIVE {batch_gate}, {batch_claim},
new_claims AS (SELECT count(*) AS n FROM claimed), {gate_bumped}
SELECT 'claimed' AS part, * FROM claimed
UNION ALL
{batch_answers};

-- name: complete_and_claim_jobs
-- complete_jobs and claim_jobs in one statement: a fetch writes the process's waiting
-- successes and claims its idle threads' next jobs in one round trip and one commit, as
-- complete_and_claim does for one job. The halves touch different rows (the process's
-- running attempts; queued jobs) and keep their own guards; the completions are written
-- whatever the claim answers.
WITH RECURSIVE {batch_gate}, {batch_claim}, {batch_completion},
new_claims AS (SELECT count(*) AS n FROM claimed), {gate_bumped}
SELECT 'completed' AS part, * FROM completed
UNION ALL
SELECT 'claimed', * FROM claimed
UNION ALL
{batch_answers};

-- name: controlled_room
-- The room of the gated claim of keyed jobs (after gate_lock, in its transaction): how
-- many of :worker_ids the queue's controls admit now.
WITH {batch_gate}
SELECT n FROM room;

-- name: count_controlled_claims
-- The gated claim's keyed claims (:claims of them), made visible to other claims and
-- counted in the rate window, as a batch's own claims are (gate_bumped).
WITH {batch_gate}, new_claims AS (SELECT :claims::integer AS n), {gate_bumped}
SELECT 1;

-- name: release_jobs
-- Graceful shutdown: each attempt of the arrays (:ids, :worker_ids, :attempts)
-- that its owner still holds and whose handler never started goes back to queued at once,
-- its attempt not spent (attempts - 1) and due as it was, with a released event; the
-- others change nothing. One whose cancel was requested meanwhile is cancelled instead
-- (a cancelled event, as when a running attempt stops for its cancel). A snooze is the same
-- transition for a started attempt: :event_type 'snoozed' and :available_at its new due
-- time (NULL for a release: due as it was).
WITH owned AS (
    SELECT * FROM unnest(:ids::uuid[], :worker_ids::text[], :attempts::integer[])
        AS owned(id, worker_id, attempt)
), released AS (
    UPDATE jobs_job AS job
    SET status = CASE WHEN job.cancel_requested_at IS NULL THEN 'queued' ELSE 'cancelled' END,
        attempts = CASE WHEN job.cancel_requested_at IS NULL
            THEN job.attempts - 1 ELSE job.attempts END,
        available_at = CASE WHEN job.cancel_requested_at IS NULL
            THEN coalesce(:available_at::timestamptz, job.available_at) ELSE job.available_at END,
        finished_at = CASE WHEN job.cancel_requested_at IS NULL THEN NULL ELSE :now END,
        last_error = CASE WHEN job.cancel_requested_at IS NULL
            THEN job.last_error ELSE :cancelled_error END,
        locked_by = NULL, locked_until = NULL, updated_at = :now
    FROM owned
    WHERE job.id = ANY(:ids::uuid[]) AND job.id = owned.id
        AND job.locked_by = owned.worker_id AND job.attempts = owned.attempt
    RETURNING job.*, owned.worker_id AS owner_id, owned.attempt AS owner_attempt
), released_event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type)
    SELECT released.id,
        CASE released.status WHEN 'queued' THEN :event_type::text ELSE 'cancelled' END,
        released.owner_attempt, released.owner_id,
        CASE released.status WHEN 'queued' THEN :message ELSE :cancelled_message END,
        CASE released.status WHEN 'queued' THEN :data::jsonb ELSE :cancelled_data::jsonb END,
        :now, released.type
    FROM released ORDER BY released.id
)
SELECT id, type, payload, status, priority, available_at, attempts, max_attempts,
    idempotency_key, locked_by, locked_until, last_error, result, created_at, updated_at,
    finished_at, queue, timeout_seconds, cancel_requested_at, metadata, unique_key,
    concurrency_key, claimed_at, claimed_by, workflow_id, ref
FROM released;

-- name: complete_and_claim_call
-- complete_and_claim through the PL/pgSQL function of migration 0005, whose body is that
-- statement: for connections that cannot prepare it (JOB_DB_PREPARED_STATEMENTS off, as
-- behind PgBouncer in transaction mode), PL/pgSQL plans it once per server session.
SELECT * FROM jobs_complete_and_claim(:id::uuid, :attempts::integer, :result_json::text,
    :completed_message::text, :completed_data::text, :worker_id::text, :queue::text,
    :locked_until::timestamptz, :claimed_message::text, :claimed_data::text,
    :now::timestamptz, :keys_limited::boolean, :lean::boolean);

-- name: wake
-- Wakes idle workers of :queue on commit, as create_jobs' notification does (a queue
-- resumed or given room by a new limit).
SELECT pg_notify(:channel, :queue);

-- name: active_queues
-- The queues that have queued jobs: a loose index scan over job_claim_idx's first column,
-- one probe per queue however many jobs each holds.
WITH RECURSIVE active AS (
    (SELECT queue FROM jobs_job WHERE status = 'queued' ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT job.queue FROM jobs_job AS job
            WHERE job.status = 'queued' AND job.queue > active.queue
            ORDER BY job.queue LIMIT 1)
    FROM active WHERE active.queue IS NOT NULL
)
SELECT queue FROM active WHERE queue IS NOT NULL;

-- name: status_estimate
-- The planner's statistics of jobs_job: its row count (-1 before the first ANALYZE) and
-- the share of each common status value; autovacuum keeps them current in production.
SELECT c.reltuples::bigint, s.most_common_vals::text::text[], s.most_common_freqs
FROM pg_class AS c
LEFT JOIN pg_stats AS s
    ON s.schemaname = current_schema() AND s.tablename = c.relname AND s.attname = 'status'
WHERE c.oid = 'jobs_job'::regclass;

-- fragment: own_autovacuum_settings
-- The autovacuum storage parameters of the table `class` (its reloptions) that the
-- maintenance statements read, NULL where the table has none of its own.
CROSS JOIN LATERAL (
    SELECT max(split_part(option, '=', 2)) FILTER (
            WHERE split_part(option, '=', 1) = 'autovacuum_enabled') AS enabled,
        max(split_part(option, '=', 2)) FILTER (
            WHERE split_part(option, '=', 1) = 'autovacuum_vacuum_threshold') AS threshold,
        max(split_part(option, '=', 2)) FILTER (
            WHERE split_part(option, '=', 1) = 'autovacuum_vacuum_scale_factor') AS scale_factor
    FROM unnest(class.reloptions) AS option
) AS own

-- name: vacuum_due
-- jobs_job's dead row versions as the cumulative statistics last saw them, and the count
-- past which autovacuum would vacuum it by its own rule (threshold + scale factor x rows,
-- the table's storage parameters first, then the server's); NULL when the table's
-- autovacuum_enabled is false (whoever set that vacuums it).
SELECT stat.n_dead_tup,
    CASE WHEN NOT coalesce(own.enabled::boolean, true) THEN NULL
    ELSE coalesce(own.threshold::float8, current_setting('autovacuum_vacuum_threshold')::float8)
        + coalesce(own.scale_factor::float8,
            current_setting('autovacuum_vacuum_scale_factor')::float8)
        * greatest(class.reltuples, 0) END
FROM pg_class AS class
JOIN pg_stat_user_tables AS stat ON stat.relid = class.oid
{own_autovacuum_settings}
WHERE class.oid = 'jobs_job'::regclass;

-- name: vacuum_jobs
-- SKIP_LOCKED: autovacuum or another worker's vacuum already on it, this one does nothing.
-- TRUNCATE false: giving empty tail pages back takes an exclusive lock that stalls every
-- claim (decay bench, six rounds: worst 0.64 of the first with it, 0.87 without); inserts
-- reuse those pages anyway.
VACUUM (SKIP_LOCKED, TRUNCATE false) jobs_job;

-- name: analyze_due
-- jobs_job's live rows, the rows the planner believes it holds (reltuples, from the last
-- VACUUM or ANALYZE; -1 before any), and whether that belief is stale: more than :min_rows
-- live rows beyond twice it. A vacuum of a drained table leaves reltuples at 0 with its
-- pages kept (vacuum_jobs: TRUNCATE false), and the planner scales 0 rows per page to any
-- size: a backlog arriving then looks like one row to every plan made before the next
-- ANALYZE. The live rows are the cumulative statistics' count, which reaches this backend
-- up to a second after the inserting one commits; while the planner believes in no more
-- than :min_rows, the queued rows are also counted directly, up to the count that makes
-- the belief stale (one bounded read of job_claim_idx), so a backlog arriving in that
-- state is seen at once. The same holds for the queued rows alone: a backlog arriving in
-- a table the planner knows to hold many other rows (jobs waiting on unfinished parents, a
-- history) leaves the row count within bounds while every plan still believes in (almost)
-- no queued row (a 1 x 4 drain beside 100,000 waiting jobs ran at half the rate). While
-- the planner believes in no more than :min_rows queued rows (its row count times its
-- share of 'queued' from the status column's statistics), they are counted directly, up
-- to the count that makes that belief stale. NULL (never due) when the table's
-- autovacuum_enabled is false (whoever set that analyzes it).
SELECT live.n_rows, estimate.n_rows,
    CASE WHEN coalesce(own.enabled::boolean, true)
    THEN live.n_rows > 2 * estimate.n_rows + :min_rows
        OR queued.n_rows > 2 * estimate.queued + :min_rows END
FROM pg_class AS class
JOIN pg_stat_user_tables AS stat ON stat.relid = class.oid
{own_autovacuum_settings}
CROSS JOIN LATERAL (
    SELECT greatest(class.reltuples, 0)::bigint AS n_rows,
        (greatest(class.reltuples, 0) * coalesce((
            -- As the planner estimates queued rows: the share of that common value, else the share
            -- the common values leave, spread over the other distinct values.
            SELECT coalesce(
                s.most_common_freqs[array_position(s.most_common_vals::text::text[],
                    'queued')],
                greatest(1 - s.null_frac - coalesce((
                    SELECT sum(freq) FROM unnest(s.most_common_freqs) AS freq), 0), 0)
                / greatest(CASE WHEN s.n_distinct < 0
                    THEN -s.n_distinct * greatest(class.reltuples, 0) ELSE s.n_distinct END
                    - coalesce(cardinality(s.most_common_freqs), 0), 1))
            FROM pg_stats AS s
            WHERE s.schemaname = current_schema() AND s.tablename = class.relname
                AND s.attname = 'status'
        ), 0))::bigint AS queued
) AS estimate
CROSS JOIN LATERAL (
    SELECT greatest(stat.n_live_tup, CASE WHEN estimate.n_rows <= :min_rows THEN (
        SELECT count(*) FROM (
            SELECT 1 FROM jobs_job WHERE status = 'queued'
            ORDER BY queue, priority DESC, available_at AT TIME ZONE 'UTC', created_at, id
            LIMIT 2 * estimate.n_rows + :min_rows + 1
        ) AS queued) END) AS n_rows
) AS live
CROSS JOIN LATERAL (
    SELECT CASE WHEN estimate.queued <= :min_rows THEN (
        SELECT count(*) FROM (
            SELECT 1 FROM jobs_job WHERE status = 'queued'
            ORDER BY queue, priority DESC, available_at AT TIME ZONE 'UTC', created_at, id
            LIMIT 2 * estimate.queued + :min_rows + 1
        ) AS counted) ELSE 0 END AS n_rows
) AS queued
WHERE class.oid = 'jobs_job'::regclass;

-- name: analyze_jobs
-- SKIP_LOCKED: autovacuum or another worker already on it, this one does nothing.
ANALYZE (SKIP_LOCKED) jobs_job;

-- name: type_samples
-- Per type of :types: its newest :size ended attempts that ran, in [:start, :end], through
-- job_event_type_run_idx (one bounded index-only probe per type, however many events the
-- range holds); nearest-rank percentiles (percentile_disc) of their run_ms and wait_ms;
-- and the newest failure of the type in the range, through job_event_type_failure_idx.
SELECT t.job_type, recent.attempts, recent.run_p50, recent.run_p95, recent.wait_p50,
    recent.wait_p95, failure.message, failure.created_at, failure.job_id
FROM unnest(:types::text[]) WITH ORDINALITY AS t(job_type, position)
CROSS JOIN LATERAL (
    SELECT count(*) AS attempts,
        percentile_disc(0.5) WITHIN GROUP (ORDER BY run_ms) AS run_p50,
        percentile_disc(0.95) WITHIN GROUP (ORDER BY run_ms) AS run_p95,
        percentile_disc(0.5) WITHIN GROUP (ORDER BY wait_ms) AS wait_p50,
        percentile_disc(0.95) WITHIN GROUP (ORDER BY wait_ms) AS wait_p95
    FROM (
        SELECT run_ms, wait_ms FROM jobs_jobevent AS event
        WHERE event.job_type = t.job_type AND event.run_ms IS NOT NULL
            AND event.created_at >= :start AND event.created_at <= :end
        ORDER BY event.created_at DESC
        LIMIT :size
    ) AS sample
) AS recent
LEFT JOIN LATERAL (
    SELECT message, created_at, job_id FROM jobs_jobevent AS event
    WHERE event.job_type = t.job_type
        AND event.type IN ('retry_scheduled', 'failed', 'timeout_requeued')
        AND event.created_at >= :start AND event.created_at <= :end
    ORDER BY event.created_at DESC
    LIMIT 1
) AS failure ON true
ORDER BY t.position;

-- name: fail_job
-- Ownership guard as complete_and_claim's completion. A cancel was requested: cancelled, with a cancelled
-- event. Else attempts left and a :retry_at (NULL: the retry policy gave up): back to
-- queued at :retry_at with a retry_scheduled event; else failed for good with a failed event.
WITH failed AS (
    UPDATE jobs_job
    SET status = CASE WHEN cancel_requested_at IS NOT NULL THEN 'cancelled'
            WHEN attempts < max_attempts AND :retry_at::timestamptz IS NOT NULL THEN 'queued'
            ELSE 'failed' END,
        available_at = CASE WHEN cancel_requested_at IS NULL AND attempts < max_attempts
            AND :retry_at::timestamptz IS NOT NULL THEN :retry_at ELSE available_at END,
        finished_at = CASE WHEN cancel_requested_at IS NULL AND attempts < max_attempts
            AND :retry_at::timestamptz IS NOT NULL THEN NULL ELSE :now END,
        locked_by = NULL, locked_until = NULL, last_error = :error, updated_at = :now
    WHERE id = :job_id AND locked_by = :worker_id AND attempts = :attempt
    RETURNING *
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type, wait_ms, run_ms)
    SELECT ended.id,
        CASE status WHEN 'queued' THEN 'retry_scheduled' WHEN 'cancelled' THEN 'cancelled'
            ELSE 'failed' END,
        ended.attempts, :worker_id,
        CASE status WHEN 'queued' THEN :retry_message WHEN 'cancelled' THEN :cancelled_message
            ELSE :failed_message END,
        CASE status WHEN 'queued' THEN :retry_data::jsonb
            WHEN 'cancelled' THEN :cancelled_data::jsonb ELSE :failed_data::jsonb END,
        :now, ended.type, claim.wait_ms, claim.run_ms
    FROM failed AS ended
    {ended_attempt_timing}
)
SELECT * FROM failed;

-- name: fail_jobs
-- fail_job for many attempts in one statement: each attempt of the arrays (:ids,
-- :worker_ids, :attempts, with its error, retry time and each outcome's event data) that
-- its owner still holds ends as fail_job ends one, with the error as its event's message;
-- the others change nothing. In id order, as every bulk write.
WITH failure AS (
    SELECT * FROM unnest((SELECT :ids::uuid[]), (SELECT :worker_ids::text[]),
        (SELECT :attempts::integer[]), (SELECT :errors::text[]),
        (SELECT :retry_ats::timestamptz[]), (SELECT :retry_data::text[]),
        (SELECT :failed_data::text[]), (SELECT :cancelled_data::text[]))
        AS failure(id, worker_id, attempt, error, retry_at, retry_data, failed_data,
            cancelled_data)
), failed AS (
    UPDATE jobs_job AS job
    SET status = CASE WHEN job.cancel_requested_at IS NOT NULL THEN 'cancelled'
            WHEN job.attempts < job.max_attempts AND failure.retry_at IS NOT NULL THEN 'queued'
            ELSE 'failed' END,
        available_at = CASE WHEN job.cancel_requested_at IS NULL
            AND job.attempts < job.max_attempts AND failure.retry_at IS NOT NULL
            THEN failure.retry_at ELSE job.available_at END,
        finished_at = CASE WHEN job.cancel_requested_at IS NULL
            AND job.attempts < job.max_attempts AND failure.retry_at IS NOT NULL
            THEN NULL ELSE :now END,
        locked_by = NULL, locked_until = NULL, last_error = failure.error, updated_at = :now
    FROM failure
    -- The array hands the primary key the rows to probe (as in complete_jobs).
    WHERE job.id = ANY(ARRAY(SELECT id FROM failure)) AND job.id = failure.id
        AND job.locked_by = failure.worker_id AND job.attempts = failure.attempt
    RETURNING job.*, failure.worker_id AS owner_id, failure.error AS error_message,
        failure.retry_data, failure.failed_data, failure.cancelled_data
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type, wait_ms, run_ms)
    SELECT ended.id,
        CASE ended.status WHEN 'queued' THEN 'retry_scheduled'
            WHEN 'cancelled' THEN 'cancelled' ELSE 'failed' END,
        ended.attempts, ended.owner_id, ended.error_message,
        CASE ended.status WHEN 'queued' THEN ended.retry_data::jsonb
            WHEN 'cancelled' THEN ended.cancelled_data::jsonb ELSE ended.failed_data::jsonb END,
        :now, ended.type, claim.wait_ms, claim.run_ms
    FROM failed AS ended
    {ended_attempt_timing}
    ORDER BY ended.id
)
SELECT id, type, payload, status, priority, available_at, attempts, max_attempts,
    idempotency_key, locked_by, locked_until, last_error, result, created_at, updated_at,
    finished_at, queue, timeout_seconds, cancel_requested_at, metadata, unique_key,
    concurrency_key, claimed_at, claimed_by, workflow_id, ref
FROM failed;

-- name: renew_lease
-- Ownership guard as complete_and_claim's completion: a stale worker cannot extend a lease it lost.
WITH renewed AS (
    UPDATE jobs_job SET locked_until = :locked_until, updated_at = :now
    WHERE id = :job_id AND locked_by = :worker_id AND attempts = :attempt
    RETURNING id, attempts, type
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type)
    SELECT id, 'lease_renewed', attempts, :worker_id, :message, :data::jsonb, :now, type
    FROM renewed
)
SELECT id FROM renewed;

-- name: heartbeat
-- One statement renews every lease a worker process still holds (the ownership guard per
-- attempt); no event, so the timeline stays readable. Attempts whose handler opted out of
-- the heartbeat (renew = false) are only looked at, under the same guard: their leases
-- stay where they are. The returned rows tell the process which attempts it still owns
-- and which were asked to cancel.
WITH owned AS (
    SELECT * FROM unnest(:job_ids::uuid[], :worker_ids::text[], :attempts::integer[],
        :renew::boolean[]) AS owned(id, worker_id, attempt, renew)
), renewed AS (
    UPDATE jobs_job AS job SET locked_until = :locked_until, updated_at = :now
    FROM owned
    -- The array hands the primary key the rows to probe (as in complete_jobs).
    WHERE job.id = ANY(:job_ids::uuid[]) AND owned.renew AND job.id = owned.id
        AND job.locked_by = owned.worker_id AND job.attempts = owned.attempt
    RETURNING job.id, job.cancel_requested_at IS NOT NULL AS cancel_requested
)
SELECT id, cancel_requested FROM renewed
UNION ALL
SELECT job.id, job.cancel_requested_at IS NOT NULL
FROM jobs_job AS job JOIN owned ON job.id = owned.id
WHERE job.id = ANY(:job_ids::uuid[]) AND NOT owned.renew AND job.locked_by = owned.worker_id
    AND job.attempts = owned.attempt;

-- name: record_progress
-- FOR SHARE makes a concurrent requeue finish first; the guard is then re-checked against
-- the new row version, so a progress event is never written for an attempt already lost.
INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
    job_type)
SELECT id, 'progress', attempts, :worker_id, :message, :data::jsonb, :now, type
FROM (
    SELECT id, attempts, type FROM jobs_job
    WHERE id = :job_id AND locked_by = :worker_id AND attempts = :attempt
    FOR SHARE
) AS owned
RETURNING id;

-- name: lock_expired_leases
-- Concurrent cleaners skip each other's rows, so every expired attempt is released once.
SELECT id, attempts, max_attempts, locked_by, locked_until, cancel_requested_at FROM jobs_job
WHERE status = 'running' AND locked_until < :now
ORDER BY locked_until
LIMIT :limit
FOR UPDATE SKIP LOCKED;

-- name: release_expired_leases
-- Applies the releases the service decided for the rows lock_expired_leases locked in this
-- same transaction, and writes one event per row (in job id order, as every bulk write).
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
    -- Still running (locked_by is set exactly while a job runs). The array hands the
    -- primary key the ids to probe: a join would take the 100 rows jsonb_to_recordset is
    -- assumed to return and scan the table.
    WHERE job.id = ANY(ARRAY(SELECT id FROM release)) AND job.id = release.id
        AND job.locked_by IS NOT NULL
    RETURNING job.id, job.type, job.attempts
)
INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
    job_type, wait_ms, run_ms)
SELECT release.id, release.event_type, release.attempt, :worker_id, release.message,
    release.data, :now, ended.type, claim.wait_ms, claim.run_ms
-- The row is locked since lock_expired_leases read it, so ended.attempts = release.attempt.
FROM release JOIN released AS ended ON ended.id = release.id
{ended_attempt_timing}
ORDER BY release.id;

-- name: retry_jobs
-- Every selected failed or cancelled job goes back to queued now with a fresh attempt
-- budget (lock, error, result, finished_at and cancel request cleared) and a manual_retry
-- event keeping what it was. FOR UPDATE (in id order, so two bulk calls cannot deadlock)
-- waits for a concurrent change and re-checks the status, so each job changes once. A job
-- whose unique_key another job holds is left alone, as job_unique_key_active would refuse
-- it: one an active job holds, and all but the newest selected job of a key. The first
-- row counts what was retried and held back; each next one is a job held back (at most
-- :held_max of them), with its key and the job that holds it, or a retried job that other
-- jobs depend on (part 'parent': the service brings back the dependents cancelled for it).
WITH target AS (
    SELECT id, status, attempts, last_error, type, unique_key, created_at FROM jobs_job
    WHERE status IN ('failed', 'cancelled')
        AND {selection}
    ORDER BY id
    FOR UPDATE
), holder AS (
    -- Per unique key among the targets: the job that keeps it, an active one first.
    SELECT DISTINCT ON (target.unique_key) target.unique_key,
        coalesce(active.id, target.id) AS id, active.id IS NOT NULL AS active
    FROM target
    LEFT JOIN LATERAL (
        SELECT job.id FROM jobs_job AS job
        WHERE job.unique_key = target.unique_key AND job.status IN ('queued', 'running')
        LIMIT 1
    ) AS active ON true
    WHERE target.unique_key IS NOT NULL
    ORDER BY target.unique_key, target.created_at DESC, target.id DESC
), chosen AS (
    SELECT target.* FROM target LEFT JOIN holder ON holder.unique_key = target.unique_key
    WHERE holder.id IS NULL OR (holder.id = target.id AND NOT holder.active)
), retried AS (
    UPDATE jobs_job AS job
    SET status = 'queued', attempts = 0, available_at = :now, locked_by = NULL,
        locked_until = NULL, last_error = '', result = NULL, finished_at = NULL,
        cancel_requested_at = NULL, updated_at = :now
    FROM chosen
    WHERE job.id = ANY(ARRAY(SELECT id FROM chosen)) AND job.id = chosen.id
    RETURNING job.id
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, message, data, created_at, job_type)
    SELECT chosen.id, 'manual_retry', 0, :message,
        jsonb_build_object('previous_status', chosen.status,
            'previous_attempts', chosen.attempts, 'previous_error', chosen.last_error)
            || :data::jsonb,
        :now, chosen.type
    FROM chosen JOIN retried ON retried.id = chosen.id
    ORDER BY chosen.id
), held AS (
    SELECT target.id, target.unique_key, holder.id AS held_by
    FROM target JOIN holder ON holder.unique_key = target.unique_key
    WHERE holder.id <> target.id OR holder.active
)
SELECT 'counts', NULL::uuid, NULL::text, NULL::uuid, (SELECT count(*) FROM retried),
    (SELECT count(*) FROM held)
UNION ALL
(SELECT 'held', id, unique_key, held_by, NULL, NULL FROM held ORDER BY id LIMIT :held_max)
UNION ALL
SELECT 'parent', retried.id, NULL, NULL, NULL, NULL FROM retried
WHERE EXISTS (SELECT 1 FROM jobs_jobdependency AS edge WHERE edge.parent_id = retried.id);

-- name: run_job_now
-- A queued job that is not yet due (scheduled for later, or waiting out a retry's backoff)
-- becomes due now, with a run_now event; any other job is left alone. FOR UPDATE as
-- retry_jobs: a job claimed or cancelled meanwhile is seen as it is now. Answers 1 when
-- it changed the job, else 0.
WITH target AS (
    SELECT id, attempts, type FROM jobs_job
    WHERE id = :id AND status = 'queued' AND available_at > :now
    FOR UPDATE
), changed AS (
    UPDATE jobs_job AS job SET available_at = :now, updated_at = :now
    FROM target
    WHERE job.id = target.id
    RETURNING job.id
), event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, message, data, created_at, job_type)
    SELECT target.id, 'run_now', target.attempts, :message, :data::jsonb, :now, target.type
    FROM target JOIN changed ON changed.id = target.id
)
SELECT count(*) FROM changed;

-- name: job
-- One job's row as it is now (an operator's action answers with it), by the primary key.
SELECT * FROM jobs_job WHERE id = :id::uuid;

-- name: cancel_jobs
-- Selected queued jobs become cancelled at once (cancelled event); selected running jobs
-- not asked before get cancel_requested_at (cancel_requested event), which their worker's
-- heartbeat reports to the handler; the attempt then ends as cancelled. Locking as
-- retry_jobs: a job claimed meanwhile is seen running, so each job changes once.
WITH target AS (
    SELECT id FROM jobs_job
    -- Queued, or running and not asked before; written so that no index on status can
    -- serve it (an OR of two index scans), leaving a selection by ids to the primary key.
    -- (A waiting job is cancelled as a queued one.)
    WHERE status IN ('queued', 'waiting', 'running')
        AND (status <> 'running' OR cancel_requested_at IS NULL)
        AND {selection}
    ORDER BY id
    FOR UPDATE
), changed AS (
    UPDATE jobs_job AS job
    SET status = CASE WHEN job.status = 'running' THEN job.status ELSE 'cancelled' END,
        finished_at = CASE WHEN job.status = 'running' THEN NULL ELSE :now END,
        cancel_requested_at = :now, updated_at = :now
    FROM target
    -- The array hands the primary key the rows to probe (as in complete_jobs).
    WHERE job.id = ANY(ARRAY(SELECT id FROM target)) AND job.id = target.id
    RETURNING job.id, job.status, job.attempts, job.type
), event AS (
    -- Cancelling a queued job ends no running attempt: no run_ms.
    INSERT INTO jobs_jobevent (job_id, type, attempt, message, data, created_at, job_type)
    SELECT id, CASE WHEN status = 'cancelled' THEN 'cancelled' ELSE 'cancel_requested' END,
        attempts,
        CASE WHEN status = 'cancelled' THEN :cancelled_message ELSE :requested_message END,
        CASE WHEN status = 'cancelled' THEN :cancelled_data::jsonb
            ELSE :requested_data::jsonb END,
        :now, type
    FROM changed
    ORDER BY id
)
SELECT count(*) FILTER (WHERE status = 'cancelled'),
    count(*) FILTER (WHERE status = 'running')
FROM changed;

-- name: jobs_by_idempotency_keys
SELECT * FROM jobs_job WHERE idempotency_key = ANY(:keys::text[]);

-- name: active_jobs_by_unique_keys
-- The queued or running job holding each of :keys (job_unique_key_active: one at most).
SELECT * FROM jobs_job
WHERE unique_key = ANY(:keys::text[]) AND status IN ('queued', 'running');

-- name: gate_lock
-- The gated claim's first statement (a transaction of its own): lock the queue's settings
-- row, so claimers of a paused or limited queue take turns; what they then count (each
-- next statement has a fresh snapshot) includes every claim and ending committed before
-- them.
SELECT 1 FROM jobs_queuesettings WHERE name = :queue FOR UPDATE;

-- name: key_lock
-- Claimers of jobs with one concurrency_key take turns, whatever their queue (released
-- at commit).
SELECT pg_advisory_xact_lock(hashtextextended('jobs.concurrency_key:' || :key, 0));

-- name: running_with_key
-- Served by job_running_key_idx.
SELECT count(*) FROM jobs_job WHERE status = 'running' AND concurrency_key = :key;

-- name: key_limits
SELECT pattern, "limit" FROM jobs_concurrencykeylimit;

-- name: gated_candidate
-- complete_and_claim's candidate (the same loose scan over job_claim_idx), without the
-- jobs whose concurrency_key is at its limit (:blocked), locked for this transaction.
WITH RECURSIVE level AS (
    (SELECT priority FROM jobs_job
        WHERE status = 'queued' AND queue = :queue
        ORDER BY priority DESC LIMIT 1)
    {lower_priority_levels}
)
SELECT due.id, due.concurrency_key FROM level CROSS JOIN LATERAL (
    SELECT id, concurrency_key FROM jobs_job
    WHERE status = 'queued' AND queue = :queue AND priority = level.priority
        AND available_at AT TIME ZONE 'UTC' <= :now::timestamptz AT TIME ZONE 'UTC'
        AND attempts < max_attempts
        AND (concurrency_key IS NULL OR NOT concurrency_key = ANY(:blocked::text[]))
    ORDER BY available_at AT TIME ZONE 'UTC', created_at, id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
) AS due
LIMIT 1;

-- name: claim_by_id
-- The gated claim's last statement: the candidate it locked becomes running under a
-- lease, with its claimed event (as complete_and_claim's claimed half).
WITH claimed AS (
    UPDATE jobs_job AS job
    SET status = 'running', attempts = job.attempts + 1, locked_by = :worker_id,
        locked_until = :locked_until, last_error = '', result = NULL, updated_at = :now,
        claimed_at = :now, claimed_by = :worker_id
    -- Still queued (it is locked by this transaction since gated_candidate). The status
    -- test is an expression so that job_claim_idx cannot serve it in place of the primary
    -- key (statistics that say `queued` is rare make the planner take it, and
    -- it may hold many dead entries).
    WHERE job.id = :id AND job.status || '' = 'queued'
    RETURNING job.*
), claimed_event AS (
    INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at,
        job_type, wait_ms)
    SELECT id, 'claimed', attempts, locked_by, :claimed_message, :claimed_data::jsonb, :now,
        type, GREATEST(floor(EXTRACT(EPOCH FROM
            :now - GREATEST(available_at, created_at)) * 1000), 0)::bigint
    FROM claimed
    WHERE NOT :lean
)
SELECT * FROM claimed;
