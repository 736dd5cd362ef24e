"""Fuzz the API from its own OpenAPI schema with schemathesis, in-process through WSGI.

Every operation in ``/api/schema/`` gets generated requests, valid and invalid, run on the
local (open, DEBUG=true) API against the test database. Each response must not be a 5xx
and must conform to the schema: a documented status code, the documented content type,
headers and body. Requests naming a job use both generated ids and the id of a job that
failed before the operation's first request, so the 200 shapes are validated too (retry's
200 on the first such request, its 409 on the later ones). The number of examples per
operation is bounded (``JOB_FUZZ_EXAMPLES``, default 30) so this stays well under a minute.
"""

import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from config.wsgi import application
from tests.factories import failed_job

schema = schemathesis.openapi.from_wsgi("/api/schema/", application)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture
def keep_test_connection():
    """Calling the WSGI app fires request_started/finished, which would close the test's
    connection mid-transaction; Django's own test client disconnects them the same way."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def failed_job_id() -> str:
    """Made before the operation's first request, while the queue is still empty: once
    fuzzed jobs are queued, a claim would take one of those instead."""
    return str(failed_job().pk)


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=int(os.environ.get("JOB_FUZZ_EXAMPLES", "30")),
    deadline=None,
    database=None,
    derandomize=True,  # the same requests on every run: CI failures reproduce locally
    suppress_health_check=list(HealthCheck),
)
def test_api_answers_every_generated_request_as_its_schema_says(
    case, keep_test_connection, failed_job_id
):
    case.call_and_validate(checks=CHECKS)
    if case.path_parameters and "id" in case.path_parameters:
        case.path_parameters["id"] = failed_job_id
        case.call_and_validate(checks=CHECKS)
