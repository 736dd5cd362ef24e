"""The installed app in projects unlike this one: the installation matrix.

Each configuration is a throwaway project written here, run with a virtualenv that holds
the wheel and what it declares (``conftest.VIRTUALENVS``), on a database of its own:

* ``alone``: Django alone installed (no psycopg, no REST framework, no prometheus-client),
  ``jobs`` with only contenttypes and auth, on SQLite;
* ``before-admin``: ``[postgres]``, ``jobs`` listed before ``django.contrib.admin``;
* ``after-admin``: ``[all]``, ``jobs`` after the admin, the API under ``api/``;
* ``custom-prefix``: ``[all]``, no admin, the API under ``queue/v1/``.

Each runs ``check`` and ``migrate``, enqueues a ``@task`` from ``manage.py shell``, runs a
real ``run_job_workers --burst`` that completes it, and reads the result back through
``get_result``. Without an extra, the part that needs it says which to install when
Django starts.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness import HttpServer, free_port, terminate, wait_until
from tests.install.conftest import ADMIN_SETTINGS, Virtualenv, project_env

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

ADMIN_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
]
PREFIX = "queue/v1/"


@dataclass(frozen=True)
class Config:
    virtualenv: str
    apps: list[str]
    database: str  # "sqlite" or "postgres"
    # The URLconf's include of the API, if any, and whether it routes the admin.
    api_prefix: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def admin(self) -> bool:
        return "django.contrib.admin" in self.apps


CONFIGS = {
    "alone": Config(
        "core", ["django.contrib.contenttypes", "django.contrib.auth", "jobs", "shop"], "sqlite"
    ),
    "before-admin": Config("postgres", ["jobs", "shop", *ADMIN_APPS], "postgres"),
    "after-admin": Config(
        "all", [*ADMIN_APPS, "rest_framework", "jobs", "shop"], "postgres", api_prefix="api/"
    ),
    "custom-prefix": Config(
        "all",
        ["django.contrib.contenttypes", "django.contrib.auth", "rest_framework", "jobs", "shop"],
        "postgres",
        api_prefix=PREFIX,
    ),
}

SETTINGS = """
import os

SECRET_KEY = "installation-matrix"
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1"]
USE_TZ = True
ROOT_URLCONF = "site_urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = {apps!r}
TASKS = {{"default": {{"BACKEND": "jobs.backends.JobQueueBackend"}}}}
if {postgres!r}:
    DATABASES = {{
        "default": {{
            "ENGINE": "django.db.backends.postgresql",
            "HOST": os.environ["POSTGRES_HOST"],
            "PORT": os.environ["POSTGRES_PORT"],
            "USER": os.environ["POSTGRES_USER"],
            "PASSWORD": os.environ["POSTGRES_PASSWORD"],
            "NAME": os.environ["POSTGRES_DB"],
        }}
    }}
else:
    DATABASES = {{"default": {{"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"}}}}
    SILENCED_SYSTEM_CHECKS = ["models.W040"]  # SQLite ignores the indexes' INCLUDE
{extra}
"""

URLS = """
from django.urls import include, path

urlpatterns = []
if {admin!r}:
    from django.contrib import admin

    urlpatterns.append(path("admin/", admin.site.urls))
if {api_prefix!r}:
    urlpatterns.append(path({api_prefix!r}, include("jobs.urls")))
"""

MANAGE = """
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "site_settings")
from django.core.management import execute_from_command_line

execute_from_command_line(sys.argv)
"""

TASKS = """
from django.tasks import task


@task
def add(a: int, b: int) -> int:
    return a + b
"""

ENQUEUE = "from shop.tasks import add; print(add.enqueue(2, 3).id)"
RESULT = """
import json
from django.tasks import default_task_backend
result = default_task_backend.get_result({id!r})
print(json.dumps({{
    "status": result.status,
    "return_value": result.return_value if result.status == "SUCCESSFUL" else None,
    "attempts": len(result.worker_ids),
}}))
"""


def write_project(root: Path, config: Config, extra: str = "") -> Path:
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "tasks.py").write_text(TASKS)
    (root / "manage.py").write_text(MANAGE)
    (root / "site_settings.py").write_text(
        SETTINGS.format(apps=config.apps, postgres=config.database == "postgres", extra=extra)
        + (ADMIN_SETTINGS if config.admin else "")
    )
    (root / "site_urls.py").write_text(
        URLS.format(admin=config.admin, api_prefix=config.api_prefix)
    )
    return root


@dataclass
class Project:
    root: Path
    venv: Virtualenv
    env: dict[str, str]

    def manage(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.venv.python, "manage.py", *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@dataclass
class Run:
    """What each step of a configuration answered."""

    project: Project
    steps: dict[str, subprocess.CompletedProcess[str]]
    result: dict[str, Any]


@pytest.fixture(scope="module")
def runs(virtualenvs, fresh_database, tmp_path_factory):
    """``name -> Run`` of a configuration, run once for the module on first use."""
    done: dict[str, Run] = {}

    def run(name: str) -> Run:
        if name in done:
            return done[name]
        config = CONFIGS[name]
        database = fresh_database(f"matrix_{name}") if config.database == "postgres" else None
        root = write_project(tmp_path_factory.mktemp(name), config)
        project = Project(root, virtualenvs[config.virtualenv], project_env(database))
        steps = {
            "check": project.manage("check"),
            "migrate": project.manage("migrate", "--noinput", "-v", "0"),
        }
        steps["enqueue"] = project.manage("shell", "-v", "0", "-c", ENQUEUE)
        steps["worker"] = project.manage("run_job_workers", "--burst", "--threads", "1")
        task_id = steps["enqueue"].stdout.strip().splitlines()[-1]
        steps["result"] = project.manage("shell", "-v", "0", "-c", RESULT.format(id=task_id))
        for step, answer in steps.items():
            assert answer.returncode == 0, f"{name}: {step} failed:\n{answer.stderr}"
        done[name] = Run(project, steps, json.loads(steps["result"].stdout.splitlines()[-1]))
        return done[name]

    return run


@pytest.mark.parametrize("name", CONFIGS)
def test_a_project_checks_migrates_and_runs_a_task_through_a_real_worker(runs, name):
    run = runs(name)
    assert run.result == {"status": "SUCCESSFUL", "return_value": 5, "attempts": 1}
    assert "System check identified no issues" in run.steps["check"].stdout


def test_the_core_installs_django_alone(virtualenvs):
    core = virtualenvs["core"]
    assert core.has("django") and core.has("jobs")
    for module in ("psycopg", "rest_framework", "drf_spectacular", "prometheus_client"):
        assert not core.has(module), module


def test_the_api_under_a_custom_prefix_answers_there_with_the_projects_tasks_only(runs):
    project = runs("custom-prefix").project
    port = free_port()
    server = HttpServer(port)
    with (project.root / "runserver.log").open("w") as log:
        proc = subprocess.Popen(
            [project.venv.python, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=project.root,
            env=project.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until(lambda: server.json("GET", f"/{PREFIX}health/")[0] == 200, 30, "runserver")
        status, config = server.json("GET", f"/{PREFIX}config/", https=False)
        # The project's task, and no demo.* type: jobs.demo is not installed.
        assert (status, [t["type"] for t in config["job_types"]]) == (200, ["shop.tasks.add"])
        status, jobs = server.json("GET", f"/{PREFIX}jobs/?status=succeeded", https=False)
        assert (status, [j["type"] for j in jobs["results"]]) == (200, ["shop.tasks.add"])
        for method in ("GET", "POST", "DELETE"):
            status, headers, body = server.request(
                method, f"/{PREFIX}no/such/path/", body={}, https=False
            )
            assert (status, headers["content-type"]) == (404, "application/json"), method
            assert json.loads(body) == {"detail": "Not found."}
        # /api/ is nothing to this project: Django's own 404 page.
        status, headers, _ = server.request("GET", "/api/jobs/", https=False)
        assert (status, headers["content-type"].split(";")[0]) == (404, "text/html")
    finally:
        terminate(proc)


def _refusal(virtualenvs, tmp_path, config: Config, *args: str, extra: str = "") -> str:
    root = write_project(tmp_path / "project", config, extra=textwrap.dedent(extra))
    done = Project(root, virtualenvs[config.virtualenv], project_env()).manage(*args)
    assert done.returncode != 0, done.stdout
    return done.stderr


def test_the_api_without_its_extra_is_refused_at_startup_naming_it(virtualenvs, tmp_path):
    config = Config(
        "postgres",
        ["django.contrib.contenttypes", "django.contrib.auth", "jobs"],
        "sqlite",
        api_prefix=PREFIX,
    )
    stderr = _refusal(virtualenvs, tmp_path, config, "check")
    # jobs.extras.MissingExtra is Django's ImproperlyConfigured.
    assert (
        "jobs.extras.MissingExtra: The jobs REST API (jobs.urls, jobs.api) needs rest_framework "
        'and drf_spectacular, not installed here: pip install "job-queue-backend[api]"'
    ) in stderr


def test_worker_metrics_without_their_extra_are_refused_before_the_worker_starts(
    virtualenvs, tmp_path
):
    config = Config(
        "postgres", ["django.contrib.contenttypes", "django.contrib.auth", "jobs"], "sqlite"
    )
    stderr = _refusal(
        virtualenvs,
        tmp_path,
        config,
        "run_job_workers",
        "--burst",
        extra="JOB_WORKER_METRICS_PORT = 9300",
    )
    assert "(jobs.E007) JOB_WORKER_METRICS_PORT is 9300, but prometheus-client is not" in stderr
    assert 'pip install "job-queue-backend[metrics]"' in stderr
    assert "worker_started" not in stderr
