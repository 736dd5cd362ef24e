"""Bad input and errors under /api/, in process on the local settings: bodies too large,
too deep or holding NUL and lone surrogates, hostile query strings and cursors, the admin's
filters, JSON 404, 405, 500 and 503 answers, and the roles command. What production mode
changes, in child processes and a real gunicorn, is processes/test_security.py's;
test_api.py holds the body-size limit's own tests.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
import uuid
from io import StringIO
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.http import HttpResponse
from django.urls import resolve
from rest_framework.test import APIClient

from jobs.middleware import RefuseUnstorableQueryMiddleware
from jobs.models import Job, JobEvent
from tests.factories import failed_job

# --- The local demo (DEBUG=true) stays open ---------------------------------------------


@pytest.mark.django_db
def test_local_demo_api_needs_no_credentials(client):
    assert client.get("/api/jobs/").status_code == 200
    response = client.post("/api/jobs/", {"type": "demo.success"}, content_type="application/json")
    assert response.status_code == 201


# --- Request size and shape limits (in-process) -----------------------------------------


class EndlessStream:
    """A request body that never ends; counts what the parser reads."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            raise AssertionError("the parser tried to read the whole endless body")
        self.read_bytes += size
        return b" " * size


@pytest.mark.django_db
def test_declared_huge_body_is_refused_before_reading_any_of_it(rf):
    request = rf.post("/api/jobs/", b"{}", content_type="application/json")
    request.META["CONTENT_LENGTH"] = str(2**40)  # a terabyte is announced
    stream = EndlessStream()
    request._stream = stream
    response = resolve("/api/jobs/").func(request)
    assert response.status_code == 413
    assert stream.read_bytes == 0


PARSE_ERROR = ("detail", "JSON parse error")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "problem"),
    [
        pytest.param("[" * 100_000, PARSE_ERROR, id="deep-array"),
        pytest.param('{"a":' * 30_000 + "1" + "}" * 30_000, PARSE_ERROR, id="deep-object"),
        pytest.param(
            '{"type": "demo.success", "payload": {"n": ' + "9" * 100_000 + "}}",
            PARSE_ERROR,
            id="huge-integer",
        ),
        pytest.param(
            '{"type": "demo.success", "payload": ' + '{"a": ' * 65 + "1" + "}" * 65 + "}",
            ("payload", "Nesting deeper than 64"),
            id="payload-too-deep",
        ),
        pytest.param(
            '{"type": "demo.success", "payload": {"s": "\\u0000"}}',
            ("payload", "NUL character"),
            id="nul-character",
        ),
        pytest.param(
            '{"type": "demo.success", "payload": [1, 2]}',
            ("payload", "JSON object"),
            id="payload-not-object",
        ),
        pytest.param('{"type": "demo.success"', PARSE_ERROR, id="truncated"),
        pytest.param("\xff\xfe", PARSE_ERROR, id="not-utf8"),
    ],
)
def test_hostile_json_is_a_400_naming_the_problem_not_a_crash(client, body, problem):
    field, text = problem
    start = time.monotonic()
    response = client.post("/api/jobs/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert text in str(response.json()[field]), response.json()
    assert time.monotonic() - start < 10
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_payload_at_the_depth_limit_is_accepted(client):
    payload = {"a": 1}
    for _ in range(62):
        payload = {"a": payload}
    body = {"type": "demo.success", "payload": payload, "idempotency_key": str(uuid.uuid4())}
    response = client.post("/api/jobs/", body, content_type="application/json")
    assert response.status_code == 201, response.content


# --- NUL and lone surrogates: refused anywhere in a body or a query (in-process) ------------

SURROGATE = "\\ud800"  # JSON's escape: json.loads makes it a lone surrogate
NUL = "\\u0000"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/jobs/", f'{{"type": "demo.success", "payload": {{"a": "{SURROGATE}"}}}}', "payload"),
        ("/api/jobs/", f'{{"type": "demo.success", "payload": {{"{SURROGATE}": 1}}}}', "payload"),
        ("/api/jobs/", f'{{"type": "demo.success", "{SURROGATE}": 1}}', "\\ud800"),
        ("/api/jobs/", f'{{"type": "demo.success", "x{NUL}": 1}}', "x\\u0000"),
        ("/api/jobs/", f'{{"type": "demo.{SURROGATE}"}}', "type"),
        (
            "/api/jobs/",
            f'{{"type": "demo.success", "idempotency_key": "k{NUL}"}}',
            "idempotency_key",
        ),
        ("/api/jobs/", f'{{"type": "demo.success", "queue": ["{SURROGATE}"]}}', "queue"),
        ("/api/jobs/", f'["{SURROGATE}"]', "non_field_errors"),
        ("/api/jobs/cancel/", f'{{"type": "a{NUL}"}}', "type"),
        ("/api/jobs/retry/", f'{{"status": "failed", "{SURROGATE}": []}}', "\\ud800"),
    ],
)
def test_nul_and_lone_surrogates_anywhere_in_a_body_are_a_400_naming_the_field(
    client, path, body, field
):
    failed_job()  # something the bulk actions could touch
    before = (Job.objects.count(), JobEvent.objects.count())
    response = client.post(path, body, content_type="application/json")
    assert response.status_code == 400, response.content
    errors = response.json()
    assert list(errors) == [field]
    assert "NUL character" in errors[field][0] or "lone surrogate" in errors[field][0]
    assert (Job.objects.count(), JobEvent.objects.count()) == before
    assert fresh_status(Job.objects.get()) == "failed"


def fresh_status(job: Job) -> str:
    return Job.objects.values_list("status", flat=True).get(pk=job.pk)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/api/jobs/?type=%00", "type"),
        ("/api/jobs/?queue=a%00b", "queue"),
        ("/api/jobs/?unknown=%00", "unknown"),
        ("/api/jobs/?%00=1", "\\u0000"),
        ("/api/job-events/?job_id=%00", "job_id"),
        ("/api/jobs/stats/?x=%00", "x"),
    ],
)
def test_nul_in_a_query_parameter_is_a_json_400_naming_it(client, url, field):
    response = client.get(url)
    assert response.status_code == 400
    assert list(response.json()) == [field]
    assert "NUL character" in response.json()[field][0]


@pytest.mark.django_db
def test_the_400_for_a_query_parameter_says_what_and_where():
    response = APIClient().get("/api/jobs/?type=a%00&%00=b")
    assert response.json() == {
        "type": ["Strings may not contain the NUL character \\u0000."],
        "\\u0000": ["Strings may not contain the NUL character \\u0000 (in the field's name)."],
    }


# --- Inputs that reached a 500: a 400 naming the field, in every server mode --------------


def feed_with_cursor_position(digits: str) -> str:
    """``/api/job-events/`` with a well-formed cursor whose position (the event id it
    continues from) is ``digits``."""
    cursor = base64.b64encode(f"p={digits}".encode()).decode()
    return f"/api/job-events/?cursor={quote(cursor)}"


# Twice DATA_UPLOAD_MAX_NUMBER_FIELDS: Django refuses to parse the query string, and with
# DEBUG=true its error page, which lists the parameters, failed again and answered 500.
TOO_MANY_PARAMETERS = "/api/jobs/?" + "&".join(["a"] * 2_000)


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [True, False], ids=["debug", "production"])
@pytest.mark.parametrize("position", [str(2**63), "9" * 5_000], ids=["bigint+1", "5000-digits"])
def test_a_cursor_position_beyond_any_event_id_is_a_400_naming_the_cursor(
    client, settings, debug, position
):
    settings.DEBUG = debug
    failed_job()
    response = client.get(feed_with_cursor_position(position))
    assert response.status_code == 400, response.content[:300]
    assert response.json() == {"cursor": ["Invalid cursor"]}


@pytest.mark.django_db
def test_a_cursor_position_at_the_largest_event_id_is_accepted(client):
    failed_job()
    response = client.get(feed_with_cursor_position(str(2**63 - 1)))
    assert response.status_code == 200
    assert len(response.json()["results"]) == 3


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [True, False], ids=["debug", "production"])
def test_more_query_parameters_than_django_parses_is_a_json_400(client, settings, debug):
    settings.DEBUG = debug
    response = client.get(TOO_MANY_PARAMETERS)
    assert response.status_code == 400, response.content[:300]
    assert response.json() == {"query": ["Too many query parameters: at most 1000 are accepted."]}


@pytest.mark.django_db
def test_more_query_parameters_than_django_parses_is_a_plain_400_outside_the_api(client):
    response = client.get("/admin/?" + "&".join(["a"] * 2_000))
    assert response.status_code == 400
    assert b"Too many query parameters" in response.content


def test_a_query_string_refused_for_its_size_is_not_parsed_again_after_the_400(rf):
    # What the Debug Toolbar's request panel does after the response, outside the middleware.
    request = rf.get("/admin/?" + "&".join(["a"] * 2_000))
    response = RefuseUnstorableQueryMiddleware(lambda request: HttpResponse())(request)
    assert response.status_code == 400
    assert dict(request.GET) == {}


@pytest.fixture
def staff_client(client, transactional_db):
    user = get_user_model().objects.create_superuser("root", password=secrets.token_urlsafe())
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "query",
    ["status__exact=%00", "type__exact=%00", "queue__exact=a%00", "q=%00", "q=a%00b&status=x"],
)
def test_admin_filters_and_search_with_nul_are_a_400_not_a_500(staff_client, query):
    failed_job()
    response = staff_client.get(f"/admin/jobs/job/?{query}")
    assert response.status_code == 400
    assert b"NUL character" in response.content
    assert staff_client.get("/admin/jobs/jobevent/?q=%00").status_code == 400


def test_admin_filters_with_ordinary_values_still_work(staff_client):
    job = failed_job()
    response = staff_client.get("/admin/jobs/job/?status__exact=failed&q=demo")
    assert response.status_code == 200
    assert str(job.pk).encode() in response.content


# --- JSON everywhere under /api/ (in-process) ---------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete", "options"])
@pytest.mark.parametrize("path", ["/api/nope/", "/api/jobs/a/b/c/", "/api/x"])
def test_unknown_api_paths_are_a_json_404_for_every_method_even_with_csrf_checks(method, path):
    client = APIClient(enforce_csrf_checks=True)
    body = (
        {} if method in ("get", "options") else {"data": b"{}", "content_type": "application/json"}
    )
    response = getattr(client, method)(path, **body)
    assert response.status_code == 404, response.content
    assert response["Content-Type"] == "application/json"
    assert response.json()["detail"].startswith("Not found.")


@pytest.mark.django_db
def test_a_known_path_without_its_slash_redirects_gets_and_names_the_path_for_posts():
    client = APIClient(enforce_csrf_checks=True)
    assert client.get("/api/jobs?status=failed")["Location"] == "/api/jobs/?status=failed"
    response = client.post("/api/jobs", data={"type": "demo.success"}, format="json")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found. Did you mean /api/jobs/ ?"}
    assert not Job.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "path"),
    [("delete", "/api/jobs/"), ("put", "/api/jobs/stats/"), ("get", "/api/jobs/retry/")],
)
def test_a_wrong_method_on_a_known_path_is_a_json_405(method, path):
    response = getattr(APIClient(), method)(path)
    assert response.status_code == 405
    assert response.json()["detail"].startswith("Method ")


@pytest.mark.django_db
def test_a_database_error_of_the_connection_kind_is_a_json_503(client, monkeypatch):
    from django.db import OperationalError

    from jobs.api.views import JobStatsView

    def refuse(**kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(JobStatsView, "selector", refuse)
    response = client.get("/api/jobs/stats/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json() == {"detail": "The database is unavailable; try again shortly."}


@pytest.mark.django_db
def test_a_write_refused_by_a_read_only_server_is_a_json_503_and_the_connection_is_dropped(
    client, monkeypatch
):
    from django.db import connection

    from jobs.api.views import JobStatsView
    from tests.helpers import read_only_error

    def refuse(**kwargs):
        connection.ensure_connection()
        raise read_only_error("INSERT")

    monkeypatch.setattr(JobStatsView, "selector", refuse)
    closed = []
    monkeypatch.setattr(connection, "close", lambda: closed.append(True))
    response = client.get("/api/jobs/stats/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json() == {"detail": "The database is unavailable; try again shortly."}
    assert closed


def test_an_unexpected_error_under_api_is_a_json_500(rf):
    from jobs.api.views import server_error

    response = server_error(rf.get("/api/jobs/"))
    assert (response.status_code, json.loads(response.content)) == (
        500,
        {"detail": "Internal server error."},
    )
    assert b"<html" in server_error(rf.get("/admin/")).content.lower()


# --- Roles ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_create_job_roles_makes_a_viewer_and_an_operator_group_idempotently():
    from django.contrib.auth.models import Group

    call_command("create_job_roles", stdout=StringIO())
    viewers = Group.objects.get(name="Job viewers")
    viewers.permissions.add(Permission.objects.get(codename="delete_job"))  # drift
    call_command("create_job_roles", stdout=StringIO())

    def codenames(name: str) -> set[str]:
        return set(Group.objects.get(name=name).permissions.values_list("codename", flat=True))

    assert codenames("Job viewers") == {"view_job"}
    assert codenames("Job operators") == {"view_job", "add_job", "change_job"}
    viewer = get_user_model().objects.create_user("viewer")
    viewer.groups.add(viewers)
    viewer = get_user_model().objects.get(pk=viewer.pk)  # fresh permission cache
    assert viewer.has_perm("jobs.view_job") and not viewer.has_perm("jobs.change_job")
