"""Procrastinate 3 on psycopg: one worker, ``concurrency=4``, an async no-op task, LISTEN/
NOTIFY on (its defaults), ``wait=False`` so the worker exits once the queue is empty.

The window comes from Procrastinate's own ``procrastinate_events``: the first ``started``
to the last ``succeeded`` event, both written in the transactions that change the job.
"""

from __future__ import annotations

import asyncio
import time

import procrastinate
from peer_common import RECORDER, dsn, main, write_result

app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn()))


@app.task(name="noop")
async def noop() -> None:
    RECORDER.hit()


async def _prepare(jobs: int) -> None:
    async with app.open_async():
        connector = app.connector
        exists = await connector.execute_query_one_async(
            "SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS found"
        )
        if not exists["found"]:
            await app.schema_manager.apply_schema_async()
        await connector.execute_query_async("TRUNCATE procrastinate_jobs CASCADE")
        for start in range(0, jobs, 1000):
            await noop.batch_defer_async(*([{}] * min(1000, jobs - start)))


async def _work(jobs: int, config: str, result: str) -> None:
    async with app.open_async():
        await app.run_worker_async(concurrency=4, wait=False, install_signal_handlers=False)
        row = await app.connector.execute_query_one_async(
            "SELECT extract(epoch FROM min(at) FILTER (WHERE type = 'started')) AS first,"
            " extract(epoch FROM max(at) FILTER (WHERE type = 'succeeded')) AS last,"
            " count(*) FILTER (WHERE type = 'succeeded') AS jobs FROM procrastinate_events"
        )
    if row["first"] is None:  # no events: the handler's own times
        write_result(result, RECORDER.first, time.time(), RECORDER.count)
    else:
        write_result(result, float(row["first"]), float(row["last"]), int(row["jobs"]))


if __name__ == "__main__":
    main(lambda jobs: asyncio.run(_prepare(jobs)), lambda j, c, r: asyncio.run(_work(j, c, r)))
