"""Rows a scenario starts from, written straight in SQL: a backlog of any size at once, a
stale backlog's dead rows, a history of finished jobs. This generates data; the services'
own inserts are what the enqueue scenarios measure.
"""

from __future__ import annotations

from collections.abc import Callable

from .database import Database
from .jobtypes import JOB_TYPE

# Jobs and their ``created`` events in one statement, so a backlog of any size appears at
# once; ``available_at``, ``priority`` and ``created_at`` are SQL expressions of the series
# number ``g``. This generates data; the services' own insert is what enqueue measures.
_ENQUEUE_SQL = """
WITH ins AS (
    INSERT INTO jobs_job (id, type, payload, status, priority, available_at, attempts,
        max_attempts, last_error, created_at, updated_at)
    SELECT gen_random_uuid(), %(type)s, jsonb_build_object('n', g), 'queued', {priority},
           {available_at}, 0, 3, '', {created_at}, {created_at}
    FROM generate_series(1, %(count)s) AS g
    RETURNING id, created_at
)
INSERT INTO jobs_jobevent (job_id, type, attempt, message, data, created_at)
SELECT id, 'created', 0, 'Job created', jsonb_build_object('type', %(type)s::text), created_at
FROM ins
"""


def enqueue_bulk(
    db: Database,
    count: int,
    *,
    priority: str = "50",
    available_at: str = "now()",
    created_at: str = "now()",
    job_type: str = JOB_TYPE,
) -> None:
    sql = _ENQUEUE_SQL.format(priority=priority, available_at=available_at, created_at=created_at)
    db.execute(sql, {"type": job_type, "count": count})


def stale_backlog(jobs: int, *, analyze: bool) -> Callable[[Database], None]:
    """A ``run_workers`` setup: a backlog of ``jobs`` queued jobs written and deleted again,
    analyzed in between with ``analyze`` (so the planner's statistics say every row is
    queued, what autovacuum sees as a backlog arrives). Both ways the run starts with the
    same dead rows; only the statistics differ (the backlog phase; ``make bench-plans``)."""

    def setup(db: Database) -> None:
        enqueue_bulk(db, jobs)
        if analyze:
            db.execute("ANALYZE jobs_job")
            db.execute("ANALYZE jobs_jobevent")
        db.execute("DELETE FROM jobs_jobevent")
        db.execute("DELETE FROM jobs_job")

    return setup


# Finished jobs (5 % failed after 3 attempts) with created, claimed and succeeded/failed
# events, dated in the past so they never mix with the live measurements.
_FINISHED_SQL = """
WITH ins AS (
    INSERT INTO jobs_job (id, type, payload, status, priority, available_at, attempts,
        max_attempts, last_error, result, created_at, updated_at, finished_at)
    SELECT gen_random_uuid(), %(type)s, jsonb_build_object('n', g),
           CASE WHEN g %% 20 = 0 THEN 'failed' ELSE 'succeeded' END, 50, t,
           CASE WHEN g %% 20 = 0 THEN 3 ELSE 1 END, 3,
           CASE WHEN g %% 20 = 0 THEN 'Intentional failure' ELSE '' END,
           CASE WHEN g %% 20 = 0 THEN NULL ELSE '{"ok": true}'::jsonb END,
           t, t + interval '1 second', t + interval '1 second'
    FROM generate_series(%(first)s, %(last)s) AS g,
         LATERAL (SELECT now() - interval '60 days' + g * interval '1 second' AS t) AS ts
    RETURNING id, status, attempts, created_at
)
INSERT INTO jobs_jobevent (job_id, type, attempt, worker_id, message, data, created_at)
SELECT ins.id, e.type, CASE WHEN e.type = 'created' THEN 0 ELSE ins.attempts END,
       CASE WHEN e.type = 'created' THEN NULL ELSE 'bench-seed' END, e.message, e.data,
       ins.created_at + e.delay
FROM ins CROSS JOIN LATERAL (VALUES
    ('created', 'Job created', jsonb_build_object('type', %(type)s::text), interval '0'),
    ('claimed', 'Job claimed', '{"lease_seconds": 30}'::jsonb, interval '100 ms'),
    (ins.status, CASE WHEN ins.status = 'failed' THEN 'Intentional failure'
                      ELSE 'Job succeeded' END, '{}'::jsonb, interval '1 second')
) AS e(type, message, data, delay)
"""


def add_finished_jobs(db: Database, first: int, last: int, batch: int = 100_000) -> None:
    for start in range(first, last + 1, batch):
        end = min(start + batch - 1, last)
        db.execute(_FINISHED_SQL, {"type": JOB_TYPE, "first": start, "last": end})


def vacuum_analyze(db: Database) -> None:
    # This server may run with autovacuum off; do what autovacuum would do after a load,
    # so the planner has statistics and index-only scans a visibility map.
    db.execute("VACUUM (ANALYZE) jobs_job")
    db.execute("ANALYZE jobs_jobevent")
