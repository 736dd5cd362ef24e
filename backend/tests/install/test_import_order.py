"""Every module of the app can be the first one a project imports, in any order.

Django imports an app's modules in the order ``INSTALLED_APPS`` lists the apps, and a
project's own code may import any module of ``jobs`` first (a ``models.py`` that imports
``jobs.handlers``, a ``tasks.py`` that imports ``jobs.backends``). With an import cycle
among the app's modules, whichever module is imported first decides whether Django
starts. So each module is imported first, alone, in a fresh interpreter: a probe app
listed before ``jobs`` imports it from its ``models.py``, then Django sets up and runs
its checks (the URLconf includes ``jobs.urls``), with and without the admin installed.

The interpreters run a few at a time; each parametrized test reads its own result.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from harness import BACKEND_DIR
from tests.install.conftest import ADMIN_SETTINGS

# Fresh interpreters on an in-memory SQLite database of their own, whatever the run's engine.
pytestmark = pytest.mark.engine_independent

# The app's modules, as a project can import them: not its tests, nor its migrations
# (Django's migration loader imports those, by file, in its own order). Read from the
# files, so collecting this test imports none of them.
APP_DIR = BACKEND_DIR / "jobs"
MODULES = sorted(
    ".".join(("jobs", *path.relative_to(APP_DIR).with_suffix("").parts)).removesuffix(".__init__")
    for path in APP_DIR.rglob("*.py")
    if path.relative_to(APP_DIR).parts[0] not in ("tests", "migrations")
)
# Registering with the admin needs the admin: a project without it never imports these.
NEEDS_ADMIN = {"jobs.admin"}

ADMIN_APPS = [
    "django.contrib.admin",
    "django.contrib.sessions",
    "django.contrib.messages",
]

SETTINGS = """
import os

SECRET_KEY = "import-order-probe"
USE_TZ = True
ROOT_URLCONF = "probe_urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
SILENCED_SYSTEM_CHECKS = ["models.W040"]  # SQLite ignores the covering indexes' INCLUDE
DATABASES = {{"default": {{"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}}}
# The probe first: its models.py imports the module under test before Django imports any
# module of jobs itself.
INSTALLED_APPS = ["probe", "django.contrib.contenttypes", "django.contrib.auth", *{admin}, "jobs"]
TASKS = {{"default": {{"BACKEND": "jobs.backends.JobQueueBackend"}}}}
"""

URLS = """
from django.conf import settings
from django.urls import include, path

urlpatterns = [path("queue/", include("jobs.urls"))]
if "django.contrib.admin" in settings.INSTALLED_APPS:
    from django.contrib import admin

    urlpatterns.append(path("admin/", admin.site.urls))
"""

PROBE_MODELS = """
import importlib
import os

importlib.import_module(os.environ["PROBE_MODULE"])
"""


def _project(root: Path, *, admin: bool) -> Path:
    project = root / ("with-admin" if admin else "without-admin")
    (project / "probe").mkdir(parents=True)
    (project / "probe" / "__init__.py").write_text("")
    (project / "probe" / "models.py").write_text(PROBE_MODELS)
    settings = SETTINGS.format(admin=ADMIN_APPS if admin else [])
    (project / "probe_settings.py").write_text(settings + (ADMIN_SETTINGS if admin else ""))
    (project / "probe_urls.py").write_text(URLS)
    return project


def _import_first(
    project: Path, module: str, environ: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    env = {
        key: value
        for key, value in environ.items()
        if not key.startswith(("JOB_", "DJANGO_", "DATABASE_", "POSTGRES_"))
    }
    env.update(
        PROBE_MODULE=module,
        DJANGO_SETTINGS_MODULE="probe_settings",
        PYTHONPATH=os.pathsep.join([str(project), str(BACKEND_DIR)]),
    )
    return subprocess.run(
        [sys.executable, "-m", "django", "check"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def imported_first(request, tmp_path_factory):
    """``(module, admin) -> the finished interpreter`` for every case this session runs,
    started a few at a time (``-k`` starts only the selected ones)."""
    root = tmp_path_factory.mktemp("import-order")
    projects = {admin: _project(root, admin=admin) for admin in (False, True)}
    cases = [
        (item.callspec.params["module"], item.callspec.params["admin"])
        for item in request.session.items
        if getattr(item, "function", None) is test_django_starts_with_the_module_imported_first
    ]
    # Copied here: pytest sets and deletes PYTEST_CURRENT_TEST in os.environ while the
    # interpreters start, and iterating it from a pool thread then fails now and then.
    environ = dict(os.environ)
    with ThreadPoolExecutor(max_workers=max(os.cpu_count() or 1, 2)) as pool:
        runs: dict[tuple[str, bool], Future[subprocess.CompletedProcess[str]]] = {
            (module, admin): pool.submit(_import_first, projects[admin], module, environ)
            for module, admin in cases
            if admin or module not in NEEDS_ADMIN
        }
        yield runs


def test_the_app_has_the_modules_this_test_imports():
    assert {"jobs.models", "jobs.handlers", "jobs.backends", "jobs.urls"} <= set(MODULES)


@pytest.mark.parametrize("admin", [False, True], ids=["without-admin", "with-admin"])
@pytest.mark.parametrize("module", MODULES)
def test_django_starts_with_the_module_imported_first(imported_first, module, admin):
    if (module, admin) not in imported_first:
        pytest.skip(f"{module} registers with the admin; a project without it never imports it")
    done = imported_first[module, admin].result()
    assert done.returncode == 0, textwrap.shorten(done.stderr, 4000)
