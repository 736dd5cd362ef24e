"""Settings checked at start-up, in a child process: ``manage.py check`` and
``run_job_workers`` refuse out-of-range or unparseable values and name them, and a project
whose TASKS names the backend without the jobs app is told which app to add."""

import os
import subprocess
import sys

import pytest

from harness import BACKEND_DIR
from tests.helpers import child_env, run_manage

LEASE_ERROR = "JOB_WORKER_LEASE_SECONDS is 999999999999; it must be an integer from 1 to 86400."


def test_manage_check_fails_on_an_out_of_range_environment_value():
    result = run_manage("check", JOB_WORKER_LEASE_SECONDS="999999999999")
    assert result.returncode != 0
    assert "jobs.E001" in result.stderr and LEASE_ERROR in result.stderr


def test_the_worker_refuses_to_start_with_an_out_of_range_setting():
    result = run_manage("run_job_workers", "--burst", JOB_WORKER_LEASE_SECONDS="999999999999")
    assert result.returncode != 0
    assert LEASE_ERROR in result.stderr
    assert "worker_started" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("JOB_WORKER_THREADS", "four", "JOB_WORKER_THREADS must be an integer, got 'four'"),
        ("JOB_WORKER_LOG_LEVEL", "LOUD", "JOB_WORKER_LOG_LEVEL must be DEBUG, INFO"),
        ("DJANGO_THROTTLE_JOB_CREATE", "lots", "DJANGO_THROTTLE_JOB_CREATE must be a rate"),
    ],
)
def test_settings_refuse_unparseable_environment_values_by_name(variable, value, message):
    result = run_manage("check", **{variable: value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr


@pytest.mark.django_db(transaction=True)
def test_a_heartbeat_interval_not_shorter_than_the_lease_is_refused_at_start_up():
    env = child_env(JOB_WORKER_LEASE_SECONDS="5", JOB_WORKER_HEARTBEAT_SECONDS="5")
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=BACKEND_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "JOB_WORKER_HEARTBEAT_SECONDS is 5; it must be shorter than" in result.stderr
    assert "jobs.E004" in result.stderr


MISSING_APP_SETTINGS = """
SECRET_KEY = "missing-app"
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "shop"]
TASKS = {"default": {"BACKEND": "jobs.backends.JobQueueBackend"}}
"""


def test_the_backend_reports_a_missing_jobs_app_at_check_with_a_hint(tmp_path):
    """TASKS names the backend but INSTALLED_APPS lacks jobs: the project's task module
    still imports, and `check` names the app to add (as the reference database backend
    does) instead of a traceback."""
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "tasks.py").write_text(
        "from django.tasks import task\n\n\n@task\ndef add(a, b):\n    return a + b\n"
    )
    (tmp_path / "shop" / "models.py").write_text("from .tasks import add  # noqa: F401\n")
    (tmp_path / "missing_app_settings.py").write_text(MISSING_APP_SETTINGS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "JOB_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="missing_app_settings",
        PYTHONPATH=os.pathsep.join([str(tmp_path), str(BACKEND_DIR)]),
    )
    done = subprocess.run(
        [sys.executable, "-m", "django", "check"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert (
        "?: (jobs.E102) TASKS['default'] uses JobQueueBackend, but the jobs app is not "
        "installed.\n\tHINT: Add 'jobs' to INSTALLED_APPS." in done.stderr
    )
