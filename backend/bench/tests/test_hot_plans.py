"""Every hot statement reaches its rows through its designed index, whatever ANALYZE saw.

The planner picks an index from the statistics of the last ANALYZE, and the states a
queue passes through mislead it: a backlog where every row is queued (a ``running`` row
looks rare, so ``jobs_job_status_idx`` looks as good as the primary key for a completion,
and then reads every dead ``running`` entry), a table where every row has finished, and
one whose statistics say ``running`` while those rows are long dead. Each test builds one
of those states with a single ``INSERT … SELECT`` (these tests read plans, not
transitions), runs ``ANALYZE`` and reads the plan of the statement as the PostgreSQL
driver runs it: prepared, once as the custom plan of its first executions and once as the
generic plan a prepared statement settles on.

A state is built once for all the tests planned in it (pytest groups a module-scoped
parameter's tests), in a transaction the tests' own nest in as savepoints, rolled back
after the last of them: building one per test was most of the PostgreSQL pass's slowest
module (327 builds of 3,000 to 12,000 rows, analyzed).
"""

import json
import re
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from django.db import connection, transaction
from django.utils import timezone

from jobs.drivers.postgres import CUSTOM_PLAN_ONLY, QUERIES
from jobs.flowcontrol import RATE_BUCKETS

from .plan_states import (
    STATES,
    all_finished,
    all_queued,
    backlog_over_history,
    dead_running,
)

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

WORKER = "tests:1:thread-1:0000beef"


@pytest.fixture(scope="module")
def state(request, django_db_setup, django_db_blocker) -> Iterator[None]:
    """The state ``request.param`` builds, for every test of this module planned in it; it
    sees no other test's writes (each test's transaction is a savepoint inside it, rolled
    back) and is rolled back itself, its statistics with it, after the last one."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        connection.ensure_connection()
        with psycopg.ClientCursor(connection.connection) as cursor:
            request.param(cursor)
    yield
    with django_db_blocker.unblock():
        transaction.set_rollback(True)
        outer.__exit__(None, None, None)


@pytest.fixture(scope="module", autouse=True)
def _vacuum_after(django_db_blocker) -> Iterator[None]:
    """Every state's rows are rolled back, but their versions stay in the heap and the
    indexes until a vacuum (the test server's autovacuum is off): about a million of them
    over this module, which the later tests' full reads of jobs_job would wade through."""
    yield
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute("VACUUM jobs_job, jobs_jobevent")


PK = "jobs_job_pkey"
EVENTS_BY_JOB = "job_event_job_id_idx"


def _owner() -> dict[str, Any]:
    return {"job_id": uuid.uuid4(), "worker_id": WORKER, "attempt": 1}


def _event(prefix: str = "") -> dict[str, Any]:
    return {f"{prefix}message": "m", f"{prefix}data": "{}"}


def _completion() -> dict[str, Any]:
    return {"id": uuid.uuid4(), "attempts": 1, "result_json": "null", **_event("completed_")}


def _claim(now: datetime) -> dict[str, Any]:
    return {
        "queue": "default",
        "locked_until": now + timedelta(seconds=30),
        "keys_limited": False,
        "lean": False,
        **_event("claimed_"),
    }


def _batch_completion() -> dict[str, Any]:
    return {
        "done_ids": [uuid.uuid4() for _ in range(10)],
        "done_worker_ids": [WORKER] * 10,
        "done_attempts": [1] * 10,
        "done_results": ["null"] * 10,
        "asynchronous_commit": False,
        **_event("completed_"),
    }


_NO_COMPLETION = {
    "id": None,
    "attempts": None,
    "result_json": None,
    "completed_message": None,
    "completed_data": None,
}
_NO_CLAIM = {
    "queue": None,
    "locked_until": None,
    "claimed_message": None,
    "claimed_data": None,
    "keys_limited": False,
    "lean": False,
}
# The SQL types of parameters that a statement may be given as NULL.
_NULL_TYPES = {
    "id": "uuid",
    "attempts": "integer",
    "locked_until": "timestamptz",
    "available_at": "timestamptz",
    "ids": "uuid[]",
    "limit": "integer",
    # Empty arrays: a fetch that carries no successes.
    "done_ids": "uuid[]",
    "done_worker_ids": "text[]",
    "done_attempts": "integer[]",
}


def _rate() -> dict[str, Any]:
    return {"rate_buckets": RATE_BUCKETS}


def _params(statement: str, now: datetime) -> dict[str, Any]:
    """A realistic call of ``statement`` at ``now`` (its ids match no row: plans only)."""
    if statement == "complete_and_claim":
        return {**_completion(), **_claim(now), "worker_id": WORKER, "now": now}
    if statement == "plain_claim":
        return {**_NO_COMPLETION, **_claim(now), "worker_id": WORKER, "now": now}
    if statement == "plain_complete":
        return {**_completion(), **_NO_CLAIM, "worker_id": WORKER, "now": now}
    if statement == "complete_jobs":
        return {**_batch_completion(), "now": now, "lean": False}
    if statement == "claim_jobs":
        # A fetch that carries no successes (a controlled queue's count reads the arrays).
        none: dict[str, Any] = {"done_ids": [], "done_worker_ids": [], "done_attempts": []}
        return {**_claim(now), **none, "worker_ids": [WORKER] * 10, "now": now, **_rate()}
    if statement == "complete_and_claim_jobs":
        return {
            **_batch_completion(),
            **_claim(now),
            "worker_ids": [WORKER] * 10,
            "now": now,
            **_rate(),
        }
    if statement == "release_jobs":
        return {
            "ids": [uuid.uuid4() for _ in range(10)],
            "worker_ids": [WORKER] * 10,
            "attempts": [1] * 10,
            "now": now,
            "cancelled_error": "cancelled",
            # A release (a snooze passes "snoozed" and its new due time).
            "event_type": "released",
            "available_at": None,
            **_event(),
            **_event("cancelled_"),
        }
    if statement == "fail_job":
        return {
            **_owner(),
            "error": "boom",
            "now": now,
            "retry_at": now,
            **_event("retry_"),
            **_event("failed_"),
            **_event("cancelled_"),
        }
    if statement == "fail_jobs":
        return {
            "ids": [uuid.uuid4() for _ in range(10)],
            "worker_ids": [WORKER] * 10,
            "attempts": [1] * 10,
            "errors": ["boom"] * 10,
            "retry_ats": [now] * 10,
            "retry_data": ["{}"] * 10,
            "failed_data": ["{}"] * 10,
            "cancelled_data": ["{}"] * 10,
            "now": now,
        }
    if statement == "renew_lease":
        return {**_owner(), "locked_until": now, "now": now, **_event()}
    if statement == "heartbeat":
        return {
            "job_ids": [uuid.uuid4(), uuid.uuid4()],
            "worker_ids": [WORKER, WORKER],
            "attempts": [1, 1],
            "renew": [True, False],
            "locked_until": now,
            "now": now,
        }
    if statement == "record_progress":
        return {**_owner(), "now": now, **_event()}
    if statement == "cancel_jobs":
        return {
            "status": None,
            "type_pattern": None,
            "queue": None,
            "ids": [uuid.uuid4(), uuid.uuid4()],
            "now": now,
            **_event("cancelled_"),
            **_event("requested_"),
        }
    # Flow control: the gated claim's statements and the unique key's lookup.
    if statement == "gated_candidate":
        return {"queue": "default", "now": now, "blocked": ["a-key"]}
    if statement == "claim_by_id":
        return {
            "id": uuid.uuid4(),
            "worker_id": WORKER,
            "locked_until": now + timedelta(seconds=30),
            "now": now,
            "lean": False,
            **_event("claimed_"),
        }
    if statement == "running_with_key":
        return {"key": "a-key"}
    if statement == "active_jobs_by_unique_keys":
        return {"keys": ["a-key", "another-key"]}
    if statement == "lock_expired_leases":
        return {"now": now, "limit": 100}
    if statement == "release_expired_leases":
        release = {
            "id": str(uuid.uuid4()),
            "status": "queued",
            "available_at": None,
            "finished_at": None,
            "error": "lease expired",
            "event_type": "lease_expired",
            "attempt": 1,
            "message": "m",
            "data": {},
        }
        return {"releases": json.dumps([release]), "now": now, "worker_id": None}
    raise AssertionError(statement)


# Each hot statement with the indexes it may read jobs_job through.
DESIGNED = {
    "complete_and_claim": {PK, "job_claim_idx"},
    "plain_claim": {PK, "job_claim_idx"},
    "plain_complete": {PK, "job_claim_idx"},
    "complete_jobs": {PK},
    # The batches count a concurrency-limited queue's running jobs.
    "claim_jobs": {PK, "job_claim_idx", "job_running_queue_idx"},
    "complete_and_claim_jobs": {PK, "job_claim_idx", "job_running_queue_idx"},
    "release_jobs": {PK},
    "fail_job": {PK},
    "fail_jobs": {PK},
    "renew_lease": {PK},
    "heartbeat": {PK},
    "record_progress": {PK},
    "cancel_jobs": {PK},
    "lock_expired_leases": {"job_timeout_idx"},
    "release_expired_leases": {PK},
    "gated_candidate": {"job_claim_idx"},
    "claim_by_id": {PK},
    "running_with_key": {"job_running_key_idx"},
    "active_jobs_by_unique_keys": {"job_unique_key_active"},
}
# Statements that lock a caller's selection of jobs in id order.
SORTS_ITS_SELECTION = {"cancel_jobs"}
QUERY_OF = {"plain_claim": "complete_and_claim", "plain_complete": "complete_and_claim"}

_PARAM = re.compile(r"'(?:[^']|'')*'|--[^\n]*|::|(?<![\w:]):([A-Za-z_]\w*)")


def _sql_type(name: str, value: Any) -> str:
    if value is None:
        return _NULL_TYPES.get(name, "text")
    if isinstance(value, list):
        return _sql_type(name, value[0]) + "[]" if value else _NULL_TYPES[name]
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, uuid.UUID):
        return "uuid"
    if isinstance(value, datetime):
        return "timestamptz"
    return "text"


def prepare(cursor: psycopg.Cursor[Any], statement: str, params: dict[str, Any]) -> str:
    """Prepare ``statement`` as ``hot``, typed as the driver's call types it; returns the
    ``EXECUTE`` that runs it with ``params``, inlined client-side."""
    query = QUERIES[QUERY_OF.get(statement, statement)]
    assert set(params) == query.params
    order = sorted(params)
    text = _PARAM.sub(
        lambda m: f"${order.index(m.group(1)) + 1}" if m.group(1) else m.group(0), query.text
    )
    types = [_sql_type(name, params[name]) for name in order]
    cursor.execute("DEALLOCATE ALL")
    cursor.execute(f"PREPARE hot ({', '.join(types)}) AS {text}")
    placeholders = ", ".join(["%s"] * len(types))
    return cursor.mogrify(f"EXECUTE hot ({placeholders})", [params[n] for n in order])


def plan(cursor: psycopg.Cursor[Any], statement: str, mode: str) -> dict[str, Any]:
    """The plan of ``statement`` prepared as the driver prepares it, in ``mode``
    (``force_custom_plan`` or ``force_generic_plan``)."""
    cursor.execute(f"SET LOCAL plan_cache_mode = {mode}")
    execute = prepare(cursor, statement, _params(statement, timezone.now()))
    cursor.execute(f"EXPLAIN (FORMAT JSON) {execute}")
    explained = cursor.fetchone()[0]
    cursor.execute("DEALLOCATE hot")
    return (json.loads(explained) if isinstance(explained, str) else explained)[0]["Plan"]


def nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from nodes(child)


def reads(node: dict[str, Any], table: str) -> set[tuple[str, str | None]]:
    """Every read of ``table`` in the plan: (node type, index name); a bitmap heap scan
    or a sequential scan has no index name."""
    return {
        (each["Node Type"], each.get("Index Name"))
        for each in nodes(node)
        if each.get("Relation Name") == table and each["Node Type"] != "ModifyTable"
    }


def sorted_job_reads(node: dict[str, Any]) -> list[str]:
    """The sorts (full or incremental) of the plan that have a read of jobs_job below."""
    return [
        each["Node Type"]
        for each in nodes(node)
        if each["Node Type"] in {"Sort", "Incremental Sort"} and reads(each, "jobs_job")
    ]


def unbounded_job_reads(node: dict[str, Any]) -> list[str]:
    """The index reads of jobs_job that have no index condition (the whole index)."""
    return [
        each["Index Name"]
        for each in nodes(node)
        if each.get("Index Name", "").startswith(JOB_INDEXES) and "Index Cond" not in each
    ]


JOB_INDEXES = (
    "jobs_job_",
    "job_claim_idx",
    "job_timeout_idx",
    "job_idempotency_key",
    "job_running_key_idx",
    "job_running_queue_idx",
    "job_unique_key_active",
)
EVENT_INDEXES = ("job_event_", "jobs_jobevent_")
# A bitmap heap scan is allowed where its bitmap comes from a designed index.
INDEX_READS = {"Index Scan", "Index Only Scan", "Bitmap Heap Scan"}


def indexes(node: dict[str, Any], prefixes: tuple[str, ...]) -> set[str]:
    """The indexes of one table (named with ``prefixes``) that the plan reads."""
    return {
        each["Index Name"]
        for each in nodes(node)
        if each.get("Index Name", "").startswith(prefixes)
    }


@pytest.mark.parametrize("state", STATES, ids=[state.__name__ for state in STATES], indirect=True)
@pytest.mark.parametrize("statement", list(DESIGNED))
@pytest.mark.usefixtures("state")
def test_hot_statement_reads_jobs_only_through_its_designed_index(statement):
    connection.ensure_connection()
    # Client-side binding: EXECUTE's arguments are literals, typed by PREPARE.
    with psycopg.ClientCursor(connection.connection) as cursor:
        # A statement the driver never prepares is planned for its values on every call.
        modes = ["force_custom_plan"]
        if statement not in CUSTOM_PLAN_ONLY:
            modes.append("force_generic_plan")
        plans = {mode: plan(cursor, statement, mode) for mode in modes}
    for mode, explained in plans.items():
        job_kinds = {kind for kind, _ in reads(explained, "jobs_job")}
        assert job_kinds, (mode, explained)
        assert job_kinds <= INDEX_READS, (mode, job_kinds)
        assert indexes(explained, JOB_INDEXES) <= DESIGNED[statement], mode
        # Claim order comes from job_claim_idx read in order, never from sorting jobs (a
        # bitmap and a sort would read every due job of a level on every claim). A bulk
        # cancel locks the jobs it was given in id order: it may sort those, and only those
        # (the primary key's probes of its ids below the sort).
        if statement in SORTS_ITS_SELECTION:
            assert indexes(explained, JOB_INDEXES) == {PK}, mode
        else:
            assert not sorted_job_reads(explained), mode
        # Every index read of jobs_job is a probe or a range, never a walk of a whole index
        # (statistics that call the table empty make a join read the primary key end to
        # end and match each row against the one it wants).
        assert not unbounded_job_reads(explained), mode
        # The claimed event of an ended attempt is found among its job's events, never
        # through another index.
        assert {kind for kind, _ in reads(explained, "jobs_jobevent")} <= INDEX_READS, mode
        assert indexes(explained, EVENT_INDEXES) <= {EVENTS_BY_JOB}, mode


@pytest.mark.parametrize("state", [all_finished], ids=["all_finished"], indirect=True)
@pytest.mark.usefixtures("state")
def test_live_counts_read_live_jobs_only_through_their_indexes():
    # The stats' live rows (selectors.LIVE) beside a history of finished jobs:
    # jobs_job_status_idx holds finished jobs only, so each live status is read through
    # the partial index that holds it, never by scanning the history.
    from jobs.models import Job
    from jobs.selectors import LIVE

    connection.ensure_connection()
    with psycopg.ClientCursor(connection.connection) as cursor:
        sql, params = Job.objects.filter(LIVE).values("status").query.sql_with_params()
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        explained = cursor.fetchone()[0]
    explained = (json.loads(explained) if isinstance(explained, str) else explained)[0]["Plan"]
    assert {kind for kind, _ in reads(explained, "jobs_job")} <= INDEX_READS, explained
    assert indexes(explained, JOB_INDEXES) == {"job_claim_idx", "job_timeout_idx"}, explained


# The statements a busy worker runs once per job or per fetch. The others run on a timer
# (heartbeat, lock_expired_leases), at a stop (release_jobs), per enqueue with a unique key,
# or when a thread's queues ran dry (plain_complete, whose custom plan drops the claim half):
# their custom plans cost a planning each call, not one per job.
PER_JOB = [
    "complete_and_claim",
    "plain_claim",
    "claim_jobs",
    "complete_jobs",
    "complete_and_claim_jobs",
    "fail_job",
    "gated_candidate",
    "claim_by_id",
    "running_with_key",
]


# The states whose statistics a plan's cost estimates follow: the two backlogs after a
# history add nothing to what the generic plan is weighed against (and a minute of CI).
SETTLING_STATES = [all_queued, all_finished, dead_running, backlog_over_history]


@pytest.mark.parametrize(
    "state", SETTLING_STATES, ids=[state.__name__ for state in SETTLING_STATES], indirect=True
)
@pytest.mark.parametrize("statement", PER_JOB)
@pytest.mark.usefixtures("state")
def test_prepared_hot_statement_settles_on_its_generic_plan(statement):
    # Planning these statements costs more than running them (the batched claim's CTEs:
    # about 1 ms here): prepared, PostgreSQL plans them once per connection, but only if
    # the generic plan is not estimated dearer than the custom plans of the first five
    # calls. Sizes and bounds a custom plan reads from its values (a LIMIT of one idle
    # thread, an array of one success) and the generic one must guess made it plan the
    # batched statements on every call. Called as the worker calls them most: one thread,
    # one job.
    connection.ensure_connection()
    single = {
        name: value[:1] if isinstance(value, list) else value
        for name, value in _params(statement, timezone.now()).items()
    }
    with psycopg.ClientCursor(connection.connection) as cursor:
        cursor.execute("SET LOCAL plan_cache_mode = auto")
        execute = prepare(cursor, statement, single)
        for _ in range(10):
            cursor.execute(execute)
        cursor.execute(
            "SELECT custom_plans, generic_plans FROM pg_prepared_statements WHERE name = 'hot'"
        )
        custom, generic = cursor.fetchone()
        cursor.execute("DEALLOCATE hot")
    assert (custom, generic) == (5, 5)


def _explain(cursor: psycopg.Cursor[Any], sql: str) -> dict[str, Any]:
    cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}")
    explained = cursor.fetchone()[0]
    return (json.loads(explained) if isinstance(explained, str) else explained)[0]["Plan"]


POLL_STATES = [all_finished, backlog_over_history, dead_running]


@pytest.mark.parametrize(
    "state", POLL_STATES, ids=[state.__name__ for state in POLL_STATES], indirect=True
)
@pytest.mark.parametrize("poll", ["LIVE_JOB_EXISTS", "DUE_OR_RUNNING_JOB_EXISTS"])
@pytest.mark.usefixtures("state")
def test_the_benchs_polls_read_live_jobs_only_through_their_partial_indexes(poll):
    # make bench asks ten times a second while workers drain: a poll that scans or sorts
    # jobs_job takes CPU from the worker it measures, more with every job drained.
    from bench import drain

    connection.ensure_connection()
    with psycopg.ClientCursor(connection.connection) as cursor:
        explained = _explain(cursor, getattr(drain, poll))
    assert {kind for kind, _ in reads(explained, "jobs_job")} <= INDEX_READS, explained
    assert indexes(explained, JOB_INDEXES) == {"job_claim_idx", "job_timeout_idx"}, explained
    assert not sorted_job_reads(explained), explained
