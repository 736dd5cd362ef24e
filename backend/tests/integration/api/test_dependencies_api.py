"""Job dependencies over REST: ``depends_on`` on create and bulk create, the job's parents
and dependents in its detail, the ``waiting`` status in the list filter and the stats."""

import json
import uuid

import pytest
from rest_framework.test import APIClient

from harness import metric_samples
from jobs.limits import DEPENDS_ON_MAX
from jobs.models import Job
from tests.factories import queued_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def api() -> APIClient:
    return APIClient()


def post(api: APIClient, path: str, body: object):
    return api.post(path, data=json.dumps(body), content_type="application/json")


def test_create_with_depends_on_answers_a_waiting_job(api):
    parent = queued_job()
    response = post(api, "/api/jobs/", {"type": "demo.success", "depends_on": [str(parent.pk)]})
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "waiting"


def test_the_detail_names_the_parents_and_counts_the_dependents(api):
    parent = queued_job()
    child = queued_job(depends_on=[parent.pk], on_parent_failure="run")
    detail = api.get(f"/api/jobs/{child.pk}/").json()
    assert detail["depends_on"] == [str(parent.pk)]
    assert detail["on_parent_failure"] == "run"
    assert detail["dependents"] == 0
    parent_detail = api.get(f"/api/jobs/{parent.pk}/").json()
    assert parent_detail["depends_on"] == []
    assert parent_detail["on_parent_failure"] is None
    assert parent_detail["dependents"] == 1


def test_the_list_filters_waiting_jobs_and_the_stats_count_them(api):
    parent = queued_job()
    child = queued_job(depends_on=[parent.pk])
    listed = api.get("/api/jobs/?status=waiting").json()["results"]
    assert [job["id"] for job in listed] == [str(child.pk)]
    stats = api.get("/api/jobs/stats/").json()
    assert stats["by_status"]["waiting"] == 1
    assert stats["by_status"]["queued"] == 1
    assert stats["total"] == 2


def test_the_live_jobs_metric_counts_waiting_jobs_under_their_status(api):
    parent = queued_job("demo.success")
    queued_job("demo.success", depends_on=[parent.pk])
    samples = metric_samples(api.get("/metrics").content)
    labels = (("queue", "default"), ("status", "waiting"), ("type", "demo.success"))
    assert samples[("jobqueue_jobs", labels)] == 1


@pytest.mark.parametrize(
    ("depends_on", "reason"),
    [
        (["not-a-uuid"], "Item 0: Must be a valid UUID."),
        ([str(uuid.uuid4()) for _ in range(DEPENDS_ON_MAX + 1)], str(DEPENDS_ON_MAX)),
        ("a string", "list"),
    ],
)
def test_create_refuses_a_malformed_depends_on_with_400_naming_the_field(api, depends_on, reason):
    response = post(api, "/api/jobs/", {"type": "demo.success", "depends_on": depends_on})
    assert response.status_code == 400
    assert reason in json.dumps(response.json()["depends_on"])
    assert not Job.objects.exists()


def test_create_refuses_a_parent_named_twice(api):
    parent = str(queued_job().pk)
    response = post(api, "/api/jobs/", {"type": "demo.success", "depends_on": [parent, parent]})
    assert response.status_code == 400
    assert response.json()["depends_on"] == ["A job is named twice."]


def test_create_refuses_an_unknown_parent_with_400_naming_it(api):
    unknown = str(uuid.uuid4())
    response = post(api, "/api/jobs/", {"type": "demo.success", "depends_on": [unknown]})
    assert response.status_code == 400
    assert response.json() == {"depends_on": [f"No such job: {unknown}."]}


def test_create_refuses_depends_on_with_a_unique_key(api):
    parent = str(queued_job().pk)
    body = {"type": "demo.success", "depends_on": [parent], "unique_key": "k"}
    response = post(api, "/api/jobs/", body)
    assert response.status_code == 400
    assert "unique_key" in response.json()["depends_on"][0]


def test_create_refuses_an_unknown_policy(api):
    parent = str(queued_job().pk)
    body = {"type": "demo.success", "depends_on": [parent], "on_parent_failure": "skip"}
    response = post(api, "/api/jobs/", body)
    assert response.status_code == 400
    assert "on_parent_failure" in response.json()


def test_bulk_create_with_depends_on_waits_and_names_the_bad_item(api):
    parent = str(queued_job().pk)
    good = {"type": "demo.success", "depends_on": [parent]}
    response = post(api, "/api/jobs/bulk/", {"jobs": [good, good]})
    assert response.status_code == 201, response.content
    assert Job.objects.filter(status=Job.Status.WAITING).count() == 2
    unknown = str(uuid.uuid4())
    bad = {"type": "demo.success", "depends_on": [unknown]}
    response = post(api, "/api/jobs/bulk/", {"jobs": [good, bad]})
    assert response.status_code == 400
    assert response.json() == {"jobs[1].depends_on": [f"No such job: {unknown}."]}
    assert Job.objects.filter(status=Job.Status.WAITING).count() == 2
