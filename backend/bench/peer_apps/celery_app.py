"""Celery on Redis with the threads pool, 4 threads, as its documentation tunes a worker
for many short tasks: results not stored (``task_ignore_result``), no gossip, mingle or
heartbeat events between workers, and the prefetch multiplier at its default (``default``:
4 messages per thread) or raised for short tasks (``prefetch64``).

The window ends at the last handler's return (acks are sent before a task runs, Celery's
default), when the worker is told to stop.
"""

from __future__ import annotations

import os
import signal

import redis
from celery import Celery
from peer_common import RECORDER, main, redis_url, write_result

CONFIGS = {"default": 4, "prefetch64": 64}

app = Celery("bench", broker=redis_url())
app.conf.update(
    task_ignore_result=True,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
    worker_prefetch_multiplier=CONFIGS.get(os.environ.get("BENCH_PEER_CONFIG", ""), 4),
)
RESULT = {"path": ""}


@app.task(name="noop")
def noop() -> None:
    RECORDER.hit()
    if RECORDER.done.is_set() and RECORDER.count == RECORDER.expected:
        write_result(RESULT["path"], RECORDER.first, RECORDER.last, RECORDER.count)
        os.kill(os.getpid(), signal.SIGTERM)


def prepare(jobs: int) -> None:
    redis.Redis.from_url(redis_url()).flushall()
    with app.producer_or_acquire() as producer:
        for _ in range(jobs):
            noop.apply_async(producer=producer)


def work(jobs: int, config: str, result: str) -> None:
    RESULT["path"] = result
    app.worker_main(
        [
            "worker",
            "--pool=threads",
            "--concurrency=4",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel=WARNING",
        ]
    )


if __name__ == "__main__":
    main(prepare, work)
