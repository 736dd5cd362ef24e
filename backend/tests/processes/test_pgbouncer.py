"""Scale-out through PgBouncer in transaction pooling mode (Debian's pgbouncer 1.18).

A real pgbouncer (``private_pgbouncer``: transaction mode, at most 4 server connections)
sits in front of this run's PostgreSQL. Through it: several real worker processes drain a
backlog with LISTEN going straight to PostgreSQL; the API in production mode (gunicorn)
creates, bulk-creates, retries and cancels. And the two things transaction pooling cannot
carry are refused loudly instead of failing at random: prepared statements (before
PgBouncer 1.21) and LISTEN (a notification for a session pgbouncer has handed to another
client is dropped without an error).
"""

from __future__ import annotations

import threading
from collections import Counter

import psycopg
import pytest
from django.db import connection
from rest_framework.authtoken.models import Token

from harness import PrivatePgBouncer, wait_until
from jobs.models import Job, JobEvent
from jobs.worker.listener import LISTENER_APPLICATION_NAME
from tests.factories import failed_job, fresh, queued_job, queued_jobs, timeline, user_with
from tests.helpers import WorkerProcess, figures, run_manage, stop_all

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

Status = Job.Status
Event = JobEvent.Type
HANDLERS = "tests.fault_handlers"
POOL_SIZE = 4  # the private_pgbouncer fixture's server connections


def direct_listen_env() -> dict[str, str]:
    """LISTEN on a connection straight to PostgreSQL, bypassing the pooler."""
    db = connection.settings_dict
    return {
        "POSTGRES_LISTEN_HOST": db["HOST"] or "127.0.0.1",
        "POSTGRES_LISTEN_PORT": str(db["PORT"] or 5432),
    }


def pooled_env(pgbouncer: PrivatePgBouncer, **extra: str) -> dict[str, str]:
    """What a deployment behind PgBouncer in transaction mode sets (the README's)."""
    return {
        **pgbouncer.env(),
        "POSTGRES_TRANSACTION_POOLING": "true",
        **direct_listen_env(),
        "JOB_HANDLER_MODULES": HANDLERS,
        **extra,
    }


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def server_backends(*, besides: int) -> int:
    """Backends of the test database other than this session, the test's own (``besides``)
    and the direct listeners: pgbouncer's server connections."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid NOT IN (pg_backend_pid(), %s) AND application_name <> %s",
            [besides, LISTENER_APPLICATION_NAME],
        )
        return cursor.fetchone()[0]


class Sampler(threading.Thread):
    """Samples the server connections in use every 50 ms until stopped: the most seen."""

    def __init__(self, pgbouncer: PrivatePgBouncer, database: str) -> None:
        super().__init__(daemon=True)
        self.pgbouncer = pgbouncer
        self.database = database
        self.test_session = backend_pid()
        self.stopped = threading.Event()
        self.most_pooled = 0  # pgbouncer's SHOW POOLS
        self.most_backends = 0  # PostgreSQL's pg_stat_activity
        self.samples = 0

    def run(self) -> None:
        from django.db import connections

        try:
            while not self.stopped.wait(0.05):
                self.most_pooled = max(
                    self.most_pooled, self.pgbouncer.server_connections(self.database)
                )
                self.most_backends = max(
                    self.most_backends, server_backends(besides=self.test_session)
                )
                self.samples += 1
        finally:
            connections.close_all()


def log_problems(log: str) -> list[str]:
    """Lines of a worker log at WARNING or above, or with a traceback."""
    return [
        line
        for line in log.splitlines()
        if any(mark in line for mark in (" WARNING ", " ERROR ", " CRITICAL ", "Traceback"))
    ]


# --- Workers through the pooler ------------------------------------------------------------


def test_four_processes_share_four_server_connections_and_run_every_job_exactly_once(
    private_pgbouncer, production_server, tmp_path
):
    processes, threads, jobs = 4, 4, 300
    token = Token.objects.create(user=user_with("add_job")).key
    pgbouncer_log_start = len(private_pgbouncer.log())
    sampler = Sampler(private_pgbouncer, connection.settings_dict["NAME"])
    sampler.start()
    # A long idle poll: idle threads start on a job at once only if the notification of
    # its creation reached their process's listener.
    workers = [
        WorkerProcess(
            tmp_path / f"worker-{n}.log",
            "--threads",
            str(threads),
            **pooled_env(private_pgbouncer, JOB_WORKER_POLL_INTERVAL_MS="10000"),
        )
        for n in range(processes)
    ]
    try:
        for worker in workers:
            worker.wait_for_threads(threads)
            worker.wait_for_log("action=listening")
        backlog = queued_jobs(jobs, "fault.noop")
        wait_until(
            lambda: Job.objects.filter(status=Status.SUCCEEDED).count() == jobs,
            8,  # well under the 10 s poll
            f"{jobs} jobs to succeed",
        )
        # Created through the API, so through pgbouncer: its NOTIFY, sent on whichever
        # server connection the transaction got, still reaches the direct listeners.
        status, body = production_server.json(
            "POST", "/api/jobs/", token=token, body={"type": "fault.noop"}
        )
        assert status == 201, body
        late = Job.objects.get(pk=body["id"])
        wait_until(lambda: fresh(late).status == Status.SUCCEEDED, 5, "the notified job")
    finally:
        sampler.stopped.set()
        sampler.join(timeout=10)
        codes = stop_all(workers)
    assert codes == [0] * processes

    # Every job once: one claim and one success each, attempt 1, no event of another kind.
    ids = {row.id for row in backlog} | {late.pk}
    events = Counter(
        (job_id, type, attempt)
        for job_id, type, attempt in JobEvent.objects.filter(job_id__in=ids).values_list(
            "job_id", "type", "attempt"
        )
    )
    assert set(events.values()) == {1}, "an event was written twice"
    assert Counter(type for _, type, _ in events) == {
        Event.CREATED: jobs + 1,
        Event.CLAIMED: jobs + 1,
        Event.SUCCEEDED: jobs + 1,
    }
    assert {attempt for _, type, attempt in events if type != Event.CREATED} == {1}
    assert set(Job.objects.values_list("status", "attempts").distinct()) == {(Status.SUCCEEDED, 1)}
    # All processes took part, through no more than the pool's server connections.
    claimers = JobEvent.objects.filter(job_id__in=ids, type=Event.CLAIMED).values_list(
        "worker_id", flat=True
    )
    assert len({worker_id.split(":")[1] for worker_id in claimers}) == processes
    assert sampler.samples > 0
    assert 1 <= sampler.most_pooled <= POOL_SIZE
    assert sampler.most_backends <= POOL_SIZE
    # No database error, retry or stale write anywhere, and each listener went direct.
    for worker in workers:
        log = worker.log()
        assert log_problems(log) == [], worker.log_path
        assert "action=listener_unusable" not in log
    pgbouncer_log = private_pgbouncer.log()[pgbouncer_log_start:]
    assert [line for line in pgbouncer_log.splitlines() if " LOG " not in line] == []
    figures(
        "pgbouncer drain",
        processes=processes,
        threads=threads,
        jobs=jobs,
        max_server_connections_pgbouncer=sampler.most_pooled,
        max_server_backends=sampler.most_backends,
        samples=sampler.samples,
    )


def test_a_listener_pointed_at_the_pooler_says_so_and_the_worker_polls_instead(
    private_pgbouncer, tmp_path
):
    env = pooled_env(
        private_pgbouncer,
        POSTGRES_LISTEN_HOST="127.0.0.1",
        POSTGRES_LISTEN_PORT=str(private_pgbouncer.port),
    )
    worker = WorkerProcess(tmp_path / "worker.log", "--threads", "1", **env)
    try:
        worker.wait_for_log("action=listener_unusable")
        job = queued_job("fault.noop")
        wait_until(lambda: fresh(job).status == Status.SUCCEEDED, 10, "the job, by polling")
    finally:
        codes = stop_all([worker])
    assert codes == [0]
    log = worker.log()
    # Said once, at ERROR, naming the fix; never retried, never claimed to be listening.
    assert log.count("action=listener_unusable") == 1
    assert " ERROR " in next(line for line in log.splitlines() if "listener_unusable" in line)
    assert "POSTGRES_LISTEN_HOST" in log
    assert "action=listening" not in log
    assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.SUCCEEDED]


def test_declared_pooling_without_a_direct_listener_is_refused_at_startup(private_pgbouncer):
    env = {**pooled_env(private_pgbouncer), "POSTGRES_LISTEN_HOST": "", "POSTGRES_LISTEN_PORT": ""}
    job = queued_job("fault.noop")
    result = run_manage("run_job_workers", "--burst", timeout=60, **env)
    assert result.returncode != 0
    assert "jobs.E006" in result.stderr
    assert "POSTGRES_LISTEN_HOST" in result.stderr
    assert fresh(job).status == Status.QUEUED
    # Polling only, said explicitly, is accepted.
    result = run_manage(
        "run_job_workers", "--burst", timeout=60, **{**env, "JOB_WORKER_LISTEN": "false"}
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert fresh(job).status == Status.SUCCEEDED


# --- Prepared statements ---------------------------------------------------------------------


def test_prepared_statements_break_through_transaction_pooling(private_pgbouncer):
    """Why they must be off: two clients that prepare through pgbouncer 1.18 in transaction
    mode land on the same server connection and collide on psycopg's statement names."""
    db = connection.settings_dict
    params = {
        "host": "127.0.0.1",
        "port": private_pgbouncer.port,
        "dbname": db["NAME"],
        "user": db["USER"],
        "password": db["PASSWORD"],
        "autocommit": True,
    }
    with psycopg.connect(**params) as first, psycopg.connect(**params) as second:
        first.execute("SELECT %s::int", [1], prepare=True)
        with pytest.raises(
            (psycopg.errors.DuplicatePreparedStatement, psycopg.errors.InvalidSqlStatementName)
        ):
            second.execute("SELECT %s::text", ["one"], prepare=True)
            first.execute("SELECT %s::int", [1], prepare=True)


def test_a_worker_with_prepared_statements_behind_an_undeclared_pooler_refuses_to_start(
    private_pgbouncer,
):
    job = queued_job("fault.noop")
    env = {
        **private_pgbouncer.env(),
        "JOB_HANDLER_MODULES": HANDLERS,
        "JOB_DB_PREPARED_STATEMENTS": "true",
        "JOB_WORKER_LISTEN": "false",
    }
    result = run_manage("run_job_workers", "--burst", timeout=60, **env)
    assert result.returncode == 1
    assert "action=worker_refused reason=prepared_statements_through_pooler" in result.stderr
    assert "POSTGRES_TRANSACTION_POOLING=true" in result.stderr
    assert timeline(job) == [Event.CREATED]  # nothing claimed
    # Straight to PostgreSQL the same settings start and run the job.
    for name in private_pgbouncer.env():
        del env[name]
    result = run_manage("run_job_workers", "--burst", timeout=60, **env)
    assert result.returncode == 0, result.stderr
    assert fresh(job).status == Status.SUCCEEDED


def test_declared_pooling_refuses_prepared_statements_in_every_process(private_pgbouncer):
    env = {**pooled_env(private_pgbouncer), "JOB_DB_PREPARED_STATEMENTS": "true"}
    # The settings refuse it, so the API (which runs no system checks) cannot start either.
    result = run_manage("check", timeout=60, **env)
    assert result.returncode != 0
    assert "JOB_DB_PREPARED_STATEMENTS=true cannot work with POSTGRES_TRANSACTION_POOLING" in (
        result.stderr
    )
    # Unset, they default to off there, and the checks pass.
    env.pop("JOB_DB_PREPARED_STATEMENTS")
    result = run_manage("check", timeout=60, **env)
    assert result.returncode == 0, result.stderr
    # QuerySet.iterator()'s server-side cursors would outlive their transaction too.
    code = (
        "from django.conf import settings as s; print(s.JOB_DB_PREPARED_STATEMENTS, "
        "s.DATABASES['default']['DISABLE_SERVER_SIDE_CURSORS'])"
    )
    result = run_manage("shell", "-c", code, timeout=60, **env)
    assert result.stdout.strip().splitlines()[-1] == "False True", result.stderr


# --- The API through the pooler ----------------------------------------------------------------


@pytest.fixture(scope="module")
def production_server_env(private_pgbouncer) -> dict[str, str]:
    """The module's gunicorn reaches the database through pgbouncer, with persistent
    connections (which a transaction pooler makes cheap for PostgreSQL)."""
    return {
        **private_pgbouncer.env(),
        "POSTGRES_TRANSACTION_POOLING": "true",
        "POSTGRES_CONN_MAX_AGE": "60",
        "JOB_WORKER_LISTEN": "false",
        "JOB_HANDLER_MODULES": HANDLERS,
    }


def pooled_transactions(pgbouncer: PrivatePgBouncer) -> int:
    database = connection.settings_dict["NAME"]
    return sum(
        int(row["total_xact_count"])
        for row in pgbouncer.admin("SHOW STATS")
        if row["database"] == database
    )


def test_the_api_creates_bulk_creates_retries_and_cancels_through_the_pooler(
    private_pgbouncer, production_server
):
    token = Token.objects.create(user=user_with("view_job", "add_job", "change_job")).key
    before = pooled_transactions(private_pgbouncer)

    status, created = production_server.json(
        "POST", "/api/jobs/", token=token, body={"type": "demo.success", "idempotency_key": "k1"}
    )
    assert status == 201, created
    assert production_server.json(
        "POST", "/api/jobs/", token=token, body={"type": "demo.success", "idempotency_key": "k1"}
    ) == (200, {**created, "matched": "idempotency_key"})

    bulk = {"jobs": [{"type": "demo.success", "payload": {"n": n}} for n in range(50)]}
    status, body = production_server.json("POST", "/api/jobs/bulk/", token=token, body=bulk)
    assert (status, body["created"]) == (201, 50), body
    bulk_ids = [item["id"] for item in body["jobs"]]
    assert JobEvent.objects.filter(job_id__in=bulk_ids, type=Event.CREATED).count() == 50

    failed = failed_job()
    status, body = production_server.json("POST", f"/api/jobs/{failed.pk}/retry/", token=token)
    assert (status, body["status"]) == (200, Status.QUEUED), body
    assert timeline(failed)[-1] == Event.MANUAL_RETRY

    status, body = production_server.json("POST", f"/api/jobs/{created['id']}/cancel/", token=token)
    assert (status, body["status"]) == (200, Status.CANCELLED), body
    status, body = production_server.json(
        "POST", "/api/jobs/cancel/", token=token, body={"ids": bulk_ids[:10]}
    )
    assert (status, body) == (200, {"cancelled": 10, "cancel_requested": 0})
    status, body = production_server.json(
        "POST", "/api/jobs/retry/", token=token, body={"ids": bulk_ids[:10]}
    )
    assert (status, body) == (200, {"retried": 10, "held": 0, "held_jobs": []})

    status, stats = production_server.json("GET", "/api/jobs/stats/", token=token)
    assert status == 200 and stats["by_status"]["queued"] == 50 + 1, stats
    # The requests really went through pgbouncer.
    assert pooled_transactions(private_pgbouncer) > before
    assert private_pgbouncer.server_connections(connection.settings_dict["NAME"]) <= POOL_SIZE
