"""Raw-SQL limit: the PostgreSQL driver's claim and complete statements driven by pgbench.

Each pgbench transaction is what one worker thread does per job without Python around it:
``claim_job`` then ``complete_job``, each its own implicit transaction, the claim's row
feeding the complete. The statements are ``QUERIES[name].text`` as written in
``jobs/drivers/queries.sql``; only pgbench meta-commands and ``-D`` variables are added.
A backlog of ``jobs`` is drained by ``clients`` connections, timed like the workers (first
``claimed`` to last ``succeeded`` event), so each worker figure can be read as a ratio of
the limit at the same concurrency.

Protocol: pgbench replaces ``:name`` textually in its simple protocol, which a uuid or
timestamp value would break, so the parameters are bound. ``extended`` (the default)
parses and plans both statements on every execution, as the services' statements are
(Django binds client-side) and as the earlier simple-protocol script with literals was;
measured side by side, the two give the same jobs/s within noise. ``prepared`` plans once
per connection, which the services never do: a higher ceiling (about 1.5x here).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .common import Database, EventWindow, enqueue_bulk, event_window, load_average, reset_tables

PROTOCOLS = ("extended", "prepared")
# pgbench cannot add an interval to the server's clock, so every claim gets the same
# lease end: one that outlives any run (nothing reaps leases while pgbench runs).
LEASE = timedelta(hours=1)
NO_JOB = "00000000-0000-0000-0000-000000000000"


@dataclass(kw_only=True)
class RawSqlRun(EventWindow):
    clients: int
    jobs: int
    protocol: str
    pgbench_tps: float
    load_average: list[float]
    samples_jobs_per_second: list[float] = field(default_factory=list)


def pgbench_script() -> str:
    """Claim, then complete the claimed job, with the statements verbatim.

    Each connection works as worker ``<client_id>``. ``\\aset job_`` stores the claimed
    row's columns as ``job_id``, ``job_attempts``, ...; when a claim finds nothing (the
    last few transactions of a run) it stores nothing and the complete that follows
    matches no row, like a stale worker's.
    """
    from jobs.drivers.postgres import QUERIES

    return "\n".join(
        [
            "\\set worker_id :client_id",
            QUERIES["claim_job"].text,
            "\\aset job_",
            "\\set attempt :job_attempts",
            QUERIES["complete_job"].text + ";",
            "",
        ]
    )


def pgbench_variables() -> dict[str, str]:
    """The parameters the worker sends from Python, as pgbench ``-D`` variables.

    pgbench variables are per connection, not per statement, and both statements name
    their event's text ``message`` and ``data``, so the succeeded event carries the claim's
    ("Job claimed" and the lease, some 70 bytes more per job than a worker writes; within
    noise when measured against ``{}``). pgbench cannot bind an SQL NULL, so the no-op
    result is the JSON ``null``.
    """
    from jobs.models import DEFAULT_QUEUE, JobEventType
    from jobs.services import MESSAGES

    locked_until = (datetime.now(UTC) + LEASE).isoformat()
    lease = {"lease_seconds": int(LEASE.total_seconds()), "locked_until": locked_until}
    return {
        # PostgreSQL reads the timestamp 'now' as the transaction's start, i.e. now().
        "now": "now",
        "queue": DEFAULT_QUEUE,
        "locked_until": locked_until,
        "message": MESSAGES[JobEventType.CLAIMED],
        "data": json.dumps(lease, separators=(",", ":")),
        "result": "null",
        # What the complete sees if a connection's very first claim finds nothing.
        "job_id": NO_JOB,
        "job_attempts": "0",
    }


def pgbench_available() -> str | None:
    return shutil.which("pgbench")


def run_pgbench(
    db: Database,
    env: dict[str, str],
    *,
    clients: int,
    jobs: int,
    protocol: str,
    log_dir: Path,
) -> RawSqlRun:
    reset_tables(db)
    enqueue_bulk(db, jobs)
    script = log_dir / "claim_complete.pgbench.sql"
    script.write_text(pgbench_script())
    per_client = math.ceil(jobs / clients)
    command = [
        pgbench_available() or "pgbench",
        "--no-vacuum",
        f"--protocol={protocol}",
        f"--client={clients}",
        f"--jobs={min(clients, os.cpu_count() or 1)}",
        f"--transactions={per_client}",
        f"--file={script}",
        *(f"--define={name}={value}" for name, value in pgbench_variables().items()),
        "--host",
        env["POSTGRES_HOST"],
        "--port",
        env["POSTGRES_PORT"],
        "--username",
        env["POSTGRES_USER"],
        env["POSTGRES_DB"],
    ]
    pg_env = dict(env, PGPASSWORD=env["POSTGRES_PASSWORD"])
    done = subprocess.run(command, env=pg_env, capture_output=True, text=True, timeout=600)
    (log_dir / f"pgbench-c{clients}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"pgbench failed ({done.returncode}): {done.stderr[-2000:]}")
    tps = next(
        (
            float(line.split("=")[1].split()[0])
            for line in done.stdout.splitlines()
            if line.startswith("tps")
        ),
        math.nan,
    )
    result = RawSqlRun(
        **vars(event_window(db)),
        clients=clients,
        jobs=jobs,
        protocol=protocol,
        pgbench_tps=tps,
        load_average=load_average(),
    )
    if result.jobs_succeeded != jobs:
        raise RuntimeError(f"pgbench left jobs unfinished: {result}")
    return result
