"""The app in another Django project (``tests/install/example_project``), installed with pip.

One scenario, run once for the module: the wheel of ./backend installed with its declared
dependencies (``[all]``) into a fresh virtualenv (the installation matrix's, conftest.py),
migrate a fresh PostgreSQL database with the example project's settings (no ``JOB_*``
setting), serve the project with ``runserver``, enqueue ``@task`` functions from a view and
from ``manage.py shell -c``, and let one real ``run_job_workers`` process (one thread, the
queues default and emails) run them until every job it may run has finished. Each test then
checks one behaviour in what the scenario left.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from harness import BACKEND_DIR, HttpServer, free_port, wait_until
from jobs.models import FINISHED_STATUSES
from tests.install.conftest import project_env

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

EXAMPLE_DIR = BACKEND_DIR / "tests" / "install" / "example_project"

# Enqueued from `manage.py shell -c`: prints the TaskResult ids as JSON on its last line.
SHELL_SCRIPT = """
import json
from datetime import timedelta

import jobs
from django.db import transaction
from django.utils import timezone

from shop.tasks import add, build_report, flaky, record, send_email

ids = {"jobs_module": jobs.__file__}
ids["add"] = add.enqueue(40, 2).id
ids["flaky"] = flaky.enqueue(succeed_on=3).id
for priority in (-10, 0, 10):  # enqueued lowest first: first come first served would invert
    ids[f"priority {priority}"] = record.using(priority=priority).enqueue(f"p{priority}").id
ids["run_after"] = (timezone.now() + timedelta(seconds=4)).isoformat()
ids["deferred"] = record.using(run_after=timezone.now() + timedelta(seconds=4)).enqueue("d").id
ids["email"] = send_email.enqueue("ada@example.com").id
ids["report"] = build_report.enqueue().id
with transaction.atomic():
    ids["committed"] = record.enqueue("committed").id
try:
    with transaction.atomic():
        ids["rolled back"] = record.enqueue("rolled back").id
        raise RuntimeError("roll back")
except RuntimeError:
    pass

# The admin, Django's own here (the project does not install unfold), lists task jobs too.
from django.contrib.auth.models import User
from django.test import Client

admin = Client(HTTP_HOST="127.0.0.1")
admin.force_login(User.objects.create_superuser("admin", "admin@example.com", "-"))
page = admin.get("/admin/jobs/job/", {"q": "shop.tasks.send_email"})
ids["admin"] = [page.status_code, ids["email"] in page.content.decode()]
print(json.dumps(ids))
"""


@dataclass
class Scenario:
    ids: dict[str, str]
    server: HttpServer
    database: dict[str, Any]
    site: Path
    worker_exit_code: int
    worker_log: str

    def query(self, statement: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(**self.database) as conn:
            return conn.execute(statement, params).fetchall()

    def result(self, name: str) -> dict[str, Any]:
        status, body = self.server.json("GET", f"/shop/results/{self.ids[name]}/", https=False)
        assert status == 200, body
        return body

    def claimed_at(self, name: str) -> list[datetime]:
        rows = self.query(
            "SELECT created_at FROM jobs_jobevent WHERE job_id = %s AND type = 'claimed' "
            "ORDER BY id",
            self.ids[name],
        )
        return [row[0] for row in rows]


def _manage(python: str, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [python, "manage.py", *args],
        cwd=EXAMPLE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def scenario(virtualenvs, fresh_database, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("example")
    venv = virtualenvs["all"]
    python = venv.python
    site = venv.site_packages()
    database = fresh_database("example")
    env = project_env(database)
    server_proc = worker = None
    try:
        _manage(python, env, "migrate", "--noinput", "-v", "0")
        port = free_port()
        server_log = (tmp / "runserver.log").open("w")
        server_proc = subprocess.Popen(
            [python, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=EXAMPLE_DIR,
            env=env,
            stdout=server_log,
            stderr=subprocess.STDOUT,
        )
        server = HttpServer(port)
        wait_until(
            lambda: server.json("GET", "/jobs-api/health/", https=False)[0] == 200, 30, "runserver"
        )

        ids = json.loads(
            _manage(python, env, "shell", "-v", "0", "-c", SHELL_SCRIPT).splitlines()[-1]
        )
        status, _, body = server.request(
            "POST",
            "/shop/add/",
            body=b"a=2&b=3",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            https=False,
        )
        assert status == 202, body
        ids["view"] = json.loads(body)["id"]

        worker_log_path = tmp / "worker.log"
        with worker_log_path.open("w") as log:
            worker = subprocess.Popen(
                [
                    *(python, "manage.py", "run_job_workers"),
                    *("--threads", "1", "--queues", "default,emails"),
                ],
                cwd=EXAMPLE_DIR,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

        def served_all() -> bool:
            assert worker.poll() is None, worker_log_path.read_text()
            with psycopg.connect(**database) as conn:
                (waiting,) = conn.execute(
                    "SELECT count(*) FROM jobs_job WHERE queue <> 'reports' AND status <> ALL(%s)",
                    [list(FINISHED_STATUSES)],
                ).fetchone()
            return waiting == 0

        # The flaky task's retries wait the jittered default backoff: at most 5 s, then 10 s.
        wait_until(served_all, 60, "the worker to finish every job of its queues")
        time.sleep(1)  # a poll of the reports queue's time, were it served
        worker.send_signal(signal.SIGTERM)
        code = worker.wait(timeout=30)
        yield Scenario(ids, server, database, site, code, worker_log_path.read_text())
    finally:
        for proc in (worker, server_proc):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


def test_the_project_runs_the_app_installed_by_pip_without_the_config_project(scenario):
    assert scenario.ids["jobs_module"] == str(scenario.site / "jobs" / "__init__.py")
    assert (scenario.site / "jobs" / "drivers" / "queries.sql").exists()
    for left_out in ("config", "harness", "bench", "tests", "jobs/tests"):
        assert not (scenario.site / left_out).exists(), left_out


def test_a_task_enqueued_from_a_view_returns_its_value_through_get_result(scenario):
    result = scenario.result("view")
    assert (result["task"], result["status"], result["return_value"]) == (
        "shop.tasks.add",
        "SUCCESSFUL",
        5,
    )
    assert len(result["worker_ids"]) == 1


def test_a_task_enqueued_from_the_shell_returns_its_value_through_get_result(scenario):
    assert scenario.result("add")["return_value"] == 42


def test_a_task_failing_twice_then_succeeding_has_three_workers_and_two_errors(scenario):
    result = scenario.result("flaky")
    assert (result["status"], result["return_value"]) == ("SUCCESSFUL", 3)
    assert len(result["worker_ids"]) == 3
    assert [e["exception_class_path"] for e in result["errors"]] == ["builtins.ConnectionError"] * 2
    for attempt, error in enumerate(result["errors"], start=1):
        assert error["traceback"].startswith("Traceback (most recent call last):")
        assert f"ConnectionError: attempt {attempt} could not connect" in error["traceback"]


def test_a_deferred_task_does_not_start_before_run_after(scenario):
    run_after = datetime.fromisoformat(scenario.ids["run_after"])
    (claimed,) = scenario.claimed_at("deferred")
    assert claimed >= run_after
    assert scenario.result("deferred")["status"] == "SUCCESSFUL"


def test_higher_priorities_run_first(scenario):
    order = sorted((scenario.claimed_at(f"priority {p}")[0], p) for p in (-10, 0, 10))
    assert [priority for _, priority in order] == [10, 0, -10]


def test_a_task_on_a_queue_the_worker_does_not_serve_is_left_untouched(scenario):
    result = scenario.result("report")
    assert (result["status"], result["worker_ids"], result["started_at"]) == ("READY", [], None)
    assert scenario.result("email")["return_value"] == "sent to ada@example.com"


def test_an_enqueue_in_a_committed_transaction_runs(scenario):
    assert scenario.result("committed")["status"] == "SUCCESSFUL"


def test_an_enqueue_in_a_rolled_back_transaction_leaves_no_job(scenario):
    assert scenario.query("SELECT 1 FROM jobs_job WHERE id = %s", scenario.ids["rolled back"]) == []
    status, _ = scenario.server.json(
        "GET", f"/shop/results/{scenario.ids['rolled back']}/", https=False
    )
    assert status == 404


def test_the_included_api_lists_the_task_jobs_with_module_path_queue_and_arguments(scenario):
    status, page = scenario.server.json(
        "GET", "/jobs-api/jobs/?type=shop.tasks.send_email&queue=emails", https=False
    )
    assert status == 200
    assert [(j["id"], j["type"], j["payload"]) for j in page["results"]] == [
        (
            scenario.ids["email"],
            "shop.tasks.send_email",
            {"args": ["ada@example.com"], "kwargs": {}},
        )
    ]


def test_the_admin_lists_task_jobs_without_unfold_installed(scenario):
    assert scenario.ids["admin"] == [200, True]


def test_the_worker_stops_cleanly_on_sigterm(scenario):
    assert scenario.worker_exit_code == 0, scenario.worker_log
