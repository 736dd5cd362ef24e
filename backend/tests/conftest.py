import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.conf import settings

from harness import PrivatePgBouncer, PrivatePostgres, pgbouncer_binary, postgres_bin_dir, serve_api
from tests.helpers import production_child_env

ON_POSTGRES = settings.DATABASE_ENGINE == "postgres"
IN_CI = os.environ.get("CI", "").lower() == "true"


def pytest_report_header(config: pytest.Config) -> str:
    engine = settings.DATABASES["default"]["ENGINE"]
    return f"database: {engine} (DATABASE_ENGINE={settings.DATABASE_ENGINE})"


# Fixtures that reach the run's database. Not django_db_setup: every test has it (through
# the session fixture below), and it only creates the database, which pytest-django keeps
# out of reach of a test without the django_db mark.
DATABASE_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "live_server",
    "admin_client",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # `make test` runs these on one pass only: one that reaches the run's database belongs
    # to both (the same behaviour suite runs against every database).
    for item in items:
        if "engine_independent" in item.keywords and (
            "django_db" in item.keywords
            or DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))
        ):
            raise pytest.UsageError(f"{item.nodeid} is engine_independent but uses the database")
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
    if IN_CI and ON_POSTGRES:
        from django.db import connection

        with django_db_blocker.unblock():
            assert connection.vendor == "postgresql"


@pytest.fixture
def register_handler():
    """Register a handler for one test only."""
    from jobs import registry

    added: list[str] = []

    def register(type: str, fn, description: str = "test handler", **options) -> None:
        registry.register(type, description=description, **options)(fn)
        added.append(type)

    yield register
    for type in added:
        registry._REGISTRY.pop(type, None)


@pytest.fixture
def spans(settings):
    """Tracing on (``JOB_TRACING``), its spans kept by the SDK's in-memory exporter:
    ``spans.get_finished_spans()``."""
    from tests.helpers import memory_exporter

    settings.JOB_TRACING = True
    exporter = memory_exporter()
    yield exporter
    exporter.clear()


@pytest.fixture
def private_postgres():
    """A PostgreSQL server of the test's own (``helpers.PrivatePostgres``), with an empty
    database; destroyed afterwards."""
    with private_postgres_server() as server:
        yield server


@contextmanager
def private_postgres_server() -> Iterator[PrivatePostgres]:
    """A PostgreSQL server of the caller's own, started with an empty database and
    destroyed on leaving; without the server binaries the test fails in CI and is skipped
    elsewhere."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        if IN_CI:
            pytest.fail("PostgreSQL server binaries (initdb, pg_ctl) are required in CI")
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not installed")
    server = PrivatePostgres(bin_dir)
    try:
        server.init_and_start()
        yield server
    finally:
        server.destroy()


@pytest.fixture(scope="module")
def private_pgbouncer(django_db_setup, django_db_blocker):
    """A pgbouncer of the module's own (``helpers.PrivatePgBouncer``) in transaction mode in
    front of this run's PostgreSQL, with at most 4 server connections."""
    binary = pgbouncer_binary()
    if binary is None:
        if IN_CI:
            pytest.fail("pgbouncer is required in CI (apt-get install pgbouncer)")
        pytest.skip("pgbouncer not installed (apt-get install pgbouncer)")
    from django.db import connection

    db = connection.settings_dict
    with PrivatePgBouncer(
        binary,
        server_host=db["HOST"] or "127.0.0.1",
        server_port=int(db["PORT"] or 5432),
        user=db["USER"],
        password=db["PASSWORD"] or "",
        pool_size=4,
    ) as pgbouncer:
        yield pgbouncer


@pytest.fixture(scope="module")
def production_server_env() -> dict[str, str]:
    """Environment added to ``production_server``'s; a test module overrides this fixture
    to configure its server."""
    return {}


@pytest.fixture(scope="module")
def production_server(django_db_setup, django_db_blocker, tmp_path_factory, production_server_env):
    """gunicorn serving the API with DEBUG=false on this run's test database, one per module."""
    with django_db_blocker.unblock():
        env = production_child_env(**production_server_env)
    with serve_api(tmp_path_factory.mktemp("prod") / "gunicorn.log", env) as server:
        yield server
