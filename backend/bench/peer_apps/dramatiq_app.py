"""Dramatiq on Redis: one worker process with 4 threads, as ``dramatiq app --processes 1
--threads 4`` runs it, with its default middleware. Configurations: ``default`` (prefetch
2 messages per thread, Dramatiq's default) and ``prefetch64`` (``dramatiq_queue_prefetch``
raised, as its documentation suggests for many small messages).

The window ends at the last handler's return; the worker is stopped then.
"""

from __future__ import annotations

import os

CONFIGS = {"default": "0", "prefetch64": "64"}
# Read by dramatiq.worker when it is imported.
PREFETCH = CONFIGS.get(os.environ.get("BENCH_PEER_CONFIG", ""), "0")
os.environ["dramatiq_queue_prefetch"] = PREFETCH  # noqa: SIM112 (Dramatiq's own name)

import dramatiq  # noqa: E402
import redis  # noqa: E402
from dramatiq.brokers.redis import RedisBroker  # noqa: E402
from peer_common import RECORDER, main, redis_url, write_result  # noqa: E402

broker = RedisBroker(url=redis_url())
dramatiq.set_broker(broker)


@dramatiq.actor(max_retries=0)
def noop() -> None:
    RECORDER.hit()


def prepare(jobs: int) -> None:
    redis.Redis.from_url(redis_url()).flushall()
    for _ in range(jobs):
        noop.send()


def work(jobs: int, config: str, result: str) -> None:
    worker = dramatiq.Worker(broker, worker_threads=4)
    worker.start()
    RECORDER.done.wait()
    write_result(result, RECORDER.first, RECORDER.last, RECORDER.count)
    worker.stop()


if __name__ == "__main__":
    main(prepare, work)
