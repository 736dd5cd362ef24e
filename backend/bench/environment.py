"""Where the bench writes, the environment of the processes it starts, and the database a
command runs on from start to end.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from harness import BACKEND_DIR, REPO_DIR

from .database import Database, drop_database, recreate_database

RESULTS_DIR = REPO_DIR / "bench-results"
# Batch sizes 1: one claim and one completion per statement (the defaults choose batches on
# PostgreSQL with prepared statements).
SINGLE_ENV = {"JOB_WORKER_CLAIM_BATCH_SIZE": "1", "JOB_WORKER_COMPLETE_BATCH_SIZE": "1"}
# The drivers a scenario can run the services on, and what the results call each: "cte" is
# the PostgreSQL driver (one data-modifying CTE per transition), "orm" the ORM driver.
PATHS = {"postgres": "cte", "orm": "orm"}


def bench_environment(database: str) -> dict[str, str]:
    """Environment for this process's Django and for the workers and gunicorn it starts."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"GUNICORN_CMD_ARGS", "DJANGO_SETTINGS_MODULE"}
    }
    env.update(
        DATABASE_ENGINE="postgres",
        POSTGRES_DB=database,
        POSTGRES_HOST=os.environ.get("POSTGRES_HOST", "127.0.0.1"),
        POSTGRES_PORT=os.environ.get("POSTGRES_PORT", "5432"),
        POSTGRES_USER=os.environ.get("POSTGRES_USER", "postgres"),
        POSTGRES_PASSWORD=os.environ.get("POSTGRES_PASSWORD", "postgres"),
        POSTGRES_CONN_MAX_AGE="0",
        # Production-like request handling: no browsable API, no debug toolbar, token auth.
        DEBUG="false",
        DJANGO_SECRET_KEY="bench-" + secrets.token_hex(24),
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        # Plain HTTP on the loopback, as behind a proxy that terminates TLS.
        DJANGO_SECURE_SSL_REDIRECT="false",
        # The bench measures throughput; production's per-user job-creation rate would cap it.
        DJANGO_THROTTLE_JOB_CREATE="off",
        JOB_HANDLER_MODULES="bench.handlers",
        JOB_WORKER_LOG_LEVEL="INFO",
        # Only the idle poll (nothing claimable): lets every thread notice the bulk insert
        # within 20 ms instead of 500 ms. A busy worker never sleeps.
        JOB_WORKER_POLL_INTERVAL_MS="20",
        BENCH_DRIVER="",
        PYTHONUNBUFFERED="1",
    )
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    return env


def conninfo_from(env: dict[str, str]) -> dict[str, Any]:
    return {
        "host": env["POSTGRES_HOST"],
        "port": env["POSTGRES_PORT"],
        "user": env["POSTGRES_USER"],
        "password": env["POSTGRES_PASSWORD"],
        "dbname": env["POSTGRES_DB"],
        "connect_timeout": 5,
    }


@contextmanager
def bench_database(name: str, *, keep: bool = False) -> Iterator[tuple[dict[str, str], Database]]:
    """A fresh, migrated database ``name`` for a whole command: yields the environment of
    the processes it starts and the bench's own connection, with Django set up on it in
    this process too (in-process creates, claims, reads). Dropped at the end unless
    ``keep``."""
    env = bench_environment(name)
    conninfo = conninfo_from(env)
    recreate_database(conninfo, name)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=BACKEND_DIR,
        env=env,
        check=True,
    )
    os.environ.clear()
    os.environ.update(env)
    import django

    django.setup()
    from django.db import connections

    db = Database(conninfo)
    try:
        yield env, db
    finally:
        db.close()
        connections.close_all()
        if not keep:
            drop_database(conninfo, name)
