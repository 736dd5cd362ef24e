"""Races between real threads, each with its own PostgreSQL connection."""

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from jobs import services
from jobs.models import Job, JobEvent
from tests.factories import queued_job, queued_jobs

pytestmark = [pytest.mark.django_db(transaction=True)]

Status = Job.Status
Event = JobEvent.Type


def in_threads(count: int, fn) -> list:
    """Run ``fn(index)`` in ``count`` threads started together; return their results."""
    barrier = threading.Barrier(count)

    def run(index: int):
        barrier.wait()
        try:
            return fn(index)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(run, range(count)))


@pytest.mark.postgres
def test_eight_threads_claiming_600_jobs_never_claim_an_attempt_twice():
    queued_jobs(600)

    def drain(index: int) -> list[tuple[str, int]]:
        worker_id = f"worker-{index}"
        claimed = []
        while (job := services.claim_next_job(worker_id=worker_id)) is not None:
            claimed.append((str(job.pk), job.attempts))
            assert services.complete_job(job_id=job.pk, worker_id=worker_id, attempt=job.attempts)
        return claimed

    results = in_threads(8, drain)
    claims = [claim for per_thread in results for claim in per_thread]
    assert len(claims) == 600
    assert len(set(claims)) == 600
    assert sum(1 for per_thread in results if per_thread) >= 2
    assert Job.objects.filter(status=Status.SUCCEEDED).count() == 600
    per_job = Counter(JobEvent.objects.filter(type=Event.CLAIMED).values_list("job_id", flat=True))
    assert len(per_job) == 600 and set(per_job.values()) == {1}


@pytest.mark.postgres
def test_claim_skips_a_row_locked_by_another_connection_instead_of_waiting():
    now = timezone.now() - timedelta(seconds=1)
    first = queued_job(priority=90, now=now)
    second = queued_job(priority=10, now=now)
    db = connection.settings_dict
    with psycopg.connect(
        host=db["HOST"],
        port=db["PORT"],
        user=db["USER"],
        password=db["PASSWORD"],
        dbname=db["NAME"],
        autocommit=False,
    ) as other:
        other.execute("SET lock_timeout = '5s'")
        other.execute("SELECT id FROM jobs_job WHERE id = %s FOR UPDATE", [first.pk])
        claimed = in_threads(1, lambda _: services.claim_next_job(worker_id="w"))[0]
        other.rollback()
    assert claimed is not None and claimed.pk == second.pk
    first.refresh_from_db()
    assert first.status == Status.QUEUED


@pytest.mark.postgres
def test_concurrent_creates_with_one_idempotency_key_yield_one_job():
    def create(index: int):
        job, created = services.create_job(
            type="demo.success", payload={"n": index}, idempotency_key="same-key"
        )
        return job.pk, created

    results = in_threads(8, create)
    assert len({pk for pk, _ in results}) == 1
    assert sum(1 for _, created in results if created) == 1
    assert Job.objects.count() == 1
    assert JobEvent.objects.filter(type=Event.CREATED).count() == 1


@pytest.mark.postgres
def test_concurrent_bulk_creates_sharing_keys_yield_one_job_per_key():
    keys = [f"key-{n}" for n in range(20)]

    def create(index: int):
        # Each thread takes the keys in its own order, with a key of its own at the end.
        mine = keys[index:] + keys[:index] + [f"own-{index}"]
        specs = [services.NewJobSpec(type="demo.success", idempotency_key=key) for key in mine]
        return [
            (row.idempotency_key, row.pk, created) for row, created in services.create_jobs(specs)
        ]

    results = [item for batch in in_threads(6, create) for item in batch]
    by_key: dict[str, set] = {}
    for key, pk, _ in results:
        by_key.setdefault(key, set()).add(pk)
    assert all(len(pks) == 1 for pks in by_key.values())  # every caller saw the same job
    assert sum(created for _, _, created in results) == len(keys) + 6
    assert Job.objects.count() == len(keys) + 6
    assert JobEvent.objects.filter(type=Event.CREATED).count() == len(keys) + 6


@pytest.mark.postgres
def test_concurrent_cleanup_passes_handle_each_expired_job_once():
    past = timezone.now() - timedelta(seconds=1)
    queued_jobs(40, now=past)
    for _ in range(40):
        services.claim_next_job(worker_id="dead", lease_seconds=1, now=past)
    results = in_threads(
        4, lambda i: services.cleanup_expired_jobs(batch_size=7, worker_id=f"c{i}").total
    )
    leftover = services.cleanup_expired_jobs().total
    assert sum(results) + leftover == 40
    assert JobEvent.objects.filter(type=Event.TIMEOUT_REQUEUED).count() == 40
    assert not Job.objects.filter(status=Status.RUNNING).exists()


def test_worker_threads_on_this_database_complete_concurrent_claims_without_errors():
    """Also on SQLite: writers queue for the lock instead of failing with 'locked'."""
    queued_jobs(120)

    def drain(index: int) -> int:
        worker_id = f"worker-{index}"
        done = 0
        while (job := services.claim_next_job(worker_id=worker_id)) is not None:
            services.record_progress(
                job_id=job.pk, worker_id=worker_id, attempt=job.attempts, message="step"
            )
            services.renew_lease(job_id=job.pk, worker_id=worker_id, attempt=job.attempts)
            assert services.complete_job(job_id=job.pk, worker_id=worker_id, attempt=job.attempts)
            done += 1
        return done

    assert sum(in_threads(4, drain)) == 120
    assert Job.objects.filter(status=Status.SUCCEEDED).count() == 120


def _drain_in_batches(worker: str, queue: str, *, running: list[int], lock: threading.Lock):
    """Claim batches of three from ``queue`` and complete them, recording the running
    count the database shows after each claim, until the queue is empty."""
    workers = [f"{worker}-{n}" for n in range(3)]
    while rows := services.claim_jobs(worker_ids=workers, queue=queue).claimed:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM jobs_job WHERE status = 'running' AND queue = %s", [queue]
            )
            (now_running,) = cursor.fetchone()
        with lock:
            running.append(now_running)
        for row in rows:
            services.complete_job(job_id=row.id, worker_id=row.locked_by, attempt=row.attempts)


@pytest.mark.postgres
def test_batches_racing_for_a_limited_queue_never_run_more_than_its_limit():
    queued_jobs(300, queue="limited")
    services.set_queue_limits(queue="limited", concurrency_limit=4)
    running: list[int] = []
    lock = threading.Lock()
    in_threads(6, lambda i: _drain_in_batches(f"w{i}", "limited", running=running, lock=lock))
    assert Job.objects.filter(queue="limited", status=Status.SUCCEEDED).count() == 300
    assert max(running) <= 4
    assert max(running) == 4  # the limit was reached, not merely unused


@pytest.mark.postgres
def test_batches_racing_for_a_rated_queue_never_claim_more_than_its_rate():
    queued_jobs(60, queue="rated")
    services.set_queue_limits(queue="rated", rate_limit=25, rate_period_seconds=3600)
    running: list[int] = []
    lock = threading.Lock()
    in_threads(6, lambda i: _drain_in_batches(f"w{i}", "rated", running=running, lock=lock))
    assert Job.objects.filter(queue="rated", status=Status.SUCCEEDED).count() == 25
    assert Job.objects.filter(queue="rated", status=Status.QUEUED).count() == 35
