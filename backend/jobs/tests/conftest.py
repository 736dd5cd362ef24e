import os

import pytest
from django.conf import settings

from jobs import services
from jobs.tests.factories import fresh

ON_POSTGRES = settings.DATABASE_ENGINE == "postgres"


def pytest_report_header(config: pytest.Config) -> str:
    engine = settings.DATABASES["default"]["ENGINE"]
    return f"database: {engine} (DATABASE_ENGINE={settings.DATABASE_ENGINE})"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if ON_POSTGRES:
        return
    # These tests exercise PostgreSQL's row locks; the PostgreSQL pass of `make test`
    # runs them, and there an unreachable server is an error, never a skip.
    skip = pytest.mark.skip(reason="needs PostgreSQL (DATABASE_ENGINE=postgres)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _postgres_is_required_in_ci(django_db_setup: None, django_db_blocker) -> None:
    """In CI the PostgreSQL pass must really talk to PostgreSQL."""
    if os.environ.get("CI", "").lower() == "true" and ON_POSTGRES:
        from django.db import connection

        with django_db_blocker.unblock():
            assert connection.vendor == "postgresql"


@pytest.fixture
def make_job():
    """Create a job through the service, as a client would."""

    def make(type: str = "demo.success", **kwargs):
        job, _ = services.create_job(type=type, **kwargs)
        return fresh(job)

    return make


@pytest.fixture
def register_handler():
    """Register a handler for one test only."""
    from jobs import handlers

    added: list[str] = []

    def register(type: str, fn, description: str = "test handler") -> None:
        handlers.register(type, description=description)(fn)
        added.append(type)

    yield register
    for type in added:
        handlers._REGISTRY.pop(type, None)
