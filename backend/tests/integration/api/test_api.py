"""The HTTP API against the contract: shapes, status codes, pagination, filters and every
refused input (which must write nothing)."""

import base64
import itertools
import json
import re
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings as django_settings
from django.db import OperationalError
from django.utils import timezone
from rest_framework.exceptions import ValidationError
from rest_framework.test import APIClient

from jobs import handlers, selectors, services
from jobs.api.pagination import JobEventCursorPagination, JobPagination, JobTimelinePagination
from jobs.api.serializers import validated_job_create
from jobs.drivers import portable
from jobs.models import Job, JobEvent
from jobs.storable import UnstorableValue
from tests.factories import (
    WORKER,
    failed_job,
    fresh,
    queued_job,
    running_job,
    succeeded_job,
    timeline,
)
from tests.helpers import STATS_QUERIES

pytestmark = pytest.mark.django_db

# Every column, the workflow by its id; a step's ref is in the workflow's detail only.
JOB_KEYS = {field.attname for field in Job._meta.concrete_fields} - {"ref"}
# What the job detail adds to the spec's job.
DETAIL_KEYS = {
    "total_attempts",
    "round",
    "last_exception_class",
    "last_traceback",
    "effective_timeout_seconds",
    "timeout_source",
    "depends_on",
    "on_parent_failure",
    "dependents",
}
EVENT_KEYS = {"id", "job", "type", "attempt", "worker_id", "message", "data", "created_at"}


@pytest.fixture
def api() -> APIClient:
    return APIClient()


def post_job(api: APIClient, body: object):
    return api.post("/api/jobs/", data=json.dumps(body), content_type="application/json")


def nothing_written() -> bool:
    return not Job.objects.exists() and not JobEvent.objects.exists()


def local_iso(value: datetime) -> str:
    return timezone.localtime(value).isoformat()


def local_offset(value: datetime) -> str:
    return timezone.localtime(value).isoformat()[-6:]


# --- Health -----------------------------------------------------------------------------


def test_health_reports_a_reachable_database(api):
    response = api.get("/api/health/")
    assert response.status_code == 200
    assert response.json() == {"ok": True, "database": "ok"}


@pytest.mark.parametrize(
    ("debug", "detail"), [(True, "connection refused"), (False, "OperationalError")]
)
def test_health_is_503_with_the_error_when_the_database_fails(
    api, monkeypatch, settings, debug, detail
):
    class BrokenConnection:
        def cursor(self):
            raise OperationalError("connection refused")

    settings.DEBUG = debug  # production names the failure without hosts and ports
    monkeypatch.setattr(portable, "connection", BrokenConnection())
    response = api.get("/api/health/")
    assert response.status_code == 503
    assert response.json() == {"ok": False, "database": "error", "detail": detail}


def test_health_ignores_credentials_that_other_endpoints_reject(api):
    api.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert api.get("/api/jobs/").status_code == 401
    response = api.get("/api/health/")
    assert response.status_code == 200
    assert response.json()["ok"] is True


# --- Config -----------------------------------------------------------------------------


def test_config_shows_the_heartbeat_setting_when_it_is_set(api, settings):
    settings.JOB_WORKER_HEARTBEAT_SECONDS = 4
    assert api.get("/api/config/").json()["worker"]["heartbeat_seconds"] == 4


def test_config_describes_job_types_worker_and_limits(api, settings):
    settings.JOB_WORKER_THREADS = 7
    settings.JOB_WORKER_LEASE_SECONDS = 42
    response = api.get("/api/config/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"job_types", "worker", "limits", "pagination"}
    assert [item["type"] for item in body["job_types"]] == handlers.registered_types()
    success = next(item for item in body["job_types"] if item["type"] == "demo.success")
    spec = handlers.get_handler("demo.success")
    assert success == {
        "type": "demo.success",
        "description": spec.description,
        "example_payload": spec.example_payload,
    }
    assert body["worker"] == {
        "threads": 7,
        "poll_interval_ms": settings.JOB_WORKER_POLL_INTERVAL_MS,
        "lease_seconds": 42,
        "cleanup_interval_seconds": settings.JOB_WORKER_CLEANUP_INTERVAL_SECONDS,
        "cleanup_batch_size": settings.JOB_WORKER_CLEANUP_BATCH_SIZE,
        "backoff_base_seconds": settings.JOB_WORKER_BACKOFF_BASE_SECONDS,
        "backoff_max_seconds": settings.JOB_WORKER_BACKOFF_MAX_SECONDS,
        "max_attempts_default": settings.JOB_WORKER_MAX_ATTEMPTS_DEFAULT,
        "heartbeat_seconds": 14.0,
        "timeout_seconds": settings.JOB_WORKER_TIMEOUT_SECONDS,
        "queues": settings.JOB_WORKER_QUEUES,
    }
    assert body["limits"] == {
        "priority_min": -32768,
        "priority_max": 32767,
        "max_attempts_max": 100,
        "idempotency_key_max_length": 255,
        "max_body_bytes": settings.JOB_API_MAX_BODY_BYTES,
        "timeout_seconds_max": 7 * 24 * 3600,
        "queue_name_max_length": 64,
        "bulk_ids_max": 1000,
        "bulk_create_max": 1000,
        "metadata_max_entries": 32,
        "metadata_key_max_length": 128,
        "metadata_value_max_length": 8192,
        "metadata_max_chars": 16384,
    }
    assert body["pagination"] == {
        "jobs": {"default_limit": 25, "max_limit": 100},
        "job_events": {"default_limit": 50, "max_limit": 200},
        "job_timeline": {"default_limit": 100, "max_limit": 500, "next_page_in": "link_header"},
    }


def test_config_pagination_is_read_from_the_paginators_and_enforced_by_the_lists(api, busy_job):
    pagination = api.get("/api/config/").json()["pagination"]
    assert pagination == {
        "jobs": {
            "default_limit": JobPagination.default_limit,
            "max_limit": JobPagination.max_limit,
        },
        "job_events": {
            "default_limit": JobEventCursorPagination.page_size,
            "max_limit": JobEventCursorPagination.max_page_size,
        },
        "job_timeline": {
            "default_limit": JobTimelinePagination.page_size,
            "max_limit": JobTimelinePagination.max_page_size,
            "next_page_in": "link_header",
        },
    }
    jobs, events = pagination["jobs"], pagination["job_events"]
    for _ in range(jobs["max_limit"]):  # with busy_job: one job more than the largest page
        queued_job()
    assert JobEvent.objects.count() > events["max_limit"]

    def page_length(path: str) -> int:
        response = api.get(path)
        assert response.status_code == 200
        return len(response.json()["results"])

    assert page_length("/api/jobs/") == jobs["default_limit"]
    assert page_length(f"/api/jobs/?limit={jobs['max_limit'] + 1}") == jobs["max_limit"]
    assert page_length("/api/job-events/") == events["default_limit"]
    assert page_length(f"/api/job-events/?limit={events['max_limit'] + 1}") == events["max_limit"]


# --- Create -----------------------------------------------------------------------------


def test_create_returns_201_with_the_queued_job_and_writes_a_created_event(api):
    response = post_job(
        api, {"type": "demo.success", "payload": {"sleep_seconds": 1}, "priority": 70}
    )
    assert response.status_code == 201
    body = response.json()
    # The create's answer says which key matched an existing job: none here.
    assert set(body) == JOB_KEYS | {"matched"}
    assert body["matched"] is None
    job = Job.objects.get()
    assert body["id"] == str(job.pk)
    assert body["status"] == "queued"
    assert body["payload"] == {"sleep_seconds": 1}
    assert body["priority"] == 70
    assert body["attempts"] == 0
    assert body["idempotency_key"] is None
    assert body["locked_by"] is None and body["result"] is None and body["finished_at"] is None
    assert job.available_at == job.created_at  # omitted available_at means now
    # Timestamps are rendered in the configured time zone's offset.
    assert body["created_at"].endswith(local_offset(job.created_at))
    assert datetime.fromisoformat(body["created_at"]) == job.created_at
    assert list(job.events.values_list("type", flat=True)) == ["created"]


def test_create_fills_in_priority_max_attempts_and_payload_defaults(api, settings):
    response = post_job(api, {"type": "demo.fail"})
    assert response.status_code == 201
    assert response.json()["priority"] == 50
    assert response.json()["max_attempts"] == settings.JOB_WORKER_MAX_ATTEMPTS_DEFAULT
    assert response.json()["payload"] == {}


def test_create_accepts_the_documented_bounds_and_explicit_nulls(api):
    for body in (
        {"type": "demo.fail", "priority": 32767, "max_attempts": 100},
        {"type": "demo.fail", "priority": -32768, "max_attempts": 1},
        {"type": "demo.fail", "max_attempts": None, "available_at": None},
    ):
        assert post_job(api, body).status_code == 201, body


def test_create_keeps_a_given_available_at(api):
    response = post_job(api, {"type": "demo.slow", "available_at": "2030-01-02T03:04:05Z"})
    assert response.status_code == 201
    expected = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert Job.objects.get().available_at == expected
    assert datetime.fromisoformat(response.json()["available_at"]) == expected


def test_create_with_a_known_idempotency_key_returns_200_and_the_existing_job(api):
    first = post_job(api, {"type": "demo.success", "idempotency_key": "order-42"})
    again = post_job(
        api, {"type": "demo.fail", "payload": {"other": True}, "idempotency_key": "order-42"}
    )
    assert first.status_code == 201
    assert again.status_code == 200
    assert again.json() == {**first.json(), "matched": "idempotency_key"}
    assert Job.objects.count() == 1
    assert JobEvent.objects.count() == 1


BAD_BODIES = [
    pytest.param({}, "type", "required", id="missing-type"),
    pytest.param({"type": ""}, "type", "blank", id="blank-type"),
    pytest.param({"type": "demo.nope"}, "type", "demo.success", id="unknown-type"),
    pytest.param({"type": "demo.success", "payload": [1]}, "payload", "array", id="payload-array"),
    pytest.param({"type": "demo.success", "payload": "x"}, "payload", "string", id="payload-str"),
    pytest.param({"type": "demo.success", "payload": 3}, "payload", "number", id="payload-number"),
    pytest.param({"type": "demo.success", "payload": None}, "payload", "null", id="payload-null"),
    pytest.param(
        {"type": "demo.success", "payload": {"a": "x\u0000y"}}, "payload", "NUL", id="payload-nul"
    ),
    pytest.param({"type": "demo.success", "priority": "5"}, "priority", "integer", id="prio-str"),
    pytest.param({"type": "demo.success", "priority": 5.5}, "priority", "integer", id="prio-float"),
    pytest.param({"type": "demo.success", "priority": True}, "priority", "integer", id="prio-bool"),
    pytest.param({"type": "demo.success", "priority": None}, "priority", "null", id="prio-null"),
    pytest.param({"type": "demo.success", "priority": 32768}, "priority", "32767", id="prio-high"),
    pytest.param({"type": "demo.success", "priority": -32769}, "priority", "-32768", id="prio-low"),
    pytest.param({"type": "demo.success", "max_attempts": 0}, "max_attempts", "1", id="max-zero"),
    pytest.param(
        {"type": "demo.success", "max_attempts": 101}, "max_attempts", "100", id="max-101"
    ),
    pytest.param(
        {"type": "demo.success", "max_attempts": False}, "max_attempts", "integer", id="max-bool"
    ),
    pytest.param(
        {"type": "demo.success", "max_attempts": "3"}, "max_attempts", "integer", id="max-str"
    ),
    pytest.param(
        {"type": "demo.success", "available_at": "tomorrow"},
        "available_at",
        "format",
        id="when-text",
    ),
    pytest.param(
        {"type": "demo.success", "available_at": "2026-13-40T00:00:00Z"},
        "available_at",
        "format",
        id="when-invalid-date",
    ),
    pytest.param(
        {"type": "demo.success", "available_at": 1700000000},
        "available_at",
        "format",
        id="when-int",
    ),
    pytest.param(
        {"type": "demo.success", "idempotency_key": "k" * 256},
        "idempotency_key",
        "255",
        id="key-too-long",
    ),
    pytest.param(
        {"type": "demo.success", "idempotency_key": ""}, "idempotency_key", "blank", id="key-blank"
    ),
    pytest.param(
        {"type": "demo.success", "prioriti": 5}, "prioriti", "Unknown", id="unknown-field"
    ),
]


@pytest.mark.parametrize(("body", "field", "reason"), BAD_BODIES)
def test_create_refuses_bad_input_with_400_naming_the_field(api, body, field, reason):
    response = post_job(api, body)
    assert response.status_code == 400
    errors = response.json()
    assert field in errors, errors
    assert any(reason in message for message in errors[field]), errors
    assert nothing_written()


def test_unknown_type_message_lists_the_known_types(api):
    message = post_job(api, {"type": "demo.nope"}).json()["type"][0]
    for known in handlers.registered_types():
        assert known in message


def nested(levels: int) -> dict:
    payload: dict = {}
    for _ in range(levels - 1):
        payload = {"a": payload}
    return payload


def test_create_refuses_a_payload_nested_too_deeply(api):
    response = post_job(api, {"type": "demo.success", "payload": nested(65)})
    assert response.status_code == 400
    assert "Nesting deeper than 64" in response.json()["payload"][0]
    assert nothing_written()


def test_create_stores_and_returns_a_payload_at_the_nesting_limit(api):
    response = post_job(api, {"type": "demo.success", "payload": nested(64)})
    assert response.status_code == 201
    assert response.json()["payload"] == nested(64)
    assert Job.objects.get().payload == nested(64)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param('{"type": "demo.success",', id="truncated"),
        pytest.param("not json", id="text"),
        pytest.param('{"type": "demo.success", "payload": {"x": NaN}}', id="nan"),
        pytest.param("[" * 50_000 + "]" * 50_000, id="nested-50000-deep"),
    ],
)
def test_create_refuses_malformed_json_with_400(api, raw):
    response = api.post("/api/jobs/", data=raw, content_type="application/json")
    assert response.status_code == 400
    assert "JSON parse error" in response.json()["detail"]
    assert nothing_written()


def test_create_refuses_a_body_that_is_not_json_with_415(api):
    response = api.post("/api/jobs/", data={"type": "demo.success"}, format="multipart")
    assert response.status_code == 415
    assert "Unsupported media type" in response.json()["detail"]
    assert nothing_written()


def test_create_refuses_a_body_that_is_not_an_object(api):
    response = post_job(api, [{"type": "demo.success"}])
    assert response.status_code == 400
    assert "non_field_errors" in response.json()
    assert nothing_written()


def test_create_refuses_a_null_body_as_no_data(api):
    response = post_job(api, None)
    assert response.status_code == 400
    assert response.json() == {"non_field_errors": ["No data provided"]}
    assert nothing_written()


def test_concurrent_create_bodies_are_validated_each_on_its_own():
    # One create serializer serves all of a process's threads (validated_job_create).

    def validate(n: int) -> object:
        body = {"type": "demo.success", "payload": {"n": n}, "priority": n % 100, "queue": f"q{n}"}
        if n % 3 == 0:
            body["priority"] = str(n)
        try:
            return validated_job_create(body)
        except ValidationError as exc:
            return exc.detail

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(validate, range(3000)))
    finally:
        sys.setswitchinterval(interval)
    for n, result in enumerate(results):
        assert isinstance(result, dict)
        if n % 3 == 0:
            assert set(result) == {"priority"}, (n, result)
        else:
            assert (result["payload"], result["priority"], result["queue"]) == (
                {"n": n},
                n % 100,
                f"q{n}",
            ), (n, result)


def test_create_refuses_a_body_over_the_size_limit_with_413(api, settings):
    filler = "x" * settings.JOB_API_MAX_BODY_BYTES
    response = post_job(api, {"type": "demo.success", "payload": {"filler": filler}})
    assert response.status_code == 413
    assert str(settings.JOB_API_MAX_BODY_BYTES) in response.json()["detail"]
    assert nothing_written()


@pytest.mark.skipif(
    not django_settings.ENABLE_DJANGO_DEBUG_TOOLBAR, reason="Debug Toolbar is not enabled"
)
def test_a_body_over_the_limit_stays_413_with_the_debug_toolbar_on(api, settings):
    # The toolbar's history panel would re-read the refused body and turn this into a 400.
    settings.DEBUG = True
    filler = "x" * settings.JOB_API_MAX_BODY_BYTES
    response = post_job(api, {"type": "demo.success", "payload": {"filler": filler}})
    assert response.status_code == 413
    assert nothing_written()


def test_create_accepts_a_body_just_under_the_size_limit(api, settings):
    envelope = json.dumps({"type": "demo.success", "payload": {"filler": ""}})
    filler = "x" * (settings.JOB_API_MAX_BODY_BYTES - len(envelope))
    response = post_job(api, {"type": "demo.success", "payload": {"filler": filler}})
    assert response.status_code == 201


# --- List -------------------------------------------------------------------------------


def test_list_pages_25_by_default_newest_first_with_links(api):
    start = timezone.now()
    jobs = [queued_job(now=start + timedelta(seconds=i)) for i in range(30)]
    response = api.get("/api/jobs/")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 30
    assert len(body["results"]) == 25
    assert set(body["results"][0]) == JOB_KEYS | {"started_at", "last_exception_class"}
    assert [item["id"] for item in body["results"]] == [str(j.pk) for j in reversed(jobs)][:25]
    assert body["previous"] is None
    assert "limit=25" in body["next"] and "offset=25" in body["next"]

    second = api.get(body["next"]).json()
    assert [item["id"] for item in second["results"]] == [str(j.pk) for j in reversed(jobs[:5])]
    assert second["next"] is None
    assert second["previous"] is not None


def test_list_limit_is_capped_at_100(api):
    for _ in range(101):
        queued_job()
    body = api.get("/api/jobs/?limit=1000").json()
    assert body["count"] == 101
    assert len(body["results"]) == 100
    assert "limit=100" in body["next"]
    assert len(api.get("/api/jobs/?limit=3").json()["results"]) == 3


def test_list_filters_by_exact_status_and_type_substring(api):
    queued_job("demo.success")
    queued_job("demo.fail")
    queued_job("demo.flaky")
    failed = failed_job()

    by_status = api.get("/api/jobs/?status=failed").json()
    assert [item["id"] for item in by_status["results"]] == [str(failed.pk)]

    by_type = api.get("/api/jobs/?type=DEMO.F").json()
    assert by_type["count"] == 3
    assert {item["type"] for item in by_type["results"]} == {"demo.fail", "demo.flaky"}

    both = api.get("/api/jobs/?type=fail&status=queued").json()
    assert [item["type"] for item in both["results"]] == ["demo.fail"]

    assert api.get("/api/jobs/?status=&type=").json()["count"] == 4


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("limit=abc", "limit"),
        ("limit=0", "limit"),
        ("limit=-5", "limit"),
        ("offset=-1", "offset"),
        ("offset=1.5", "offset"),
        ("status=nonsense", "status"),
        ("type=" + "x" * 121, "type"),
    ],
)
def test_list_refuses_bad_query_parameters_with_400(api, query, field):
    response = api.get(f"/api/jobs/?{query}")
    assert response.status_code == 400
    assert field in response.json()


@pytest.mark.parametrize("jobs", [1, 50])
def test_list_runs_a_bounded_number_of_queries(api, django_assert_max_num_queries, jobs):
    for _ in range(jobs):
        queued_job()
    with django_assert_max_num_queries(2):
        response = api.get("/api/jobs/?limit=100")
    assert len(response.json()["results"]) == jobs


# --- Detail, timeline, 404s -------------------------------------------------------------


def test_detail_returns_the_job(api):
    job = queued_job(payload={"sleep_seconds": 2}, idempotency_key="abc")
    response = api.get(f"/api/jobs/{job.pk}/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == JOB_KEYS | DETAIL_KEYS | {"started_at"}
    assert body["id"] == str(job.pk)
    assert body["payload"] == {"sleep_seconds": 2}
    assert body["idempotency_key"] == "abc"


def test_job_events_are_a_plain_list_in_ascending_id(api):
    job = failed_job()
    response = api.get(f"/api/jobs/{job.pk}/events/")
    assert response.status_code == 200
    assert not response.has_header("Link")  # the whole timeline, as the spec shows it
    events = response.json()
    assert isinstance(events, list)
    assert [event["type"] for event in events] == ["created", "claimed", "failed"]
    assert [event["id"] for event in events] == sorted(event["id"] for event in events)
    assert all(set(event) == EVENT_KEYS for event in events)
    assert {event["job"] for event in events} == {str(job.pk)}
    assert events[2]["worker_id"] == WORKER
    assert events[2]["data"] == {"error": "boom"}


@pytest.mark.parametrize(
    "path",
    ["/api/jobs/{id}/", "/api/jobs/{id}/events/", "/api/jobs/{id}/retry/"],
)
@pytest.mark.parametrize(
    "job_id",
    ["0b5c9a3e-5f1d-4c53-9a36-6d1f3b2e8c41", "not-a-uuid", "123"],
    ids=["unknown", "not-a-uuid", "123"],
)
def test_unknown_or_malformed_job_ids_are_a_json_404(api, path, job_id):
    url = path.format(id=job_id)
    response = api.post(url) if url.endswith("retry/") else api.get(url)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert "does not exist" in response.json()["detail"]


def test_unknown_api_paths_are_a_json_404(api):
    response = api.get("/api/jobs/a/b/c/")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}


# --- Retry ------------------------------------------------------------------------------


def test_retry_requeues_a_failed_job(api):
    job = failed_job()
    response = api.post(f"/api/jobs/{job.pk}/retry/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == JOB_KEYS
    assert body["status"] == "queued"
    assert body["attempts"] == 0
    assert body["last_error"] == "" and body["finished_at"] is None
    assert job.events.order_by("-id").first().type == "manual_retry"


@pytest.mark.parametrize("succeed", [True, False])
def test_retry_of_a_job_that_is_not_failed_is_409(api, succeed):
    job = succeeded_job() if succeed else queued_job()
    response = api.post(f"/api/jobs/{job.pk}/retry/")
    assert response.status_code == 409
    job = fresh(job)
    assert response.json() == {
        "detail": f"Only failed or cancelled jobs can be retried; job is {job.status}.",
        "status": job.status,
    }
    assert not job.events.filter(type="manual_retry").exists()


# --- Stats ------------------------------------------------------------------------------


def test_stats_endpoint_serves_the_selectors_stats_in_one_count_query(
    api, django_assert_num_queries
):
    # What an empty queue's stats are is test_selectors.py's to say.
    with django_assert_num_queries(STATS_QUERIES):
        empty = api.get("/api/jobs/stats/").json()
    assert empty == selectors.job_stats()


def test_stats_count_jobs_by_status_and_date_the_oldest_queued_job(api):
    now = timezone.now()
    failed_job(now=now - timedelta(seconds=5))
    succeeded_job(now=now - timedelta(seconds=4))
    oldest = queued_job(now=now - timedelta(seconds=3))
    queued_job(now=now - timedelta(seconds=2))
    body = api.get("/api/jobs/stats/").json()
    assert body["total"] == 4
    assert body["by_status"] == {
        "queued": 2,
        "waiting": 0,
        "running": 0,
        "succeeded": 1,
        "failed": 1,
        "cancelled": 0,
    }
    assert datetime.fromisoformat(body["oldest_queued_at"]) == oldest.created_at


# --- One job's timeline -------------------------------------------------------------------


def links(response) -> dict[str, str]:
    """The targets of a response's RFC 8288 ``Link`` header by relation; {} without one."""
    header = response.headers.get("Link", "")
    return {rel: url for url, rel in re.findall(r'<([^>]*)>;\s*rel="([^"]+)"', header)}


def test_job_timeline_link_header_walks_every_event_oldest_first_once(api, busy_job):
    seen: list[int] = []
    url = f"/api/jobs/{busy_job.pk}/events/?limit=60"
    while url:
        response = api.get(url)
        assert len(response.json()) <= 60
        seen.extend(event["id"] for event in response.json())
        url = links(response).get("next")
    expected = list(busy_job.events.order_by("id").values_list("id", flat=True))
    assert seen == expected
    assert len(seen) == 250


def test_job_timeline_link_header_is_rfc_8288_with_next_then_prev(api, busy_job):
    first = api.get(f"/api/jobs/{busy_job.pk}/events/?limit=100")
    (target,) = re.fullmatch(r'<([^>]+)>; rel="next"', first["Link"]).groups()
    assert target.startswith(f"http://testserver/api/jobs/{busy_job.pk}/events/?cursor=")
    assert "limit=100" in target
    second = api.get(target)
    assert set(links(second)) == {"next", "prev"}
    back = api.get(links(second)["prev"])
    assert [event["id"] for event in back.json()] == [event["id"] for event in first.json()]


def test_job_timeline_pages_100_by_default_and_caps_the_limit_at_500(api, busy_job):
    for step in range(300):
        services.record_progress(job_id=busy_job.pk, worker_id=WORKER, attempt=1, message=f"{step}")
    assert len(api.get(f"/api/jobs/{busy_job.pk}/events/").json()) == 100
    assert len(api.get(f"/api/jobs/{busy_job.pk}/events/?limit=9999").json()) == 500


def test_job_timeline_last_page_gains_a_next_link_when_new_events_fill_it(api):
    job = running_job("demo.success")  # created, claimed
    last = api.get(f"/api/jobs/{job.pk}/events/?limit=3")
    assert links(last) == {}
    for step in range(2):
        services.record_progress(job_id=job.pk, worker_id=WORKER, attempt=1, message=f"{step}")
    again = api.get(f"/api/jobs/{job.pk}/events/?limit=3")
    assert [event["type"] for event in again.json()] == ["created", "claimed", "progress"]
    following = api.get(links(again)["next"]).json()
    assert [event["message"] for event in following] == ["1"]


def test_job_timeline_link_header_is_exposed_to_a_dashboard_on_another_origin(api, busy_job):
    response = api.get(f"/api/jobs/{busy_job.pk}/events/", HTTP_ORIGIN="http://localhost:5173")
    assert "next" in links(response)
    assert "link" in response["Access-Control-Expose-Headers"].lower()


@pytest.mark.parametrize("query", ["limit=0", "limit=x", "cursor=%%%garbage"])
def test_job_timeline_refuses_bad_paging_with_400(api, query):
    job = queued_job()
    response = api.get(f"/api/jobs/{job.pk}/events/?{query}")
    assert response.status_code == 400
    assert query.split("=")[0] in response.json()


# --- Global event feed ------------------------------------------------------------------


@pytest.fixture
def busy_job() -> Job:
    """One running job with 1 created + 1 claimed + 248 progress events (250 in all)."""
    job = running_job("demo.success")
    for step in range(248):
        assert services.record_progress(
            job_id=job.pk, worker_id=WORKER, attempt=1, message=f"step {step}"
        )
    return job


def test_event_feed_pages_50_newest_first_and_caps_the_limit_at_200(api, busy_job):
    body = api.get("/api/job-events/").json()
    assert set(body) == {"next", "previous", "results"}
    ids = [event["id"] for event in body["results"]]
    assert len(ids) == 50
    assert ids == sorted(ids, reverse=True)
    assert ids[0] == JobEvent.objects.order_by("-id").first().pk
    assert set(body["results"][0]) == EVENT_KEYS
    assert body["previous"] is None
    assert "cursor=" in body["next"]

    assert len(api.get("/api/job-events/?limit=1000").json()["results"]) == 200
    assert len(api.get("/api/job-events/?limit=7").json()["results"]) == 7


def test_event_feed_cursor_walks_every_event_once(api, busy_job):
    seen: list[int] = []
    url = "/api/job-events/?limit=60"
    while url:
        body = api.get(url).json()
        seen.extend(event["id"] for event in body["results"])
        assert len(body["results"]) <= 60
        url = body["next"]
        if url:
            assert "limit=60" in url
    expected = list(JobEvent.objects.order_by("-id").values_list("id", flat=True))
    assert seen == expected
    assert len(seen) == 250


def test_event_feed_filters_by_type_and_job(api, busy_job):
    other = failed_job()

    failed = api.get("/api/job-events/?type=failed").json()["results"]
    assert [(event["type"], event["job"]) for event in failed] == [("failed", str(other.pk))]

    mine = api.get(f"/api/job-events/?job_id={other.pk}").json()["results"]
    assert [event["type"] for event in mine] == ["failed", "claimed", "created"]

    both = api.get(f"/api/job-events/?job_id={busy_job.pk}&type=claimed").json()["results"]
    assert [(event["type"], event["attempt"]) for event in both] == [("claimed", 1)]


def _cursor(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("type=nonsense", "type"),
        ("job_id=not-a-uuid", "job_id"),
        ("limit=abc", "limit"),
        ("limit=0", "limit"),
        ("cursor=%%%garbage", "cursor"),
        ("cursor=" + _cursor("p=abc"), "cursor"),
        ("cursor=" + _cursor("o=-4"), "cursor"),
    ],
)
def test_event_feed_refuses_bad_query_parameters_with_400(api, query, field):
    response = api.get(f"/api/job-events/?{query}")
    assert response.status_code == 400
    assert field in response.json()


@pytest.mark.parametrize("limit", [1, 200])
def test_event_feed_runs_a_bounded_number_of_queries(
    api, busy_job, django_assert_max_num_queries, limit
):
    with django_assert_max_num_queries(1):
        response = api.get(f"/api/job-events/?limit={limit}")
    assert len(response.json()["results"]) == limit


# --- Throughput -------------------------------------------------------------------------

NOW = datetime(2026, 6, 21, 10, 0, 30, tzinfo=UTC)


def test_throughput_counts_finished_attempts_per_aligned_bucket():
    failed_job(now=NOW - timedelta(minutes=4, seconds=30, microseconds=1))  # before
    succeeded_job(now=NOW - timedelta(minutes=4, seconds=30))  # 09:56:00, first bucket's start
    succeeded_job(now=NOW - timedelta(seconds=30, microseconds=1))  # 09:59:59.999999
    succeeded_job(now=NOW - timedelta(seconds=30))  # 10:00:00
    failed_job(now=NOW)  # now, in the newest (partial) bucket
    succeeded_job(now=NOW + timedelta(seconds=1))  # after now: not counted
    # A retry scheduled for later is not a finished attempt.
    job = running_job("demo.flaky", max_attempts=3, now=NOW)
    services.fail_job(job_id=job.pk, worker_id=WORKER, attempt=1, error="flaky", now=NOW)

    result = selectors.throughput(now=NOW, minutes=5, bucket_seconds=60)

    assert result["bucket_seconds"] == 60
    assert result["start"] == datetime(2026, 6, 21, 9, 56, tzinfo=UTC)
    assert result["end"] == NOW
    assert [b["start"].strftime("%H:%M") for b in result["buckets"]] == [
        "09:56",
        "09:57",
        "09:58",
        "09:59",
        "10:00",
    ]
    assert [(b["succeeded"], b["failed"]) for b in result["buckets"]] == [
        (1, 0),
        (0, 0),
        (0, 0),
        (1, 0),
        (1, 1),
    ]


def test_throughput_buckets_of_other_widths():
    succeeded_job(now=NOW - timedelta(seconds=31))  # 09:59:59 -> [09:59:50, 10:00:00)
    succeeded_job(now=NOW - timedelta(seconds=29))  # 10:00:01 -> [10:00:00, 10:00:10)
    result = selectors.throughput(now=NOW, minutes=1, bucket_seconds=10)
    assert len(result["buckets"]) == 6
    assert result["buckets"][-1]["start"] == datetime(2026, 6, 21, 10, 0, 30, tzinfo=UTC)
    counts = {b["start"].strftime("%H:%M:%S"): b["succeeded"] for b in result["buckets"]}
    assert counts == {
        "09:59:40": 0,
        "09:59:50": 1,
        "10:00:00": 1,
        "10:00:10": 0,
        "10:00:20": 0,
        "10:00:30": 0,
    }


def test_throughput_counts_cancelled_jobs_but_not_cancel_requests():
    queued = queued_job(now=NOW - timedelta(minutes=1))
    services.cancel_job(job_id=queued.pk, now=NOW - timedelta(seconds=30))  # 10:00:00
    running = running_job("demo.slow", now=NOW - timedelta(minutes=1))
    services.cancel_job(job_id=running.pk, now=NOW)  # still running: asked, not finished
    result = selectors.throughput(now=NOW, minutes=2, bucket_seconds=60)
    assert [(b["succeeded"], b["failed"], b["cancelled"]) for b in result["buckets"]] == [
        (0, 0, 0),
        (0, 0, 1),
    ]


def test_throughput_endpoint_zero_fills_the_default_window_in_one_query(
    api, django_assert_num_queries
):
    succeeded_job()
    failed_job()
    with django_assert_num_queries(1):
        response = api.get("/api/jobs/throughput/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"bucket_seconds", "start", "end", "buckets"}
    assert body["bucket_seconds"] == 60
    assert len(body["buckets"]) == 15
    assert body["start"] == body["buckets"][0]["start"]
    starts = [datetime.fromisoformat(b["start"]) for b in body["buckets"]]
    assert all(b - a == timedelta(seconds=60) for a, b in itertools.pairwise(starts))
    assert starts[-1] <= datetime.fromisoformat(body["end"]) < starts[-1] + timedelta(seconds=60)
    assert sum(b["succeeded"] for b in body["buckets"]) == 1
    assert sum(b["failed"] for b in body["buckets"]) == 1
    assert body["end"].endswith(local_offset(timezone.now()))


def test_throughput_endpoint_accepts_custom_windows(api):
    body = api.get("/api/jobs/throughput/?minutes=60&bucket_seconds=300").json()
    assert body["bucket_seconds"] == 300
    assert len(body["buckets"]) == 12


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("minutes=0", "minutes"),
        ("minutes=1441", "minutes"),
        ("minutes=abc", "minutes"),
        ("bucket_seconds=9", "bucket_seconds"),
        ("bucket_seconds=3601", "bucket_seconds"),
        ("minutes=1440&bucket_seconds=60", "bucket_seconds"),
    ],
)
def test_throughput_refuses_bad_windows_with_400(api, query, field):
    response = api.get(f"/api/jobs/throughput/?{query}")
    assert response.status_code == 400
    assert field in response.json()


# --- Documentation ----------------------------------------------------------------------


def test_schema_documents_the_timeline_as_an_array_with_a_link_header(api):
    schema = json.loads(api.get("/api/schema/?format=json").content)
    ok = schema["paths"]["/api/jobs/{id}/events/"]["get"]["responses"]["200"]
    body = ok["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert schema["components"]["schemas"][body] == {
        "type": "array",
        "items": {"$ref": "#/components/schemas/JobEvent"},
    }
    assert 'rel="next"' in ok["headers"]["Link"]["description"]


def test_schema_documents_every_endpoint(api):
    response = api.get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    assert set(schema["paths"]) == {
        "/api/",
        "/api/health/",
        "/api/config/",
        "/api/jobs/",
        "/api/jobs/{id}/",
        "/api/jobs/{id}/events/",
        "/api/jobs/{id}/attempts/",
        "/api/jobs/lookup/",
        "/api/jobs/{id}/retry/",
        "/api/jobs/{id}/cancel/",
        "/api/jobs/{id}/run-now/",
        "/api/jobs/cancel/",
        "/api/jobs/retry/",
        "/api/jobs/bulk/",
        "/api/jobs/stats/",
        "/api/jobs/throughput/",
        "/api/jobs/types/",
        "/api/workers/",
        "/api/job-events/",
        "/api/auth/session/",
        "/api/auth/login/",
        "/api/auth/logout/",
        "/api/queues/",
        "/api/queues/{name}/",
        "/api/queues/{name}/pause/",
        "/api/queues/{name}/resume/",
        "/api/schedules/",
        "/api/schedules/{name}/pause/",
        "/api/schedules/{name}/resume/",
        "/api/schedules/{name}/trigger/",
        "/api/workflows/",
        "/api/workflows/{id}/",
    }
    create = schema["paths"]["/api/jobs/"]["post"]["responses"]
    assert set(create) == {"200", "201", "400", "413", "415"}
    assert set(schema["paths"]["/api/jobs/{id}/retry/"]["post"]["responses"]) == {
        "200",
        "404",
        "409",
    }
    assert schema["components"]["schemas"]["JobStatusEnum"]["enum"] == [
        "queued",
        "waiting",
        "running",
        "succeeded",
        "failed",
        "cancelled",
    ]
    assert set(schema["components"]["schemas"]["Job"]["properties"]) == JOB_KEYS
    assert set(schema["components"]["schemas"]["JobEvent"]["properties"]) == EVENT_KEYS


def test_swagger_ui_is_served_with_its_assets_from_our_static_files(api):
    from django.contrib.staticfiles import finders

    response = api.get("/api/docs/")
    assert response.status_code == 200
    page = response.content.decode()
    static = "/" + django_settings.STATIC_URL.strip("/") + "/"
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert len(assets) >= 3, page
    for url in assets:
        assert url.startswith(static), url  # nothing from a CDN
        assert finders.find(url.removeprefix(static)), url


# --- Queues, timeouts and cancellation ---------------------------------------------------------


def test_create_takes_a_queue_and_a_timeout(api):
    response = post_job(api, {"type": "demo.success", "queue": "emails", "timeout_seconds": 30})
    assert response.status_code == 201
    body = response.json()
    assert (body["queue"], body["timeout_seconds"], body["cancel_requested_at"]) == (
        "emails",
        30,
        None,
    )
    assert post_job(api, {"type": "demo.success"}).json()["queue"] == "default"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("queue", ""),
        ("queue", "has space"),
        ("queue", "-leading-dash"),
        ("queue", "q" * 65),
        ("timeout_seconds", 0),
        ("timeout_seconds", 7 * 24 * 3600 + 1),
        ("timeout_seconds", "30"),
    ],
)
def test_create_refuses_a_bad_queue_or_timeout_naming_the_field(api, field, value):
    response = post_job(api, {"type": "demo.success", field: value})
    assert response.status_code == 400
    assert list(response.json()) == [field]
    assert nothing_written()


def test_list_filters_by_queue(api):
    emails = queued_job(queue="emails")
    queued_job()
    response = api.get("/api/jobs/?queue=emails")
    assert [job["id"] for job in response.json()["results"]] == [str(emails.pk)]
    assert api.get("/api/jobs/?queue=bad%20name").status_code == 400


def test_list_finds_the_job_of_an_idempotency_key_exactly(api):
    keyed = queued_job(idempotency_key="order-42")
    queued_job(idempotency_key="order-420")
    queued_job()
    response = api.get("/api/jobs/?idempotency_key=order-42")
    assert [job["id"] for job in response.json()["results"]] == [str(keyed.pk)]
    assert api.get("/api/jobs/?idempotency_key=order-4").json()["count"] == 0
    # Combined with the other filters like any of them; blank means no filter.
    assert api.get("/api/jobs/?idempotency_key=order-42&status=failed").json()["count"] == 0
    assert api.get("/api/jobs/?idempotency_key=").json()["count"] == 3
    response = api.get("/api/jobs/?idempotency_key=" + "k" * 256)
    assert response.status_code == 400
    assert list(response.json()) == ["idempotency_key"]


def test_bulk_actions_refuse_an_idempotency_key_selection(api):
    # The key is a list lookup only: a bulk action must not quietly drop it and act on
    # every other job the body's filters select.
    queued_job(idempotency_key="order-42")
    response = api.post(
        "/api/jobs/cancel/", {"status": "queued", "idempotency_key": "order-42"}, format="json"
    )
    assert response.status_code == 400
    assert list(response.json()) == ["idempotency_key"]
    assert Job.objects.filter(status="queued").count() == 1


def test_stats_name_the_queues_that_have_queued_jobs(api):
    queued_job(queue="emails")
    queued_job(queue="emails")
    queued_job()
    services.cancel_job(job_id=queued_job(queue="reports").pk)  # no queued job left there
    assert api.get("/api/jobs/stats/").json()["queues"] == ["default", "emails"]


def test_cancel_of_a_queued_job_answers_200_with_the_cancelled_job(api):
    job = queued_job()
    response = api.post(f"/api/jobs/{job.pk}/cancel/")
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    assert timeline(job)[-1] == "cancelled"


def test_cancel_of_a_running_job_answers_202_and_keeps_it_running(api):
    job = running_job()
    response = api.post(f"/api/jobs/{job.pk}/cancel/")
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "running" and body["cancel_requested_at"] is not None


@pytest.mark.parametrize("make", [succeeded_job, failed_job])
def test_cancel_of_a_finished_job_is_409_with_its_status(api, make):
    job = make()
    response = api.post(f"/api/jobs/{job.pk}/cancel/")
    assert response.status_code == 409
    assert response.json() == {
        "detail": f"Only queued or running jobs can be cancelled; job is {job.status}.",
        "status": job.status,
    }


def test_cancel_of_an_unknown_job_is_404(api):
    assert api.post(f"/api/jobs/{uuid.uuid4()}/cancel/").status_code == 404


def test_retry_accepts_a_cancelled_job(api):
    job = queued_job()
    api.post(f"/api/jobs/{job.pk}/cancel/")
    response = api.post(f"/api/jobs/{job.pk}/retry/")
    assert response.status_code == 200
    assert response.json()["status"] == "queued"


def post_bulk(api, action: str, body: object):
    return api.post(f"/api/jobs/{action}/", data=json.dumps(body), content_type="application/json")


def test_bulk_cancel_by_filter_says_what_changed(api):
    queued = [queued_job("demo.slow") for _ in range(2)]
    running = running_job("demo.slow")
    other = queued_job("demo.fail")
    response = post_bulk(api, "cancel", {"type": "slow"})
    assert response.status_code == 200
    assert response.json() == {"cancelled": 2, "cancel_requested": 1}
    assert [fresh(job).status for job in queued] == ["cancelled", "cancelled"]
    assert fresh(running).cancel_requested_at is not None
    assert fresh(other).status == "queued"


def test_bulk_retry_by_ids_retries_failed_and_cancelled_jobs(api):
    failed = failed_job()
    cancelled = queued_job()
    services.cancel_job(job_id=cancelled.pk)
    done = succeeded_job()
    response = post_bulk(api, "retry", {"ids": [str(failed.pk), str(cancelled.pk), str(done.pk)]})
    assert response.json() == {"retried": 2, "held": 0, "held_jobs": []}
    assert [fresh(job).status for job in (failed, cancelled, done)] == [
        "queued",
        "queued",
        "succeeded",
    ]


@pytest.mark.parametrize("action", ["cancel", "retry"])
@pytest.mark.parametrize("body", [{}, {"status": "", "type": "", "queue": ""}])
def test_bulk_actions_refuse_an_empty_selection(api, action, body):
    queued_job()
    response = post_bulk(api, action, body)
    assert response.status_code == 400
    assert "empty selection" in response.json()["non_field_errors"][0]
    assert Job.objects.get().status == "queued"


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"ids": ["not-a-uuid"]}, "ids", "Item 0: Must be a valid UUID."),
        ({"ids": []}, "ids", "This list may not be empty."),
        ({"status": "sleeping"}, "status", '"sleeping" is not a valid choice.'),
        ({"type": "x", "everything": True}, "everything", "Unknown field."),
    ],
)
def test_bulk_actions_name_the_bad_field(api, body, field, message):
    response = post_bulk(api, "cancel", body)
    assert response.status_code == 400
    assert response.json() == {field: [message]}


def test_stats_count_cancelled_jobs_and_date_the_oldest_due_job(api):
    now = timezone.now()
    queued_job(available_at=now + timedelta(days=1), now=now - timedelta(hours=1))
    due = queued_job(available_at=now - timedelta(minutes=5), now=now - timedelta(minutes=10))
    services.cancel_job(job_id=queued_job().pk)
    body = api.get("/api/jobs/stats/").json()
    assert body["by_status"]["cancelled"] == 1
    assert body["oldest_due_at"] == local_iso(due.available_at)
    assert body["oldest_queued_at"] == local_iso(now - timedelta(hours=1))


# --- Bulk create --------------------------------------------------------------------------------


def test_bulk_create_writes_every_job_and_answers_ids_in_order(api):
    body = {"jobs": [{"type": "demo.success", "payload": {"n": n}} for n in range(3)]}
    response = post_bulk(api, "bulk", body)
    assert response.status_code == 201
    answer = response.json()
    assert (answer["created"], answer["existing"]) == (3, 0)
    ids = [item["id"] for item in answer["jobs"]]
    assert [Job.objects.get(pk=pk).payload for pk in ids] == [{"n": n} for n in range(3)]
    assert JobEvent.objects.filter(type="created").count() == 3


def test_bulk_create_honours_known_keys_and_answers_200_when_nothing_is_new(api):
    known = queued_job(idempotency_key="known")
    response = post_bulk(api, "bulk", {"jobs": [{"type": "demo.fail", "idempotency_key": "known"}]})
    assert response.status_code == 200
    assert response.json() == {
        "created": 0,
        "existing": 1,
        "jobs": [{"id": str(known.pk), "created": False, "matched": "idempotency_key"}],
    }


@pytest.mark.parametrize(
    ("jobs", "errors"),
    [
        (
            [{"type": "demo.success"}, {"type": "nope"}, {"type": "demo.success", "priority": "1"}],
            {"jobs[1].type", "jobs[2].priority"},
        ),
        ([{"type": "demo.success", "payload": {"a": "\x00"}}], {"jobs"}),
        (
            [{"type": "demo.success", "idempotency_key": "k"}] * 2,
            {"jobs[1].idempotency_key"},
        ),
        ([{"type": "demo.success"}, "not an object"], {"jobs[1]"}),
        ([], {"jobs"}),
        ([{"type": "demo.success"}] * 1001, {"jobs"}),
    ],
    ids=["bad-items", "unstorable", "duplicate-key", "not-object", "empty", "too-many"],
)
def test_bulk_create_refuses_the_whole_request_naming_each_bad_item(api, jobs, errors):
    response = post_bulk(api, "bulk", {"jobs": jobs})
    assert response.status_code == 400
    assert set(response.json()) == errors
    assert nothing_written()


def test_bulk_create_names_the_item_and_field_holding_an_unstorable_string(api):
    jobs = [{"type": "demo.success"}, {"type": "demo.success", "payload": {"a": "\ud800"}}]
    response = post_bulk(api, "bulk", {"jobs": jobs})
    assert response.status_code == 400
    assert response.json() == {
        "jobs": ["Strings may not contain a lone surrogate \\ud800 (at $[1].payload.a)."]
    }
    assert nothing_written()


# --- Metadata -----------------------------------------------------------------------------------


def test_create_stores_metadata_and_every_representation_shows_it(api):
    metadata = {"request_id": "req-42", "tenant": "acme"}
    response = post_job(api, {"type": "demo.success", "metadata": metadata})
    assert response.status_code == 201
    assert response.json()["metadata"] == metadata
    job = Job.objects.get()
    assert job.metadata == metadata
    assert api.get(f"/api/jobs/{job.pk}/").json()["metadata"] == metadata
    assert api.get("/api/jobs/").json()["results"][0]["metadata"] == metadata


def test_create_without_metadata_stores_an_empty_object(api):
    assert post_job(api, {"type": "demo.success"}).json()["metadata"] == {}
    assert Job.objects.get().metadata == {}


def test_create_accepts_metadata_at_its_bounds(api):
    # 32 entries, keys of 128 characters, values up to 8,192: 16,384 characters in all.
    metadata = {f"{n:02}".ljust(128, "k"): "v" for n in range(30)}
    metadata["a".ljust(128, "k")] = "v" * 8192
    metadata["b".ljust(128, "k")] = "v" * (16384 - 32 * 128 - 30 - 8192)
    assert sum(len(k) + len(v) for k, v in metadata.items()) == 16384
    response = post_job(api, {"type": "demo.success", "metadata": metadata})
    assert response.status_code == 201, response.json()
    assert Job.objects.get().metadata == metadata


BAD_METADATA = [
    pytest.param(["a"], "JSON object", id="array"),
    pytest.param("request_id=1", "JSON object", id="string"),
    pytest.param(None, "may not be null", id="null"),
    pytest.param({"n": 1}, "value of 'n' must be a string, got a number", id="number"),
    pytest.param({"n": None}, "got null", id="null-value"),
    pytest.param({"n": {"nested": "x"}}, "got an object", id="nested"),
    pytest.param({"": "x"}, "1 to 128 characters", id="empty-key"),
    pytest.param({"k" * 129: "x"}, "1 to 128 characters", id="key-too-long"),
    pytest.param({"k": "v" * 8193}, "at most 8192", id="value-too-long"),
    pytest.param({f"k{n}": "v" for n in range(33)}, "At most 32 entries", id="too-many"),
    pytest.param({f"k{n}": "v" * 7000 for n in range(3)}, "at most 16384", id="too-large-in-all"),
    pytest.param({"k": "a\x00b"}, "NUL", id="nul"),
]


@pytest.mark.parametrize(("metadata", "reason"), BAD_METADATA)
def test_create_refuses_bad_metadata_with_400_naming_the_field(api, metadata, reason):
    response = post_job(api, {"type": "demo.success", "metadata": metadata})
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {"metadata"}, errors
    assert any(reason in message for message in errors["metadata"]), errors
    assert nothing_written()


def test_bulk_create_stores_each_jobs_metadata_and_names_a_bad_one(api):
    jobs = [{"type": "demo.success", "metadata": {"n": str(n)}} for n in range(2)]
    response = post_bulk(api, "bulk", {"jobs": jobs})
    assert response.status_code == 201
    ids = [item["id"] for item in response.json()["jobs"]]
    assert [Job.objects.get(pk=pk).metadata for pk in ids] == [{"n": "0"}, {"n": "1"}]

    jobs.append({"type": "demo.success", "metadata": {"n": 2}})
    response = post_bulk(api, "bulk", {"jobs": jobs})
    assert response.status_code == 400
    assert response.json() == {
        "jobs[2].metadata": ["The value of 'n' must be a string, got a number."]
    }
    assert Job.objects.count() == 2


def test_services_refuse_bad_metadata_naming_the_spec_before_writing():
    specs = [
        services.NewJobSpec(type="demo.success", metadata={"ok": "yes"}),
        services.NewJobSpec(type="demo.success", metadata={"bad": 1}),  # type: ignore[dict-item]
    ]
    with pytest.raises(UnstorableValue) as refused:
        services.create_jobs(specs)
    assert refused.value.index == 1
    assert str(refused.value) == "metadata: The value of 'bad' must be a string, got a number."
    assert nothing_written()


def test_the_schema_describes_metadata_as_an_object_of_strings(api):
    schema = json.loads(api.get("/api/schema/?format=json").content)
    metadata = schema["components"]["schemas"]["Job"]["properties"]["metadata"]
    assert metadata["type"] == "object"
    assert metadata["additionalProperties"]["type"] == "string"
    assert metadata["readOnly"] is True
    create = schema["components"]["schemas"]["JobCreateRequest"]["properties"]["metadata"]
    assert create["maxProperties"] == 32
