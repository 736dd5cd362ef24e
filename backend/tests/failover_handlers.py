"""Handlers for the failover tests' worker processes, loaded with
``JOB_HANDLER_MODULES=tests.failover_handlers``; never imported by the test process.

Each run is recorded outside the database, where a failover cannot lose it: one line of
JSON per run (job id, attempt, queue, start and end times) appended to a file of the
process's own in ``FAILOVER_RUNS_DIR``.
"""

import json
import os
import time
from pathlib import Path

from jobs.handlers import JobContext, register


def _runs_file() -> int:
    path = Path(os.environ["FAILOVER_RUNS_DIR"]) / f"runs-{os.getpid()}.jsonl"
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)


_RUNS = _runs_file() if "FAILOVER_RUNS_DIR" in os.environ else -1


@register("failover.record", description="Sleeps payload.seconds, then records its run.")
def record(context: JobContext) -> dict[str, int]:
    started = time.time()
    time.sleep(float(context.payload.get("seconds", 0.2)))
    line = [str(context.job_id), context.attempt, context.queue, started, time.time()]
    # One write per line on an O_APPEND descriptor: the threads' lines never interleave.
    os.write(_RUNS, (json.dumps(line) + "\n").encode())
    return {"attempt": context.attempt}
