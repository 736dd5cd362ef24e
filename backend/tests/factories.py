"""Jobs in a given state, built through the services as a client and a worker would.

Every test module takes its jobs from here instead of writing rows by hand; the only
tests that write rows directly are the ones proving what the database refuses or allows
(test_models.py).
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection, transaction

from jobs import services
from jobs.drivers import Completion, JobRow, Owner
from jobs.models import Job, JobDependency, JobEvent
from jobs.storable import to_storable_json

WORKER = "tests:1:thread-1:0000beef"


def fresh(job: Job | JobRow) -> Job:
    """The job's row as the database holds it now."""
    return Job.objects.get(pk=job.pk)


def queued_job(type: str = "demo.success", **kwargs: Any) -> Job:
    """A job as a client creates it; ``kwargs`` are ``services.create_job``'s."""
    job, _ = services.create_job(type=type, **kwargs)
    return fresh(job)


def queued_jobs(count: int, type: str = "demo.success", **kwargs: Any) -> list[JobRow]:
    """``count`` jobs created in one transaction, so workers already polling see them all
    at once."""
    with transaction.atomic():
        return [services.create_job(type=type, **kwargs)[0] for _ in range(count)]


def running_job(
    type: str = "demo.slow",
    *,
    worker_id: str = WORKER,
    now: datetime | None = None,
    lease_seconds: int | None = None,
    **kwargs: Any,
) -> Job:
    """A job claimed by ``worker_id``; it outranks every other queued job."""
    job, _ = services.create_job(type=type, priority=32767, now=now, **kwargs)
    claimed = services.claim_next_job(worker_id=worker_id, now=now, lease_seconds=lease_seconds)
    assert claimed is not None and claimed.pk == job.pk
    return fresh(job)


def complete_and_claim(
    job: Job | JobRow,
    *,
    worker_id: str,
    attempt: int = 1,
    result: Any = None,
    queue: str = "default",
) -> tuple[JobRow | None, JobRow | None]:
    """What a worker thread's next fetch does with its success: the attempt completed
    (``None`` if it was no longer the worker's) and the worker's next job claimed from
    ``queue`` (``None`` if none was due), in one statement."""
    result_json = None if result is None else to_storable_json(result)
    fetched = services.claim_jobs(
        worker_ids=[worker_id],
        queue=queue,
        completions=[Completion(Owner(job.pk, worker_id, attempt), result_json)],
    )
    done = fetched.completed[0] if fetched.completed else None
    return done, fetched.claimed[0] if fetched.claimed else None


def succeeded_job(
    type: str = "demo.success",
    *,
    result: Any = None,
    now: datetime | None = None,
    finished_at: datetime | None = None,
    **kwargs: Any,
) -> Job:
    """A job claimed at ``now`` and succeeded at ``finished_at`` (default ``now``)."""
    job = running_job(type, now=now, **kwargs)
    done = services.complete_job(
        job_id=job.pk,
        worker_id=WORKER,
        attempt=job.attempts,
        result={"ok": True} if result is None else result,
        now=finished_at or now,
    )
    assert done is not None
    return fresh(job)


def failed_job(
    type: str = "demo.fail", *, error: str = "boom", now: datetime | None = None, **kwargs: Any
) -> Job:
    """A job whose only attempt failed: ``failed`` for good."""
    job = running_job(type, max_attempts=1, now=now, **kwargs)
    done = services.fail_job(
        job_id=job.pk, worker_id=WORKER, attempt=job.attempts, error=error, now=now
    )
    assert done is not None and done.status == Job.Status.FAILED
    return fresh(job)


def cancelled_job(type: str = "demo.success", *, now: datetime | None = None, **kwargs: Any) -> Job:
    """A job cancelled before it ran."""
    job = queued_job(type, now=now, **kwargs)
    services.cancel_job(job_id=job.pk, now=now)
    return fresh(job)


def workflow(*jobs: dict[str, Any], name: str = "") -> services.CreatedWorkflow:
    """A workflow as a client writes it: each of ``jobs`` is a ``WorkflowJobSpec``'s
    arguments (``type`` defaults to ``demo.success``)."""
    specs = [services.WorkflowJobSpec(**{"type": "demo.success", **job}) for job in jobs]
    return services.create_workflow(jobs=specs, name=name)


def inserted_jobs(count: int, *, status: str = "queued") -> None:
    """``count`` ``demo.success`` jobs in the default queue, due now, in ``status``, written
    in one ``INSERT … SELECT`` (no events: for tests that read plans and statistics, not
    transitions), then analyzed, as autovacuum would after a bulk load."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {Job._meta.db_table} (id, type, payload, status, priority, attempts,
                max_attempts, available_at, last_error, created_at, updated_at, queue)
            SELECT gen_random_uuid(), 'demo.success', '{{}}', %s, 50, 0, 3, now(), '',
                now(), now(), 'default'
            FROM generate_series(1, %s)
            """,
            [status, count],
        )
        cursor.execute(f"ANALYZE {Job._meta.db_table}")


def jobs_waiting_on_a_held_parent(count: int, *, analyze: bool = True) -> None:
    """``count`` jobs created at one time, waiting (with their edges) on one parent due
    tomorrow in another queue: a parent that does not finish while a test runs. Written in
    one statement, then analyzed, as autovacuum would after a bulk load (``analyze=False``:
    as a workflow's enqueue leaves them, before autovacuum comes by)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH parent AS (
                INSERT INTO {Job._meta.db_table} (id, type, payload, status, priority,
                    attempts, max_attempts, available_at, last_error, created_at,
                    updated_at, queue)
                VALUES (gen_random_uuid(), 'demo.success', '{{}}', 'queued', 50, 0, 3,
                    now() + interval '1 day', '', now(), now(), 'held')
                RETURNING id
            ), children AS (
                INSERT INTO {Job._meta.db_table} (id, type, payload, status, priority,
                    attempts, max_attempts, available_at, last_error, created_at,
                    updated_at, queue)
                SELECT gen_random_uuid(), 'demo.success', '{{}}', 'waiting', 50, 0, 3, now(),
                    '', now(), now(), 'default'
                FROM generate_series(1, %s)
                RETURNING id
            )
            INSERT INTO {JobDependency._meta.db_table} (job_id, parent_id, on_parent_failure)
            SELECT children.id, parent.id, 'cancel' FROM children CROSS JOIN parent
            """,
            [count],
        )
        if analyze:
            cursor.execute(f"ANALYZE {Job._meta.db_table}")
            cursor.execute(f"ANALYZE {JobDependency._meta.db_table}")


def timeline(job: Job | JobRow) -> list[str]:
    """The job's event types, oldest first."""
    return list(
        JobEvent.objects.filter(job_id=job.pk).order_by("id").values_list("type", flat=True)
    )


def user_with(*codenames: str, username: str | None = None, password: str | None = None):
    """A user holding exactly these ``jobs`` permissions (``view_job``, ...); without a
    password it cannot log in with one (and no slow hash is computed)."""
    user = get_user_model().objects.create_user(
        username or f"user-{secrets.token_hex(4)}", password=password
    )
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="jobs", codename__in=codenames)
    )
    return user
