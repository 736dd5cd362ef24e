"""Benchmark-only handler module, loaded by the benchmark's workers via JOB_HANDLER_MODULES.

``bench.noop`` does nothing, so a worker run measures the queue's own cost per job;
``noop_task`` is the same through ``django.tasks`` (``bench.tasks`` compares the two).
``bench.sleep`` sleeps ``SLEEP_SECONDS`` without checking in, so attempts stay in flight
(what the heartbeat scenario needs). ``bench.mix`` sleeps 1-10 ms, the same for the
same payload (the handler mix goal); ``bench.clock`` returns ``time.time()`` as its
result, for the completion latency goal. With ``BENCH_DRIVER=orm`` in the environment (set
only by ``bench.workers`` for the ORM-path runs), the process runs the services on
``OrmDriver`` on PostgreSQL too, so both drivers can be timed side by side.
"""

import os
import time

from django.tasks import task

from jobs import drivers, handlers

from .jobtypes import CLOCK_JOB_TYPE, MIX_JOB_TYPE, SLEEP_JOB_TYPE, SLEEP_SECONDS, mix_seconds


@handlers.register("bench.noop", description="Benchmark: does nothing and succeeds.")
def noop(context: handlers.JobContext) -> None:
    return None


@handlers.register(
    SLEEP_JOB_TYPE, description=f"Benchmark: sleeps {SLEEP_SECONDS} s, then succeeds."
)
def sleep(context: handlers.JobContext) -> None:
    time.sleep(SLEEP_SECONDS)


# Imported from the app registry's ready(), before any worker thread claims a job.
if os.environ.get("BENCH_DRIVER") == "orm":
    drivers.set_driver(drivers.OrmDriver())


# The same no-op as a django.tasks task on the project's default backend (JobQueueBackend):
# its jobs have the type "bench.handlers.noop_task" and a payload of args and kwargs.
@task
def noop_task() -> None:
    return None


@handlers.register(
    MIX_JOB_TYPE,
    description="Benchmark: sleeps 1-10 ms, drawn from a generator seeded by payload n.",
)
def mixed(context: handlers.JobContext) -> None:
    # Seeded per job, so every run of the same backlog sleeps the same mix.
    time.sleep(mix_seconds(int(context.payload.get("n", 0))))


@handlers.register(
    CLOCK_JOB_TYPE, description="Benchmark: returns the wall clock as its handler returns."
)
def clock(context: handlers.JobContext) -> float:
    # time.time(): the same clock as the bench process that compares it.
    return time.time()
