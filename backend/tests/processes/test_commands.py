"""The spec's test commands (backend-spec.md, "Testing") work as written from backend/:
``TEST_DATABASE_ENGINE=sqlite python -m pytest`` and
``python -m pytest --cov --cov-report=term-missing``. Each runs a small pytest of its own in
a child process, on an SQLite file of its own."""

import os
import re
import subprocess
import sys

import pytest

from harness import BACKEND_DIR

# Child pytest runs on SQLite files of their own, without this run's database settings.
pytestmark = pytest.mark.engine_independent

# A test that writes to the database: it passes only where the test database is.
DATABASE_TEST = "tests/integration/test_models.py::test_database_refuses_duplicate_idempotency_key"


def run_pytest(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest <args>`` from backend/, as the spec writes it, in an environment
    without this run's database settings, plus ``env``."""
    base = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("POSTGRES_", "DATABASE_", "TEST_DATABASE_", "SQLITE_"))
    }
    base.update(
        SQLITE_PATH=str(tmp_path / "spec.sqlite3"),
        COVERAGE_FILE=str(tmp_path / ".coverage"),
        **env,
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=BACKEND_DIR,
        env=base,
        capture_output=True,
        text=True,
        timeout=300,
    )


# A .env with POSTGRES_* (here the environment, which .env only fills in) selects
# PostgreSQL; the server on port 1 refuses, so a test that reached it would fail.
POSTGRES_CONFIGURED = {"POSTGRES_HOST": "127.0.0.1", "POSTGRES_PORT": "1", "POSTGRES_DB": "x"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "configured",
    [POSTGRES_CONFIGURED, {**POSTGRES_CONFIGURED, "DATABASE_ENGINE": "postgres"}],
    ids=["postgres-settings", "database-engine-postgres"],
)
def test_test_database_engine_sqlite_runs_the_tests_on_sqlite(tmp_path, configured):
    result = run_pytest(tmp_path, DATABASE_TEST, TEST_DATABASE_ENGINE="sqlite", **configured)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "database: django.db.backends.sqlite3" in result.stdout
    assert "1 passed" in result.stdout


@pytest.mark.slow
def test_an_unknown_test_database_engine_is_refused_naming_the_variable(tmp_path):
    result = run_pytest(tmp_path, "--collect-only", DATABASE_TEST, TEST_DATABASE_ENGINE="mysql")
    assert result.returncode != 0
    assert "TEST_DATABASE_ENGINE must be sqlite or postgres, got 'mysql'" in result.stderr


@pytest.mark.slow
def test_coverage_command_reports_the_lines_of_the_jobs_package(tmp_path):
    result = run_pytest(
        tmp_path,
        "--cov",
        "--cov-report=term-missing",
        DATABASE_TEST,
        TEST_DATABASE_ENGINE="sqlite",
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert any(line.split() == ["Name", "Stmts", "Miss", "Cover", "Missing"] for line in lines)
    measured = {line.split()[0] for line in lines if re.match(r"\S+\.py\s+\d+\s+\d+\s+\d+%", line)}
    assert {"jobs/models.py", "jobs/services/jobs.py", "jobs/worker/executor.py"} <= measured
    assert not {name for name in measured if not name.startswith("jobs/")}
    assert not {name for name in measured if name.startswith(("jobs/tests/", "jobs/migrations/"))}
    assert any(line.startswith("TOTAL") for line in lines)
