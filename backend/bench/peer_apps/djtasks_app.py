"""django-tasks-db (the ``django.tasks`` database backend) on Django 6: 4 ``db_worker``
processes (one task at a time each; the backend's way to run tasks concurrently) with
``--batch`` (exit when nothing is left) and no start-up delay, persistent database
connections (``CONN_MAX_AGE`` 60, as a deployment sets it), jobs enqueued with
``Task.enqueue()`` in one transaction.

The window comes from the results table: the first ``started_at`` to the last
``finished_at``.
"""

from __future__ import annotations

import subprocess
import sys
from urllib.parse import urlparse

import django
from django.conf import settings
from peer_common import RECORDER, dsn, main, write_result

_url = urlparse(dsn())
settings.configure(
    DEBUG=False,
    USE_TZ=True,
    INSTALLED_APPS=["django_tasks_db"],
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": _url.path.lstrip("/"),
            "HOST": _url.hostname,
            "PORT": _url.port,
            "USER": _url.username,
            "PASSWORD": _url.password or "",
            # Persistent connections, as a production deployment sets (Django's default, 0,
            # opens a connection per task).
            "CONN_MAX_AGE": 60,
        }
    },
    TASKS={"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}},
    LOGGING_CONFIG=None,
)
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.tasks import task  # noqa: E402

WORKERS = 4


@task()
def noop() -> None:
    RECORDER.hit()


def prepare(jobs: int) -> None:
    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE django_tasks_database_dbtaskresult")
    with transaction.atomic():
        for _ in range(jobs):
            noop.enqueue()


def work(jobs: int, config: str, result: str) -> None:
    command = [sys.executable, "-m", "djtasks_app", "db_worker"]
    procs = [subprocess.Popen(command) for _ in range(WORKERS)]
    codes = [proc.wait() for proc in procs]
    if any(codes):
        raise SystemExit(f"db_worker exit codes {codes}")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT extract(epoch FROM min(started_at)), extract(epoch FROM max(finished_at)),"
            " count(*) FILTER (WHERE status = 'SUCCESSFUL') FROM django_tasks_database_dbtaskresult"
        )
        first, last, done = cursor.fetchone()
    write_result(result, float(first), float(last), int(done))


if __name__ == "__main__":
    if sys.argv[1:2] == ["db_worker"]:
        call_command("db_worker", batch=True, startup_delay=False, reload=False, verbosity=0)
    else:
        main(prepare, work)
