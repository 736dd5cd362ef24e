"""Reads shared by the API and the dashboard (jobs/selectors.py)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import selectors, services
from jobs.models import Job
from tests.factories import queued_job
from tests.helpers import STATS_QUERIES

pytestmark = pytest.mark.django_db

Status = Job.Status


# --- stats --------------------------------------------------------------------------------


def test_stats_counts_every_status_overdue_and_pending_retries_in_one_count_query(
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

    # One count, the queue names, plus the table estimate PostgreSQL keeps (it decides
    # exact or estimated).
    with django_assert_num_queries(STATS_QUERIES):
        stats = selectors.job_stats(now=now)
    assert stats["total"] == 5
    assert stats["by_status"] == {
        "queued": 2,
        "waiting": 0,
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
        "by_status": {
            "queued": 0,
            "waiting": 0,
            "running": 0,
            "succeeded": 0,
            "failed": 0,
            "cancelled": 0,
        },
        "overdue_running": 0,
        "retries_pending": 0,
        "scheduled": 0,
        "due": 0,
        "oldest_queued_at": None,
        "oldest_due_at": None,
        "estimated": False,
        "queues": [],
    }


def test_stats_count_jobs_scheduled_for_later_apart_from_due_ones():
    now = timezone.now()
    queued_job(now=now - timedelta(minutes=1))
    queued_job(available_at=now + timedelta(hours=1), now=now - timedelta(minutes=1))
    queued_job(available_at=now + timedelta(minutes=5), now=now - timedelta(minutes=1))
    stats = selectors.job_stats(now=now)
    assert (stats["by_status"]["queued"], stats["scheduled"], stats["due"]) == (3, 2, 1)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_above_the_exact_limit_finished_counts_come_from_the_planner_and_say_so(settings):
    from django.db import connection

    from tests.factories import failed_job, queued_job, succeeded_job

    for _ in range(12):
        succeeded_job()
    for _ in range(4):
        failed_job()
    for _ in range(3):
        queued_job()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE jobs_job")
    settings.JOB_STATS_EXACT_MAX_ROWS = 10
    stats = selectors.job_stats()
    assert stats["estimated"] is True
    # A small table is sampled whole, so the estimate is exact here; queued is counted.
    assert stats["by_status"] == {
        "queued": 3,
        "waiting": 0,
        "running": 0,
        "succeeded": 12,
        "failed": 4,
        "cancelled": 0,
    }
    assert stats["total"] == 19
    settings.JOB_STATS_EXACT_MAX_ROWS = 1000
    assert selectors.job_stats()["estimated"] is False


def test_cached_stats_are_computed_once_per_interval(settings, django_assert_num_queries):
    from tests.factories import queued_job

    settings.JOB_STATS_CACHE_SECONDS = 60
    queued_job()
    first = selectors.cached_job_stats()
    queued_job()
    with django_assert_num_queries(0):
        again = selectors.cached_job_stats()
    assert again == first and again["by_status"]["queued"] == 1
    settings.JOB_STATS_CACHE_SECONDS = 0
    assert selectors.cached_job_stats()["by_status"]["queued"] == 2


def test_requests_that_miss_the_stats_cache_together_share_one_computation(settings, monkeypatch):
    import threading
    import time

    settings.JOB_STATS_CACHE_SECONDS = 60
    calls = []

    def slow_stats():
        calls.append(1)
        time.sleep(0.2)  # long enough for every thread to miss the empty cache
        return {"by_status": {}}

    monkeypatch.setattr(selectors.stats, "job_stats", slow_stats)
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(selectors.cached_job_stats()))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1
    assert results == [{"by_status": {}}] * 8
