"""The fetcher's hand-over between threads, without a database: every job a fetch claims
reaches the thread it was claimed for, no fetch claims for a thread that is not waiting,
and the successes a fetch carries are committed or given back."""

import random
import threading
import time
from types import SimpleNamespace

import pytest

from jobs.drivers import Completion, Owner
from jobs.worker import fetcher
from jobs.worker.fetcher import Fetcher, Handover
from jobs.worker.queues import QueueSet

JOBS = 3_000
THREADS = 8


def fetcher_claiming_four(parallel: int, successes=None) -> Fetcher:
    """A fetcher of the default queue claiming up to four jobs at a time, ``parallel``
    fetches at once, carrying what ``successes`` (a completer's ``take``) hands it."""
    return Fetcher(
        batch_size=4,
        lease_seconds=30,
        queues=QueueSet(("default",), refresh_seconds=1),
        stopping=threading.Event(),
        parallel=parallel,
        successes=successes,
    )


class Statements:
    """A fake ``services.claim_jobs`` over a backlog of numbered jobs, and a completer's
    pending successes: how many threads and successes each fetch carried."""

    def __init__(self, monkeypatch, *, jobs: int, fetch_seconds: float = 0) -> None:
        self.remaining = iter(range(jobs))
        self.fetch_seconds = fetch_seconds
        self.lock = threading.Lock()
        self.pending: list[Completion] = []
        self.completed: list[int] = []
        self.fetches: list[tuple[int, int]] = []  # (threads claimed for, successes)
        monkeypatch.setattr(fetcher.services, "claim_jobs", self.claim_jobs)

    def succeed(self, job_id: int, worker_id: str) -> None:
        with self.lock:
            self.pending.append(Completion(Owner(job_id, worker_id, 1), None))

    def take(self, worker_ids) -> Handover | None:
        with self.lock:
            batch, self.pending[:] = self.pending[:10], self.pending[10:]
        if not batch:
            return None

        def committed(rows) -> None:
            with self.lock:
                self.completed.extend(row.id for row in rows)

        return Handover(completions=batch, committed=committed, failed=lambda: None)

    def claim_jobs(self, *, worker_ids, queue, completions, **options):
        with self.lock:
            self.fetches.append((len(worker_ids), len(completions)))
            numbers = [n for _, n in zip(worker_ids, self.remaining, strict=False)]
        time.sleep(self.fetch_seconds)
        return SimpleNamespace(
            completed=[SimpleNamespace(id=c.owner.job_id) for c in completions],
            claimed=[
                SimpleNamespace(id=n, locked_by=w)
                for n, w in zip(numbers, worker_ids, strict=False)
            ],
        )


@pytest.mark.parametrize(("parallel", "wanted"), [(1, 1), (3, 1), (3, 3)])
def test_every_claimed_job_reaches_its_thread_once(monkeypatch, parallel, wanted):
    remaining = iter(range(JOBS))
    lock = threading.Lock()
    claimed: list[tuple[int, str]] = []
    waiting: set[str] = set()

    def claim_jobs(*, worker_ids, queue, completions, **options):
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
        return SimpleNamespace(completed=[], claimed=rows)

    monkeypatch.setattr(fetcher.services, "claim_jobs", claim_jobs)
    subject = fetcher_claiming_four(parallel)
    received: list[tuple[int, str]] = []

    def thread(worker_id: str) -> None:
        empty = 0
        while empty < 3:
            with lock:
                waiting.add(worker_id)
            rows = subject.next_jobs(worker_id, wanted)
            with lock:
                waiting.discard(worker_id)
            if not rows:
                empty += 1
                continue
            assert len(rows) <= wanted
            for row in rows:
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


def _drain(
    monkeypatch,
    *,
    jobs: int,
    fetch_seconds: float,
    handler_seconds: float,
    carry_successes: bool = False,
) -> tuple[Fetcher, Statements]:
    """Four threads take ``jobs`` jobs through a fetcher whose claims take
    ``fetch_seconds`` and whose handlers ``handler_seconds`` on average, each a different
    time (threads fall out of step); with ``carry_successes`` each success is handed to
    the next fetch. The fetcher, once drained, and its statements."""
    statements = Statements(monkeypatch, jobs=jobs, fetch_seconds=fetch_seconds)
    subject = fetcher_claiming_four(
        parallel=2, successes=statements.take if carry_successes else None
    )

    def thread(worker_id: str) -> None:
        while jobs := subject.next_jobs(worker_id):
            (job,) = jobs
            time.sleep(handler_seconds * (0.5 + random.random()))
            if carry_successes:
                statements.succeed(job.id, worker_id)

    threads = [threading.Thread(target=thread, args=(f"w{n}",)) for n in range(4)]
    for each in threads:
        each.start()
    for each in threads:
        each.join(timeout=60)
    assert subject.claimed == jobs
    if carry_successes:
        assert sorted(statements.completed) == list(range(jobs))
    return subject, statements


def test_threads_whose_handlers_return_sooner_than_a_fetch_are_claimed_for_together(
    monkeypatch,
):
    # Without gathering, the thread back first fetches alone while the others queue
    # behind it: about two jobs per fetch. With it, four, once the first fetches (for
    # whoever had arrived) have merged.
    subject, _ = _drain(monkeypatch, jobs=200, fetch_seconds=0.02, handler_seconds=0)
    assert subject.gathers > 0
    assert subject.claimed / subject.fetches >= 3.0


def test_threads_whose_handlers_run_longer_than_a_fetch_never_wait_for_each_other(
    monkeypatch,
):
    # A claim that returns at once, handlers of 100 ms: even a loaded machine's scheduling
    # delays keep a fetch far shorter than a job's turnaround.
    subject, _ = _drain(monkeypatch, jobs=40, fetch_seconds=0, handler_seconds=0.1)
    assert subject.gathers == 0


def test_a_fetch_carries_the_successes_waiting_and_says_which_were_committed(monkeypatch):
    statements = Statements(monkeypatch, jobs=2)
    subject = fetcher_claiming_four(parallel=1, successes=statements.take)
    (first,) = subject.next_jobs("w0")
    statements.succeed(first.id, "w0")
    (second,) = subject.next_jobs("w1")
    assert (second.id, second.locked_by) == (1, "w1")
    assert statements.fetches == [(1, 0), (1, 1)]
    assert statements.completed == [first.id]


def test_handlers_that_outlast_fetches_carry_each_success_in_the_next_claim(monkeypatch):
    _, statements = _drain(
        monkeypatch, jobs=60, fetch_seconds=0.001, handler_seconds=0.02, carry_successes=True
    )
    assert sum(done for _, done in statements.fetches) == 60 - len(statements.pending)


def recorded_handover(outcome: list[str]) -> Handover:
    """One success handed to a fetch; ``outcome`` records whether it was committed or given
    back to the completer."""
    return Handover(
        completions=[Completion(Owner(7, "w9", 1), None)],
        committed=lambda rows: outcome.append("committed"),
        failed=lambda: outcome.append("given back"),
    )


def test_successes_of_a_failed_statement_are_given_back_once(monkeypatch):
    def failing(**kwargs):
        raise RuntimeError("connection lost")

    monkeypatch.setattr(fetcher.services, "claim_jobs", failing)
    outcome: list[str] = []
    handover = recorded_handover(outcome)
    subject = fetcher_claiming_four(1, successes=lambda worker_ids: handover)
    with pytest.raises(RuntimeError):
        subject._claim(["w1", "w2"])
    assert outcome == ["given back"]


def test_successes_are_given_back_when_the_queues_cannot_be_listed(monkeypatch):
    def unreachable():
        raise RuntimeError("connection lost")

    monkeypatch.setattr("jobs.worker.queues.selectors.active_queues", unreachable)
    outcome: list[str] = []
    handover = recorded_handover(outcome)
    subject = Fetcher(
        batch_size=4,
        lease_seconds=30,
        queues=QueueSet(("*",), refresh_seconds=1),
        stopping=threading.Event(),
        successes=lambda worker_ids: handover,
    )
    with pytest.raises(RuntimeError):
        subject._claim(["w1"])
    assert outcome == ["given back"]


def test_a_thread_that_holds_gets_its_share_in_one_claim(monkeypatch):
    statements = Statements(monkeypatch, jobs=10)
    subject = fetcher_claiming_four(parallel=1)
    rows = subject.next_jobs("w0", 4)
    assert [(row.id, row.locked_by) for row in rows] == [(n, "w0") for n in range(4)]
    assert statements.fetches == [(4, 0)]


def test_a_short_backlog_gives_every_thread_a_job_before_any_thread_a_second():
    assert fetcher._taking_turns([("w0", 3), ("w1", 1), ("w2", 2)]) == [
        "w0",
        "w1",
        "w2",
        "w0",
        "w2",
        "w0",
    ]
