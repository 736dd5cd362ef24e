"""Lease rescue alone (jobs/worker/maintenance/rescuer.py): the expired leases of any
process are taken back a batch at a time, and the pass says what it did."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import services
from jobs.models import JobEvent
from jobs.services import CleanupResult
from jobs.worker.maintenance import LeaseRescuer
from tests.factories import fresh, running_job

pytestmark = pytest.mark.django_db

LONG_AGO = timezone.now() - timedelta(minutes=10)


def test_expired_leases_of_any_process_are_requeued_a_batch_at_a_time():
    jobs = [running_job(now=LONG_AGO, lease_seconds=1, worker_id=f"gone:{n}") for n in range(5)]
    rescued = LeaseRescuer(batch_size=2, worker_id="rescuer:0").run_once()
    assert rescued == CleanupResult(requeued=5, failed=0)
    assert {fresh(job).status for job in jobs} == {"queued"}
    events = JobEvent.objects.filter(type="timeout_requeued").order_by("id")
    assert [e.worker_id for e in events] == ["rescuer:0"] * 5
    assert sorted(e.data["expired_worker_id"] for e in events) == [f"gone:{n}" for n in range(5)]


def test_a_live_lease_is_left_alone():
    job = running_job(lease_seconds=300)
    assert LeaseRescuer(batch_size=10, worker_id="rescuer:0").run_once().total == 0
    assert fresh(job).status == "running"


def test_the_last_attempt_fails_and_one_asked_to_cancel_is_cancelled():
    last = running_job(now=LONG_AGO, lease_seconds=1, max_attempts=1)
    asked = running_job(now=LONG_AGO, lease_seconds=1)
    services.cancel_job(job_id=asked.pk)
    assert LeaseRescuer(batch_size=10, worker_id="rescuer:0").run_once() == CleanupResult(
        requeued=0, failed=2
    )
    assert (fresh(last).status, fresh(asked).status) == ("failed", "cancelled")
