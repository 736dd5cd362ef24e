"""The API under any prefix: nothing in the app assumes /api/.

A project that mounts ``jobs.urls`` at ``queue/v1/`` (``prefix_urls``) gets the same
endpoints and the same JSON answers for what goes wrong: a 404 for any unknown path under
the prefix whatever the method, a 400 for an unstorable query parameter, a 403 for a CSRF
failure, a 500. Which requests are the API's is decided by the URLconf
(``jobs.middleware.is_api_request``), so ``/api/`` means nothing to that project.
"""

import json

import pytest
from rest_framework.test import APIClient

from jobs.api.views import csrf_failure, server_error
from jobs.middleware import is_api_request

pytestmark = [pytest.mark.urls("tests.integration.api.prefix_urls"), pytest.mark.django_db]

PREFIX = "/queue/v1"


def test_the_endpoints_answer_under_the_prefix():
    client = APIClient()
    assert client.get(f"{PREFIX}/health/").json() == {"ok": True, "database": "ok"}
    created = client.post(f"{PREFIX}/jobs/", {"type": "demo.success"}, format="json")
    assert created.status_code == 201
    job = client.get(f"{PREFIX}/jobs/{created.json()['id']}/")
    assert (job.status_code, job.json()["type"]) == (200, "demo.success")


def test_the_index_names_every_endpoint_under_the_prefix():
    body = APIClient().get(f"{PREFIX}/").json()
    assert body["health"] == f"http://testserver{PREFIX}/health/"
    assert body["job-detail"] == f"http://testserver{PREFIX}/jobs/{{id}}/"
    assert body["job-attempts"] == f"http://testserver{PREFIX}/jobs/{{id}}/attempts/"
    assert all(url.startswith(f"http://testserver{PREFIX}/") for url in body.values())
    assert "schema" not in body  # this project has none


@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete", "options"])
@pytest.mark.parametrize("path", ["/nope/", "/jobs/a/b/c/", "/x"])
def test_any_unknown_path_under_the_prefix_is_a_json_404_for_every_method(method, path):
    client = APIClient(enforce_csrf_checks=True)
    body = (
        {} if method in ("get", "options") else {"data": b"{}", "content_type": "application/json"}
    )
    response = getattr(client, method)(PREFIX + path, **body)
    assert response.status_code == 404, response.content
    assert response["Content-Type"] == "application/json"
    assert response.json()["detail"].startswith("Not found.")


def test_a_known_path_without_its_slash_redirects_under_the_prefix():
    client = APIClient()
    assert client.get(f"{PREFIX}/jobs?status=failed")["Location"] == f"{PREFIX}/jobs/?status=failed"
    response = client.post(f"{PREFIX}/jobs", {"type": "demo.success"}, format="json")
    assert response.json() == {"detail": f"Not found. Did you mean {PREFIX}/jobs/ ?"}


def test_an_unstorable_query_parameter_is_json_for_the_api_only():
    client = APIClient()
    api = client.get(f"{PREFIX}/jobs/?type=%00")
    assert (api.status_code, list(api.json())) == (400, ["type"])
    # /api/ is not this project's API: the same refusal, as plain text.
    elsewhere = client.get("/api/jobs/?type=%00")
    assert (elsewhere.status_code, elsewhere["Content-Type"]) == (400, "text/plain")


def test_csrf_failures_and_server_errors_are_json_for_the_api_only(rf):
    for view in (lambda request: csrf_failure(request, "no token"), server_error):
        api = view(rf.post(f"{PREFIX}/jobs/"))
        assert api["Content-Type"] == "application/json"
        assert json.loads(api.content)["detail"]
        assert b"<html" in view(rf.post("/api/jobs/")).content.lower()
        assert b"<html" in view(rf.get("/admin/")).content.lower()


def test_a_request_is_the_apis_by_the_view_its_path_resolves_to(rf):
    assert is_api_request(rf.get(f"{PREFIX}/jobs/"))
    assert is_api_request(rf.get(f"{PREFIX}/anything/at/all"))  # the API's JSON 404
    assert not is_api_request(rf.get("/api/jobs/"))
    assert not is_api_request(rf.get("/admin/"))


@pytest.mark.urls("config.urls")
def test_this_projects_schema_and_docs_pages_count_as_the_api(rf):
    """DRF views outside jobs.api (drf-spectacular's) answer errors as JSON too."""
    assert is_api_request(rf.get("/api/schema/"))
    assert is_api_request(rf.get("/api/docs/"))
    assert is_api_request(rf.get("/metrics"))
    assert not is_api_request(rf.get("/admin/"))
