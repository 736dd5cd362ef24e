"""Raw-SQL limit: the worker's own statements, ``complete_and_claim`` and the batched
``complete_jobs`` + ``claim_jobs``, driven by pgbench.

Three scripts, each draining a backlog of ``jobs`` with ``clients`` connections, timed like
the workers (first ``claimed`` to last ``succeeded`` event), so each worker figure reads
as a ratio of the limit at the same concurrency:

* ``fused``: what a worker thread does per job: one call that completes the job it
  claimed on the previous transaction and claims the next (one round trip, one commit).
  A connection's first call completes nothing (the nil uuid matches no job).
* ``two-statement``: the same statement called twice per job, complete-only (a queue
  that matches nothing) then claim-only (the nil uuid): two round trips and two commits,
  the claim + complete pair the first measurements of the queue used.
* ``batched``: what a worker process does with batched fetch and
  completion (``services.claim_jobs`` carrying its successes): one statement,
  ``complete_and_claim_jobs``, that completes the ``BATCH`` jobs this client claimed in its
  previous call and claims ``BATCH`` more (one round trip, one commit).

The fused and two-statement scripts' statement is ``QUERIES["complete_and_claim"].text`` as
written in ``jobs/drivers/queries.sql`` without its comments (``_without_comments``); the
script only renames the pgbench variables bound to
``:id``/``:attempts`` (to ``:job_id``/``:job_attempts``, fed by ``\\aset job_``) and, per
call, ``:id``/``:queue`` to the nil uuid / an unmatched queue: the server receives the
same statement either way. The prefix matters: a plain ``\\aset`` stores the last row,
and when a call claims nothing that row is the completed job, whose NULL
``locked_until`` would overwrite the lease variable with '' and break the next call.

The batched script's adaptations: ``complete_and_claim_jobs``'s ``:done_worker_ids`` is
renamed ``:done_owners`` and its ``:worker_ids`` ``:claimers``, the client's ``BATCH``
worker ids (``c<client>-<n>``, built by one SELECT on the client's first call). pgbench's
``\\gset`` stores one row, so the statement's last SELECT (its completed and claimed rows,
and the gated row no queue of the bench has) is replaced by one that aggregates the
claimed rows into the arrays the next call's completion reads; every CTE, the
data-modifying ones included, is the worker's text. ``:done_results`` stays the empty
array: ``unnest`` pads it with NULLs, the SQL NULL a no-op handler's ``None`` is sent as.
The statement reads ``:now`` as the transaction's start, as the worker's clock would be.
``BATCH`` is 10 jobs a side; a worker claims at most one job per idle
thread (``JOB_WORKER_CLAIM_BATCH_SIZE``), so this is a limit the worker may not reach by design.
``run_pgbench(batch=...)`` runs the same script with another batch: the backlog phase's
in-hand limit (``bench/backlog.py``) splits a configuration's executors into clients x batch.

Protocol: ``prepared`` (the default) plans once per connection, as the worker's driver
does (``JOB_DB_PREPARED_STATEMENTS``); ``extended`` plans every execution.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .database import Database, reset_tables
from .drain import EventWindow, event_window
from .figures import load_average
from .seed import enqueue_bulk

PROTOCOLS = ("prepared", "extended")
SCRIPTS = ("fused", "two-statement", "batched")
# Jobs the batched script claims (and completes) per transaction.
BATCH = 10
# pgbench cannot add an interval to the server's clock, so every claim gets the same
# lease end: one that outlives any run (nothing reaps leases while pgbench runs).
LEASE = timedelta(hours=1)
NO_JOB = "00000000-0000-0000-0000-000000000000"
# A queue no job is in: the claim half of the statement finds nothing.
NO_QUEUE = "bench-no-such-queue"
# Transactions per client beyond an even share, so every client's last calls find the
# queue empty and nothing is left claimed; the surplus calls come after the last
# succeeded event and do not count in the window.
SLACK = 1.25
# The batched script's surplus: a client ahead of the others takes more than its share of
# batches, and an empty transaction at the end is cheap.
BATCHED_SLACK = 2.0


@dataclass(kw_only=True)
class RawSqlRun(EventWindow):
    script: str
    clients: int
    jobs: int
    protocol: str
    pgbench_tps: float
    load_average: list[float]
    # Jobs a client's last transaction left claimed, completed after pgbench ended.
    completed_after: int = 0
    samples_jobs_per_second: list[float] = field(default_factory=list)


def _without_comments(text: str) -> str:
    """``text`` without its ``--`` comments: pgbench numbers a ``:name`` in a comment as a
    parameter too, one the statement never uses, whose type the server then cannot
    determine (the statements have no ``--`` inside a literal)."""
    lines = (re.sub(r"\s*--.*$", "", line) for line in text.splitlines())
    return "\n".join(line for line in lines if line.strip())


def _rename(text: str, **names: str) -> str:
    """``text`` with the pgbench variables ``:old`` renamed ``:new`` (casts untouched)."""
    for old, new in names.items():
        text = re.sub(rf"(?<![\w:]):{old}\b", f":{new}", text)
    return text


# complete_and_claim_jobs's last SELECT, from its first line to the end of the statement.
_BATCH_RESULT = re.compile(
    r"^SELECT 'completed' AS part, \* FROM completed$.*", re.MULTILINE | re.DOTALL
)
# What replaces it: the claimed rows as the arrays the next call's completion reads.
_CLAIM_ARRAYS = (
    "SELECT coalesce(array_agg(id), '{}')::text AS ids,"
    " coalesce(array_agg(locked_by), '{}')::text AS owners,"
    " coalesce(array_agg(attempts), '{}')::text AS attempts\nFROM claimed"
)


def _batched_script(batch: int) -> list[str]:
    from jobs.drivers.postgres import QUERIES

    text = _rename(
        _without_comments(QUERIES["complete_and_claim_jobs"].text),
        done_worker_ids="done_owners",
        worker_ids="claimers",
    )
    statement, replaced = _BATCH_RESULT.subn(_CLAIM_ARRAYS, text)
    if replaced != 1:
        raise RuntimeError("complete_and_claim_jobs's last SELECT changed; adapt bench/raw_sql.py")
    return [
        # The client's worker ids, once per connection.
        "\\if :claimers_set = 0",
        "SELECT '{' || string_agg('c' || :client_id::text || '-' || n, ',') || '}' AS claimers,",
        "    1 AS claimers_set",
        f"FROM generate_series(1, {batch}) AS n",
        "\\gset",
        "\\endif",
        statement,
        "\\gset done_",
    ]


def pgbench_script(script: str, *, batch: int = BATCH) -> str:
    """``batch``: jobs per transaction of the batched script (the others claim one)."""
    from jobs.drivers.postgres import QUERIES

    if script == "batched":
        return "\n".join([*_batched_script(batch), ""])
    text = _without_comments(QUERIES["complete_and_claim"].text)
    fed = {"id": "job_id", "attempts": "job_attempts"}
    lines = ["\\set worker_id :client_id"]
    if script == "fused":
        lines += [_rename(text, **fed), "\\aset job_"]
    elif script == "two-statement":
        lines += [
            _rename(text, **fed, queue="no_queue") + ";",
            _rename(text, id="no_job", attempts="job_attempts"),
            "\\aset job_",
        ]
    else:
        raise ValueError(f"unknown script {script!r}")
    return "\n".join([*lines, ""])


def pgbench_variables() -> dict[str, str]:
    """The parameters the worker sends from Python, as pgbench ``-D`` variables.

    pgbench cannot bind an SQL NULL, so the no-op result is the JSON ``null``.
    """
    from jobs.flowcontrol import RATE_BUCKETS
    from jobs.models import DEFAULT_QUEUE, JobEventType
    from jobs.services import MESSAGES

    locked_until = (datetime.now(UTC) + LEASE).isoformat()
    lease = {"lease_seconds": int(LEASE.total_seconds()), "locked_until": locked_until}
    return {
        # PostgreSQL reads the timestamp 'now' as the transaction's start, i.e. now().
        "now": "now",
        "queue": DEFAULT_QUEUE,
        "no_queue": NO_QUEUE,
        "no_job": NO_JOB,
        "locked_until": locked_until,
        "claimed_message": MESSAGES[JobEventType.CLAIMED],
        "claimed_data": json.dumps(lease, separators=(",", ":")),
        "completed_message": MESSAGES[JobEventType.SUCCEEDED],
        "completed_data": "{}",
        "result_json": "null",
        # A connection's first call completes nothing.
        "job_id": NO_JOB,
        "job_attempts": "0",
        # What the worker sends without JOB_CONCURRENCY_KEY_LIMITS.
        "keys_limited": "false",
        # The default timeline (claimed and succeeded events written).
        "lean": "false",
        # Durable commits (throughput mode's asynchronous commit off).
        "asynchronous_commit": "false",
        "rate_buckets": str(RATE_BUCKETS),
        "claimers_set": "0",
        # The batched script's first transaction completes nothing.
        **{f"done_{name}": "{}" for name in ("ids", "owners", "attempts", "results")},
    }


def pgbench_available() -> str | None:
    return shutil.which("pgbench")


def pgbench(
    env: dict[str, str],
    *,
    script: Path,
    clients: int,
    transactions: int,
    protocol: str,
    variables: dict[str, str],
    log_path: Path,
    timeout: float = 600,
) -> str:
    """Run ``script`` from ``clients`` connections, ``transactions`` each, against the
    bench's database; keeps its output at ``log_path`` and returns it."""
    command = [
        pgbench_available() or "pgbench",
        "--no-vacuum",
        f"--protocol={protocol}",
        f"--client={clients}",
        f"--jobs={min(clients, 2)}",
        f"--transactions={transactions}",
        f"--file={script}",
        *(f"--define={name}={value}" for name, value in variables.items()),
        "--host",
        env["POSTGRES_HOST"],
        "--port",
        env["POSTGRES_PORT"],
        "--username",
        env["POSTGRES_USER"],
        env["POSTGRES_DB"],
    ]
    pg_env = dict(env, PGPASSWORD=env["POSTGRES_PASSWORD"])
    done = subprocess.run(command, env=pg_env, capture_output=True, text=True, timeout=timeout)
    log_path.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"pgbench failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def pgbench_figure(output: str, prefix: str) -> float:
    """The number after ``=`` on pgbench's summary line that starts with ``prefix``
    (``tps``, ``latency average``); ``nan`` if it printed none."""
    for line in output.splitlines():
        if line.startswith(prefix):
            return float(line.split("=")[1].split()[0])
    return math.nan


def _leftover_params(job_id: Any, worker_id: str, attempts: int) -> dict[str, Any]:
    """complete_and_claim's parameters to complete one leftover attempt and claim nothing."""
    variables = pgbench_variables()
    return {
        **{name: variables[name] for name in ("completed_message", "completed_data")},
        "claimed_message": None,
        "claimed_data": None,
        "locked_until": None,
        "queue": None,
        "result_json": "null",
        "now": datetime.now(UTC),
        "id": job_id,
        "worker_id": worker_id,
        "attempts": attempts,
        "keys_limited": False,
        "lean": False,
    }


def _complete_leftovers(db: Database) -> int:
    """Complete what a client's last transaction claimed (rare: see ``SLACK``)."""
    from jobs.drivers.postgres import QUERIES

    rows = db.rows("SELECT id, locked_by, attempts FROM jobs_job WHERE status = 'running'")
    for job_id, worker_id, attempts in rows:
        db.execute(QUERIES["complete_and_claim"].sql, _leftover_params(job_id, worker_id, attempts))
    return len(rows)


def run_pgbench(
    db: Database,
    env: dict[str, str],
    *,
    script: str,
    clients: int,
    jobs: int,
    protocol: str,
    log_dir: Path,
    batch: int = BATCH,
) -> RawSqlRun:
    reset_tables(db)
    enqueue_bulk(db, jobs)
    name = script if batch == BATCH else f"{script}{batch}"
    path = log_dir / f"{name}.pgbench.sql"
    path.write_text(pgbench_script(script, batch=batch))
    if script == "batched":
        per_client = math.ceil(jobs / clients / batch * BATCHED_SLACK) + 2
    else:
        per_client = math.ceil(jobs / clients * SLACK) + 2
    output = pgbench(
        env,
        script=path,
        clients=clients,
        transactions=per_client,
        protocol=protocol,
        variables=pgbench_variables(),
        log_path=log_dir / f"pgbench-{name}-c{clients}.log",
    )
    tps = pgbench_figure(output, "tps")
    leftovers = _complete_leftovers(db)
    result = RawSqlRun(
        **vars(event_window(db)),
        script=script,
        clients=clients,
        jobs=jobs,
        protocol=protocol,
        pgbench_tps=tps,
        load_average=load_average(),
        completed_after=leftovers,
    )
    if result.jobs_succeeded != jobs or result.claimed_events != jobs:
        raise RuntimeError(f"pgbench did not claim and complete every job once: {result}")
    return result
