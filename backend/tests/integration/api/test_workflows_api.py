"""Workflows over REST: ``POST /api/workflows/`` writes a workflow all or nothing and
answers its detail, ``GET /api/workflows/`` lists them with their counts and state, and
the job shapes name their workflow."""

import json
import uuid

import pytest
from rest_framework.test import APIClient

from jobs import services
from jobs.limits import WORKFLOW_JOBS_MAX
from jobs.models import Job, JobEvent, Workflow
from tests.factories import WORKER, fresh, workflow

pytestmark = pytest.mark.django_db

COUNT_KEYS = {"waiting", "queued", "running", "succeeded", "failed", "cancelled"}
SUMMARY_KEYS = {"id", "name", "created_at", "jobs", "counts", "state"}
MEMBER_KEYS = {
    "id",
    "ref",
    "type",
    "status",
    "queue",
    "attempts",
    "max_attempts",
    "created_at",
    "finished_at",
    "on_parent_failure",
}


@pytest.fixture
def api() -> APIClient:
    return APIClient()


def post(api: APIClient, body: object):
    return api.post("/api/workflows/", data=json.dumps(body), content_type="application/json")


def etl() -> dict:
    return {
        "name": "etl",
        "jobs": [
            {"ref": "extract", "type": "demo.success", "payload": {"n": 1}},
            {"ref": "transform", "type": "demo.success", "depends_on": ["extract"]},
            {
                "ref": "load",
                "type": "demo.success",
                "depends_on": ["transform"],
                "on_parent_failure": "run",
            },
        ],
    }


def test_create_answers_201_with_the_detail_in_creation_order(api):
    response = post(api, etl())
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == SUMMARY_KEYS | {"members", "members_truncated", "edges"}
    assert body["name"] == "etl"
    assert [member["ref"] for member in body["members"]] == ["extract", "transform", "load"]
    assert set(body["members"][0]) == MEMBER_KEYS
    assert [member["status"] for member in body["members"]] == ["queued", "waiting", "waiting"]
    assert [member["on_parent_failure"] for member in body["members"]] == [None, "cancel", "run"]
    ids = {member["ref"]: member["id"] for member in body["members"]}
    assert body["edges"] == [
        {"parent": ids["extract"], "child": ids["transform"]},
        {"parent": ids["transform"], "child": ids["load"]},
    ]
    assert body["members_truncated"] is False
    assert (body["jobs"], body["state"]) == (3, "active")
    assert body["counts"] == dict.fromkeys(COUNT_KEYS, 0) | {"queued": 1, "waiting": 2}


def test_each_job_gets_a_created_event(api):
    post(api, etl())
    assert JobEvent.objects.filter(type="created").count() == 3


def test_a_cycle_is_a_400_naming_the_field_and_nothing_is_written(api):
    body = {
        "jobs": [
            {"ref": "a", "type": "demo.success", "depends_on": ["b"]},
            {"ref": "b", "type": "demo.success", "depends_on": ["a"]},
        ]
    }
    response = post(api, body)
    assert response.status_code == 400
    (field,) = response.json()
    assert field in {"jobs[0].depends_on", "jobs[1].depends_on"}
    assert response.json()[field][0].startswith("Cycle: ")
    assert not Workflow.objects.exists() and not Job.objects.exists()


def test_an_unknown_ref_is_a_400_naming_the_item(api):
    body = etl()
    body["jobs"][2]["depends_on"] = ["nowhere"]
    response = post(api, body)
    assert response.status_code == 400
    assert list(response.json()) == ["jobs[2].depends_on"]
    assert not Job.objects.exists()


def test_a_ref_used_twice_is_a_400(api):
    body = {"jobs": [{"ref": "a", "type": "demo.success"}, {"ref": "a", "type": "demo.success"}]}
    response = post(api, body)
    assert response.status_code == 400
    assert response.json() == {"jobs[1].ref": ["Also used by jobs[0]."]}


def test_a_bad_item_field_is_named_as_the_bulk_create_names_it(api):
    body = etl()
    body["jobs"][1]["priority"] = "high"
    body["jobs"][2]["type"] = "no.such.type"
    response = post(api, body)
    assert response.status_code == 400
    assert set(response.json()) == {"jobs[1].priority", "jobs[2].type"}
    assert not Job.objects.exists()


def test_unique_key_is_not_a_field_of_a_workflows_job(api):
    body = {"jobs": [{"type": "demo.success", "unique_key": "k"}]}
    response = post(api, body)
    assert response.status_code == 400
    assert response.json() == {"jobs[0].unique_key": ["Unknown field."]}


def test_more_jobs_than_the_bound_are_a_400(api):
    body = {"jobs": [{"type": "demo.success"}] * (WORKFLOW_JOBS_MAX + 1)}
    response = post(api, body)
    assert response.status_code == 400
    assert list(response.json()) == ["jobs"]


def test_an_unknown_key_of_the_body_is_a_400(api):
    response = post(api, {"jobs": [{"type": "demo.success"}], "priority": 3})
    assert response.status_code == 400
    assert response.json() == {"priority": ["Unknown field."]}


def test_a_job_may_wait_for_an_existing_job_by_id(api):
    outside, _ = services.create_job(type="demo.success")
    body = {"jobs": [{"ref": "a", "type": "demo.success", "depends_on": [str(outside.id)]}]}
    response = post(api, body)
    assert response.status_code == 201, response.content
    assert response.json()["members"][0]["status"] == "waiting"
    # The edge to a job outside the workflow is not among the members' edges.
    assert response.json()["edges"] == []


def test_the_detail_of_an_unknown_or_malformed_id_is_a_json_404(api):
    for raw in (str(uuid.uuid4()), "not-a-uuid"):
        response = api.get(f"/api/workflows/{raw}/")
        assert response.status_code == 404
        assert "does not exist" in response.json()["detail"]


def test_the_detail_shows_the_first_members_and_says_more_exist(api, monkeypatch):
    monkeypatch.setattr("jobs.selectors.workflows.WORKFLOW_MEMBERS_SHOWN", 2)
    created = workflow({"ref": "a"}, {"ref": "b", "depends_on": ("a",)}, {"ref": "c"})
    body = api.get(f"/api/workflows/{created.id}/").json()
    assert [member["ref"] for member in body["members"]] == ["a", "b"]
    assert body["members_truncated"] is True
    assert body["jobs"] == 3
    assert len(body["edges"]) == 1


def finish(ref_jobs: dict[str, Job], ref: str, *, ok: bool) -> None:
    claimed = services.claim_next_job(worker_id=WORKER)
    assert claimed is not None and claimed.pk == ref_jobs[ref].pk
    if ok:
        services.complete_job(job_id=claimed.pk, worker_id=WORKER, attempt=claimed.attempts)
    else:
        services.fail_job(
            job_id=claimed.pk, worker_id=WORKER, attempt=claimed.attempts, error="boom"
        )


def test_the_list_pages_newest_first_with_counts_and_states(api):
    done = workflow({"ref": "a"}, name="done")
    jobs = {row.ref: fresh(row) for row in done.jobs}
    finish(jobs, "a", ok=True)
    broken = workflow({"ref": "a", "max_attempts": 1}, name="broken")
    jobs = {row.ref: fresh(row) for row in broken.jobs}
    finish(jobs, "a", ok=False)
    active = workflow({"ref": "a"}, name="active")
    body = api.get("/api/workflows/").json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert [item["name"] for item in body["results"]] == ["active", "broken", "done"]
    assert [item["state"] for item in body["results"]] == ["active", "failed", "succeeded"]
    assert set(body["results"][0]) == SUMMARY_KEYS
    assert body["results"][1]["counts"]["failed"] == 1
    assert body["results"][0]["id"] == str(active.id)


@pytest.mark.parametrize("state", ["active", "succeeded", "failed", "cancelled"])
def test_the_list_filters_by_state(api, state):
    done = workflow({"ref": "a"}, name="succeeded")
    finish({row.ref: fresh(row) for row in done.jobs}, "a", ok=True)
    # A failed member outweighs a cancelled one once nothing is active.
    broken = workflow({"ref": "a", "max_attempts": 1, "priority": 100}, {"ref": "b"}, name="failed")
    finish({row.ref: fresh(row) for row in broken.jobs}, "a", ok=False)
    services.cancel_jobs(ids=[broken.jobs[1].id])
    stopped = workflow({"ref": "a"}, name="cancelled")
    services.cancel_jobs(ids=[row.id for row in stopped.jobs])
    workflow({"ref": "a"}, {"ref": "b", "depends_on": ("a",)}, name="active")
    body = api.get(f"/api/workflows/?state={state}").json()
    assert [item["name"] for item in body["results"]] == [state]
    assert body["results"][0]["state"] == state
    assert body["count"] == 1


def test_a_bad_state_or_page_is_a_400(api):
    assert api.get("/api/workflows/?state=paused").status_code == 400
    response = api.get("/api/workflows/?page=zero")
    assert response.status_code == 400
    assert list(response.json()) == ["page"]


def test_the_list_pages_by_fifty(api):
    for index in range(51):
        workflow({"ref": "a"}, name=str(index))
    first = api.get("/api/workflows/").json()
    assert (first["count"], len(first["results"])) == (51, 50)
    second = api.get("/api/workflows/?page=2").json()
    assert [item["name"] for item in second["results"]] == ["0"]


def test_the_job_list_and_detail_name_the_workflow(api):
    created = workflow({"ref": "a"})
    (row,) = created.jobs
    services.create_job(type="demo.success")
    listed = {item["id"]: item for item in api.get("/api/jobs/").json()["results"]}
    assert listed[str(row.id)]["workflow_id"] == str(created.id)
    assert [item["workflow_id"] for item in listed.values()].count(None) == 1
    assert api.get(f"/api/jobs/{row.id}/").json()["workflow_id"] == str(created.id)


def test_a_page_past_the_last_is_a_json_404(api):
    workflow({"ref": "a"})
    response = api.get("/api/workflows/?page=2")
    assert response.status_code == 404
    assert response.json() == {"detail": "Invalid page."}
