"""What the dashboard's attention, triage and search read: the job list's filters by due
time, expired lease, error text, key and metadata; its last exception class; and each
queue's backlog split into due and scheduled, aged from ``available_at``."""

import uuid
from datetime import datetime, timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from harness import metric_samples
from jobs import selectors, services
from jobs.models import Job, JobEvent
from tests.factories import (
    WORKER,
    cancelled_job,
    queued_job,
    running_job,
    user_with,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def api() -> APIClient:
    return APIClient()


def listed(api: APIClient, query: str) -> list[str]:
    response = api.get(f"/api/jobs/?{query}")
    assert response.status_code == 200, response.content
    return [job["id"] for job in response.json()["results"]]


def failed_with(error: str, exception_class: str, **kwargs) -> Job:
    job = running_job("demo.fail", max_attempts=1, **kwargs)
    services.fail_job(
        job_id=job.pk,
        worker_id=WORKER,
        attempt=job.attempts,
        error=error,
        details=services.ErrorDetails(exception_class=exception_class, traceback="Traceback"),
    )
    return Job.objects.get(pk=job.pk)


def test_list_splits_queued_jobs_into_due_and_scheduled_by_available_at(api):
    now = timezone.now()
    due = queued_job(available_at=now - timedelta(minutes=1))
    later = queued_job(available_at=now + timedelta(hours=1))
    running_job()
    assert listed(api, "due=true") == [str(due.pk)]
    assert listed(api, "due=false") == [str(later.pk)]
    assert len(listed(api, "")) == 3
    assert api.get("/api/jobs/?due=maybe").status_code == 400


def test_list_finds_running_jobs_whose_lease_expired(api):
    past = timezone.now() - timedelta(minutes=5)
    expired = running_job(now=past, lease_seconds=30)
    holding = running_job(worker_id="tests:1:thread-2:0000cafe")
    queued_job()
    assert listed(api, "lease_expired=true") == [str(expired.pk)]
    assert listed(api, "lease_expired=false") == [str(holding.pk)]


def test_list_filters_by_error_text_and_names_the_last_exception_class(api):
    value = failed_with("amount must be positive", "builtins.ValueError")
    failed_with("connection refused", "ConnectionRefusedError")
    queued_job()
    assert listed(api, "error=MUST BE") == [str(value.pk)]
    assert listed(api, "error=nothing-like-it") == []
    rows = {job["id"]: job for job in api.get("/api/jobs/").json()["results"]}
    assert rows[str(value.pk)]["last_exception_class"] == "ValueError"
    assert rows[str(value.pk)]["last_error"] == "amount must be positive"
    assert sum(1 for job in rows.values() if job["last_exception_class"] is None) == 1


def test_a_cancelled_job_has_no_exception_class_to_triage(api):
    job = running_job()
    services.cancel_job(job_id=job.pk)
    services.fail_job(
        job_id=job.pk,
        worker_id=WORKER,
        attempt=1,
        error="Cancelled",
        details=services.ErrorDetails(
            exception_class="jobs.errors.JobCancelled", traceback="Traceback", reason="cancelled"
        ),
    )
    assert Job.objects.get(pk=job.pk).status == "cancelled"
    (row,) = api.get("/api/jobs/").json()["results"]
    assert row["last_exception_class"] is None


def test_list_finds_jobs_by_any_key_exactly(api):
    by_concurrency = queued_job(concurrency_key="customer:7")
    by_unique = queued_job(unique_key="customer:7")
    by_idempotency = queued_job(idempotency_key="customer:7")
    queued_job(concurrency_key="customer:70")
    assert set(listed(api, "key=customer:7")) == {
        str(by_concurrency.pk),
        str(by_unique.pk),
        str(by_idempotency.pk),
    }


def test_list_finds_jobs_by_metadata_name_or_value(api):
    tagged = queued_job(metadata={"request_id": "r-1"})
    queued_job(metadata={"request_id": "r-2"})
    queued_job()
    assert listed(api, "metadata=request_id=r-1") == [str(tagged.pk)]
    assert len(listed(api, "metadata=request_id")) == 2
    response = api.get("/api/jobs/?metadata==r-1")
    assert response.status_code == 400
    assert list(response.json()) == ["metadata"]


def test_a_metadata_name_of_digits_is_a_name_like_any_other(api):
    tagged = queued_job(metadata={"0": "x", "7": "seven"})
    queued_job(metadata={"0": "y"})
    assert listed(api, "metadata=0=x") == [str(tagged.pk)]
    assert listed(api, "metadata=7=seven") == [str(tagged.pk)]
    assert len(listed(api, "metadata=0")) == 2


def test_a_queue_ages_its_backlog_from_its_oldest_due_job_and_splits_due_from_scheduled(api):
    now = timezone.now()
    # Created first but scheduled for later: no backlog, however long ago it was created.
    queued_job(queue="split", now=now - timedelta(hours=2), available_at=now + timedelta(hours=1))
    due = queued_job(queue="split", available_at=now - timedelta(minutes=3))
    queued_job(queue="split")
    cancelled_job(queue="split")
    queues = {queue["name"]: queue for queue in api.get("/api/queues/").json()}
    body = queues["split"]
    assert body["counts"]["queued"] == 3
    assert body["due"] == 2
    assert body["scheduled"] == 1
    assert body["oldest_due_at"] == timezone.localtime(due.available_at).isoformat()
    idle = queues["default"]
    assert (idle["due"], idle["scheduled"], idle["oldest_due_at"]) == (0, 0, None)


def test_job_types_group_failed_attempts_by_type_class_and_message(api):
    for _ in range(3):
        failed_with("amount must be positive", "builtins.ValueError")
    failed_with("connection refused", "ConnectionRefusedError")
    # A manual retry that fails again is a second attempt of the same job.
    job = failed_with("amount must be positive", "builtins.ValueError")
    services.retry_job(job_id=job.pk)
    services.claim_next_job(worker_id=WORKER)
    services.fail_job(
        job_id=job.pk,
        worker_id=WORKER,
        attempt=1,
        error="amount must be positive",
        details=services.ErrorDetails(exception_class="builtins.ValueError"),
    )
    body = api.get("/api/jobs/types/?minutes=15").json()
    groups = [
        (g["type"], g["exception_class"], g["message"], g["attempts"], g["jobs"])
        for g in body["error_groups"]
    ]
    assert groups == [
        ("demo.fail", "ValueError", "amount must be positive", 5, 4),
        ("demo.fail", "ConnectionRefusedError", "connection refused", 1, 1),
    ]


def test_an_error_groups_job_count_stops_at_its_bound_and_says_so(api, monkeypatch):
    monkeypatch.setattr(selectors.types, "ERROR_GROUP_JOBS_MAX", 2)
    for _ in range(3):
        failed_with("disk full", "OSError")
    failed_with("timeout", "TimeoutError")
    groups = {
        g["message"]: (g["attempts"], g["jobs"], g["jobs_capped"])
        for g in api.get("/api/jobs/types/?minutes=15").json()["error_groups"]
    }
    assert groups == {"disk full": (3, 2, True), "timeout": (1, 1, False)}


def test_error_groups_of_settled_minutes_are_read_once_then_from_the_rollups(api):
    settled = timezone.now() - timedelta(minutes=5)
    for _ in range(2):
        failed_with("disk full", "OSError")
    JobEvent.objects.filter(type="failed").update(created_at=settled)
    assert api.get("/api/jobs/types/?minutes=15").json()["error_groups"][0]["attempts"] == 2
    # A settled minute's failures are not read again: a poll reads the unsettled ones.
    JobEvent.objects.filter(type="failed").delete()
    failed_with("disk full", "OSError")
    (group,) = api.get("/api/jobs/types/?minutes=15").json()["error_groups"]
    assert (group["attempts"], group["jobs"], group["jobs_capped"]) == (3, 3, False)


def test_a_cancelled_attempt_is_not_the_job_pages_last_error(api):
    job = running_job()
    services.cancel_job(job_id=job.pk)
    services.fail_job(
        job_id=job.pk,
        worker_id=WORKER,
        attempt=1,
        error="Cancelled",
        details=services.ErrorDetails(
            exception_class="jobs.errors.JobCancelled", traceback="Traceback", reason="cancelled"
        ),
    )
    body = api.get(f"/api/jobs/{job.pk}/").json()
    assert body["status"] == "cancelled"
    assert (body["last_exception_class"], body["last_traceback"]) == (None, None)
    (attempt,) = api.get(f"/api/jobs/{job.pk}/attempts/").json()
    assert attempt["outcome"] == "cancelled"


def test_workers_list_each_process_abandoned_threads_with_the_job_each_still_runs(api):
    hung = running_job("demo.hang")
    services.time_out_job(job_id=hung.pk, worker_id=WORKER, attempt=1, timeout_seconds=10)
    since = timezone.now() - timedelta(seconds=20)
    services.record_worker_presence(
        worker_id="box:77",
        hostname="box",
        pid=77,
        queues=["*"],
        threads_configured=1,
        threads=["box:77:thread-2:0000cafe"],
        abandoned=[
            {
                "worker_id": WORKER,
                "job_id": str(hung.pk),
                "type": "demo.hang",
                "attempt": 1,
                "abandoned_at": since.isoformat(),
            }
        ],
        heartbeat_interval_seconds=30,
        started_at=timezone.now() - timedelta(minutes=1),
    )
    (process,) = api.get("/api/workers/").json()["processes"]
    assert process["threads_live"] == 1
    (thread,) = process["threads_abandoned"]
    assert thread["worker_id"] == WORKER
    assert thread["job"] == {
        "id": str(hung.pk),
        "type": "demo.hang",
        "attempt": 1,
        "status": Job.objects.get(pk=hung.pk).status,
    }
    assert thread["abandoned_at"] == timezone.localtime(since).isoformat()

    got = metric_samples(api.get("/metrics").content)
    assert got[("jobqueue_workers_live", ())] == 1
    assert (
        got[("jobqueue_worker_process_threads", (("state", "abandoned"), ("worker", "box:77")))]
        == 1
    )
    assert (
        got[("jobqueue_worker_process_threads", (("state", "serving"), ("worker", "box:77")))] == 1
    )


# --- Who did what, and run now ----------------------------------------------------------


def signed_in(username: str) -> APIClient:
    client = APIClient()
    client.force_authenticate(user_with("change_job", "view_job", username=username))
    return client


def event_data(job: Job, type: str) -> dict:
    return JobEvent.objects.filter(job=job, type=type).latest("id").data


def test_each_operator_action_records_who_asked_in_its_event(api):
    alice = signed_in("alice")
    running = running_job()
    failed = failed_with("boom", "builtins.ValueError")
    again = failed_with("boom", "builtins.ValueError")
    assert alice.post(f"/api/jobs/{failed.pk}/retry/").status_code == 200
    assert event_data(failed, "manual_retry")["actor"] == {"user": "alice", "via": "api"}

    queued = queued_job()
    assert alice.post(f"/api/jobs/{queued.pk}/cancel/").status_code == 200
    assert event_data(queued, "cancelled")["actor"] == {"user": "alice", "via": "api"}

    assert (
        alice.post("/api/jobs/cancel/", {"ids": [str(running.pk)]}, format="json").status_code
        == 200
    )
    assert event_data(running, "cancel_requested")["actor"] == {"user": "alice", "via": "api"}

    # The open local demo has nobody signed in: the event says so.
    assert api.post("/api/jobs/retry/", {"ids": [str(again.pk)]}, format="json").status_code == 200
    assert event_data(again, "manual_retry")["actor"] == {"user": None, "via": "api"}


def test_run_now_makes_a_scheduled_job_due_and_records_it(api):
    later = timezone.now() + timedelta(hours=1)
    job = queued_job(available_at=later)
    response = signed_in("bob").post(f"/api/jobs/{job.pk}/run-now/")
    assert response.status_code == 200, response.content
    assert datetime.fromisoformat(response.json()["available_at"]) <= timezone.now()
    data = event_data(job, "run_now")
    assert data["actor"] == {"user": "bob", "via": "api"}
    assert datetime.fromisoformat(data["previous_available_at"]) == later
    assert listed(api, "due=true") == [str(job.pk)]

    # Already due, running or finished: 409 with the status, nothing written.
    response = api.post(f"/api/jobs/{job.pk}/run-now/")
    assert response.status_code == 409
    assert response.json()["status"] == "queued"
    assert JobEvent.objects.filter(job=job, type="run_now").count() == 1
    assert api.post(f"/api/jobs/{running_job().pk}/run-now/").status_code == 409
    assert api.post(f"/api/jobs/{uuid.uuid4()}/run-now/").status_code == 404
