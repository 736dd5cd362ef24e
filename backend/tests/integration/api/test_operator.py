"""What the job page, the header search and the workers page read: a job's
attempts, the job detail's added fields, short-id lookups, the heartbeat filter of the
event lists, and live workers from their presence rows."""

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from jobs import services
from jobs.drivers import Owner
from jobs.models import Job
from tests.factories import WORKER, cancelled_job, failed_job, queued_job, running_job

pytestmark = pytest.mark.django_db

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "handlers.py", line 3, in fail\n'
    '    raise ValueError("boom")\n'
    "ValueError: boom\n"
)
RAISED = services.ErrorDetails(exception_class="builtins.ValueError", traceback=TRACEBACK)


@pytest.fixture
def api() -> APIClient:
    return APIClient()


def owner(job, attempt=None):
    return {"job_id": job.pk, "worker_id": WORKER, "attempt": attempt or job.attempts}


def claim(job, *, now=None, worker_id=WORKER):
    claimed = services.claim_next_job(worker_id=worker_id, queue=job.queue, now=now)
    assert claimed is not None and claimed.pk == job.pk
    return claimed


def attempts_of(api, job):
    response = api.get(f"/api/jobs/{job.pk}/attempts/")
    assert response.status_code == 200, response.content
    return response.json()


# --- Attempts ---------------------------------------------------------------------------


def test_attempts_list_each_claim_with_its_outcome_exception_and_traceback(api):
    start = timezone.now() - timedelta(minutes=5)
    job = queued_job("demo.fail", max_attempts=2, now=start, queue="attempts")
    claim(job, now=start + timedelta(seconds=2))
    services.fail_job(
        **owner(job, 1), error="boom", details=RAISED, now=start + timedelta(seconds=3)
    )
    claim(job, now=start + timedelta(minutes=1))
    services.complete_job(**owner(job, 2), now=start + timedelta(minutes=1, seconds=1))
    first, second = attempts_of(api, job)
    assert (first["round"], first["attempt"], first["number"]) == (1, 1, 1)
    assert (first["worker_id"], first["outcome"], first["error"]) == (WORKER, "retried", "boom")
    assert (first["wait_ms"], first["run_ms"]) == (2000, 1000)
    assert first["exception_class"] == "ValueError"
    assert first["traceback"] == TRACEBACK and "\n" in first["traceback"]
    assert first["queued_at"] is not None and first["finished_at"] is not None
    assert (second["number"], second["outcome"], second["error"]) == (2, "succeeded", None)
    assert second["traceback"] is None


def test_a_manual_retry_starts_a_new_round_of_attempts(api):
    job = failed_job()
    services.retry_job(job_id=job.pk)
    claim(job)
    attempts = attempts_of(api, job)
    assert [(a["round"], a["attempt"], a["number"], a["outcome"]) for a in attempts] == [
        (1, 1, 1, "failed"),
        (2, 1, 2, "running"),
    ]


def test_a_timeout_and_an_expired_lease_are_outcomes_of_their_own(api):
    now = timezone.now()
    job = queued_job("demo.hang", max_attempts=3, queue="ends", now=now - timedelta(minutes=9))
    claim(job, now=now - timedelta(minutes=8))
    services.time_out_job(**owner(job, 1), timeout_seconds=10, now=now - timedelta(minutes=7))
    services.claim_next_job(worker_id=WORKER, queue="ends", now=now - timedelta(minutes=2))
    services.cleanup_expired_jobs(now=now)
    assert [a["outcome"] for a in attempts_of(api, job)] == ["timed_out", "lease_expired"]


def test_a_job_cancelled_before_it_ran_has_no_attempt(api):
    assert attempts_of(api, cancelled_job()) == []


def test_a_released_claim_reads_in_the_timeline_and_is_no_attempt(api):
    """A worker shutting down gives back a claim whose handler never started:
    the timeline shows the claim and its release, the attempts only the claim that ran."""
    start = timezone.now() - timedelta(minutes=5)
    job = queued_job(queue="released", now=start)
    rows = services.claim_jobs(
        worker_ids=["worker-a"], queue="released", now=start + timedelta(seconds=1)
    ).claimed
    assert [row.id for row in rows] == [job.pk]
    released = services.release_unstarted_jobs(
        owners=[Owner(job.pk, "worker-a", 1)], now=start + timedelta(seconds=2)
    )
    assert [row.id for row in released] == [job.pk]
    claim(job, now=start + timedelta(seconds=3))
    services.complete_job(**owner(job, 1), now=start + timedelta(seconds=5))

    response = api.get(f"/api/jobs/{job.pk}/events/")
    assert response.status_code == 200, response.content
    events = response.json()
    assert [(e["type"], e["attempt"], e["worker_id"]) for e in events] == [
        ("created", 0, None),
        ("claimed", 1, "worker-a"),
        ("released", 1, "worker-a"),
        ("claimed", 1, WORKER),
        ("succeeded", 1, WORKER),
    ]
    assert events[2]["message"] == "Released before it started; the attempt is not spent"
    assert events[2]["data"] == {}

    (attempt,) = attempts_of(api, job)
    assert (attempt["round"], attempt["attempt"], attempt["number"]) == (1, 1, 1)
    assert (attempt["worker_id"], attempt["outcome"]) == (WORKER, "succeeded")
    # Due since its creation: the wait runs to the claim that ran, the run from it.
    assert (attempt["wait_ms"], attempt["run_ms"]) == (3000, 2000)
    detail = api.get(f"/api/jobs/{job.pk}/").json()
    assert (detail["attempts"], detail["total_attempts"]) == (1, 1)


def test_the_event_feed_filters_on_the_released_type(api):
    job = queued_job(queue="released")
    queued_job(queue="released")  # claimed after the release, and not released
    services.claim_jobs(worker_ids=["worker-a"], queue="released")
    services.release_unstarted_jobs(owners=[Owner(job.pk, "worker-a", 1)])
    services.claim_jobs(worker_ids=["worker-a", "worker-b"], queue="released")
    for query in ({"type": "released"}, {"type": "released", "job_id": str(job.pk)}):
        response = api.get("/api/job-events/", query)
        assert response.status_code == 200, response.content
        (event,) = response.json()["results"]
        assert (event["type"], event["job"], event["worker_id"]) == (
            "released",
            str(job.pk),
            "worker-a",
        )


def test_attempts_of_an_unknown_job_are_a_404(api):
    response = api.get(f"/api/jobs/{uuid.uuid4()}/attempts/")
    assert response.status_code == 404 and "detail" in response.json()


# --- Job detail -------------------------------------------------------------------------


def test_the_detail_counts_attempts_over_rounds_and_shows_the_last_traceback(api):
    job = running_job("demo.fail", max_attempts=1)
    services.fail_job(**owner(job), error="boom", details=RAISED)
    services.retry_job(job_id=job.pk)
    claim(job)
    body = api.get(f"/api/jobs/{job.pk}/").json()
    assert (body["attempts"], body["total_attempts"], body["round"]) == (1, 2, 2)
    assert body["last_exception_class"] == "ValueError"
    assert body["last_traceback"] == TRACEBACK


@pytest.mark.parametrize(
    ("create", "worker_default", "expected"),
    [
        ({"timeout_seconds": 7}, 0, (7, "job")),
        ({}, 0, (10, "type")),  # demo.hang's own default
        ({}, 0, (None, None)),
        ({}, 30, (30, "worker")),
    ],
    ids=["job", "type", "none", "worker"],
)
def test_the_detail_gives_the_effective_timeout_and_its_source(
    api, settings, create, worker_default, expected
):
    settings.JOB_WORKER_TIMEOUT_SECONDS = worker_default
    job_type = "demo.hang" if expected[1] == "type" else "demo.success"
    job = queued_job(job_type, **create)
    body = api.get(f"/api/jobs/{job.pk}/").json()
    assert (body["effective_timeout_seconds"], body["timeout_source"]) == expected


# --- Short ids --------------------------------------------------------------------------


def lookup(api, q):
    return api.get("/api/jobs/lookup/", {"q": q})


def test_lookup_finds_a_job_by_id_key_or_unique_prefix(api):
    job = queued_job(idempotency_key="order-42")
    by_id = lookup(api, str(job.pk))
    assert by_id.status_code == 200
    assert by_id.json()["match"] == "id" and by_id.json()["job"]["id"] == str(job.pk)
    assert lookup(api, "order-42").json()["match"] == "idempotency_key"
    short = lookup(api, str(job.pk)[:8])
    assert short.status_code == 200, short.content
    assert short.json()["match"] == "id_prefix" and short.json()["job"]["id"] == str(job.pk)
    assert lookup(api, str(job.pk)[:13].upper()).json()["match"] == "id_prefix"


def test_a_prefix_of_several_ids_is_a_400_that_asks_for_more(api):
    # The services draw ids at random: two that share a prefix are written directly.
    for suffix in ("1" * 24, "2" * 24):
        Job.objects.create(id=uuid.UUID("fe7c1234" + suffix), type="demo.success")
    response = lookup(api, "fe7c1234")
    assert response.status_code == 400
    assert response.json() == {"q": ["'fe7c1234' matches 2 jobs: type more characters."]}
    assert lookup(api, "fe7c12341").json()["match"] == "id_prefix"


def test_lookup_of_nothing_known_is_a_json_404(api):
    response = lookup(api, "0badc0de")
    assert response.status_code == 404
    assert response.json() == {
        "detail": "No job has the id, id prefix or idempotency key '0badc0de'."
    }


def test_a_prefix_shorter_than_eight_hex_digits_is_no_prefix(api):
    job = queued_job()
    assert lookup(api, str(job.pk)[:7]).status_code == 404


def test_the_prefix_is_read_as_a_primary_key_range_not_a_text_match(api):
    job = queued_job()
    with CaptureQueriesContext(connection) as queries:
        assert lookup(api, str(job.pk)[:8]).status_code == 200
    sql = " ".join(query["sql"] for query in queries.captured_queries).upper()
    assert "LIKE" not in sql and "::TEXT" not in sql
    assert '"JOBS_JOB"."ID" >=' in sql and '"JOBS_JOB"."ID" <=' in sql


def test_the_event_feed_takes_a_short_job_id(api):
    job, other = queued_job(), queued_job()
    response = api.get("/api/job-events/", {"job_id": str(job.pk)[:8]})
    assert response.status_code == 200
    assert {event["job"] for event in response.json()["results"]} == {str(job.pk)}
    assert other.pk != job.pk


def test_the_event_feed_with_an_unknown_short_job_id_is_empty(api):
    queued_job()
    response = api.get("/api/job-events/", {"job_id": "00000000"})
    assert response.status_code == 200 and response.json()["results"] == []


@pytest.mark.parametrize("job_id", ["abc", "zzzzzzzzzz"])
def test_the_event_feed_refuses_a_job_id_that_cannot_be_one(api, job_id):
    response = api.get("/api/job-events/", {"job_id": job_id})
    assert response.status_code == 400 and "job_id" in response.json()


# --- Heartbeat events -------------------------------------------------------------------


def heartbeating_job():
    job = running_job()
    services.renew_lease(**owner(job))
    services.record_progress(**owner(job), message="half way")
    return job


def test_the_timeline_leaves_out_heartbeats_when_asked(api):
    job = heartbeating_job()
    every = [e["type"] for e in api.get(f"/api/jobs/{job.pk}/events/").json()]
    assert every == ["created", "claimed", "lease_renewed", "progress"]
    response = api.get(f"/api/jobs/{job.pk}/events/", {"heartbeats": "exclude"})
    assert [e["type"] for e in response.json()] == ["created", "claimed"]


def test_the_feed_leaves_out_heartbeats_when_asked(api):
    heartbeating_job()
    types = [
        e["type"] for e in api.get("/api/job-events/", {"heartbeats": "exclude"}).json()["results"]
    ]
    assert types == ["claimed", "created"]
    included = api.get("/api/job-events/", {"heartbeats": "include"}).json()["results"]
    assert len(included) == 4


@pytest.mark.parametrize("path", ["/api/job-events/", "/api/jobs/{id}/events/"])
def test_an_unknown_heartbeats_value_is_a_field_error(api, path):
    job = queued_job()
    response = api.get(path.format(id=job.pk), {"heartbeats": "hide"})
    assert response.status_code == 400 and "heartbeats" in response.json()


# --- Workers ----------------------------------------------------------------------------

THREADS = ["box:4242:thread-1:00c0ffee", "box:4242:thread-2:00beef00"]


def present(worker_id="box:4242", *, threads=THREADS, seen=None, interval=10.0):
    host, pid = worker_id.rsplit(":", 1)
    services.record_worker_presence(
        worker_id=worker_id,
        hostname=host,
        pid=int(pid),
        queues=["*"],
        threads_configured=2,
        threads=threads,
        heartbeat_interval_seconds=interval,
        started_at=timezone.now() - timedelta(minutes=1),
        now=seen,
    )


def test_a_live_idle_worker_is_listed_with_its_threads(api):
    present()
    (process,) = api.get("/api/workers/").json()["processes"]
    assert (process["worker_id"], process["hostname"], process["pid"]) == ("box:4242", "box", 4242)
    assert (process["threads_configured"], process["threads_live"], process["threads_busy"]) == (
        2,
        2,
        0,
    )
    assert process["queues"] == ["*"] and process["heartbeat_interval_seconds"] == 10.0
    assert [t["worker_id"] for t in process["threads"]] == THREADS
    assert all(t["job"] is None for t in process["threads"])


def test_a_busy_thread_shows_its_job(api):
    present()
    job = running_job(worker_id=THREADS[1])
    (process,) = api.get("/api/workers/").json()["processes"]
    assert process["threads_busy"] == 1
    busy = process["threads"][1]["job"]
    assert (busy["id"], busy["type"], busy["attempt"]) == (str(job.pk), job.type, 1)
    assert busy["started_at"] is not None and busy["lease_overdue"] is False


def test_a_worker_silent_for_one_heartbeat_interval_is_not_listed(api):
    present(seen=timezone.now() - timedelta(seconds=11), interval=10.0)
    present("other:7", seen=timezone.now() - timedelta(seconds=9), interval=10.0)
    assert [p["worker_id"] for p in api.get("/api/workers/").json()["processes"]] == ["other:7"]


def test_a_worker_that_stopped_cleanly_is_gone_at_once(api):
    present()
    assert services.remove_worker_presence(worker_id="box:4242") == 1
    assert api.get("/api/workers/").json()["processes"] == []


def test_workers_cost_three_queries_however_many(api):
    for pid in range(5):
        present(f"box:{pid}", threads=[f"box:{pid}:thread-1:0000000{pid}"])
        running_job(worker_id=f"box:{pid}:thread-1:0000000{pid}")
    with CaptureQueriesContext(connection) as queries:
        body = api.get("/api/workers/").json()
    assert len(body["processes"]) == 5
    assert len(queries.captured_queries) <= 4  # presence, running jobs, rollup (+ session)


# --- The job list's order and started_at --------------------------------------------------


def listed(api, **params):
    response = api.get("/api/jobs/", params)
    assert response.status_code == 200, response.content
    return response.json()["results"]


def test_the_list_is_newest_first_by_default_and_sorts_by_the_field_asked(api):
    now = timezone.now()
    old = queued_job("demo.success", priority=1, now=now - timedelta(minutes=3))
    mid = queued_job("demo.fail", priority=9, now=now - timedelta(minutes=2))
    new = queued_job("demo.hang", priority=5, now=now - timedelta(minutes=1))
    assert [j["id"] for j in listed(api)] == [str(new.pk), str(mid.pk), str(old.pk)]
    assert [j["id"] for j in listed(api, ordering="created_at")] == [
        str(old.pk),
        str(mid.pk),
        str(new.pk),
    ]
    assert [j["priority"] for j in listed(api, ordering="-priority")] == [9, 5, 1]
    assert [j["type"] for j in listed(api, ordering="type")] == [
        "demo.fail",
        "demo.hang",
        "demo.success",
    ]


def test_the_list_gives_started_at_and_sorts_by_it_with_never_started_last(api):
    now = timezone.now()
    first = running_job(now=now - timedelta(minutes=5))
    second = running_job(now=now - timedelta(minutes=1))
    waiting = queued_job()
    items = listed(api, ordering="-started_at")
    assert [j["id"] for j in items] == [str(second.pk), str(first.pk), str(waiting.pk)]
    assert items[2]["started_at"] is None
    started = listed(api, ordering="started_at")
    assert [j["id"] for j in started] == [str(first.pk), str(second.pk), str(waiting.pk)]
    assert started[0]["started_at"] == api.get(f"/api/jobs/{first.pk}/").json()["started_at"]


def test_the_list_sorts_by_finished_at_with_unfinished_last(api):
    now = timezone.now()
    early = failed_job(now=now - timedelta(minutes=4))
    late = failed_job(now=now - timedelta(minutes=2))
    waiting = queued_job()
    assert [j["id"] for j in listed(api, ordering="-finished_at")] == [
        str(late.pk),
        str(early.pk),
        str(waiting.pk),
    ]


@pytest.mark.parametrize("ordering", ["status", "-payload", "id;drop"])
def test_an_unknown_ordering_is_a_field_error(api, ordering):
    response = api.get("/api/jobs/", {"ordering": ordering})
    assert response.status_code == 400 and "ordering" in response.json()


# --- One time-zone story ------------------------------------------------------------------


def test_event_data_times_read_like_the_jobs_own_fields(api, settings):
    job = running_job("demo.fail", max_attempts=2)
    services.fail_job(**owner(job), error="boom")
    body = api.get(f"/api/jobs/{job.pk}/").json()
    events = {e["type"]: e for e in api.get(f"/api/jobs/{job.pk}/events/").json()}
    assert events["retry_scheduled"]["data"]["available_at"] == body["available_at"]
    offset = body["available_at"][-6:]
    assert offset == events["claimed"]["created_at"][-6:]
    assert events["claimed"]["data"]["locked_until"].endswith(offset)


# --- The API's index ----------------------------------------------------------------------


def test_the_index_lists_every_endpoint_and_the_schema_without_credentials(settings):
    settings.DEBUG = False
    response = APIClient().get("/api/")
    assert response.status_code == 200
    body = response.json()
    assert body["job-list"] == "http://testserver/api/jobs/"
    assert body["job-lookup"] == "http://testserver/api/jobs/lookup/"
    assert body["worker-list"] == "http://testserver/api/workers/"
    assert body["schema"] == "http://testserver/api/schema/"
    assert body["docs"] == "http://testserver/api/docs/"


def test_the_api_docs_name_the_time_zone(api, settings):
    schema = api.get("/api/schema/?format=json").json()
    assert f"`{settings.TIME_ZONE}` here" in schema["info"]["description"]
