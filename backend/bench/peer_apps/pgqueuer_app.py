"""PgQueuer set up as its own benchmark (tools/benchmark.py, drain strategy) sets it up:
asyncpg connections, uvloop, async no-op entrypoints, dequeue batches of 10, and N
``PgQueuer`` instances in one process, each on its own connection.

Configurations: ``4x10`` (4 instances, batch 10: the benchmark's shape at 4 executors),
``1x10`` (one instance) and ``1x4`` (one instance, batch 4: no more than 4 jobs in hand,
this queue's 1 x 4 shape with its default settings). The window ends when every instance
has drained and flushed its buffered completions (``QueueExecutionMode.drain``).
"""

from __future__ import annotations

import asyncio
import time

import asyncpg
import uvloop
from peer_common import RECORDER, dsn, main, write_result
from pgqueuer import AsyncpgDriver, PgQueuer, Queries
from pgqueuer.models import Job
from pgqueuer.types import QueueExecutionMode

CONFIGS = {"4x10": (4, 10), "1x10": (1, 10), "1x4": (1, 4)}


async def _prepare(jobs: int) -> None:
    conn = await asyncpg.connect(dsn=dsn())
    queries = Queries(AsyncpgDriver(conn))
    if not await queries.has_table("pgqueuer"):
        await queries.install()
    await queries.clear_queue()
    await queries.clear_statistics_log()
    await conn.execute("TRUNCATE pgqueuer_log")
    await queries.enqueue(["noop"] * jobs, [None] * jobs, [0] * jobs)
    await conn.close()


async def _work(jobs: int, config: str, result: str) -> None:
    instances, batch = CONFIGS[config]
    managers = []
    for _ in range(instances):
        manager = PgQueuer(AsyncpgDriver(await asyncpg.connect(dsn=dsn())))

        @manager.entrypoint("noop")
        async def noop(job: Job) -> None:
            RECORDER.hit()

        managers.append(manager)
    await asyncio.gather(
        *(m.run(batch_size=batch, mode=QueueExecutionMode.drain) for m in managers)
    )
    write_result(result, RECORDER.first, time.time(), RECORDER.count)


if __name__ == "__main__":
    main(
        lambda jobs: uvloop.run(_prepare(jobs)),
        lambda jobs, config, result: uvloop.run(_work(jobs, config, result)),
    )
