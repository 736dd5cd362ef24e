"""Retention: `prune_job_events` and `prune_jobs` delete only what is old and finished."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import services
from jobs.models import Job, JobEvent, Workflow
from tests.factories import (
    cancelled_job,
    failed_job,
    fresh,
    queued_job,
    running_job,
    succeeded_job,
    timeline,
    workflow,
)

pytestmark = pytest.mark.django_db

Status = Job.Status
DAYS_AGO_40 = timezone.now() - timedelta(days=40)


def run(command: str, *args: str) -> str:
    out = StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def mixed_jobs():
    jobs = {
        "old_succeeded": succeeded_job(now=DAYS_AGO_40),
        "old_failed": failed_job(now=DAYS_AGO_40),
        # Created and claimed 40 days ago, finished yesterday.
        "long_succeeded": succeeded_job(
            now=DAYS_AGO_40, finished_at=timezone.now() - timedelta(days=1)
        ),
        "recent_succeeded": succeeded_job(now=timezone.now() - timedelta(days=2)),
        "old_running": running_job(now=DAYS_AGO_40, lease_seconds=10**8),
        "old_queued": queued_job(now=DAYS_AGO_40),
    }
    # Failed 40 days ago, then sent back to the queue by hand today.
    retried = failed_job(now=DAYS_AGO_40)
    services.retry_job(job_id=retried.pk)
    jobs["retried"] = fresh(retried)
    return jobs


def test_prune_job_events_deletes_only_old_events_of_finished_jobs(mixed_jobs):
    before = {name: timeline(job) for name, job in mixed_jobs.items()}
    out = run("prune_job_events", "--older-than", "30")
    after = {name: timeline(job) for name, job in mixed_jobs.items()}

    assert after["old_succeeded"] == []
    assert after["old_failed"] == []
    # Only its events from 40 days ago went; the recent succeeded event stays.
    assert after["long_succeeded"] == ["succeeded"]
    for name in ("recent_succeeded", "old_running", "old_queued", "retried"):
        assert after[name] == before[name], name
    deleted = 3 + 3 + 2  # created+claimed+succeeded, created+claimed+failed, created+claimed
    assert f"Deleted {deleted} events" in out
    # Job rows are never deleted by this command.
    assert Job.objects.count() == len(mixed_jobs)


def test_prune_job_events_dry_run_counts_and_deletes_nothing(mixed_jobs):
    total = JobEvent.objects.count()
    out = run("prune_job_events", "--older-than", "30", "--dry-run")
    assert "Would delete 8 events" in out
    assert JobEvent.objects.count() == total


def test_prune_job_events_works_in_bounded_batches():
    for _ in range(25):
        succeeded_job(now=DAYS_AGO_40)  # created, claimed, succeeded: 75 events
    with CaptureQueriesContext(connection) as queries:
        out = run("prune_job_events", "--older-than", "30", "--batch-size", "10")
    deletes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("DELETE")]
    assert len(deletes) == 8  # ceil(75 / 10): one short DELETE per batch
    assert "Deleted 75 events" in out and "in 8 batch(es)" in out
    assert JobEvent.objects.count() == 0


def test_prune_job_events_keeps_everything_younger_than_the_cutoff(mixed_jobs):
    total = JobEvent.objects.count()
    out = run("prune_job_events", "--older-than", "41")
    assert "Deleted 0 events" in out
    assert JobEvent.objects.count() == total


def test_prune_jobs_deletes_old_finished_jobs_and_their_events_only(mixed_jobs):
    out = run("prune_jobs", "--older-than", "30")
    remaining = set(Job.objects.values_list("pk", flat=True))
    gone = {mixed_jobs["old_succeeded"].pk, mixed_jobs["old_failed"].pk}
    assert remaining == {job.pk for job in mixed_jobs.values()} - gone
    assert not JobEvent.objects.filter(job_id__in=gone).exists()
    # Queued and running jobs stay, however old, with their whole timeline.
    assert timeline(mixed_jobs["old_running"]) == ["created", "claimed"]
    assert timeline(mixed_jobs["old_queued"]) == ["created"]
    assert "Deleted 2 finished jobs" in out and "their 6 events" in out


def test_prune_jobs_dry_run_counts_and_deletes_nothing(mixed_jobs):
    jobs, events = Job.objects.count(), JobEvent.objects.count()
    out = run("prune_jobs", "--older-than", "30", "--dry-run")
    assert "Would delete 2 finished jobs" in out and "their 6 events" in out
    assert (Job.objects.count(), JobEvent.objects.count()) == (jobs, events)


def test_prune_jobs_works_in_batches():
    for _ in range(7):
        failed_job(now=DAYS_AGO_40)
    out = run("prune_jobs", "--older-than", "30", "--batch-size", "3")
    assert "Deleted 7 finished jobs" in out and "in 3 batch(es)" in out
    assert Job.objects.count() == 0 and JobEvent.objects.count() == 0


def test_cancelled_jobs_are_finished_for_both_commands():
    """Cancelled is finished like succeeded and failed (models.FINISHED_STATUSES): its old
    events go, then the job itself; a recent cancel stays."""
    old = cancelled_job(now=DAYS_AGO_40)
    recent = cancelled_job(now=timezone.now() - timedelta(days=2))
    assert timeline(old) == ["created", "cancelled"]
    assert "Deleted 2 events" in run("prune_job_events", "--older-than", "30")
    assert (timeline(old), timeline(recent)) == ([], ["created", "cancelled"])
    out = run("prune_jobs", "--older-than", "30")
    assert "Deleted 1 finished jobs" in out
    assert list(Job.objects.values_list("pk", flat=True)) == [recent.pk]


@pytest.mark.parametrize("command", ["prune_job_events", "prune_jobs"])
@pytest.mark.parametrize(
    "args",
    [[], ["--older-than", "-1"], ["--older-than", "x"], ["--older-than", "1", "--batch-size", "0"]],
)
def test_prune_commands_refuse_bad_arguments(command, args):
    with pytest.raises(CommandError):
        call_command(command, *args, stdout=StringIO(), stderr=StringIO())


def finished_workflow(*finished_at) -> Workflow:
    """A workflow of ``len(finished_at)`` jobs that succeeded at those times."""
    created = workflow(*({"ref": f"step{index}"} for index in range(len(finished_at))))
    for job, at in zip(created.jobs, finished_at, strict=True):
        Job.objects.filter(pk=job.pk).update(status=Status.SUCCEEDED, finished_at=at)
    return Workflow.objects.get(pk=created.id)


def test_prune_jobs_deletes_a_workflow_it_leaves_without_a_job_and_keeps_one_with_jobs_left():
    emptied = finished_workflow(DAYS_AGO_40, DAYS_AGO_40)
    kept = finished_workflow(DAYS_AGO_40, timezone.now())
    out = run("prune_jobs", "--older-than", "30")
    assert list(Workflow.objects.values_list("pk", flat=True)) == [kept.pk]
    assert Job.objects.filter(workflow=kept).count() == 1
    assert not Workflow.objects.filter(pk=emptied.pk).exists()
    assert "and 1 workflows left without a job" in out


def test_prune_jobs_dry_run_counts_the_workflows_it_would_leave_without_a_job():
    finished_workflow(DAYS_AGO_40, DAYS_AGO_40)
    finished_workflow(DAYS_AGO_40, timezone.now())
    out = run("prune_jobs", "--older-than", "30", "--dry-run")
    assert "Would delete 3 finished jobs" in out and "1 workflows left without a job" in out
    assert Workflow.objects.count() == 2
