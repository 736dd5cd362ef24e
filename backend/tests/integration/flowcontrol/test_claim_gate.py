"""The claim gate, once per driver: paused queues, concurrency limits per queue and per
key, rate limits, unique keys; and a queue with none of them claims as before."""

import math
from datetime import timedelta
from importlib import import_module

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import drivers, services
from jobs.drivers import Completion, Owner
from jobs.flowcontrol import RATE_BUCKETS, rate_room
from jobs.models import ConcurrencyKeyLimit, Job, JobEvent, QueueSettings
from tests.factories import complete_and_claim, queued_job

pytestmark = pytest.mark.django_db


@pytest.fixture(params=[driver.name for driver in drivers.available_drivers()], autouse=True)
def driver(request):
    (chosen,) = [d for d in drivers.available_drivers() if d.name == request.param]
    with drivers.use_driver(chosen):
        yield chosen


def claim(queue: str = "default", worker_id: str = "worker-a"):
    return services.claim_next_job(worker_id=worker_id, queue=queue)


def finish(job) -> None:
    assert services.complete_job(job_id=job.id, worker_id="worker-a", attempt=job.attempts)


def test_a_paused_queue_is_not_claimed_from():
    queued_job(queue="emails")
    services.pause_queue(queue="emails")
    assert claim("emails") is None
    services.resume_queue(queue="emails")
    assert claim("emails") is not None


def test_pausing_one_queue_leaves_the_others_claimable():
    queued_job(queue="reports")
    services.pause_queue(queue="emails")
    assert claim("reports") is not None


def test_a_queue_at_its_concurrency_limit_is_not_claimed_from():
    for _ in range(3):
        queued_job(queue="emails")
    services.set_queue_limits(queue="emails", concurrency_limit=2)
    first, second = claim("emails"), claim("emails")
    assert first is not None and second is not None
    assert claim("emails") is None
    finish(first)
    assert claim("emails") is not None


def test_a_rate_limit_admits_at_most_n_claims_per_period():
    for _ in range(3):
        queued_job(queue="emails")
    services.set_queue_limits(queue="emails", rate_limit=2, rate_period_seconds=3600)
    assert claim("emails") is not None
    assert claim("emails") is not None
    assert claim("emails") is None
    assert sum(QueueSettings.objects.get(name="emails").rate_window["counts"]) == 2


def _window_at(seconds_ago: float, period: int, claims: int) -> dict:
    then = (timezone.now() - timedelta(seconds=seconds_ago)).timestamp()
    return {"bucket": math.floor(then * RATE_BUCKETS / period), "counts": [claims]}


def test_a_rate_window_forgets_claims_older_than_its_period():
    queued_job(queue="emails")
    services.set_queue_limits(queue="emails", rate_limit=1, rate_period_seconds=60)
    # A full window, a period and a twentieth of one ago.
    QueueSettings.objects.filter(name="emails").update(rate_window=_window_at(64, 60, 1))
    assert claim("emails") is not None


def test_a_rate_window_still_holds_claims_within_its_period():
    queued_job(queue="emails")
    services.set_queue_limits(queue="emails", rate_limit=1, rate_period_seconds=60)
    QueueSettings.objects.filter(name="emails").update(rate_window=_window_at(50, 60, 1))
    assert claim("emails") is None


def test_a_full_window_of_a_large_rate_is_stored_in_constant_size():
    for _ in range(3):
        queued_job(queue="emails")
    services.set_queue_limits(queue="emails", rate_limit=100_000, rate_period_seconds=3600)
    QueueSettings.objects.filter(name="emails").update(rate_window=_window_at(0, 3600, 50_000))
    assert len(batch("emails")) == 3
    window = QueueSettings.objects.get(name="emails").rate_window
    assert sum(window["counts"]) == 50_003
    assert len(window["counts"]) <= RATE_BUCKETS + 1


def test_a_key_at_its_limit_is_skipped_for_the_next_key(settings):
    settings.JOB_CONCURRENCY_KEY_LIMITS = {"customer:*": 1}
    a1 = queued_job(concurrency_key="customer:a", priority=90)
    queued_job(concurrency_key="customer:a", priority=80)
    b = queued_job(concurrency_key="customer:b", priority=10)
    first = claim()
    assert first is not None and first.id == a1.id
    second = claim()
    assert second is not None and second.id == b.id
    assert claim() is None
    finish(first)
    assert claim() is not None


def test_a_key_limit_row_applies_like_the_setting():
    ConcurrencyKeyLimit.objects.create(pattern="tenant-7", limit=1)
    queued_job(concurrency_key="tenant-7")
    queued_job(concurrency_key="tenant-7")
    assert claim() is not None
    assert claim() is None


def test_an_unlimited_key_is_claimed_freely(settings):
    settings.JOB_CONCURRENCY_KEY_LIMITS = {"customer:*": 1}
    queued_job(concurrency_key="other")
    queued_job(concurrency_key="other")
    assert claim() is not None and claim() is not None


def test_a_gated_claim_writes_its_claimed_event():
    queued_job(queue="emails")
    services.set_queue_limits(queue="emails", concurrency_limit=5)
    job = claim("emails")
    assert job is not None and job.status == Job.Status.RUNNING and job.attempts == 1
    assert JobEvent.objects.filter(job_id=job.id, type="claimed").count() == 1


def test_complete_and_claim_respects_the_limit():
    for _ in range(3):
        queued_job(queue="emails")
    services.set_queue_limits(queue="emails", concurrency_limit=1)
    first = claim("emails")
    assert first is not None
    done, following = complete_and_claim(first, worker_id="worker-a", queue="emails")
    assert done is not None and following is not None
    assert claim("emails", worker_id="worker-b") is None


def test_a_finished_unique_job_frees_its_key():
    job, _ = services.create_job(type="demo.success", unique_key="u")
    same, created = services.create_job(type="demo.success", unique_key="u")
    assert (same.id, created) == (job.id, False)
    claimed = claim()
    assert claimed is not None
    finish(claimed)
    _, created = services.create_job(type="demo.success", unique_key="u")
    assert created


def test_a_limit_set_while_jobs_run_counts_them():
    for _ in range(3):
        queued_job(queue="emails")
    first = claim("emails")
    assert first is not None
    services.set_queue_limits(queue="emails", concurrency_limit=1)
    assert claim("emails") is None
    finish(first)
    assert claim("emails") is not None


def test_a_lowered_limit_admits_no_claim_until_running_jobs_fit_it():
    for _ in range(4):
        queued_job(queue="emails")
    services.set_queue_limits(queue="emails", concurrency_limit=2)
    first, second = claim("emails"), claim("emails")
    services.set_queue_limits(queue="emails", concurrency_limit=1)
    finish(first)
    assert claim("emails") is None  # the job above the new limit still runs
    finish(second)
    assert claim("emails") is not None


def test_a_batched_completion_frees_its_slots():
    for _ in range(3):
        queued_job(queue="emails")
    services.set_queue_limits(queue="emails", concurrency_limit=2)
    first, second = claim("emails"), claim("emails")
    assert claim("emails") is None
    completions = [
        Completion(Owner(job.id, "worker-a", job.attempts), None) for job in (first, second)
    ]
    assert len(services.complete_jobs(completions=completions, now=timezone.now())) == 2
    assert claim("emails") is not None


def test_a_failed_attempt_frees_its_slot():
    queued_job(queue="emails")
    queued_job(queue="emails")
    services.set_queue_limits(queue="emails", concurrency_limit=1)
    first = claim("emails")
    services.fail_job(job_id=first.id, worker_id="worker-a", attempt=1, error="boom")
    assert claim("emails") is not None


# A batched claim applies the gate as one claim does, for the whole batch at once.


def batch(queue: str, size: int = 3):
    return services.claim_jobs(worker_ids=[f"worker-{n}" for n in range(size)], queue=queue).claimed


def test_a_batched_claim_takes_nothing_from_a_paused_queue():
    queued_job(queue="emails")
    services.pause_queue(queue="emails")
    assert batch("emails") == []


def test_a_batched_claim_stays_within_a_concurrency_limit():
    for _ in range(4):
        queued_job(queue="emails")
    services.set_queue_limits(queue="emails", concurrency_limit=2)
    claimed = batch("emails")
    assert len(claimed) == 2
    assert Job.objects.filter(status=Job.Status.RUNNING).count() == 2
    assert batch("emails") == []


def test_a_batched_claim_leaves_a_limited_key_to_the_gated_claim():
    ConcurrencyKeyLimit.objects.create(pattern="tenant-1", limit=1)
    for _ in range(3):
        queued_job(queue="emails", concurrency_key="tenant-1")
    claimed = batch("emails")
    assert len(claimed) == 1
    assert batch("emails") == []


def test_a_batched_claim_of_an_unlimited_queue_is_not_gated():
    for _ in range(2):
        queued_job(queue="emails")
    services.set_queue_limits(queue="reports", concurrency_limit=1)  # another queue's
    assert len(batch("emails")) == 2


def test_a_batched_claim_takes_what_the_rate_admits():
    for _ in range(5):
        queued_job(queue="emails")
    services.set_queue_limits(queue="emails", rate_limit=3, rate_period_seconds=3600)
    assert len(batch("emails", size=5)) == 3
    assert batch("emails") == []


def test_a_batched_claim_fills_a_limit_with_keyed_and_unkeyed_jobs(settings):
    settings.JOB_CONCURRENCY_KEY_LIMITS = {"customer:*": 1}
    queued_job(queue="emails", concurrency_key="customer:a", priority=90)
    queued_job(queue="emails", concurrency_key="customer:a", priority=80)
    plain = [queued_job(queue="emails", priority=10) for _ in range(3)]
    services.set_queue_limits(queue="emails", concurrency_limit=3)
    claimed = batch("emails", size=4)
    assert len(claimed) == 3
    assert sum(row.concurrency_key == "customer:a" for row in claimed) == 1
    assert {row.id for row in claimed} > {plain[0].pk}


def test_a_limit_of_a_million_costs_what_a_limit_of_two_does():
    statements = []
    for queue, limit in (("small", 2), ("emails", 1_000_000)):
        with CaptureQueriesContext(connection) as captured:
            services.set_queue_limits(queue=queue, concurrency_limit=limit)
        statements.append(len(captured))
    assert statements[0] == statements[1]
    queued_job(queue="emails")
    assert len(batch("emails")) == 1


def test_a_limit_removed_and_set_again_admits_as_many_as_it_says():
    jobs = [queued_job(queue="emails") for _ in range(6)]
    services.set_queue_limits(queue="emails", concurrency_limit=2)
    first = batch("emails", size=3)
    services.set_queue_limits(queue="emails", concurrency_limit=None)
    second = batch("emails", size=3)
    assert (len(first), len(second)) == (2, 3)
    for row in first + second:
        services.complete_job(job_id=row.id, worker_id=row.locked_by, attempt=1)
    services.set_queue_limits(queue="emails", concurrency_limit=2)
    assert len(batch("emails", size=3)) == 1  # the sixth job: all others finished
    assert Job.objects.filter(pk__in=[job.pk for job in jobs], status="succeeded").count() == 5


def test_a_window_of_claim_times_from_before_the_upgrade_keeps_its_claims():
    convert = import_module("jobs.migrations.0014_queue_limits_without_slots")
    now = timezone.now().timestamp()
    services.set_queue_limits(queue="emails", rate_limit=3, rate_period_seconds=60)
    QueueSettings.objects.filter(name="emails").update(rate_window=[now - 100, now - 10, now])
    convert._windows_as_counts(apps, None)
    window = QueueSettings.objects.get(name="emails").rate_window
    assert rate_room(window, limit=3, period_seconds=60, now=now).room == 1
    for _ in range(2):
        queued_job(queue="emails")
    assert len(batch("emails")) == 1
