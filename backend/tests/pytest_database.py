"""pytest plugin (``-p tests.pytest_database`` in pyproject.toml): the test run's
database engine, chosen before pytest-django reads the settings, and the state each test of
every suite (the app's and the bench's) starts without.

Precedence for a test run: ``TEST_DATABASE_ENGINE`` (``sqlite`` or ``postgres``), then
``DATABASE_ENGINE``, then PostgreSQL if any ``POSTGRES_*`` variable is set, else SQLite
(the last two are the settings' own rule, which also reads ``.env``). So the spec's
``TEST_DATABASE_ENGINE=sqlite python -m pytest`` runs on SQLite even when ``.env``
configures PostgreSQL for the server, and ``make test`` names the engine of each pass the
same way. ``TEST_DATABASE_ENGINE`` is read from the environment only: it describes a test
command, not the deployment ``.env`` configures. It becomes the run's ``DATABASE_ENGINE``,
so the servers and workers the tests start (``helpers.child_env``) use the same database.
"""

import os

import pytest

ENGINES = ("sqlite", "postgres")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests() -> None:
    # The workers tests start leave the test database's jobs_job to the tests: its dead rows
    # (every rolled-back test leaves some) would have them vacuum it now and then, each pass
    # waiting on the tests' transactions. tests/integration/worker/test_vacuum.py sets its own
    # floors.
    os.environ.setdefault("JOB_WORKER_VACUUM_DEAD_ROWS", "0")
    engine = os.environ.get("TEST_DATABASE_ENGINE", "").strip().lower()
    if not engine:
        return
    if engine not in ENGINES:
        raise pytest.UsageError(f"TEST_DATABASE_ENGINE must be sqlite or postgres, got {engine!r}")
    os.environ["DATABASE_ENGINE"] = engine


@pytest.fixture(autouse=True)
def _fresh_stats_cache() -> None:
    """Stats are cached for a second per process; each test starts without them."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def _plans_as_the_test_left_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker runner started in this process plans its prepared statements generically
    from then on (``PostgresDriver.plan_generically``); the next test starts without."""
    from jobs.drivers import postgres

    monkeypatch.setattr(postgres, "_generic_plans", postgres._generic_plans)
