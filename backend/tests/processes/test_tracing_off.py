"""Tracing costs nothing when it is off: no OpenTelemetry import, whether the package is
installed or not; on without the package, start-up stops naming the extra (jobs.E008). The
spans are integration/worker/test_tracing.py's and processes/test_tracing.py's, the
settings' checks unit/test_tracing_settings.py's."""

import subprocess
import sys

import pytest

from harness import BACKEND_DIR
from tests.helpers import child_env

# Run first in the child: opentelemetry cannot be imported, as in a project without it.
HIDE_OPENTELEMETRY = """
import importlib.abc, sys

class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Hide())
"""

# Start the project as manage.py does, enqueue a job of each kind (one with metadata),
# run a worker until the queue is empty, then say what ran and what was imported.
ROUND_TRIP = """
import os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
import django
django.setup()
from django.core.management import call_command
from config import telemetry
telemetry.configure("job-queue-test")
call_command("check")
from jobs import services
from jobs.models import Job
from tests import example_tasks
from jobs.worker import WorkerConfig, WorkerRunner
services.create_job(type="demo.success", payload={"sleep_seconds": 0}, metadata={"k": "v"})
example_tasks.add.enqueue(1, 2)
WorkerRunner(WorkerConfig(threads=1, poll_interval_seconds=0.05, lease_seconds=30,
    cleanup_interval_seconds=5, cleanup_batch_size=100, burst=True)).run()
print(sorted(Job.objects.values_list("status", flat=True)))
print(sorted(name for name in sys.modules if name.split(".")[0] == "opentelemetry")[:1])
"""


def run_child(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=BACKEND_DIR,
        env=child_env(JOB_WORKER_LOG_LEVEL="WARNING", **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("installed", [True, False], ids=["installed", "not-installed"])
def test_with_tracing_off_nothing_of_opentelemetry_is_imported(installed):
    script = ROUND_TRIP if installed else HIDE_OPENTELEMETRY + ROUND_TRIP
    done = run_child(script, JOB_TRACING="false")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["['succeeded', 'succeeded']", "[]"]


@pytest.mark.django_db(transaction=True)
def test_with_tracing_on_the_same_run_imports_it():
    # The other side of the test above: the round trip does reach the tracing code.
    done = run_child(ROUND_TRIP, JOB_TRACING="true", OTEL_TRACES_EXPORTER="none")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["['succeeded', 'succeeded']", "['opentelemetry']"]


def test_tracing_on_without_opentelemetry_stops_start_up_naming_the_extra():
    script = HIDE_OPENTELEMETRY + (
        "import os\n"
        'os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"\n'
        "from django.core.management import execute_from_command_line\n"
        'execute_from_command_line(["manage.py", "check"])\n'
    )
    done = run_child(script, JOB_TRACING="true")
    assert done.returncode == 1
    assert "(jobs.E008) JOB_TRACING is on, but opentelemetry-api is not installed." in done.stderr
    assert 'pip install "job-queue-backend[otel]", or set JOB_TRACING = False.' in done.stderr
