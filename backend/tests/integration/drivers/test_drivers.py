"""The driver layer: the row type, the named statements and their loader, and proof that
every driver writes exactly the same rows and events for the same calls."""

import re
import threading
from datetime import UTC, timedelta
from importlib import import_module

import psycopg
import pytest
from django.db import OperationalError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import drivers, services
from jobs.drivers import Completion, Owner, postgres, sql
from jobs.drivers.base import JOB_ROW_FIELDS
from jobs.drivers.postgres import QUERIES
from jobs.models import Job, JobEvent
from tests.factories import queued_jobs

Status = Job.Status
Event = JobEvent.Type


@pytest.mark.django_db
def test_job_row_fields_are_the_table_columns_in_order():
    columns = [field.column for field in Job._meta.concrete_fields]
    assert list(JOB_ROW_FIELDS) == columns
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM jobs_job WHERE 1 = 0")
        assert [column[0] for column in cursor.description] == columns


def test_queries_sql_names_only_model_tables_statuses_and_event_types():
    tables = {Job._meta.db_table, JobEvent._meta.db_table, "pg_class", "pg_stats"}
    # Flow control's tables, and the dependency edges (a retry reports its retried parents).
    tables |= {"jobs_queuesettings", "jobs_concurrencykeylimit", "jobs_jobdependency"}
    # Besides statuses and event types: the empty error, the manual_retry data keys and
    # complete_and_claim's labels for its two halves.
    values = (
        set(Status.values)
        | set(Event.values)
        | {"", "previous_status", "previous_attempts", "previous_error", "completed"}
    )
    values |= {"status", "jobs_job"}  # status_estimate names the column and the table
    # The gated claim's labels, the key lock's namespace and the rate window's keys.
    values |= {"gated", "keyed", "stale", "jobs.concurrency_key:", "bucket", "counts"}
    # retry_jobs' parts.
    values |= {"held", "parent"}
    # The claims' due test and order, as job_claim_idx holds available_at (migration 0012).
    values |= {"UTC"}
    # vacuum_due reads the statistics and the autovacuum settings.
    tables |= {"pg_stat_user_tables"}
    values |= {
        "=",
        "autovacuum_enabled",
        "autovacuum_vacuum_threshold",
        "autovacuum_vacuum_scale_factor",
    }
    # The completions' opt-in asynchronous commit.
    values |= {"synchronous_commit", "off"}
    for query in QUERIES.values():
        text = query.text
        for table in re.findall(r"\b(?:FROM|INTO|UPDATE|JOIN)\s+([a-z_]+)\b(?!\s*\()", text):
            assert table in tables | CTE_NAMES[query.name], (query.name, table)
        for literal in re.findall(r"'([^']*)'", text):
            assert literal in values, (query.name, literal)


# The CTE and alias names each statement defines, so the table check can tell them apart.
CTE_NAMES = {
    name: set(
        re.findall(r"(?:WITH(?: RECURSIVE)?|,)\s*([a-z_]+) AS (?:MATERIALIZED )?\(", query.text)
    )
    for name, query in QUERIES.items()
}


def test_sql_loader_turns_named_parameters_into_pyformat_and_leaves_casts_and_literals():
    (query,) = sql.parse(
        "-- name: sample\n-- what it guards\n"
        "SELECT :a::jsonb, ':not_a_param', x % 2 -- :comment\nFROM t WHERE b = :b_2;\n"
    ).values()
    assert query.name == "sample" and query.doc == "what it guards"
    assert query.sql == (
        "SELECT %(a)s::jsonb, ':not_a_param', x %% 2 -- :comment\nFROM t WHERE b = %(b_2)s"
    )
    assert query.params == {"a", "b_2"}


def test_sql_loader_numbers_each_name_once_for_the_raw_cursor():
    (query,) = sql.parse(
        "-- name: sample\n"
        "SELECT :b::int, ':not_a_param', x % 2 -- :comment\nFROM t WHERE a = :a AND c = :b;\n"
    ).values()
    assert query.positional == (
        "SELECT $1::int, ':not_a_param', x % 2 -- :comment\nFROM t WHERE a = $2 AND c = $1"
    )
    assert query.order == ("b", "a")
    assert query.values({"a": 1, "b": 2, "unused": 3}) == [2, 1]


def test_sql_loader_expands_fragments_at_the_placeholders_indentation():
    (query,) = sql.parse(
        "-- fragment: owned\n-- what it picks\n(a = :a\n    OR b = '{owned}')\n"
        "-- name: sample\nSELECT 1\n    WHERE {owned} -- {owned}\n"
    ).values()
    assert query.text == "SELECT 1\n    WHERE (a = :a\n        OR b = '{owned}') -- {owned}"
    assert query.params == {"a"}


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("-- name: q\nSELECT {nowhere}\n", "no fragment defined above it"),
        ("-- name: q\nSELECT {later}\n-- fragment: later\n1\n", "no fragment defined"),
        ("-- fragment: spare\n1\n-- name: q\nSELECT 1\n", "used by no statement"),
        ("-- fragment: f\n1\n-- fragment: f\n2\n-- name: q\nSELECT {f}\n", "twice"),
    ],
)
def test_sql_loader_refuses_unknown_unused_or_repeated_fragments(source, problem):
    with pytest.raises(ValueError, match=problem):
        sql.parse(source)


# --- both drivers agree -----------------------------------------------------------------------


def _scenario(now):
    """Every transition, guard and event on a fixed clock; returns what was written."""
    t = [now + timedelta(seconds=step) for step in range(20)]
    kept, _ = services.create_job(
        type="demo.success", payload={"k": 1}, idempotency_key="key", now=t[0]
    )
    services.create_job(type="demo.fail", idempotency_key="key", now=t[0])
    services.create_job(type="demo.fail", max_attempts=1, priority=1, now=t[0])
    services.create_job(type="demo.slow", max_attempts=2, priority=0, now=t[0])

    a = services.claim_next_job(worker_id="a", lease_seconds=5, now=t[1])
    services.record_progress(job_id=a.pk, worker_id="a", attempt=1, message="m", now=t[1])
    services.renew_lease(job_id=a.pk, worker_id="a", attempt=1, lease_seconds=5, now=t[2])
    services.fail_job(job_id=a.pk, worker_id="a", attempt=1, error="first", now=t[2])
    services.complete_job(job_id=a.pk, worker_id="a", attempt=1, now=t[2])  # stale
    b = services.claim_next_job(worker_id="b", lease_seconds=5, now=t[3])  # fail job
    services.fail_job(job_id=b.pk, worker_id="b", attempt=1, error="final", now=t[3])
    c = services.claim_next_job(worker_id="c", lease_seconds=1, now=t[4])  # slow job
    services.cleanup_expired_jobs(now=t[6], worker_id="cleaner")
    services.retry_job(job_id=b.pk, now=t[6])
    services.renew_lease(job_id=c.pk, worker_id="c", attempt=1, now=t[6])  # stale
    services.record_progress(job_id=c.pk, worker_id="c", attempt=1, message="x", now=t[6])
    # Queues, cancellation, timeouts, heartbeats, failure details and the bulk actions.
    q = services.create_job(type="demo.slow", queue="other", now=t[7])[0]
    services.create_job(type="demo.slow", queue="other", priority=7, now=t[7])
    assert services.cancel_jobs(queue="other", now=t[7]).cancelled == 2
    assert services.retry_jobs(ids=[q.pk], now=t[7]).retried == 1
    d = services.claim_next_job(worker_id="d", queue="other", lease_seconds=1, now=t[7])
    services.heartbeat(attempts=[Owner(d.pk, "d", 1), Owner(q.pk, "x", 9)], now=t[7])
    services.cancel_job(job_id=d.pk, now=t[7])
    services.time_out_job(job_id=d.pk, worker_id="d", attempt=1, timeout_seconds=2, now=t[7])
    e, _ = services.create_job(type="demo.fail", queue="other", max_attempts=2, now=t[7])
    services.claim_next_job(worker_id="e", queue="other", now=t[7])
    details = services.ErrorDetails(exception_class="builtins.OSError", traceback="tb")
    services.fail_job(
        job_id=e.pk, worker_id="e", attempt=1, error="e\x00", details=details, now=t[7]
    )
    # Batched claims, and a stopping worker giving back what it never started.
    f = services.create_job(type="demo.success", queue="spare", now=t[7])[0]
    # A lower priority orders g after f in the claim and in the comparison below: with
    # equal keys the order would come down to two ids made in the same millisecond.
    g = services.create_job(type="demo.success", queue="spare", priority=40, now=t[7])[0]
    claimed = services.claim_jobs(worker_ids=["f", "g"], queue="spare", now=t[7]).claimed
    assert sorted(row.id for row in claimed) == sorted([f.pk, g.pk])
    services.cancel_job(job_id=claimed[1].id, now=t[7])
    owners = [Owner(row.id, row.locked_by or "", 1) for row in claimed]
    services.release_unstarted_jobs(owners=[*owners, Owner(g.pk, "x", 1)], now=t[7])
    # An operator runs a job scheduled for later now (a queue no claim below serves).
    later = services.create_job(type="demo.success", queue="later", available_at=t[19], now=t[7])[0]
    services.run_job_now(job_id=later.pk, now=t[7])
    # A handler snoozes (its attempt not spent); a retry policy gives up with attempts left;
    # another fails with the delay its policy chose.
    for priority in (30, 20, 10):  # claimed in this order, and told apart below
        services.create_job(
            type="demo.fail", queue="policy", max_attempts=3, priority=priority, now=t[7]
        )
    h, i, j = services.claim_jobs(worker_ids=["h", "i", "j"], queue="policy", now=t[7]).claimed
    services.snooze_job(job_id=h.id, worker_id="h", attempt=1, seconds=2.5, now=t[7])
    services.fail_jobs(
        failures=[
            services.AttemptFailure(Owner(i.id, "i", 1), "gave up", give_up=True),
            services.AttemptFailure(Owner(j.id, "j", 1), "later", delay_seconds=1.25),
        ],
        now=t[7],
    )
    for step in (8, 10, 12, 14):
        job = services.claim_next_job(worker_id=f"w{step}", lease_seconds=1, now=t[step])
        if job is not None and job.pk == kept.pk:
            services.complete_job(
                job_id=job.pk,
                worker_id=f"w{step}",
                attempt=job.attempts,
                result=[1, {"x": None}],
                now=t[step],
            )
        services.cleanup_expired_jobs(now=t[step + 1], worker_id="cleaner")

    order = ("created_at", "queue", "type", "priority")
    ids = {
        job_id: index
        for index, job_id in enumerate(Job.objects.order_by(*order).values_list("id", flat=True))
    }
    jobs = [{**row, "id": ids[row["id"]]} for row in Job.objects.order_by(*order).values()]
    # Each job's timeline in order; one statement writing several jobs' events may number
    # them in any job order (job ids are random), so timelines are compared job by job.
    events = sorted(
        (
            {**row, "id": None, "job_id": ids[row["job_id"]]}
            for row in JobEvent.objects.order_by("id").values()
        ),
        key=lambda event: event["job_id"],
    )
    return jobs, events


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "function"])
def test_both_drivers_leave_identical_rows_and_events(settings, prepared):
    # Unprepared, the PostgreSQL driver completes and claims through the PL/pgSQL function.
    settings.JOB_DB_PREPARED_STATEMENTS = prepared
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 10
    now = timezone.now().replace(microsecond=123456)
    outcomes = {}
    for each in drivers.available_drivers():
        with drivers.use_driver(each):
            outcomes[each.name] = _scenario(now)
        JobEvent.objects.all().delete()
        Job.objects.all().delete()
    jobs, events = outcomes["postgres"]
    assert len(events) > 25 and {e["type"] for e in events} == set(Event.values)
    # The timing columns are compared too: the scenario's attempts end after a second or more.
    assert {e["run_ms"] for e in events} - {None, 0} and {e["wait_ms"] for e in events} - {None}
    assert None not in {e["job_type"] for e in events}
    assert outcomes["orm"] == (jobs, events)


def _prepared_executions() -> int:
    """How often this session ran complete_and_claim as a prepared statement."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(generic_plans + custom_plans), 0) FROM pg_prepared_statements"
            " WHERE statement LIKE 'WITH RECURSIVE completed AS%%'"
        )
        (count,) = cursor.fetchone()
        return int(count)


def _claim_and_complete(count: int) -> None:
    queued_jobs(count)
    for _ in range(count):
        job = services.claim_next_job(worker_id="w", queue="default")
        assert job is not None
        services.complete_job(job_id=job.id, worker_id="w", attempt=job.attempts)


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize(("prepared", "executions"), [(True, 6), (False, 0)])
def test_the_workers_statement_runs_prepared_while_the_setting_is_on(
    settings, prepared, executions
):
    # Django opens connections with psycopg's prepare_threshold=None, which turns
    # prepare=True into a silent no-op: every claim would be parsed and planned again.
    settings.JOB_DB_PREPARED_STATEMENTS = prepared
    before = _prepared_executions()
    _claim_and_complete(3)
    assert _prepared_executions() - before == executions


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_postgres_drivers_datetimes_are_the_orms_utc():
    # The driver loads timestamptz with psycopg's own loader instead of Django's wrapper.
    queued_jobs(1)
    row = services.claim_next_job(worker_id="w", queue="default")
    assert row is not None and row.locked_until is not None
    stored = Job.objects.get(pk=row.id)
    assert row.locked_until.tzinfo is stored.locked_until.tzinfo is UTC
    assert (row.locked_until, row.created_at) == (stored.locked_until, stored.created_at)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_postgres_driver_follows_django_onto_a_new_connection():
    # Its cursor is kept per thread: it must not outlive the connection it was made on.
    queued_jobs(2)
    first = services.claim_next_job(worker_id="w", queue="default")
    connection.close()
    second = services.claim_next_job(worker_id="w", queue="default")
    assert first is not None and second is not None and first.id != second.id


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_pipelined_transaction_whose_connection_is_lost_raises_the_loss():
    # A controlled queue's locked claim goes out as one pipeline (BEGIN, statements,
    # COMMIT). Its connection lost mid-way (a dead server, or one the statement deadline
    # left) has no transaction to roll back: the error says the connection was lost, and
    # the next call, on a new connection, runs.
    services.set_queue_limits(queue="limited", concurrency_limit=1)
    driver = postgres.PostgresDriver()
    connection.ensure_connection()
    backend = connection.connection.info.backend_pid
    db = connection.settings_dict
    with psycopg.connect(
        host=db["HOST"],
        port=db["PORT"],
        user=db["USER"],
        password=db["PASSWORD"],
        dbname=db["NAME"],
        autocommit=False,
    ) as other:
        other.execute("SELECT 1 FROM jobs_queuesettings WHERE name = 'limited' FOR UPDATE")
        # The pipeline waits on that lock until its backend is terminated.
        kill = threading.Timer(0.5, other.execute, ["SELECT pg_terminate_backend(%s)", [backend]])
        kill.start()
        with pytest.raises(OperationalError) as lost:
            driver._in_one_transaction([("gate_lock", {"queue": "limited"})])
        kill.join()
        other.rollback()
    connection.close()
    assert "server closed the connection" in str(lost.value)
    assert driver._in_one_transaction([("gate_lock", {"queue": "limited"})]) == [[(1,)]]


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_projects_django_queries_are_prepared_once_they_repeat():
    # config/settings.py turns on server-side binding with psycopg's prepare threshold
    # while JOB_DB_PREPARED_STATEMENTS is on (the API's permission check and token lookup).
    probe = Job.objects.filter(type="prepared-probe", priority=7)

    def prepared() -> bool:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_prepared_statements"
                " WHERE statement LIKE %s AND statement LIKE %s",
                ['%"jobs_job"."type" = $%', '%"jobs_job"."priority" = $%'],
            )
            return bool(cursor.fetchone()[0])

    list(probe.all())
    assert not prepared()
    for _ in range(5):
        list(probe.all())
    assert prepared()


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_complete_and_claim_function_runs_the_statement_as_written():
    # Editing complete_and_claim in queries.sql needs a migration that replaces the
    # function (jobs.drivers.sql.plpgsql_function writes its text).
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT prosrc FROM pg_proc WHERE proname = %s",
            [postgres.COMPLETE_AND_CLAIM_FUNCTION],
        )
        (installed,) = cursor.fetchone()
    assert installed == sql.plpgsql_body(QUERIES["complete_and_claim"])
    # The text of the migration that last made it is what plpgsql_function writes for
    # these arguments.
    create = import_module("jobs.migrations.0015_claimed_by_and_lean_timeline").CREATE
    columns = re.search(r"RETURNS TABLE \((.*)\)\n", create)
    assert columns is not None
    assert create.strip() == sql.plpgsql_function(
        QUERIES["complete_and_claim"],
        postgres.COMPLETE_AND_CLAIM_FUNCTION,
        postgres.COMPLETE_AND_CLAIM_ARGS,
        columns.group(1),
    )


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_complete_and_claim_function_returns_the_statements_columns():
    params = {name: None for name in QUERIES["complete_and_claim_call"].params}
    with connection.cursor() as cursor:
        cursor.execute(QUERIES["complete_and_claim_call"].sql, params)
        assert [column.name for column in cursor.description] == ["part", *JOB_ROW_FIELDS]
        function_types = [column.type_code for column in cursor.description][1:]
        cursor.execute("SELECT * FROM jobs_job WHERE false")
        assert function_types == [column.type_code for column in cursor.description]


def _statements_of(call) -> list[str]:
    """The names of the driver's statements ``call()`` ran."""
    with CaptureQueriesContext(connection) as captured:
        call()
    return [query["sql"].split("\n", 1)[0].removeprefix("-- ") for query in captured]


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize(
    ("worker_ids", "owners", "statement"),
    [
        (["worker-a"], [], "complete_and_claim"),
        (["worker-a"], ["worker-a"], "complete_and_claim"),
        (["worker-b"], ["worker-a"], "complete_and_claim_jobs"),
        (["worker-a", "worker-b"], [], "claim_jobs"),
        (["worker-a", "worker-b"], ["worker-a"], "complete_and_claim_jobs"),
        ([], ["worker-a"], "complete_and_claim"),
        ([], ["worker-a", "worker-a"], "complete_jobs"),
    ],
    ids=[
        "one claim",
        "one claim, its own success",
        "one claim, another's success",
        "claims",
        "claims, a success",
        "one success",
        "successes",
    ],
)
def test_a_fetch_runs_the_single_row_statement_for_one_thread_and_its_own_success(
    worker_ids, owners, statement
):
    """The single-row statement costs PostgreSQL less than the batched one with arrays of
    one; it claims for the worker id its completion is guarded by, so only then."""
    queued_jobs(4)
    running = [services.claim_next_job(worker_id=owner) for owner in owners]
    completions = [Completion(Owner(row.id, row.locked_by, 1), None) for row in running if row]
    assert len(completions) == len(owners)
    ran = _statements_of(
        lambda: services.claim_jobs(worker_ids=worker_ids, completions=completions)
    )
    assert ran == [statement]


def _synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        (value,) = cursor.fetchone()
    return value


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("worker_ids", "statement"),
    [(["worker-a"], "complete_and_claim_jobs"), ([], "complete_jobs")],
    ids=["a fetch", "a batch"],
)
def test_an_asynchronous_commit_is_set_in_the_completions_transaction_alone(worker_ids, statement):
    queued_jobs(2)
    running = services.claim_next_job(worker_id="worker-a")
    completions = [Completion(Owner(running.id, "worker-a", 1), None)]
    ran = _statements_of(
        lambda: services.claim_jobs(
            worker_ids=worker_ids, completions=completions, synchronous_commit=False
        )
    )
    # One statement, which sets the asynchronous commit for its own transaction.
    assert ran == [statement]
    assert Job.objects.get(pk=running.id).status == Status.SUCCEEDED
    assert _synchronous_commit() == "on"  # the session's next transactions are durable


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("worker_ids", "synchronous_commit", "setting"),
    [([], False, "off"), (["worker-a"], False, "off"), (["worker-a"], True, "on")],
    ids=["a batch", "a fetch", "a durable fetch"],
)
def test_a_completions_statement_sets_its_transaction_s_commit_as_asked(
    worker_ids, synchronous_commit, setting
):
    """Seen from inside the transaction the statement ran in (one begun on the connection
    itself, which the driver does not know of): the setting its commit will read."""
    queued_jobs(2)
    running = services.claim_next_job(worker_id="worker-a")
    completions = [Completion(Owner(running.id, "worker-a", 1), None)]
    with connection.cursor() as cursor:
        cursor.execute("BEGIN")
        try:
            services.claim_jobs(
                worker_ids=worker_ids,
                completions=completions,
                synchronous_commit=synchronous_commit,
            )
            assert _synchronous_commit() == setting
        finally:
            cursor.execute("ROLLBACK")
    assert _synchronous_commit() == "on"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_asynchronous_commit_is_never_set_in_the_callers_transaction():
    queued_jobs(2)
    running = services.claim_next_job(worker_id="worker-a")
    completions = [Completion(Owner(running.id, "worker-a", 1), None)]
    with transaction.atomic():
        ran = _statements_of(
            lambda: services.claim_jobs(
                worker_ids=["worker-a"], completions=completions, synchronous_commit=False
            )
        )
        assert _synchronous_commit() == "on"
    assert ran == ["complete_and_claim_jobs"]


@pytest.mark.postgres
@pytest.mark.django_db
def test_an_array_parameter_reaches_postgresql_as_the_list_it_was():
    values = [
        "host:42:thread-1:00ff",
        'a result {"n": "say \\"hi\\""}',
        "with,comma",
        "back\\slash",
        "{braces}",
        " spaced ",
        "",
        "NULL",
        None,
        "ünïcode",
    ]
    with connection.cursor() as cursor:
        literals = [postgres._array_literal(values), postgres._array_literal([])]
        cursor.execute("SELECT %s::text[], %s::integer[]", literals)
        assert cursor.fetchone() == (values, [])
        cursor.execute("SELECT %s::integer[]", [postgres._array_literal([1, 2, 30])])
        assert cursor.fetchone() == ([1, 2, 30],)
