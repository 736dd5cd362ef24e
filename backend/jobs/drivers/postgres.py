"""The PostgreSQL driver: every transition is one named statement from ``queries.sql``."""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from uuid import UUID

import psycopg
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connections, transaction

from ..conf import app_settings
from ..errors import JobNotFound
from ..flowcontrol import RATE_BUCKETS, key_limit
from . import deadline, sql
from .base import (
    JOB_ROW_FIELDS,
    Analyzed,
    CancelOutcome,
    ClaimCutShort,
    Completion,
    ExpiredLease,
    Heartbeat,
    HeldKey,
    JobRow,
    ListenerUnusable,
    RetryOutcome,
    ServerInRecovery,
    StatusEstimate,
    TypeSample,
    Vacuumed,
    to_json,
    unclaimed,
)
from .portable import DependencyStatements, PortableStatements

if TYPE_CHECKING:
    from .base import Event, Failure, NewJob, Owner, Release, Selection

QUERIES: dict[str, sql.Query] = sql.load(Path(__file__).with_name("queries.sql"))

# complete_and_claim as a PL/pgSQL function (migration 0005), for connections that cannot
# prepare it: its arguments' types and its result's columns ("part", then jobs_job's).
COMPLETE_AND_CLAIM_FUNCTION = "jobs_complete_and_claim"
COMPLETE_AND_CLAIM_ARGS = {
    "id": "uuid",
    "attempts": "integer",
    "result_json": "text",
    "completed_message": "text",
    "completed_data": "text",
    "worker_id": "text",
    "queue": "text",
    "locked_until": "timestamp with time zone",
    "claimed_message": "text",
    "claimed_data": "text",
    "now": "timestamp with time zone",
    "keys_limited": "boolean",
    "lean": "boolean",
}


# JobRow's slot setters in column order. The worker builds two rows a job (its claim, its
# success): a frozen dataclass's __init__ sets each of its fields through
# object.__setattr__, which cost half of building one (3.3 of 6.7 us here).
_ROW_SLOTS = tuple(getattr(JobRow, name).__set__ for name in JOB_ROW_FIELDS)
_PAYLOAD, _RESULT, _METADATA = (
    JOB_ROW_FIELDS.index(name) for name in ("payload", "result", "metadata")
)


# jsonb's text output is one JSON value with no surrounding whitespace: raw_decode reads it
# without json.loads' checks and whitespace scans around it (0.35 us against 1.5 on a
# small payload; each fetch decodes two rows a job).
_decode_json = json.JSONDecoder().raw_decode


def _job_row(values: Sequence[Any]) -> JobRow:
    """The row of a ``RETURNING *`` tuple. Django's psycopg setup hands jsonb over as text:
    payload, result and metadata are decoded here (metadata is nearly always empty)."""
    row = object.__new__(JobRow)
    for set_slot, value in zip(_ROW_SLOTS, values, strict=True):
        set_slot(row, value)
    _ROW_SLOTS[_PAYLOAD](row, _decode_json(values[_PAYLOAD])[0])
    metadata = values[_METADATA]
    _ROW_SLOTS[_METADATA](row, {} if metadata == "{}" else _decode_json(metadata)[0])
    if (result := values[_RESULT]) is not None:
        _ROW_SLOTS[_RESULT](row, _decode_json(result)[0])
    return row


# The channel create_jobs notifies and the worker's listener listens on.
NOTIFY_CHANNEL = "jobs_job_created"


def _new_job(position: int, job: NewJob) -> dict[str, Any]:
    return {
        "position": position,
        "id": str(job.id),
        "type": job.type,
        "payload": job.payload,
        "priority": job.priority,
        "available_at": job.available_at.isoformat(),
        "max_attempts": job.max_attempts,
        "idempotency_key": job.idempotency_key,
        "queue": job.queue,
        "timeout_seconds": job.timeout_seconds,
        "event_data": job.event_data,
        "metadata": job.metadata,
        "unique_key": job.unique_key,
        "concurrency_key": job.concurrency_key,
        "workflow_id": None if job.workflow_id is None else str(job.workflow_id),
        "ref": job.ref,
    }


def _existing(
    job: NewJob,
    inserted: dict[Any, JobRow],
    by_key: dict[str | None, JobRow],
    by_unique: dict[str | None, JobRow],
) -> tuple[JobRow, bool] | None:
    """``job``'s outcome: written, or the row its idempotency key or unique key matched."""
    if job.id in inserted:
        return inserted[job.id], True
    if job.idempotency_key is not None and job.idempotency_key in by_key:
        return by_key[job.idempotency_key], False
    if job.unique_key is not None and job.unique_key in by_unique:
        return by_unique[job.unique_key], False
    return None


def _owner_params(owner: Owner) -> dict[str, Any]:
    return {"job_id": owner.job_id, "worker_id": owner.worker_id, "attempt": owner.attempt}


def _event_params(event: Event, prefix: str = "") -> dict[str, Any]:
    return {f"{prefix}message": event.message, f"{prefix}data": to_json(event.data)}


def _completion_params(owner: Owner, result_json: str | None, event: Event) -> dict[str, Any]:
    return {
        "id": owner.job_id,
        "worker_id": owner.worker_id,
        "attempts": owner.attempt,
        "result_json": result_json,
        **_event_params(event, "completed_"),
    }


def _claim_params(queue: str, locked_until: datetime, event: Event) -> dict[str, Any]:
    return {
        "queue": queue,
        "locked_until": locked_until,
        "keys_limited": bool(app_settings.JOB_CONCURRENCY_KEY_LIMITS),
        **_event_params(event, "claimed_"),
    }


def _batch_completion_params(completions: Sequence[Completion], event: Event) -> dict[str, Any]:
    return {
        "done_ids": [done.owner.job_id for done in completions],
        "done_worker_ids": [done.owner.worker_id for done in completions],
        "done_attempts": [done.owner.attempt for done in completions],
        "done_results": [done.result_json for done in completions],
        **_event_params(event, "completed_"),
    }


def _in_worker_order(rows: Sequence[Sequence[Any]], worker_ids: Sequence[str]) -> list[JobRow]:
    """The claimed rows of a batched claim's result, the n-th worker id's job n-th
    (RETURNING has no order; the n-th worker id holds the n-th job in claim order). The
    jobs of an id that repeats (a thread that holds jobs) are in claim order."""
    claimed = [_job_row(values) for part, *values in rows if part == "claimed"]
    position: dict[str, int] = {}
    for n, worker_id in enumerate(worker_ids):
        position.setdefault(worker_id, n)
    claimed.sort(
        key=lambda row: (
            position[row.locked_by or ""],
            -row.priority,
            row.available_at,
            row.created_at,
            row.id,  # a UUID orders as PostgreSQL's uuid does (its bytes, big-endian)
        )
    )
    return claimed


# complete_and_claim's halves are skipped with NULLs (see queries.sql).
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
}


def _selection_params(selection: Selection) -> dict[str, Any]:
    type_pattern = None
    if selection.type:
        # A substring match, like the job list's type filter: LIKE's wildcards are literal.
        escaped = selection.type.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        type_pattern = f"%{escaped}%"
    return {
        "status": selection.status or None,
        "type_pattern": type_pattern,
        "queue": selection.queue or None,
        "ids": None if selection.ids is None else list(selection.ids),
    }


# psycopg's own default; only statements executed with prepare=None follow it.
PREPARE_THRESHOLD = 5


def _psycopg_text_loader(type_name: str) -> type[psycopg.abc.Loader]:
    loader = psycopg.adapters.get_loader(
        psycopg.adapters.types[type_name].oid, psycopg.pq.Format.TEXT
    )
    assert loader is not None  # psycopg registers one for every built-in type
    return loader


# psycopg's own (C) timestamptz loader. Django's wraps it in a Python loader that sets the
# connection's time zone, instantiated for every column of every result; Django opens its
# connections in UTC when USE_TZ is on, and psycopg then answers in the same timezone.utc.
_TIMESTAMPTZ_LOADER = _psycopg_text_loader("timestamptz")
_threads = threading.local()


@contextmanager
def _cursor() -> Iterator[psycopg.RawCursor[Any]]:
    """A plain psycopg cursor on Django's connection for this thread.

    Server-side binding (Django's own cursors inline parameters into the text, which
    costs a parse and plan per call), prepared once per connection unless
    ``JOB_DB_PREPARED_STATEMENTS`` is off (PgBouncer before 1.21 in transaction mode
    cannot carry prepared statements); Django's error wrapping keeps the worker's
    DatabaseError handling and reconnects working. One cursor per thread and connection,
    kept for the next call: a worker thread runs a statement per job.
    """
    db = connections[DEFAULT_DB_ALIAS]
    db.ensure_connection()
    conn = db.connection
    if conn.prepare_threshold is None and _prepare():
        # Django opens connections with prepare_threshold=None, with which psycopg ignores
        # prepare=True. Our calls say per statement whether to prepare; Django's own
        # cursors bind client-side and never prepare, so this changes nothing for them.
        conn.prepare_threshold = PREPARE_THRESHOLD
    cursor: psycopg.RawCursor[Any] | None = getattr(_threads, "cursor", None)
    if cursor is None or cursor.connection is not conn or cursor.closed:
        # Raw: the statements go out as queries.sql's ``positional`` text, unparsed.
        cursor = psycopg.RawCursor(conn)
        if db.timezone is UTC:
            cursor.adapters.register_loader("timestamptz", _TIMESTAMPTZ_LOADER)
        _threads.cursor = cursor
    _threads.db = db  # for _execute: Django's connection proxy costs a lookup per use
    with db.wrap_database_errors:
        if _generic_plans and getattr(_threads, "planned", None) is not conn and _prepare():
            _plan_generically(conn)
        yield cursor


# Set by the worker (PostgresDriver.plan_generically): its connections run prepared
# statements with their generic plans only.
_generic_plans = False


def _plan_generically(conn: psycopg.Connection[Any]) -> None:
    """``plan_cache_mode = force_generic_plan`` for this session, once per connection.

    Every ANALYZE (autovacuum's, as a backlog drains) invalidates a prepared statement's
    plan, and PostgreSQL then weighs five custom plans against the generic one again; when
    the new statistics make a custom plan look cheaper, it plans every call from then on
    (the fused statement: 2.8 times the CPU of running it generically), and a worker's rate
    fell with each autovacuum of a busy queue (decay bench, private PostgreSQL: worst round
    0.57 of the first, 0.87 with generic plans only). The generic plans of the hot statements
    are the ones test_hot_plans checks. Not through a pooler, where a session setting would
    stay on a server connection that other clients use next.
    """
    if not conn.autocommit or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        return  # a SET inside a transaction goes with its rollback: at the next call
    if not behind_pooler(conn):
        conn.execute("SET plan_cache_mode = force_generic_plan")
    _threads.planned = conn


def _prepare() -> bool:
    return bool(app_settings.JOB_DB_PREPARED_STATEMENTS)


# A bulk retry that lost a race for a unique key to a create runs again this many times.
UNIQUE_RACE_RETRIES = 3

# The bulk actions' selection is optional part by part (queries.sql's selection fragment):
# only a plan made for the given values can read a selection of ids through the primary
# key, so these always run unprepared, planned for their values.
CUSTOM_PLAN_ONLY = frozenset({"cancel_jobs", "retry_jobs"})
# Utility statements, which PostgreSQL cannot prepare.
NEVER_PREPARED = frozenset({"vacuum_jobs", "analyze_jobs"})


def behind_pooler(conn: psycopg.Connection[Any]) -> bool:
    """Whether ``conn`` reaches PostgreSQL through a pooler such as PgBouncer.

    PostgreSQL tells a client its backend's pid when the connection opens; a pooler hands
    out a key of its own instead, because the client's server connection changes. So the
    pid the server reports for this session differs from the one the client was given
    exactly when something pools in between. One round trip; session or transaction
    pooling look the same from here.
    """
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    return row is None or row[0] != conn.info.backend_pid


class _Notifications:
    """The listening connection, as the worker's listener waits on it."""

    channel = NOTIFY_CHANNEL

    def __init__(self, conn: psycopg.Connection[Any], probe_channel: str) -> None:
        self._conn = conn
        self.probe_channel = probe_channel
        self.last_probe: str | None = None

    def fileno(self) -> int:
        return self._conn.fileno()

    def received(self) -> list[str]:
        # timeout=0.0: takes what has arrived; a lost connection raises here.
        queues = []
        for notice in self._conn.notifies(timeout=0.0):
            if notice.channel == self.probe_channel:
                self.last_probe = notice.payload
            else:
                queues.append(notice.payload)
        return queues


class PostgresDriver(PortableStatements, DependencyStatements):
    name = "postgres"
    supports_listen = True

    @contextmanager
    def listen(self, *, application_name: str) -> Iterator[_Notifications]:
        """LISTEN on a psycopg connection of its own: Django's settings for the default
        database, with ``JOB_WORKER_LISTEN_OPTIONS`` on top (PostgreSQL itself when the
        default connection goes through a pooler)."""
        params = connections[DEFAULT_DB_ALIAS].get_connection_params()
        # Django's own cursor class and adapters are for its connections, not this one.
        for key in ("cursor_factory", "context", "prepare_threshold"):
            params.pop(key, None)
        params["application_name"] = application_name
        params.update(app_settings.JOB_WORKER_LISTEN_OPTIONS)
        with psycopg.connect(**params, autocommit=True) as conn:
            deadline.watch(conn)  # its LISTEN, on a frozen server, ends like any statement
            if behind_pooler(conn):
                raise ListenerUnusable(
                    "this connection goes through a pooler, which does not deliver notifications",
                    host=conn.info.host,
                    port=conn.info.port,
                )
            # target_session_attrs=read-write already skips standbys; this also holds with
            # any, or with POSTGRES_LISTEN_HOST naming a server that is one now. A standby
            # would refuse LISTEN, and never hear the primary's notifications anyway.
            row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
            if row is None or row[0]:
                raise ServerInRecovery(
                    f"the listener's server {conn.info.host}:{conn.info.port} is in recovery "
                    "(a standby)"
                )
            # A channel of this connection's own, for the probes that prove it receives.
            probe_channel = f"jobs_listener_{secrets.token_hex(8)}"
            conn.execute(f"LISTEN {NOTIFY_CHANNEL}; LISTEN {probe_channel}")
            yield _Notifications(conn, probe_channel)

    def probe(self, channel: str, token: str) -> None:
        with _cursor() as cursor:
            self._execute(cursor, "wake", {"channel": channel, "queue": token})

    def plan_generically(self) -> None:
        global _generic_plans
        _generic_plans = True

    def prepares_statements(self) -> bool:
        return _prepare()

    def behind_pooler(self) -> bool:
        db = connections[DEFAULT_DB_ALIAS]
        db.ensure_connection()
        return behind_pooler(db.connection)

    def _execute(self, cursor: psycopg.RawCursor[Any], query: str, params: dict[str, Any]) -> None:
        started = time.monotonic()
        prepare = _prepare() and query not in CUSTOM_PLAN_ONLY and query not in NEVER_PREPARED
        statement = QUERIES[query]
        cursor.execute(statement.positional, statement.values(params), prepare=prepare)
        db = _threads.db  # set by _cursor(), in which every call runs
        if db.queries_logged:
            # Django logs its own cursors' queries (DEBUG, assertNumQueries); so do we.
            db.queries_log.append(
                {
                    "sql": f"-- {query}\n{QUERIES[query].sql}",
                    "time": f"{time.monotonic() - started:.3f}",
                }
            )

    def _fetchone(self, query: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        with _cursor() as cursor:
            self._execute(cursor, query, params)
            row: tuple[Any, ...] | None = cursor.fetchone()
            return row

    def _job(self, query: str, params: dict[str, Any]) -> JobRow | None:
        row = self._fetchone(query, params)
        return None if row is None else _job_row(row)

    def create_jobs(
        self, jobs: list[NewJob], *, message: str, now: datetime, notify: bool
    ) -> list[tuple[JobRow, bool]]:
        params = {
            "jobs": to_json([_new_job(position, job) for position, job in enumerate(jobs)]),
            "message": message,
            "now": now,
            "notify": notify,
            "channel": NOTIFY_CHANNEL,
        }
        with _cursor() as cursor:
            self._execute(cursor, "create_jobs", params)
            found = [(_job_row(values), created) for created, *values in cursor.fetchall()]
        inserted = {row.id: row for row, created in found if created}
        by_key = {row.idempotency_key: row for row, created in found if not created}
        by_unique = {row.unique_key: row for row, created in found if not created}
        results: list[tuple[JobRow, bool] | None] = [
            _existing(job, inserted, by_key, by_unique) for job in jobs
        ]
        missing = [job for job, result in zip(jobs, results, strict=True) if result is None]
        if missing:
            # A concurrent create with one of these keys committed while the statement
            # waited on it, or an earlier job of this batch holds the unique key: the
            # statement's snapshot predates that row, a new query sees it.
            keys = [job.idempotency_key for job in missing if job.idempotency_key]
            unique = [job.unique_key for job in missing if job.unique_key]
            with _cursor() as cursor:
                self._execute(cursor, "jobs_by_idempotency_keys", {"keys": keys})
                by_key.update((row.idempotency_key, row) for row in map(_job_row, cursor))
                self._execute(cursor, "active_jobs_by_unique_keys", {"keys": unique})
                by_unique.update((row.unique_key, row) for row in map(_job_row, cursor))
            results = [
                result or _existing(job, inserted, by_key, by_unique)
                for job, result in zip(jobs, results, strict=True)
            ]
        retry = [job for job, result in zip(jobs, results, strict=True) if result is None]
        if retry:
            # The active job that held a unique key finished in between: create again.
            again = iter(self.create_jobs(retry, message=message, now=now, notify=notify))
            results = [result or next(again) for result in results]
        return [result for result in results if result is not None]

    def _complete_and_claim(self, params: dict[str, Any]) -> dict[str, JobRow]:
        # Unprepared, the statement would be parsed and planned on every call.
        query = "complete_and_claim" if _prepare() else "complete_and_claim_call"
        with _cursor() as cursor:
            self._execute(cursor, query, params)
            rows = cursor.fetchall()
        found = {part: _job_row(values) for part, *values in rows if part != "gated"}
        if any(part == "gated" for part, *_ in rows):
            # Its success, if any, is committed: the claim has none of its own to count.
            claimed = _after_commit(
                _listed(found.get("completed")),
                [],
                lambda: self._batch(
                    "claim_jobs",
                    {
                        **params,
                        "done_ids": [],
                        "done_worker_ids": [],
                        "done_attempts": [],
                        "worker_ids": [params["worker_id"]],
                    },
                )[1],
            )
            if claimed:
                found["claimed"] = claimed[0]
        return found

    def _batch(
        self, query: str, params: dict[str, Any], *, synchronous_commit: bool = True
    ) -> tuple[list[JobRow], list[JobRow]]:
        """(completed, claimed) of a batched statement (claim_jobs, complete_and_claim_jobs:
        one round trip, one commit), the claimed rows in worker order. A claim it answered
        stale (another claim of the controlled queue committed after its snapshot) is made
        again for the worker ids left, in a transaction that takes the queue's lock first
        (``_claim_locked``); keyed jobs it left, one by one (``_claim_keyed``); if that
        transaction fails, ``ClaimCutShort`` carries what the first committed.
        ``synchronous_commit=False``: its commit does not wait for the disk."""
        params = {**params, "rate_buckets": RATE_BUCKETS}
        rows = self._run_committing(query, params, synchronous_commit=synchronous_commit)
        done = [_job_row(values) for part, *values in rows if part == "completed"]
        claimed = _in_worker_order(rows, params["worker_ids"])
        parts = {part for part, *_ in rows}
        wanting = _still_wanting(params, claimed)
        if "stale" in parts:
            claimed = _after_commit(done, claimed, lambda: self._claim_locked(wanting))
        elif "keyed" in parts:
            claimed = _after_commit(done, claimed, lambda: self._claim_keyed(wanting))
        return done, claimed

    def _run_committing(
        self, query: str, params: dict[str, Any], *, synchronous_commit: bool
    ) -> list[tuple[Any, ...]]:
        """The rows of ``query`` (one that writes completions), run in a transaction of its
        own; with ``synchronous_commit=False`` one whose commit does not wait for its WAL to
        reach disk (the statement sets it for its own transaction). Inside the caller's
        transaction the commit is the caller's: durable. Its arrays go out as array
        literals (``_array_literal``)."""
        asynchronous = not synchronous_commit and not connections[DEFAULT_DB_ALIAS].in_atomic_block
        sent = {
            name: _array_literal(value) if isinstance(value, list) else value
            for name, value in params.items()
        }
        sent["asynchronous_commit"] = asynchronous
        with _cursor() as cursor:
            self._execute(cursor, query, sent)
            return cursor.fetchall()

    def _claim_locked(self, params: dict[str, Any]) -> list[JobRow]:
        """claim_jobs in a transaction that locks the queue's settings row first, so its
        snapshot follows every claim before it and it cannot be stale; BEGIN, the lock, the
        statement and COMMIT go out in one pipeline (one round trip)."""
        if not params["worker_ids"]:
            return []
        _, rows = self._in_one_transaction(
            [("gate_lock", {"queue": params["queue"]}), ("claim_jobs", params)]
        )
        claimed = _in_worker_order(rows, params["worker_ids"])
        if any(part == "keyed" for part, *_ in rows):
            wanting = _still_wanting(params, claimed)
            claimed = _after_commit([], claimed, lambda: self._claim_keyed(wanting))
        return claimed

    def _in_one_transaction(
        self, statements: list[tuple[str, dict[str, Any]]]
    ) -> list[list[tuple[Any, ...]]]:
        """Run ``statements`` in one transaction sent as one pipeline (BEGIN, each
        statement, COMMIT: a single round trip); each statement's rows. On an error the
        transaction is rolled back and the error raised. Inside the caller's transaction
        they run in a savepoint of it, one after the other."""
        if connections[DEFAULT_DB_ALIAS].in_atomic_block:
            with transaction.atomic(), _cursor() as cursor:
                found = []
                for query, params in statements:
                    self._execute(cursor, query, params)
                    found.append(cursor.fetchall() if cursor.description is not None else [])
                return found
        with _cursor() as cursor:
            conn = cursor.connection
            cursors = [psycopg.RawCursor(conn) for _ in statements]
            if _threads.db.timezone is UTC:  # as _cursor() does for its own cursor
                for each in cursors:
                    each.adapters.register_loader("timestamptz", _TIMESTAMPTZ_LOADER)
            try:
                with conn.pipeline():
                    cursor.execute("BEGIN")
                    for each, (query, params) in zip(cursors, statements, strict=True):
                        self._execute(each, query, params)
                    cursor.execute("COMMIT")
                return [each.fetchall() if each.description is not None else [] for each in cursors]
            except BaseException:
                # A lost connection (a dead server, or one the statement deadline left) has
                # no transaction to roll back, and a ROLLBACK there would raise in place of
                # the error that lost it.
                if (
                    not conn.broken
                    and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
                ):
                    cursor.execute("ROLLBACK")
                raise
            finally:
                for each in cursors:
                    each.close()

    def _claim_keyed(self, params: dict[str, Any]) -> list[JobRow]:
        """The gated claim of jobs whose concurrency_key may be limited: a transaction that
        locks the queue's settings row, takes what the queue's controls admit now (for
        all the worker ids at once), then one job per worker id, skipping the keys at
        their limits, each key counted under its own lock (claimers of one key take turns,
        whatever their queue); the claims counted in the rate window."""
        queue = params["queue"]
        claimed: list[JobRow] = []
        if not params["worker_ids"]:
            return claimed
        with transaction.atomic(), _cursor() as cursor:
            self._execute(cursor, "gate_lock", {"queue": queue})
            self._execute(cursor, "controlled_room", params)
            (room,) = cast(tuple[int], cursor.fetchone())
            key_limits = self._key_limits(cursor)
            blocked: list[str] = []
            for worker_id in params["worker_ids"][:room]:
                while True:
                    self._execute(
                        cursor,
                        "gated_candidate",
                        {"queue": queue, "now": params["now"], "blocked": blocked},
                    )
                    candidate = cursor.fetchone()
                    if candidate is None:
                        break
                    job_id, key = candidate
                    key_max = None if key is None else key_limit(key, key_limits)
                    if key_max is None:
                        break
                    self._execute(cursor, "key_lock", {"key": key})
                    self._execute(cursor, "running_with_key", {"key": key})
                    if cast(tuple[int], cursor.fetchone())[0] < key_max:
                        break
                    blocked.append(key)
                if candidate is None:
                    break
                self._execute(
                    cursor, "claim_by_id", {**params, "id": job_id, "worker_id": worker_id}
                )
                row = cursor.fetchone()
                if row is not None:
                    claimed.append(_job_row(row))
            if claimed:
                self._execute(cursor, "count_controlled_claims", {**params, "claims": len(claimed)})
        return claimed

    def _key_limits(self, cursor: psycopg.RawCursor[Any]) -> dict[str, int]:
        limits = dict(app_settings.JOB_CONCURRENCY_KEY_LIMITS)
        self._execute(cursor, "key_limits", {})
        limits.update(cursor.fetchall())
        return limits

    def wake(self, queue: str) -> None:
        with _cursor() as cursor:
            self._execute(cursor, "wake", {"channel": NOTIFY_CHANNEL, "queue": queue})

    def claim_jobs(
        self,
        completions: Sequence[Completion],
        *,
        worker_ids: Sequence[str],
        queue: str,
        now: datetime,
        locked_until: datetime,
        completed: Event,
        claimed: Event,
        lean: bool,
        synchronous_commit: bool = True,
    ) -> tuple[list[JobRow], list[JobRow]]:
        if not worker_ids:
            done = self.complete_jobs(
                completions,
                now=now,
                event=completed,
                lean=lean,
                synchronous_commit=synchronous_commit,
            )
            return done, []
        claim = {**_claim_params(queue, locked_until, claimed), "lean": lean, "now": now}
        asynchronous = bool(completions) and not synchronous_commit
        if (
            not asynchronous
            and len(worker_ids) == 1
            and all(done.owner.worker_id == worker_ids[0] for done in completions[:1])
            and len(completions) <= 1
        ):
            # One thread's claim, with its own success if any: the single-row statement,
            # which PostgreSQL runs for less than the batched one with arrays of one.
            found = self._complete_and_claim(
                {
                    **(
                        _completion_params(
                            completions[0].owner, completions[0].result_json, completed
                        )
                        if completions
                        else _NO_COMPLETION
                    ),
                    "worker_id": worker_ids[0],
                    **claim,
                }
            )
            return _listed(found.get("completed")), _listed(found.get("claimed"))
        params = {
            **_batch_completion_params(completions, completed),
            "worker_ids": list(worker_ids),
            **claim,
        }
        return self._batch(
            "complete_and_claim_jobs" if completions else "claim_jobs",
            params,
            synchronous_commit=not asynchronous,
        )

    def release_jobs(
        self,
        owners: Sequence[Owner],
        *,
        now: datetime,
        event: Event,
        cancelled: Event,
        available_at: datetime | None = None,
        event_type: str = "released",
    ) -> list[JobRow]:
        params = {
            "ids": [owner.job_id for owner in owners],
            "worker_ids": [owner.worker_id for owner in owners],
            "attempts": [owner.attempt for owner in owners],
            "now": now,
            "available_at": available_at,
            "event_type": event_type,
            "cancelled_error": cancelled.data["error"],
            **_event_params(event),
            **_event_params(cancelled, "cancelled_"),
        }
        with _cursor() as cursor:
            self._execute(cursor, "release_jobs", params)
            return [_job_row(values) for values in cursor.fetchall()]

    def status_estimate(self) -> StatusEstimate | None:
        row = self._fetchone("status_estimate", {})
        if row is None or row[0] < 0:  # never analyzed: no estimate
            return None
        rows, values, frequencies = row
        return StatusEstimate(int(rows), dict(zip(values or [], frequencies or [], strict=True)))

    def type_samples(
        self, types: list[str], *, start: datetime, end: datetime, size: int
    ) -> list[TypeSample]:
        params = {"types": types, "start": start, "end": end, "size": size}
        with _cursor() as cursor:
            self._execute(cursor, "type_samples", params)
            return [TypeSample(*row) for row in cursor.fetchall()]

    def complete_jobs(
        self,
        completions: Sequence[Completion],
        *,
        now: datetime,
        event: Event,
        synchronous_commit: bool = True,
        lean: bool = False,
    ) -> list[JobRow]:
        if len(completions) == 1 and synchronous_commit:
            done = completions[0]
            params = {
                **_completion_params(done.owner, done.result_json, event),
                **_NO_CLAIM,
                "now": now,
                "lean": lean,
            }
            return _listed(self._complete_and_claim(params).get("completed"))
        params = {**_batch_completion_params(completions, event), "now": now, "lean": lean}
        rows = self._run_committing("complete_jobs", params, synchronous_commit=synchronous_commit)
        return [_job_row(values) for values in rows]

    def vacuum_jobs_table(self, *, min_dead_rows: int) -> Vacuumed | None:
        row = self._fetchone("vacuum_due", {})
        if row is None or row[1] is None or row[0] <= max(row[1], min_dead_rows):
            return None
        with _cursor() as cursor, deadline.unbounded(cursor.connection):
            # Outside any transaction (VACUUM refuses one): Django's connection autocommits.
            self._execute(cursor, "vacuum_jobs", {})
        after = self._fetchone("vacuum_due", {})
        return Vacuumed(dead_rows=int(row[0]), remaining=int(after[0]) if after else 0)

    def analyze_jobs_table(self, *, min_rows: int) -> Analyzed | None:
        row = self._fetchone("analyze_due", {"min_rows": min_rows})
        if row is None or not row[2]:
            return None
        with _cursor() as cursor, deadline.unbounded(cursor.connection):
            self._execute(cursor, "analyze_jobs", {})
        return Analyzed(live_rows=int(row[0]), estimated_rows=int(row[1]))

    def active_queues(self) -> list[str]:
        with _cursor() as cursor:
            self._execute(cursor, "active_queues", {})
            return [queue for (queue,) in cursor.fetchall()]

    def fail_jobs(
        self, failures: Sequence[tuple[Owner, Failure]], *, now: datetime
    ) -> list[JobRow]:
        if len(failures) == 1:
            ((owner, failure),) = failures
            params = {
                **_owner_params(owner),
                "error": failure.error,
                "now": now,
                "retry_at": failure.retry_at,
                **_event_params(failure.retry_event, "retry_"),
                **_event_params(failure.failed_event, "failed_"),
                **_event_params(failure.cancelled_event, "cancelled_"),
            }
            return _listed(self._job("fail_job", params))
        params = {
            "ids": [owner.job_id for owner, _ in failures],
            "worker_ids": [owner.worker_id for owner, _ in failures],
            "attempts": [owner.attempt for owner, _ in failures],
            "errors": [failure.error for _, failure in failures],
            "retry_ats": [failure.retry_at for _, failure in failures],
            "retry_data": [to_json(failure.retry_event.data) for _, failure in failures],
            "failed_data": [to_json(failure.failed_event.data) for _, failure in failures],
            "cancelled_data": [to_json(failure.cancelled_event.data) for _, failure in failures],
            "now": now,
        }
        with _cursor() as cursor:
            self._execute(cursor, "fail_jobs", params)
            return [_job_row(values) for values in cursor.fetchall()]

    def renew_lease(
        self, owner: Owner, *, locked_until: datetime, now: datetime, event: Event
    ) -> bool:
        params = {**_owner_params(owner), "locked_until": locked_until, "now": now}
        return self._fetchone("renew_lease", params | _event_params(event)) is not None

    def heartbeat(
        self,
        owners: list[Owner],
        *,
        locked_until: datetime,
        now: datetime,
        watch: Sequence[Owner] = (),
    ) -> list[Heartbeat]:
        attempts = [*owners, *watch]
        params: dict[str, Any] = {
            "job_ids": [owner.job_id for owner in attempts],
            "worker_ids": [owner.worker_id for owner in attempts],
            "attempts": [owner.attempt for owner in attempts],
            "renew": [True] * len(owners) + [False] * len(watch),
            "locked_until": locked_until,
            "now": now,
        }
        with _cursor() as cursor:
            self._execute(cursor, "heartbeat", params)
            return [Heartbeat(*row) for row in cursor.fetchall()]

    def record_progress(self, owner: Owner, *, now: datetime, event: Event) -> bool:
        params = {**_owner_params(owner), "now": now, **_event_params(event)}
        return self._fetchone("record_progress", params) is not None

    def lock_expired_leases(self, *, now: datetime, limit: int) -> list[ExpiredLease]:
        with _cursor() as cursor:
            self._execute(cursor, "lock_expired_leases", {"now": now, "limit": limit})
            return [ExpiredLease(*row) for row in cursor.fetchall()]

    def release_expired_leases(
        self, releases: list[Release], *, now: datetime, worker_id: str | None
    ) -> None:
        payload = [
            {
                "id": str(release.id),
                "status": release.status,
                "available_at": _iso(release.available_at),
                "finished_at": _iso(release.finished_at),
                "error": release.error,
                "event_type": release.event_type,
                "attempt": release.attempt,
                "message": release.event.message,
                "data": release.event.data,
            }
            for release in releases
        ]
        with _cursor() as cursor:
            self._execute(
                cursor,
                "release_expired_leases",
                {"releases": to_json(payload), "now": now, "worker_id": worker_id},
            )

    def retry_jobs(
        self,
        selection: Selection,
        *,
        now: datetime,
        message: str,
        held_max: int,
        data: Mapping[str, Any] | None = None,
    ) -> RetryOutcome:
        params = {
            **_selection_params(selection),
            "now": now,
            "message": message,
            "held_max": held_max,
            "data": to_json(dict(data or {})),
        }
        for attempt in range(UNIQUE_RACE_RETRIES):
            try:
                with _cursor() as cursor:
                    self._execute(cursor, "retry_jobs", params)
                    (_, _, _, _, retried, held_count), *rest = cursor.fetchall()
                break
            except IntegrityError:
                # A job with one of the keys was created after this statement's snapshot:
                # nothing was written, and the next snapshot sees it as the holder.
                if attempt == UNIQUE_RACE_RETRIES - 1:
                    raise
        return RetryOutcome(
            retried=int(retried),
            held=[HeldKey(row[1], row[2], row[3]) for row in rest if row[0] == "held"],
            held_count=int(held_count),
            parents=[row[1] for row in rest if row[0] == "parent"],
        )

    def run_job_now(self, job_id: UUID | str, *, now: datetime, event: Event) -> bool:
        row = self._fetchone("run_job_now", {"id": job_id, "now": now, **_event_params(event)})
        return row is not None and row[0] == 1

    def job(self, job_id: UUID | str) -> JobRow:
        row = self._job("job", {"id": job_id})
        if row is None:
            raise JobNotFound(job_id)
        return row

    def cancel_jobs(
        self, selection: Selection, *, now: datetime, cancelled: Event, requested: Event
    ) -> CancelOutcome:
        params = {
            **_selection_params(selection),
            "now": now,
            **_event_params(cancelled, "cancelled_"),
            **_event_params(requested, "requested_"),
        }
        row = self._fetchone("cancel_jobs", params)
        assert row is not None  # an aggregate always answers
        return CancelOutcome(cancelled=row[0], cancel_requested=row[1])


def _listed(row: JobRow | None) -> list[JobRow]:
    return [] if row is None else [row]


def _array_literal(values: Sequence[object]) -> str:
    """``values`` as an array's text input, every element quoted (None as NULL), for a
    parameter its statement casts (``:done_ids::uuid[]``): psycopg's list dumper looks
    for characters to quote in each element with regular expressions, which cost a
    batched fetch more than the rest of its parameters together."""
    return (
        "{"
        + ",".join(
            "NULL"
            if value is None
            else '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
            for value in values
        )
        + "}"
    )


def _still_wanting(params: dict[str, Any], claimed: list[JobRow]) -> dict[str, Any]:
    """``params`` for the entries of ``params``'s worker ids that ``claimed`` left without
    a job (an id that repeats is wanting as many times as it went without)."""
    return {**params, "worker_ids": unclaimed(params["worker_ids"], claimed)}


def _after_commit(
    completed: list[JobRow], claimed: list[JobRow], claim_more: Callable[[], list[JobRow]]
) -> list[JobRow]:
    """``claimed`` and what ``claim_more`` claims in a transaction of its own, after the
    one that committed ``completed`` and ``claimed``. Should it fail, what committed is not
    lost with it: ``ClaimCutShort`` carries it to the caller, which alone can hand those
    jobs to threads (dropped, they would sit running for a lease, unrun, then be retried
    with an attempt spent) and acknowledge those successes (given back, they would be
    written again and found stale). Inside the caller's transaction nothing committed:
    the error goes up as it is."""
    try:
        return claimed + claim_more()
    except ClaimCutShort as cut:  # a transaction after a commit after a commit
        cause = cut.__cause__ or cut
        raise ClaimCutShort(completed + cut.completed, claimed + cut.claimed, cause) from cause
    except Exception as error:
        if connections[DEFAULT_DB_ALIAS].in_atomic_block or not (completed or claimed):
            raise
        raise ClaimCutShort(completed, claimed, error) from error


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()
