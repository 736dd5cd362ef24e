"""Every module of the app can be the first one a project imports, in any order.

Django imports an app's modules in the order ``INSTALLED_APPS`` lists the apps, and a
project's own code may import any module of ``jobs`` first (a ``models.py`` that imports
``jobs.handlers``, a ``tasks.py`` that imports ``jobs.backends``). With an import cycle
among the app's modules, whichever module is imported first decides whether Django
starts. So each module is imported first, alone, in a fresh process: a probe app listed
before ``jobs`` imports it from its ``models.py``, then Django sets up and runs its checks
(the URLconf includes ``jobs.urls``) with the admin installed. The first import happens
before Django looks at the admin, so it is the same without it; what differs comes after
(no admin autodiscovery, a URLconf without it), which a project's entry points into the
app show as well as every module would: those are also started without the admin.

The processes are forked from one interpreter that has imported Django's and the
libraries' modules that need no settings, and nothing of the app: an interpreter's start
and those imports, paid once instead of once per case, were four fifths of each case's
cost. They run a few at a time; each parametrized test reads its own result.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
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
# What a project without the admin imports first (its settings, models, tasks and URLconf),
# started without it.
WITHOUT_ADMIN = ["jobs", "jobs.apps", "jobs.backends", "jobs.handlers", "jobs.models", "jobs.urls"]
CASES = [(module, True) for module in MODULES] + [(module, False) for module in WITHOUT_ADMIN]

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


# Imported once, before the forks: libraries, none of which imports the app or reads the
# settings (a project's own settings and apps import them first as often as not).
PRELOAD = [
    "django.core.management",
    "django.db.models",
    "django.http",
    "django.urls",
    "django.contrib.postgres.fields",
    "psycopg",
    "rest_framework.serializers",
]

# Run by a fresh interpreter: reads ``[[project, module], ...]`` as JSON on standard input,
# forks a child per case, a few at a time, and writes ``[[returncode, stderr], ...]``.
FORKS = """
import json
import os
import sys
import tempfile
import traceback

for name in PRELOAD:
    __import__(name)

cases = json.load(sys.stdin)
workers = int(os.environ["PROBE_PARALLEL"])
results = [None] * len(cases)
running = {}


def start(index):
    project, module = cases[index]
    err = tempfile.TemporaryFile(mode="w+")
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.dup2(err.fileno(), 2)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            os.chdir(project)
            sys.path.insert(0, project)
            os.environ["PROBE_MODULE"] = module
            os.environ["DJANGO_SETTINGS_MODULE"] = "probe_settings"
            from django.core.management import execute_from_command_line

            execute_from_command_line(["django", "check"])
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 1
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stderr.flush()
        os._exit(code)
    running[pid] = (index, err)


pending = list(range(len(cases)))
while pending or running:
    while pending and len(running) < workers:
        start(pending.pop(0))
    pid, status = os.wait()
    index, err = running.pop(pid)
    err.seek(0)
    results[index] = [os.waitstatus_to_exitcode(status), err.read()]
    err.close()
json.dump(results, sys.stdout)
""".replace("PRELOAD", repr(PRELOAD))


@dataclass(frozen=True)
class Started:
    returncode: int
    stderr: str


def _import_each_first(cases: list[tuple[Path, str]], environ: dict[str, str]) -> list[Started]:
    env = {
        key: value
        for key, value in environ.items()
        if not key.startswith(("JOB_", "DJANGO_", "DATABASE_", "POSTGRES_"))
    }
    env.update(PYTHONPATH=str(BACKEND_DIR), PROBE_PARALLEL=str(max(os.cpu_count() or 1, 2)))
    done = subprocess.run(
        [sys.executable, "-c", FORKS],
        input=json.dumps([[str(project), module] for project, module in cases]),
        cwd=BACKEND_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return [Started(code, stderr) for code, stderr in json.loads(done.stdout)]


@pytest.fixture(scope="module")
def imported_first(request, tmp_path_factory):
    """The cases this session runs (``-k`` starts only the selected ones), each
    ``(module, admin)`` mapped to the future of every case's result, and their order."""
    root = tmp_path_factory.mktemp("import-order")
    projects = {admin: _project(root, admin=admin) for admin in (False, True)}
    cases = [
        (item.callspec.params["module"], item.callspec.params["admin"])
        for item in request.session.items
        if getattr(item, "function", None) is test_django_starts_with_the_module_imported_first
    ]
    # Copied here: pytest sets and deletes PYTEST_CURRENT_TEST in os.environ while the
    # processes start, and iterating it from the pool's thread then fails now and then.
    environ = dict(os.environ)
    with ThreadPoolExecutor(max_workers=1) as pool:
        started = pool.submit(
            _import_each_first, [(projects[admin], module) for module, admin in cases], environ
        )
        yield {case: started for case in cases}, cases


def test_the_app_has_the_modules_this_test_imports():
    assert set(WITHOUT_ADMIN) <= set(MODULES)


@pytest.mark.parametrize(
    ("module", "admin"),
    CASES,
    ids=[f"{module}-{'with' if admin else 'without'}-admin" for module, admin in CASES],
)
def test_django_starts_with_the_module_imported_first(imported_first, module, admin):
    runs, cases = imported_first
    done = runs[module, admin].result()[cases.index((module, admin))]
    assert done.returncode == 0, textwrap.shorten(done.stderr, 4000)
