"""The handler's context alone (jobs/worker/context.py): ``renew()`` and ``progress()`` write
only as the attempt's owner, and an attempt that no longer owns its job is told so with
``LeaseLost``, which stops its handler, instead of returning as if the write had happened."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import services
from jobs.handlers import JobContext, LeaseLost
from jobs.models import Job, JobEvent
from tests.factories import WORKER, fresh, running_job, timeline

pytestmark = pytest.mark.django_db

Event = JobEvent.Type


def context_of(job) -> JobContext:
    """The context the worker gave the handler of ``job``'s current attempt."""
    return JobContext(
        job_id=job.pk,
        type=job.type,
        payload=job.payload,
        attempt=job.attempts,
        worker_id=job.locked_by,
        lease_seconds=3,
    )


def job_of(context: JobContext) -> Job:
    return Job.objects.get(pk=context.job_id)


@pytest.fixture
def requeued():
    """The context of attempt 1, whose lease expired and which another process's cleanup
    requeued (``timeout_requeued``)."""
    job = running_job("demo.slow", lease_seconds=3, max_attempts=3)
    context = context_of(job)
    later = timezone.now() + timedelta(seconds=4)
    assert services.cleanup_expired_jobs(now=later, worker_id="another-process").requeued == 1
    assert fresh(job).status == "queued"
    return context


@pytest.fixture
def taken_over(requeued):
    """As ``requeued``, and then another worker claimed attempt 2 once its backoff passed."""
    later = timezone.now() + timedelta(minutes=1)
    claimed = services.claim_next_job(worker_id="another-worker", lease_seconds=300, now=later)
    assert claimed is not None and (claimed.id, claimed.attempts) == (requeued.job_id, 2)
    return requeued


def test_progress_of_an_attempt_whose_job_was_requeued_raises_lease_lost(requeued):
    with pytest.raises(LeaseLost):
        requeued.progress("still working", {"step": 2})
    assert timeline(job_of(requeued))[-1] == Event.TIMEOUT_REQUEUED


def test_renew_of_an_attempt_whose_job_was_requeued_raises_lease_lost(requeued):
    with pytest.raises(LeaseLost):
        requeued.renew()
    job = job_of(requeued)
    assert (job.status, job.locked_until) == ("queued", None)
    assert timeline(job)[-1] == Event.TIMEOUT_REQUEUED


def test_progress_of_an_attempt_whose_job_another_worker_took_raises_lease_lost(taken_over):
    with pytest.raises(LeaseLost):
        taken_over.progress("still working")
    assert timeline(job_of(taken_over))[-1] == Event.CLAIMED


def test_renew_of_an_attempt_whose_job_another_worker_took_raises_lease_lost(taken_over):
    until = job_of(taken_over).locked_until
    with pytest.raises(LeaseLost):
        taken_over.renew()
    job = job_of(taken_over)
    assert (job.locked_by, job.locked_until) == ("another-worker", until)
    assert timeline(job)[-1] == Event.CLAIMED


def test_an_attempt_told_it_lost_its_job_stops_at_its_next_check(requeued):
    with pytest.raises(LeaseLost):
        requeued.progress("still working")
    with pytest.raises(LeaseLost):
        requeued.check()


def test_progress_and_renew_of_the_owner_return_normally():
    job = running_job("demo.slow", lease_seconds=3)
    context = context_of(job)
    context.progress("working")
    context.renew()
    assert timeline(job)[-2:] == [Event.PROGRESS, Event.LEASE_RENEWED]
    assert fresh(job).locked_by == WORKER
