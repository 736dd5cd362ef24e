"""The fetcher's hand-over between threads (issue 25), without a database: every job a
fetch claims reaches the thread it was claimed for, and no fetch claims for a thread that
is not waiting."""

import random
import threading
import time
from types import SimpleNamespace

import pytest

from jobs.worker import fetcher
from jobs.worker.fetcher import Fetcher
from jobs.worker.queues import QueueSet

JOBS = 3_000
THREADS = 8


def fetcher_claiming_four(parallel: int) -> Fetcher:
    """A fetcher of the default queue claiming up to four jobs at a time, ``parallel``
    fetches at once."""
    return Fetcher(
        batch_size=4,
        lease_seconds=30,
        queues=QueueSet(("default",), refresh_seconds=1),
        stopping=threading.Event(),
        parallel=parallel,
    )


@pytest.mark.parametrize("parallel", [1, 3])
def test_every_claimed_job_reaches_its_thread_once(monkeypatch, parallel):
    remaining = iter(range(JOBS))
    lock = threading.Lock()
    claimed: list[tuple[int, str]] = []
    waiting: set[str] = set()

    def claim_next_jobs(*, worker_ids, queue, lease_seconds):
        with lock:
            assert set(worker_ids) <= waiting, "claimed for a thread that is not waiting"
            rows = []
            for worker_id in worker_ids:
                number = next(remaining, None)
                if number is None:
                    break
                rows.append(SimpleNamespace(id=number, locked_by=worker_id))
                claimed.append((number, worker_id))
        time.sleep(random.random() / 2000)  # the round trip, during which others arrive
        return rows, False

    monkeypatch.setattr(fetcher.services, "claim_next_jobs", claim_next_jobs)
    subject = fetcher_claiming_four(parallel)
    received: list[tuple[int, str]] = []

    def thread(worker_id: str) -> None:
        empty = 0
        while empty < 3:
            with lock:
                waiting.add(worker_id)
            row = subject.next_job(worker_id)
            with lock:
                waiting.discard(worker_id)
            if row is None:
                empty += 1
                continue
            assert row.locked_by == worker_id
            with lock:
                received.append((row.id, worker_id))
            time.sleep(random.random() / 5000)  # the handler

    threads = [threading.Thread(target=thread, args=(f"w{n}",)) for n in range(THREADS)]
    for each in threads:
        each.start()
    for each in threads:
        each.join(timeout=60)
    assert sorted(received) == sorted(claimed)
    assert len(received) == JOBS
    assert subject.claimed == JOBS
    assert subject.fetches < JOBS  # threads did claim together


def _drain(monkeypatch, *, jobs: int, fetch_seconds: float, handler_seconds: float) -> Fetcher:
    """Four threads take ``jobs`` jobs through a fetcher whose claims take
    ``fetch_seconds`` and whose handlers ``handler_seconds``; the fetcher, once drained."""
    remaining = iter(range(jobs))
    lock = threading.Lock()

    def claim_next_jobs(*, worker_ids, queue, lease_seconds):
        with lock:
            numbers = [n for _, n in zip(worker_ids, remaining, strict=False)]
        time.sleep(fetch_seconds)
        return [
            SimpleNamespace(id=n, locked_by=w) for n, w in zip(numbers, worker_ids, strict=False)
        ], False

    monkeypatch.setattr(fetcher.services, "claim_next_jobs", claim_next_jobs)
    subject = fetcher_claiming_four(parallel=2)

    def thread(worker_id: str) -> None:
        while subject.next_job(worker_id) is not None:
            time.sleep(handler_seconds)

    threads = [threading.Thread(target=thread, args=(f"w{n}",)) for n in range(4)]
    for each in threads:
        each.start()
    for each in threads:
        each.join(timeout=60)
    assert subject.claimed == jobs
    return subject


def test_threads_whose_handlers_return_sooner_than_a_fetch_are_claimed_for_together(
    monkeypatch,
):
    # Without gathering, the thread back first fetches alone while the others queue
    # behind it: about two jobs per fetch. With it, four, once the first fetches (for
    # whoever had arrived) have merged.
    subject = _drain(monkeypatch, jobs=200, fetch_seconds=0.02, handler_seconds=0)
    assert subject.gathers > 0
    assert subject.claimed / subject.fetches >= 3.0


def test_threads_whose_handlers_run_longer_than_a_fetch_never_wait_for_each_other(
    monkeypatch,
):
    # A claim that returns at once, handlers of 100 ms: even a loaded machine's scheduling
    # delays keep a fetch far shorter than a job's turnaround.
    subject = _drain(monkeypatch, jobs=40, fetch_seconds=0, handler_seconds=0.1)
    assert subject.gathers == 0
