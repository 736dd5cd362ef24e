"""Benchmark-only handler module, loaded by the benchmark's workers via JOB_HANDLER_MODULES.

``bench.noop`` does nothing, so a worker run measures the queue's own cost per job. With
``BENCH_FORCE_ORM_PATH=1`` in the environment (set only by ``bench.run --orm-path``), the
services take their ORM path on PostgreSQL too, so both paths can be timed side by side.
"""

import os

from jobs import handlers, services


@handlers.register("bench.noop", description="Benchmark: does nothing and succeeds.")
def noop(context: handlers.JobContext) -> None:
    return None


if os.environ.get("BENCH_FORCE_ORM_PATH") == "1":
    services._on_postgres = lambda: False
