"""The database itself refuses rows of an impossible shape, whatever code writes them."""

import pytest
from django.db import IntegrityError, connection, transaction

from jobs.models import Job
from tests.factories import queued_job, running_job

pytestmark = pytest.mark.django_db


def raw_update(job: Job, assignments: str) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE jobs_job SET {assignments} WHERE id = %s", [job.pk.hex])


@pytest.fixture
def queued() -> Job:
    return queued_job(max_attempts=3)


@pytest.fixture
def running() -> Job:
    return running_job(max_attempts=3)


@pytest.mark.parametrize(
    "assignments",
    [
        "status = 'running'",  # running without owner or lease
        "status = 'running', locked_by = 'w'",  # running without lease
        "locked_by = 'w'",  # queued with an owner
        "finished_at = CURRENT_TIMESTAMP",  # queued but finished
        "status = 'succeeded'",  # finished without finished_at
        "status = 'failed'",
        "status = 'paused'",  # not a status at all
        "attempts = -1",
        "max_attempts = 0",
        "attempts = 4",  # more attempts than allowed
    ],
)
def test_database_refuses_invalid_queued_row(queued, assignments):
    with pytest.raises(IntegrityError):
        raw_update(queued, assignments)


@pytest.mark.parametrize(
    "assignments",
    [
        "locked_by = NULL",
        "locked_until = NULL",
        "finished_at = CURRENT_TIMESTAMP",
        "status = 'queued'",  # still holding the lock
        "status = 'succeeded', finished_at = CURRENT_TIMESTAMP",  # still holding the lock
    ],
)
def test_database_refuses_invalid_running_row(running, assignments):
    with pytest.raises(IntegrityError):
        raw_update(running, assignments)


def test_database_accepts_valid_finished_row(running):
    raw_update(
        running,
        "status = 'succeeded', locked_by = NULL, locked_until = NULL, "
        "finished_at = CURRENT_TIMESTAMP",
    )
    assert Job.objects.get(pk=running.pk).status == Job.Status.SUCCEEDED


def test_database_refuses_finished_row_that_keeps_a_lease(running):
    with pytest.raises(IntegrityError):
        raw_update(running, "status = 'failed', locked_by = NULL, finished_at = CURRENT_TIMESTAMP")


def test_database_refuses_duplicate_idempotency_key():
    queued_job(idempotency_key="same")
    with pytest.raises(IntegrityError), transaction.atomic():
        Job.objects.create(type="demo.success", idempotency_key="same")


def test_database_allows_many_jobs_without_idempotency_key():
    Job.objects.bulk_create([Job(type="demo.success") for _ in range(3)])
    assert Job.objects.filter(idempotency_key__isnull=True).count() == 3


def test_database_refuses_unknown_event_type(queued):
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE jobs_jobevent SET type = 'exploded' WHERE job_id = %s", [queued.pk.hex]
        )


@pytest.mark.postgres
def test_postgres_has_the_spec_indexes_with_their_partial_conditions():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes "
            "WHERE tablename IN ('jobs_job', 'jobs_jobevent')"
        )
        indexes = dict(cursor.fetchall())
    claim = indexes["job_claim_idx"]
    # available_at as UTC wall-clock time (migration 0012; jobs.models.AtUtc).
    assert (
        "(queue, priority DESC, ((available_at AT TIME ZONE 'UTC'::text)), created_at, id)" in claim
    ), claim
    assert "WHERE" in claim and "queued" in claim
    assert "locked_until" in indexes["job_timeout_idx"] and "running" in indexes["job_timeout_idx"]
    unique = indexes["job_idempotency_key_unique"]
    assert "UNIQUE" in unique and "IS NOT NULL" in unique
    assert "(job_id, id)" in indexes["job_event_job_id_idx"]
    for name in (
        "jobs_job_status_idx",
        "jobs_job_available_at_idx",
        "jobs_job_created_at_idx",
        "jobs_jobevent_type_idx",
        "jobs_jobevent_created_at_idx",
        "job_event_id_idx",
    ):
        assert name in indexes
