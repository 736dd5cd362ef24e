"""The Unfold admin: read-only views of jobs and events, and the retry action."""

import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.messages import get_messages
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from jobs import services
from jobs.models import Job, JobEvent
from tests.factories import (
    WORKER,
    failed_job,
    fresh,
    queued_job,
    running_job,
    succeeded_job,
    workflow,
)

pytestmark = pytest.mark.django_db

JOBS_URL = "/admin/jobs/job/"
EVENTS_URL = "/admin/jobs/jobevent/"


def run_action(client: Client, jobs: list[Job], action: str = "retry_selected_jobs", **extra):
    return client.post(
        JOBS_URL,
        {"action": action, "_selected_action": [str(job.pk) for job in jobs], **extra},
    )


def test_retry_action_asks_first_naming_how_many_jobs_it_will_retry(admin_client):
    jobs = [failed_job(), failed_job(), succeeded_job()]

    response = run_action(admin_client, jobs)

    assert response.status_code == 200
    page = response.content.decode()
    assert "Retry 2 of the 3 selected job(s)?" in page
    assert all(fresh(job).status != Job.Status.QUEUED for job in jobs)


def test_retry_action_requeues_failed_jobs_and_reports_retried_and_skipped(admin_client):
    first, second = failed_job(), failed_job()
    done = succeeded_job()
    queued = queued_job("demo.slow")

    response = run_action(admin_client, [first, second, done, queued], confirm="yes")

    assert response.status_code == 302
    texts = [str(message) for message in get_messages(response.wsgi_request)]
    assert texts == ["Retried 2 job(s); skipped 2 that were neither failed nor cancelled."]
    for job in (first, second):
        job = fresh(job)
        assert job.status == Job.Status.QUEUED
        assert job.attempts == 0
        assert job.events.order_by("-id").first().type == JobEvent.Type.MANUAL_RETRY
    done = fresh(done)
    queued = fresh(queued)
    assert done.status == Job.Status.SUCCEEDED
    assert queued.status == Job.Status.QUEUED
    assert not JobEvent.objects.filter(
        job__in=[done, queued], type=JobEvent.Type.MANUAL_RETRY
    ).exists()
    # Who asked is in each event, as through the API.
    retried = JobEvent.objects.filter(job=first, type=JobEvent.Type.MANUAL_RETRY).get()
    assert retried.data["actor"] == {"user": "admin", "via": "admin"}


def test_retry_action_needs_the_change_permission(client):
    job = failed_job()
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_job"))
    client.force_login(viewer)

    assert client.get(JOBS_URL).status_code == 200
    run_action(client, [job], confirm="yes")

    job = fresh(job)
    assert job.status == Job.Status.FAILED


def test_job_list_shows_every_job_with_attempts_of_max(admin_client):
    failed = failed_job()
    queued = queued_job("demo.slow", idempotency_key="nightly-report")

    page = admin_client.get(JOBS_URL).content.decode()
    assert str(failed.pk) in page and str(queued.pk) in page
    assert "1/1" in page  # attempts/max of the failed job


@pytest.mark.parametrize(
    ("query", "shown"), [({"status__exact": "failed"}, "failed"), ({"type": "demo.slow"}, "queued")]
)
def test_job_list_filters_by_status_and_by_type(admin_client, query, shown):
    jobs = {"failed": failed_job(), "queued": queued_job("demo.slow")}
    hidden = "queued" if shown == "failed" else "failed"

    page = admin_client.get(JOBS_URL, query).content.decode()

    assert str(jobs[shown].pk) in page and str(jobs[hidden].pk) not in page


@pytest.mark.parametrize("term", ["nightly-report", "demo.slow", "id"])
def test_job_search_by_idempotency_key_type_and_id(admin_client, term):
    failed = failed_job()
    queued = queued_job("demo.slow", idempotency_key="nightly-report")
    query = str(queued.pk) if term == "id" else term

    page = admin_client.get(JOBS_URL, {"q": query}).content.decode()

    assert str(queued.pk) in page
    assert str(failed.pk) not in page


def test_job_page_is_read_only_and_shows_the_events(admin_client):
    job = failed_job()
    url = f"{JOBS_URL}{job.pk}/change/"

    page = admin_client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Job created" in html and "boom" in html  # the created and failed events
    assert 'name="status"' not in html and 'name="priority"' not in html

    response = admin_client.post(url, {"status": "queued", "priority": 1})
    assert response.status_code == 403
    job = fresh(job)
    assert job.status == Job.Status.FAILED


def test_job_page_shows_the_metadata_and_the_list_finds_jobs_by_it(admin_client):
    job = queued_job(metadata={"request_id": "req-7f3a", "tenant": "acme"})
    other = queued_job(metadata={"request_id": "req-0000"})

    html = admin_client.get(f"{JOBS_URL}{job.pk}/change/").content.decode()
    assert "Metadata" in html
    assert "request_id" in html and "req-7f3a" in html and "acme" in html
    assert 'name="metadata"' not in html  # read-only like every field

    listing = admin_client.get(JOBS_URL, {"q": "req-7f3a"}).content.decode()
    assert str(job.pk) in listing and str(other.pk) not in listing


def test_jobs_cannot_be_added_or_deleted_in_the_admin(admin_client):
    job = failed_job()
    assert admin_client.get(f"{JOBS_URL}add/").status_code == 403
    assert admin_client.post(f"{JOBS_URL}{job.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Job.objects.filter(pk=job.pk).exists()


def test_event_list_filters_by_type(admin_client):
    failed_job()
    listing = admin_client.get(EVENTS_URL, {"type__exact": "failed"}).content.decode()
    assert "boom" in listing and "Job created" not in listing


def test_events_are_append_only_in_the_admin(admin_client):
    job = failed_job()
    event = job.events.order_by("id").first()

    assert admin_client.get(f"{EVENTS_URL}{event.pk}/change/").status_code == 200
    assert admin_client.get(f"{EVENTS_URL}add/").status_code == 403
    changed = admin_client.post(f"{EVENTS_URL}{event.pk}/change/", {"message": "edited"})
    assert changed.status_code == 403
    deleted = admin_client.post(f"{EVENTS_URL}{event.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 403
    event.refresh_from_db()
    assert event.message == "Job created"


def busy_failed_job(progress_events: int) -> Job:
    job = running_job("demo.fail", max_attempts=1)
    for step in range(progress_events):
        services.record_progress(job_id=job.pk, worker_id=WORKER, attempt=1, message=f"{step}")
    services.fail_job(job_id=job.pk, worker_id=WORKER, attempt=1, error="boom")
    return job


def queries_for(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_job_page_runs_the_same_queries_for_few_and_many_events(admin_client):
    small = busy_failed_job(2)
    large = busy_failed_job(80)
    admin_client.get(f"{JOBS_URL}{small.pk}/change/")  # warm process-wide caches
    few = queries_for(admin_client, f"{JOBS_URL}{small.pk}/change/")
    many = queries_for(admin_client, f"{JOBS_URL}{large.pk}/change/")
    assert many == few


def test_job_and_event_lists_run_at_most_ten_queries(admin_client):
    busy_failed_job(2)
    busy_failed_job(80)
    assert queries_for(admin_client, JOBS_URL) <= 10
    assert queries_for(admin_client, EVENTS_URL) <= 10


@pytest.mark.parametrize("term", ["job-id", "boom", "not-a-uuid"])
def test_event_search_by_job_id_and_message(admin_client, term):
    job = failed_job()
    other = queued_job("demo.slow")
    query = str(job.pk) if term == "job-id" else term

    response = admin_client.get(EVENTS_URL, {"q": query})

    assert response.status_code == 200
    page = response.content.decode()
    assert str(other.pk) not in page
    if term != "not-a-uuid":
        assert str(job.pk) in page


def test_cancel_action_asks_then_cancels_queued_and_asks_running_jobs_to_stop(admin_client):
    queued, running, done = queued_job(), running_job(), succeeded_job()

    page = run_action(admin_client, [queued, running, done], "cancel_selected_jobs")
    assert "Cancel 2 of the 3 selected job(s)?" in page.content.decode()
    assert fresh(queued).status == Job.Status.QUEUED

    response = run_action(
        admin_client, [queued, running, done], "cancel_selected_jobs", confirm="yes"
    )
    texts = [str(message) for message in get_messages(response.wsgi_request)]
    assert texts == ["Cancelled 1 queued job(s); asked 1 running job(s) to stop."]
    assert fresh(queued).status == Job.Status.CANCELLED
    assert fresh(running).cancel_requested_at is not None
    assert fresh(done).status == Job.Status.SUCCEEDED


def test_every_time_in_the_admin_says_its_zone(admin_client, settings):
    job = failed_job()
    zone = f"+03:30 ({settings.TIME_ZONE})" if settings.TIME_ZONE == "Asia/Tehran" else ""
    pages = {
        "job list": "/admin/jobs/job/",
        "job page": f"/admin/jobs/job/{job.pk}/change/",
        "event list": "/admin/jobs/jobevent/",
    }
    for name, path in pages.items():
        page = admin_client.get(path).content.decode()
        assert f"({settings.TIME_ZONE})" in page, name
        assert zone in page, name
    job_page = admin_client.get(pages["job page"]).content.decode()
    # created, updated, finished and available at, and each event's time: all zoned.
    assert job_page.count(f"({settings.TIME_ZONE})") >= 4 + 3


def test_the_job_search_finds_jobs_by_any_key_and_by_error_text(admin_client):
    keyed = queued_job(concurrency_key="customer:1234")
    unique = queued_job(unique_key="invoice-778")
    failing = failed_job(error="card declined by issuer")
    queued_job()
    for query, job in [("customer:1234", keyed), ("invoice-778", unique), ("declined", failing)]:
        response = admin_client.get(JOBS_URL, {"q": query})
        assert response.status_code == 200
        assert [row.pk for row in response.context["cl"].result_list] == [job.pk], query


def test_job_page_links_its_parents_its_children_and_its_workflow(admin_client):
    created = workflow(
        {"ref": "a"}, {"ref": "b", "depends_on": ("a",)}, {"ref": "c", "depends_on": ("b",)}
    )
    a, b, c = created.jobs
    html = admin_client.get(f"{JOBS_URL}{b.id}/change/").content.decode()
    assert f'href="{JOBS_URL}{a.id}/change/"' in html
    assert f'href="{JOBS_URL}{c.id}/change/"' in html
    assert f'href="/admin/jobs/workflow/{created.id}/change/"' in html


def test_job_page_shows_the_first_children_and_how_many_more(admin_client, monkeypatch):
    monkeypatch.setattr("jobs.admin.RELATIVES_SHOWN", 2)
    created = workflow({"ref": "p"}, *({"ref": f"m{n}", "depends_on": ("p",)} for n in range(3)))
    html = admin_client.get(f"{JOBS_URL}{created.jobs[0].id}/change/").content.decode()
    assert "and 1 more" in html


def test_workflow_page_links_its_jobs_by_ref(admin_client):
    created = workflow({"ref": "extract"}, {"ref": "load", "depends_on": ("extract",)})
    html = admin_client.get(f"/admin/jobs/workflow/{created.id}/change/").content.decode()
    for row in created.jobs:
        assert f'href="{JOBS_URL}{row.id}/change/">{row.ref}</a>' in html
