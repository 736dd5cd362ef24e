"""Flow control's REST API: unique keys, queues, schedules, and their
permissions, on whichever database the pass runs (SQLite and PostgreSQL)."""

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from jobs import services
from jobs.api import views
from jobs.api.permissions import JobModelPermissions
from jobs.models import Job, QueueSettings, ScheduleState
from tests.factories import WORKER, queued_job

pytestmark = pytest.mark.django_db

SCHEDULES = {
    "every-minute": {"type": "demo.success", "interval": 60, "payload": {"n": 1}},
    "nightly": {
        "task": "tests.example_tasks.add",
        "cron": "0 3 * * *",
        "timezone": "Asia/Tehran",
        "args": [1, 2],
        "missed": "skip",
    },
}


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def schedules(settings):
    settings.JOB_SCHEDULES = SCHEDULES
    return SCHEDULES


def post(api: APIClient, path: str, body: object = None):
    data = None if body is None else json.dumps(body)
    return api.post(path, data=data, content_type="application/json")


def patch(api: APIClient, path: str, body: object):
    return api.patch(path, data=json.dumps(body), content_type="application/json")


def test_create_with_an_active_unique_key_returns_the_active_job(api):
    first = post(api, "/api/jobs/", {"type": "demo.success", "unique_key": "rebuild"})
    again = post(api, "/api/jobs/", {"type": "demo.success", "unique_key": "rebuild"})
    assert (first.status_code, first.json()["matched"]) == (201, None)
    assert (again.status_code, again.json()["matched"]) == (200, "unique_key")
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["unique_key"] == "rebuild"


def test_create_after_the_unique_keys_job_finished_makes_a_new_job(api):
    first = post(api, "/api/jobs/", {"type": "demo.success", "unique_key": "rebuild"}).json()
    claimed = services.claim_next_job(worker_id=WORKER)
    assert claimed is not None and str(claimed.id) == first["id"]
    services.complete_job(job_id=claimed.id, worker_id=WORKER, attempt=1)
    again = post(api, "/api/jobs/", {"type": "demo.success", "unique_key": "rebuild"})
    assert again.status_code == 201
    assert again.json()["id"] != first["id"]


def test_an_idempotency_hit_says_idempotency_key(api):
    body = {"type": "demo.success", "idempotency_key": "k1", "unique_key": "u1"}
    post(api, "/api/jobs/", body)
    again = post(api, "/api/jobs/", body)
    assert (again.status_code, again.json()["matched"]) == (200, "idempotency_key")


def test_bulk_create_matches_unique_keys_within_the_batch(api):
    body = {"jobs": [{"type": "demo.success", "unique_key": "u"}] * 2 + [{"type": "demo.success"}]}
    response = post(api, "/api/jobs/bulk/", body)
    assert response.status_code == 201
    jobs = response.json()["jobs"]
    assert [job["matched"] for job in jobs] == [None, "unique_key", None]
    assert jobs[0]["id"] == jobs[1]["id"]
    assert Job.objects.filter(unique_key="u").count() == 1


def test_job_list_filters_by_unique_and_concurrency_key(api):
    queued_job(unique_key="a", concurrency_key="customer:1")
    queued_job(unique_key="b", concurrency_key="customer:2")
    by_unique = api.get("/api/jobs/?unique_key=a").json()["results"]
    by_key = api.get("/api/jobs/?concurrency_key=customer:2").json()["results"]
    assert [job["unique_key"] for job in by_unique] == ["a"]
    assert [job["concurrency_key"] for job in by_key] == ["customer:2"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_parallel_creates_with_one_unique_key_make_one_job():
    def create(_: int) -> str:
        try:
            job, _created = services.create_job(type="demo.success", unique_key="once")
            return str(job.id)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=10) as pool:
        ids = set(pool.map(create, range(50)))
    assert len(ids) == 1
    assert Job.objects.filter(unique_key="once").count() == 1


def test_queue_list_names_every_known_queue_with_counts_and_limits(api):
    queued_job(queue="emails")
    services.set_queue_limits(queue="reports", concurrency_limit=4)
    body = api.get("/api/queues/").json()
    assert [queue["name"] for queue in body] == ["default", "emails", "reports"]
    emails = body[1]
    assert emails["counts"] == {
        "queued": 1,
        "waiting": 0,
        "running": 0,
        "succeeded": 0,
        "failed": 0,
        "cancelled": 0,
    }
    assert emails["oldest_queued_at"] is not None
    reports = body[2]
    assert (reports["concurrency_limit"], reports["saturation"]) == (4, 0.0)


def test_pause_and_resume_a_queue(api):
    paused = post(api, "/api/queues/emails/pause/")
    assert paused.status_code == 200
    assert paused.json()["paused"] is True and paused.json()["paused_at"]
    resumed = post(api, "/api/queues/emails/resume/").json()
    assert (resumed["paused"], resumed["paused_at"]) == (False, None)


def test_patch_sets_and_removes_queue_limits(api):
    body = {"concurrency_limit": 5, "rate_limit": 10, "rate_period_seconds": 1}
    limited = patch(api, "/api/queues/emails/", body)
    assert limited.status_code == 200
    assert (limited.json()["concurrency_limit"], limited.json()["rate_limit"]) == (5, 10)
    cleared = patch(api, "/api/queues/emails/", {"rate_limit": None}).json()
    assert (cleared["concurrency_limit"], cleared["rate_limit"]) == (5, None)
    assert cleared["rate_period_seconds"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"concurrency_limit": 0}, "concurrency_limit"),
        ({"rate_limit": 5}, "rate_period_seconds"),
        ({"rate_limit": "5", "rate_period_seconds": 1}, "rate_limit"),
        ({"burst": 1}, "burst"),
    ],
)
def test_patch_refuses_bad_limits_with_field_errors(api, body, field):
    response = patch(api, "/api/queues/emails/", body)
    assert response.status_code == 400
    assert field in response.json()
    assert not QueueSettings.objects.filter(concurrency_limit__isnull=False).exists()


def test_schedule_list_shows_definitions_and_next_runs(api, schedules):
    body = api.get("/api/schedules/").json()
    assert [s["name"] for s in body] == ["every-minute", "nightly"]
    minute, nightly = body
    assert (minute["kind"], minute["target"], minute["interval_seconds"]) == (
        "type",
        "demo.success",
        60,
    )
    assert (nightly["kind"], nightly["cron"], nightly["timezone"]) == (
        "task",
        "0 3 * * *",
        "Asia/Tehran",
    )
    assert nightly["missed"] == "skip"
    assert minute["next_run_at"] is not None and minute["last_job"] is None


def test_pausing_a_schedule_clears_its_next_run(api, schedules):
    paused = post(api, "/api/schedules/nightly/pause/").json()
    assert (paused["paused"], paused["next_run_at"]) == (True, None)
    resumed = post(api, "/api/schedules/nightly/resume/").json()
    assert resumed["paused"] is False and resumed["next_run_at"] is not None


def test_trigger_enqueues_a_job_that_becomes_the_last_job(api, schedules):
    response = post(api, "/api/schedules/every-minute/trigger/")
    assert response.status_code == 201
    job = response.json()["job"]
    assert (job["type"], job["payload"], job["metadata"]["schedule"]) == (
        "demo.success",
        {"n": 1},
        "every-minute",
    )
    assert response.json()["schedule"]["last_job"]["id"] == job["id"]


def test_an_unknown_schedule_is_a_json_404(api, schedules):
    response = post(api, "/api/schedules/nope/trigger/")
    assert response.status_code == 404
    assert "nope" in response.json()["detail"]


def test_due_ticks_are_enqueued_once_with_a_permanent_key(schedules, settings):
    settings.JOB_SCHEDULE_GRACE_SECONDS = 600
    # Ten seconds into a minute, so that 125 seconds later exactly two minutes have begun.
    start = timezone.now().replace(second=10, microsecond=0)
    services.enqueue_due_ticks(now=start)  # first sight: the schedule starts now
    later = start + timedelta(seconds=125)
    assert services.enqueue_due_ticks(now=later).created == 2
    assert services.enqueue_due_ticks(now=later).created == 0
    jobs = Job.objects.filter(metadata__schedule="every-minute")
    assert jobs.count() == 2
    assert all(job.idempotency_key.startswith("schedule:every-minute:") for job in jobs)
    state = ScheduleState.objects.get(name="every-minute")
    assert state.last_job_id in {job.id for job in jobs}


def test_a_paused_schedule_enqueues_nothing(schedules):
    start = timezone.now()
    services.enqueue_due_ticks(now=start)
    services.pause_schedule(name="every-minute", now=start)
    assert services.enqueue_due_ticks(now=start + timedelta(minutes=5)).created == 0


@pytest.fixture
def limited_user():
    user = get_user_model().objects.create_user("viewer", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="view_job"))
    return user


@pytest.fixture
def production_permissions(monkeypatch):
    # What production's DEFAULT_PERMISSION_CLASSES gives every view.
    for view in (
        views.QueueListView,
        views.QueuePauseView,
        views.QueueDetailView,
        views.ScheduleListView,
        views.ScheduleTriggerView,
    ):
        monkeypatch.setattr(view, "permission_classes", [JobModelPermissions])


@pytest.mark.usefixtures("production_permissions", "schedules")
def test_viewing_needs_view_job_and_changing_needs_change_job(api, limited_user):
    assert api.get("/api/queues/").status_code in {401, 403}
    api.force_authenticate(limited_user)
    assert api.get("/api/queues/").status_code == 200
    assert api.get("/api/schedules/").status_code == 200
    assert post(api, "/api/queues/emails/pause/").status_code == 403
    assert patch(api, "/api/queues/emails/", {"concurrency_limit": 1}).status_code == 403
    assert post(api, "/api/schedules/nightly/trigger/").status_code == 403
    limited_user.user_permissions.add(Permission.objects.get(codename="change_job"))
    api.force_authenticate(get_user_model().objects.get(pk=limited_user.pk))
    assert post(api, "/api/queues/emails/pause/").status_code == 200


def test_metrics_show_paused_queues_limits_saturation_and_schedule_lag(api, schedules):
    services.pause_queue(queue="emails")
    services.set_queue_limits(queue="reports", concurrency_limit=4)
    start = timezone.now() - timedelta(minutes=5)
    services.enqueue_due_ticks(now=start)  # seen 5 minutes ago, not since: lagging
    body = api.get("/metrics").content.decode()
    assert 'jobqueue_queue_paused{queue="emails"} 1.0' in body
    assert 'jobqueue_queue_concurrency_limit{queue="reports"} 4.0' in body
    assert 'jobqueue_queue_saturation{queue="reports"} 0.0' in body
    lag = [line for line in body.splitlines() if 'schedule="every-minute"' in line]
    assert lag and float(lag[0].split()[-1]) > 60


def _failed_with_key(key: str) -> Job:
    job = queued_job(unique_key=key, max_attempts=1)
    claimed = services.claim_next_job(worker_id=WORKER)
    assert claimed is not None and claimed.id == job.pk
    services.fail_job(job_id=job.pk, worker_id=WORKER, attempt=1, error="boom")
    return job


def test_retrying_a_job_whose_unique_key_is_held_is_a_409_naming_the_holder(api):
    failed = _failed_with_key("nightly")
    holder = queued_job(unique_key="nightly")
    response = post(api, f"/api/jobs/{failed.pk}/retry/")
    assert response.status_code == 409
    body = response.json()
    assert (body["status"], body["unique_key"], body["held_by"]) == (
        "failed",
        "nightly",
        str(holder.pk),
    )
    assert str(holder.pk) in body["detail"]
    assert Job.objects.get(pk=failed.pk).status == Job.Status.FAILED


def test_a_bulk_retry_with_a_held_key_retries_the_others_and_reports_it(api):
    held = _failed_with_key("nightly")
    other = _failed_with_key("weekly")
    holder = queued_job(unique_key="nightly")
    response = post(api, "/api/jobs/retry/", {"ids": [str(held.pk), str(other.pk)]})
    assert response.status_code == 200
    assert response.json() == {
        "retried": 1,
        "held": 1,
        "held_jobs": [{"id": str(held.pk), "unique_key": "nightly", "held_by": str(holder.pk)}],
    }
    assert Job.objects.get(pk=other.pk).status == Job.Status.QUEUED
