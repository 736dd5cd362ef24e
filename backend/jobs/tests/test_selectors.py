"""Reads shared by the API and the dashboard (jobs/selectors.py)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import selectors, services
from jobs.models import Job
from jobs.tests.factories import queued_job

pytestmark = pytest.mark.django_db

Status = Job.Status


# --- stats --------------------------------------------------------------------------------


def test_stats_counts_every_status_overdue_and_pending_retries_in_one_query(
    django_assert_num_queries,
):
    now = timezone.now()
    oldest = queued_job(now=now - timedelta(minutes=3))
    queued_job(now=now - timedelta(minutes=1))
    queued_job(max_attempts=1, now=now - timedelta(seconds=50))
    queued_job(max_attempts=3, now=now - timedelta(seconds=40))
    queued_job(now=now - timedelta(seconds=30))
    # Claim order: the two older queued jobs first.
    a = services.claim_next_job(worker_id="a", lease_seconds=1, now=now - timedelta(minutes=2))
    assert a.pk == oldest.pk
    b = services.claim_next_job(worker_id="b", now=now)
    services.complete_job(job_id=b.pk, worker_id="b", attempt=1)
    c = services.claim_next_job(worker_id="c", now=now)
    services.fail_job(job_id=c.pk, worker_id="c", attempt=1, error="x", now=now)  # failed
    d = services.claim_next_job(worker_id="d", now=now)
    services.fail_job(job_id=d.pk, worker_id="d", attempt=1, error="x", now=now)  # retry

    with django_assert_num_queries(1):
        stats = selectors.job_stats(now=now)
    assert stats["total"] == 5
    assert stats["by_status"] == {
        "queued": 2,
        "running": 1,
        "succeeded": 1,
        "failed": 1,
        "cancelled": 0,
    }
    assert stats["overdue_running"] == 1
    assert stats["retries_pending"] == 1
    remaining_queued = Job.objects.filter(status=Status.QUEUED).order_by("created_at").first()
    assert stats["oldest_queued_at"] == remaining_queued.created_at


def test_stats_on_empty_queue_lists_all_statuses_with_zero():
    stats = selectors.job_stats()
    assert stats == {
        "total": 0,
        "by_status": {"queued": 0, "running": 0, "succeeded": 0, "failed": 0, "cancelled": 0},
        "overdue_running": 0,
        "retries_pending": 0,
        "oldest_queued_at": None,
        "oldest_due_at": None,
    }
